/**
 * A user's state from its events: the pure apply that a live actor, a rebuild and a checkpoint's
 * replay share. What this module and its imports compile to names the checkpoint's build
 * (actors/checkpoint.ts): keep it free of anything but the state's derivation.
 */
import { assertNever, type Stamp } from '../behavior';
import type { TokenGrant, UserEvent, UserState } from './protocol';

/** Tokens that stay once the user leaves `project`: a token scoped to it dies with the membership. */
const outside = (tokens: TokenGrant[] | undefined, project: string) => tokens?.filter((t) => t.project !== project);

export function applyUser(state: UserState | null, e: UserEvent & Stamp, id: string): UserState | null {
  switch (e.type) {
    case 'UserCreated':
      return { name: id, passwordHash: e.passwordHash, isAdmin: e.isAdmin, ...(e.auditor ? { auditor: true } : {}), projects: [] };
    case 'UserDeleted':
      return null;
    case 'UserAdminSet': {
      if (!state) return state;
      const { auditor: _, ...rest } = state;
      return { ...rest, isAdmin: e.isAdmin };
    }
    case 'UserRoleSet': {
      if (!state) return state;
      const { auditor: _, ...rest } = state;
      return { ...rest, isAdmin: e.role === 'admin', ...(e.role === 'auditor' ? { auditor: true } : {}) };
    }
    case 'UserJoined':
      if (!state) return state;
      return e.role === 'reader'
        ? { ...state, readerOf: [...(state.readerOf ?? []), e.project] }
        : { ...state, projects: [...state.projects, e.project] };
    case 'UserLeft':
      return state && {
        ...state,
        projects: state.projects.filter((p) => p !== e.project),
        ...(state.readerOf ? { readerOf: state.readerOf.filter((p) => p !== e.project) } : {}),
        ...(state.tokens ? { tokens: outside(state.tokens, e.project) } : {}),
      };
    case 'TokenCreated': {
      if (!state) return state;
      // Expired tokens go when a new one is made (at the event's time: apply stays pure).
      const now = e.at ?? e.grant.createdAt;
      return { ...state, tokens: [...(state.tokens ?? []).filter((t) => t.expiresAt > now), e.grant] };
    }
    case 'TokenRevoked':
      return state && { ...state, tokens: (state.tokens ?? []).filter((t) => t.id !== e.id) };
    case 'TokenUsed':
      return state && { ...state, tokens: (state.tokens ?? []).map((t) => (t.id === e.id ? { ...t, lastUsedAt: e.at } : t)) };
    default:
      return assertNever(e);
  }
}
