import { Behavior, assertNever, existing } from '../runtime';
import { HiltError, duplicate, notFound, blocked } from '../errors';
import type { Asker } from '../runtime';
import type { ReadModel } from '../readmodel';
import type { NodeCommand, NodeReplies } from '../node/protocol';
import type { NetworkCommand, NetworkReplies } from '../network/protocol';
import type { UserCommand, UserReplies } from '../user/protocol';
import type { HeadnodeCommand, HeadnodeReplies } from '../headnode/protocol';
import type { ProjectCommand, ProjectEvent, ProjectReplies, ProjectState } from './protocol';

/** What the project actor needs: the committed view and the actors it asks (project → node, network, user, headnode). */
export interface ProjectDeps {
  rm: ReadModel;
  nodes: Asker<NodeCommand, NodeReplies>;
  networks: Asker<NetworkCommand, NetworkReplies>;
  users: Asker<UserCommand, UserReplies>;
  headnodes: Asker<HeadnodeCommand, HeadnodeReplies>;
}

export function projectBehavior({ rm, nodes, networks, users, headnodes }: ProjectDeps): Behavior<ProjectState, ProjectCommand, ProjectEvent, ProjectReplies> {
  /** A command on an existing project. */
  const live = <Cmd, D>(handler: (state: ProjectState, cmd: Cmd, id: string) => D) => existing((id) => notFound(`project ${id}`), handler);
  /** Ask below, record nothing here: the project's mailbox serializes what refers to it. */
  const via = async (asked: Promise<unknown>) => {
    await asked;
    return { events: [] };
  };

  return {
    kind: 'project',

    apply(_state, e, id) {
      switch (e.type) {
        case 'ProjectCreated':
          return { name: id };
        case 'ProjectDeleted':
          return null;
        default:
          return assertNever(e);
      }
    },

    decide: {
      'project.create': (state, _cmd, id) => {
        if (state) throw duplicate(`project ${id}`);
        return { events: [{ type: 'ProjectCreated' }] };
      },
      // docs/api-conventions.md §4: deleting a missing project is a 409 (the spec's wording), not a 404.
      'project.delete': existing((id) => new HiltError('IllegalStateError', `project ${id} does not exist`), async (_state, cmd, id) => {
        if (rm.nodesByProject.get(id).size) throw blocked(`project ${id} still has nodes`);
        if (rm.networksByOwner.get(id).size) throw blocked(`project ${id} still owns networks`);
        if (rm.networksByAccess.get(id).size) throw blocked(`project ${id} still has access to networks`);
        if (rm.headnodesByProject.get(id).size) throw blocked(`project ${id} still has headnodes`);
        // Memberships go first: every join goes through this mailbox, so none can slip in.
        for (const user of [...rm.membersByProject.get(id)]) {
          await users.ask(user, { type: 'user.leave', by: cmd.by, project: id, ifMember: true });
        }
        return { events: [{ type: 'ProjectDeleted' }] };
      }),
      'project.connectNode': live((_s, cmd, id) => via(nodes.ask(cmd.node, { type: 'node.assign', by: cmd.by, project: id }))),
      'project.detachNode': live((_s, cmd, id) => via(nodes.ask(cmd.node, { type: 'node.release', by: cmd.by, project: id }))),
      'project.createNetwork': live((_s, cmd) => via(networks.ask(cmd.network, { type: 'network.create', by: cmd.by, spec: cmd.spec }))),
      'project.grantNetwork': live((_s, cmd, id) => via(networks.ask(cmd.network, { type: 'network.grant', by: cmd.by, project: id }))),
      'project.createHeadnode': live((_s, cmd, id) => via(headnodes.ask(cmd.headnode, { type: 'headnode.create', by: cmd.by, project: id, baseImg: cmd.baseImg }))),
      'project.addUser': live((_s, cmd, id) => via(users.ask(cmd.user, { type: 'user.join', by: cmd.by, project: id }))),
      'project.removeUser': live((_s, cmd, id) => via(users.ask(cmd.user, { type: 'user.leave', by: cmd.by, project: id }))),
    },
  };
}
