import { Behavior, needsEntity } from '../runtime';
import { duplicate, notFound, HiltError } from '../errors';
import { TOKENS_MAX, type UserCommand, type UserEvent, type UserReplies, type UserRole, type UserState } from './protocol';
import { applyUser } from './state';

/** The user's role, as the API shows it. */
export const roleOf = (u: UserState): UserRole => (u.isAdmin ? 'admin' : u.auditor ? 'auditor' : 'user');

const inProject = (state: UserState, p: string) => state.projects.includes(p) || !!state.readerOf?.includes(p);

export function userBehavior(): Behavior<UserState, UserCommand, UserEvent, UserReplies> {
  /** A command on an existing user. */
  const live = needsEntity<UserState>((id) => notFound(`user ${id}`));

  return {
    kind: 'user',

    apply: applyUser,

    decide: {
      'user.create': (state, cmd, id) => {
        if (state) throw duplicate(`user ${id}`);
        return { events: [{ type: 'UserCreated', passwordHash: cmd.passwordHash, isAdmin: cmd.isAdmin, ...(cmd.auditor ? { auditor: true } : {}) }] };
      },
      'user.delete': live(() => ({ events: [{ type: 'UserDeleted' }] })),
      // HIL's admin flag alone (docs/identity.md): false on a user that is no admin changes
      // nothing, so an auditor (shown with is_admin false) stays one; `user.setRole` ends that.
      'user.setAdmin': live((state, cmd) => {
        if (!cmd.isAdmin && !state.isAdmin) return { events: [] };
        return { events: [{ type: 'UserAdminSet', isAdmin: cmd.isAdmin }] };
      }),
      'user.setRole': live((_state, cmd) => ({ events: [{ type: 'UserRoleSet', role: cmd.role }] })),
      'user.join': live((state, cmd, id) => {
        if (inProject(state, cmd.project)) throw duplicate(`membership of user ${id} in project ${cmd.project}`);
        return { events: [{ type: 'UserJoined', project: cmd.project, ...(cmd.role === 'reader' ? { role: 'reader' as const } : {}) }] };
      }),
      'user.leave': (state, cmd, id) => {
        // project_delete removing its members: a user deleted meanwhile, or no longer a member, is simply not one.
        if (!state) {
          if (cmd.ifMember) return { events: [] };
          throw notFound(`user ${id}`);
        }
        if (!inProject(state, cmd.project)) {
          if (cmd.ifMember) return { events: [] };
          throw notFound(`membership of user ${id} in project ${cmd.project}`);
        }
        return { events: [{ type: 'UserLeft', project: cmd.project }] };
      },
      'user.createToken': live((state, cmd, id) => {
        const { grant } = cmd;
        // Checked here, where memberships change: a token is never scoped to a project its user has left.
        if (grant.project !== undefined && !inProject(state, grant.project)) {
          throw new HiltError('AuthorizationError', `user ${id} is not in project ${grant.project}: a token scoped to it needs a member or a reader`);
        }
        const unexpired = (state.tokens ?? []).filter((t) => t.expiresAt > grant.createdAt).length;
        if (unexpired >= TOKENS_MAX) throw new HiltError('IllegalStateError', `user ${id} has ${TOKENS_MAX} tokens already; revoke one first`);
        return { events: [{ type: 'TokenCreated', grant }] };
      }),
      'user.revokeToken': live((state, cmd) => {
        if (!state.tokens?.some((t) => t.id === cmd.id)) throw notFound(`token ${cmd.id}`);
        return { events: [{ type: 'TokenRevoked', id: cmd.id }] };
      }),
      // A use recorded after the user or the token is gone: nothing to record.
      'user.tokenUsed': (state, cmd) => (state?.tokens?.some((t) => t.id === cmd.id) ? { events: [{ type: 'TokenUsed', id: cmd.id, at: cmd.at }] } : { events: [] }),
    },
  };
}
