import { Behavior, existing, needsEntity } from '../runtime';
import { HiltError, duplicate, notFound, blocked } from '../errors';
import type { Asker } from '../runtime';
import { counted, listed } from '../../lib/text';
import type { ReadModel } from '../readmodel';
import type { NodeCommand, NodeReplies } from '../node/protocol';
import type { NetworkCommand, NetworkReplies } from '../network/protocol';
import type { UserCommand, UserReplies } from '../user/protocol';
import type { HeadnodeCommand, HeadnodeReplies } from '../headnode/protocol';
import type { ProjectCommand, ProjectEvent, ProjectReplies, ProjectState, ReleasePolicy } from './protocol';
import { applyProject } from './state';

/** What the project actor needs: the committed view and the actors it asks (project → node, network, user, headnode). */
export interface ProjectDeps {
  rm: ReadModel;
  nodes: Asker<NodeCommand, NodeReplies>;
  networks: Asker<NetworkCommand, NetworkReplies>;
  users: Asker<UserCommand, UserReplies>;
  headnodes: Asker<HeadnodeCommand, HeadnodeReplies>;
  /** what a release does beyond leaving the project (absent: nothing) */
  release?: ReleasePolicy;
}

/** A limit reached: the 409's message names the quota. */
function quotaReached(id: string, what: 'nodes' | 'networks' | 'headnodes', limit: number): string {
  return `project ${id} has reached its quota of ${limit} ${limit === 1 ? what.slice(0, -1) : what}`;
}

export function projectBehavior({ rm, nodes, networks, users, headnodes, release }: ProjectDeps): Behavior<ProjectState, ProjectCommand, ProjectEvent, ProjectReplies> {
  /** A command on an existing project. */
  const live = needsEntity<ProjectState>((id) => notFound(`project ${id}`));
  /** Ask below, record nothing here: the project's mailbox serializes what refers to it. */
  const via = async (asked: Promise<unknown>) => {
    await asked;
    return { events: [] };
  };

  return {
    kind: 'project',

    apply: applyProject,

    decide: {
      'project.create': (state, _cmd, id) => {
        if (state) throw duplicate(`project ${id}`);
        return { events: [{ type: 'ProjectCreated' }] };
      },
      // docs/api-conventions.md §4: deleting a missing project is a 409 (the spec's wording), not a 404.
      'project.delete': existing((id) => new HiltError('IllegalStateError', `project ${id} does not exist`), async (_state, cmd, id) => {
        if (id === release?.maintenanceProject) throw blocked(`project ${id} is the maintenance pool's project (HILT_MAINTENANCE_PROJECT)`);
        if (rm.nodesByProject.get(id).size) throw blocked(`project ${id} still has ${counted(rm.nodesByProject.get(id).size, 'node')} (${listed(rm.nodesByProject.get(id))})`);
        if (rm.networksByOwner.get(id).size) throw blocked(`project ${id} still owns ${counted(rm.networksByOwner.get(id).size, 'network')} (${listed(rm.networksByOwner.get(id))})`);
        if (rm.networksByAccess.get(id).size) throw blocked(`project ${id} still has access to ${counted(rm.networksByAccess.get(id).size, 'network')} (${listed(rm.networksByAccess.get(id))})`);
        if (rm.headnodesByProject.get(id).size) throw blocked(`project ${id} still has ${counted(rm.headnodesByProject.get(id).size, 'headnode')} (${listed(rm.headnodesByProject.get(id))})`);
        // Memberships go first: every join goes through this mailbox, so none can slip in.
        for (const user of [...rm.membersByProject.get(id)]) {
          await users.ask(user, { type: 'user.leave', by: cmd.by, project: id, ifMember: true });
        }
        return { events: [{ type: 'ProjectDeleted' }] };
      }),
      'project.connectNode': live((state, cmd, id) => {
        // Every node joins this project through this mailbox: the count read here cannot be
        // overtaken. Whether the node is free is the node's to say (another project's release of
        // it may be committing): it refuses with the quota, after its own 409 of a node not free.
        const limit = state.quota?.nodes;
        const overQuota = limit !== undefined && rm.nodesByProject.get(id).size >= limit ? quotaReached(id, 'nodes', limit) : undefined;
        return via(nodes.ask(cmd.node, { type: 'node.assign', by: cmd.by, project: id, ...(overQuota ? { overQuota } : {}) }));
      }),
      // HIL v0.3's maintenance pool: a node released from any other project moves into the pool's
      // project (which never counts against a quota: a release is never refused for it).
      'project.detachNode': live((_s, cmd, id) => via(nodes.ask(cmd.node, {
        type: 'node.release', by: cmd.by, project: id,
        into: release?.maintenanceProject !== undefined && release.maintenanceProject !== id ? release.maintenanceProject : null,
        powerOff: release?.powerOff ?? false,
        ...(cmd.expiredLease !== undefined ? { expiredLease: cmd.expiredLease } : {}),
      }))),
      'project.createNetwork': live((state, cmd, id) => {
        // Every network this project owns is created through this mailbox (as nodes join it, above);
        // the network refuses with the quota, after its own 409 of a name taken (a create committing).
        const limit = state.quota?.networks;
        const overQuota = limit !== undefined && cmd.spec.owner === id && rm.networksByOwner.get(id).size >= limit ? quotaReached(id, 'networks', limit) : undefined;
        return via(networks.ask(cmd.network, { type: 'network.create', by: cmd.by, spec: cmd.spec, ...(overQuota ? { overQuota } : {}) }));
      }),
      'project.grantNetwork': live((_s, cmd, id) => via(networks.ask(cmd.network, { type: 'network.grant', by: cmd.by, project: id, ...(cmd.owner !== undefined ? { owner: cmd.owner } : {}) }))),
      'project.createHeadnode': live((state, cmd, id) => {
        // Every headnode of this project is created through this mailbox (as networks, above); one
        // counts until its delete is done (its VM may run until then). The headnode refuses with
        // the quota, after its own 409 of a name taken.
        const limit = state.quota?.headnodes;
        const overQuota = limit !== undefined && rm.headnodesByProject.get(id).size >= limit ? quotaReached(id, 'headnodes', limit) : undefined;
        return via(headnodes.ask(cmd.headnode, { type: 'headnode.create', by: cmd.by, project: id, baseImg: cmd.baseImg, ...(overQuota ? { overQuota } : {}) }));
      }),
      'project.addUser': live((_s, cmd, id) => via(users.ask(cmd.user, { type: 'user.join', by: cmd.by, project: id, ...(cmd.role ? { role: cmd.role } : {}) }))),
      'project.removeUser': live((_s, cmd, id) => via(users.ask(cmd.user, { type: 'user.leave', by: cmd.by, project: id }))),
      // A lowered quota evicts nothing: it only refuses what would go beyond it.
      'project.setQuota': live((_s, cmd) => ({
        events: [{ type: 'ProjectQuotaSet', ...(cmd.nodes !== undefined ? { nodes: cmd.nodes } : {}), ...(cmd.networks !== undefined ? { networks: cmd.networks } : {}),
          ...(cmd.headnodes !== undefined ? { headnodes: cmd.headnodes } : {}) }],
      })),
    },
  };
}
