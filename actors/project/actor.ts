import { Behavior, assertNever } from '../runtime';
import { HiltError, duplicate, notFound, blocked } from '../../src/errors';
import type { World } from '../world';
import type { ProjectCommand, ProjectEvent, ProjectState } from './protocol';

export function projectBehavior(world: World): Behavior<ProjectState, ProjectCommand, ProjectEvent> {
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
        // decisions.md §4: deleting a missing project is a 409 (the spec's wording), not a 404.
        if (cmd.type === 'project.delete') throw new HiltError('IllegalStateError', `project ${id} does not exist`);
        throw notFound(`project ${id}`);
      }
      const rm = world.rm;
      switch (cmd.type) {
        case 'project.delete': {
          if (rm.nodesByProject.get(id).size) throw blocked(`project ${id} still has nodes`);
          if (rm.networksByOwner.get(id).size) throw blocked(`project ${id} still owns networks`);
          if (rm.networksByAccess.get(id).size) throw blocked(`project ${id} still has access to networks`);
          if (rm.headnodesByProject.get(id).size) throw blocked(`project ${id} still has headnodes`);
          // Memberships go first: every join goes through this mailbox, so none can slip in.
          for (const user of [...rm.membersByProject.get(id)]) {
            await world.users.ask(user, { type: 'user.leave', by: cmd.by, project: id, ifMember: true });
          }
          return { events: [{ type: 'ProjectDeleted' }] };
        }
        case 'project.connectNode':
          await world.nodes.ask(cmd.node, { type: 'node.assign', by: cmd.by, project: id });
          return { events: [] };
        case 'project.detachNode':
          await world.nodes.ask(cmd.node, { type: 'node.release', by: cmd.by, project: id });
          return { events: [] };
        case 'project.createNetwork':
          await world.networks.ask(cmd.network, { type: 'network.create', by: cmd.by, spec: cmd.spec });
          return { events: [] };
        case 'project.grantNetwork':
          await world.networks.ask(cmd.network, { type: 'network.grant', by: cmd.by, project: id });
          return { events: [] };
        case 'project.createHeadnode':
          await world.headnodes.ask(cmd.headnode, { type: 'headnode.create', by: cmd.by, project: id, baseImg: cmd.baseImg });
          return { events: [] };
        case 'project.addUser':
          await world.users.ask(cmd.user, { type: 'user.join', by: cmd.by, project: id });
          return { events: [] };
        case 'project.removeUser':
          await world.users.ask(cmd.user, { type: 'user.leave', by: cmd.by, project: id });
          return { events: [] };
        default:
          return assertNever(cmd);
      }
    },
  };
}
