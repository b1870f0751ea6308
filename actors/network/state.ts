/**
 * A network's state from its events: the pure apply that a live actor, a rebuild and a checkpoint's
 * replay share. What this module and its imports compile to names the checkpoint's build
 * (actors/checkpoint.ts): keep it free of anything but the state's derivation.
 */
import { assertNever, type Stamp } from '../behavior';
import type { NetworkEvent, NetworkState } from './protocol';

export function applyNetwork(state: NetworkState | null, e: NetworkEvent & Stamp, id: string): NetworkState | null {
  switch (e.type) {
    case 'NetworkCreated':
      return { name: id, owner: e.owner, access: e.access, vlan: e.vlan, dynamic: e.dynamic, pooled: e.pooled ?? e.dynamic };
    case 'NetworkDeleted':
      return null;
    case 'AccessGranted':
      return state && { ...state, access: [...state.access, e.project] };
    case 'AccessRevoked':
      return state && { ...state, access: state.access.filter((p) => p !== e.project) };
    default:
      return assertNever(e);
  }
}
