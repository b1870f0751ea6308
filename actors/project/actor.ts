import { Behavior, assertNever } from '../runtime';
import { HiltError, duplicate, notFound, blocked } from '../errors';
import type { Asker } from '../runtime';
import type { ReadModel } from '../readmodel';
import type { NodeCommand, NodeReplies } from '../node/protocol';
import type { NetworkCommand, NetworkReplies } from '../network/protocol';
import type { UserCommand, UserReplies } from '../user/protocol';
import type { HeadnodeCommand, HeadnodeReplies } from '../headnode/protocol';
import type { ProjectCommand, ProjectEvent, ProjectState } from './protocol';

/** What the project actor needs: the committed view and the actors it asks (project → node, network, user, headnode). */
export interface ProjectDeps {
  rm: ReadModel;
  nodes: Asker<NodeCommand, NodeReplies>;
  networks: Asker<NetworkCommand, NetworkReplies>;
  users: Asker<UserCommand, UserReplies>;
  headnodes: Asker<HeadnodeCommand, HeadnodeReplies>;
}

export function projectBehavior({ rm, nodes, networks, users, headnodes }: ProjectDeps): Behavior<ProjectState, ProjectCommand, ProjectEvent> {
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

    async decide(state, cmd, id) {
      if (cmd.type === 'project.create') {
        if (state) throw duplicate(`project ${id}`);
        return { events: [{ type: 'ProjectCreated' }] };
      }
      if (!state) {
        // docs/api-conventions.md §4: deleting a missing project is a 409 (the spec's wording), not a 404.
        if (cmd.type === 'project.delete') throw new HiltError('IllegalStateError', `project ${id} does not exist`);
        throw notFound(`project ${id}`);
      }
      switch (cmd.type) {
        case 'project.delete': {
          if (rm.nodesByProject.get(id).size) throw blocked(`project ${id} still has nodes`);
          if (rm.networksByOwner.get(id).size) throw blocked(`project ${id} still owns networks`);
          if (rm.networksByAccess.get(id).size) throw blocked(`project ${id} still has access to networks`);
          if (rm.headnodesByProject.get(id).size) throw blocked(`project ${id} still has headnodes`);
          // Memberships go first: every join goes through this mailbox, so none can slip in.
          for (const user of [...rm.membersByProject.get(id)]) {
            await users.ask(user, { type: 'user.leave', by: cmd.by, project: id, ifMember: true });
          }
          return { events: [{ type: 'ProjectDeleted' }] };
        }
        case 'project.connectNode':
          await nodes.ask(cmd.node, { type: 'node.assign', by: cmd.by, project: id });
          return { events: [] };
        case 'project.detachNode':
          await nodes.ask(cmd.node, { type: 'node.release', by: cmd.by, project: id });
          return { events: [] };
        case 'project.createNetwork':
          await networks.ask(cmd.network, { type: 'network.create', by: cmd.by, spec: cmd.spec });
          return { events: [] };
        case 'project.grantNetwork':
          await networks.ask(cmd.network, { type: 'network.grant', by: cmd.by, project: id });
          return { events: [] };
        case 'project.createHeadnode':
          await headnodes.ask(cmd.headnode, { type: 'headnode.create', by: cmd.by, project: id, baseImg: cmd.baseImg });
          return { events: [] };
        case 'project.addUser':
          await users.ask(cmd.user, { type: 'user.join', by: cmd.by, project: id, ...(cmd.role ? { role: cmd.role } : {}) });
          return { events: [] };
        case 'project.removeUser':
          await users.ask(cmd.user, { type: 'user.leave', by: cmd.by, project: id });
          return { events: [] };
        default:
          return assertNever(cmd);
      }
    },
  };
}
