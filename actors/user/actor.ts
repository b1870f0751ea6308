import { Behavior, assertNever, needsEntity } from '../runtime';
import { duplicate, notFound } from '../errors';
import type { UserCommand, UserEvent, UserReplies, UserState } from './protocol';

export function userBehavior(): Behavior<UserState, UserCommand, UserEvent, UserReplies> {
  /** A command on an existing user. */
  const live = needsEntity<UserState>((id) => notFound(`user ${id}`));

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

    decide: {
      'user.create': (state, cmd, id) => {
        if (state) throw duplicate(`user ${id}`);
        return { events: [{ type: 'UserCreated', passwordHash: cmd.passwordHash, isAdmin: cmd.isAdmin }] };
      },
      'user.delete': live(() => ({ events: [{ type: 'UserDeleted' }] })),
      'user.setAdmin': live((_state, cmd) => ({ events: [{ type: 'UserAdminSet', isAdmin: cmd.isAdmin }] })),
      'user.join': live((state, cmd, id) => {
        if (state.projects.includes(cmd.project)) throw duplicate(`membership of user ${id} in project ${cmd.project}`);
        return { events: [{ type: 'UserJoined', project: cmd.project }] };
      }),
      'user.leave': (state, cmd, id) => {
        // project_delete removing its members: a user deleted meanwhile, or no longer a member, is simply not one.
        if (!state) {
          if (cmd.ifMember) return { events: [] };
          throw notFound(`user ${id}`);
        }
        if (!state.projects.includes(cmd.project)) {
          if (cmd.ifMember) return { events: [] };
          throw notFound(`membership of user ${id} in project ${cmd.project}`);
        }
        return { events: [{ type: 'UserLeft', project: cmd.project }] };
      },
    },
  };
}
