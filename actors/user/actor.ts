import { Behavior, assertNever } from '../runtime';
import { duplicate, notFound } from '../errors';
import type { UserCommand, UserEvent, UserState } from './protocol';

export function userBehavior(): Behavior<UserState, UserCommand, UserEvent> {
  return {
    kind: 'user',

    apply(state, e, id) {
      switch (e.type) {
        case 'UserCreated':
          return { name: id, passwordHash: e.passwordHash, isAdmin: e.isAdmin, projects: [] };
        case 'UserDeleted':
          return null;
        case 'UserAdminSet':
          return state && { ...state, isAdmin: e.isAdmin };
        case 'UserJoined':
          return state && { ...state, projects: [...state.projects, e.project] };
        case 'UserLeft':
          return state && { ...state, projects: state.projects.filter((p) => p !== e.project) };
        default:
          return assertNever(e);
      }
    },

    decide(state, cmd, id) {
      if (cmd.type === 'user.create') {
        if (state) throw duplicate(`user ${id}`);
        return { events: [{ type: 'UserCreated', passwordHash: cmd.passwordHash, isAdmin: cmd.isAdmin }] };
      }
      if (!state) {
        // project_delete removing its members: one deleted meanwhile is simply not a member.
        if (cmd.type === 'user.leave' && cmd.ifMember) return { events: [] };
        throw notFound(`user ${id}`);
      }
      switch (cmd.type) {
        case 'user.delete':
          return { events: [{ type: 'UserDeleted' }] };
        case 'user.setAdmin':
          return { events: [{ type: 'UserAdminSet', isAdmin: cmd.isAdmin }] };
        case 'user.join':
          if (state.projects.includes(cmd.project)) throw duplicate(`membership of user ${id} in project ${cmd.project}`);
          return { events: [{ type: 'UserJoined', project: cmd.project }] };
        case 'user.leave':
          if (!state.projects.includes(cmd.project)) {
            if (cmd.ifMember) return { events: [] };
            throw notFound(`membership of user ${id} in project ${cmd.project}`);
          }
          return { events: [{ type: 'UserLeft', project: cmd.project }] };
        default:
          return assertNever(cmd);
      }
    },
  };
}
