/**
 * A port's state from its events: the pure apply that a live actor, a rebuild and a checkpoint's
 * replay share. What this module and its imports compile to names the checkpoint's build
 * (actors/checkpoint.ts): keep it free of anything but the state's derivation.
 */
import { assertNever, type Stamp } from '../behavior';
import { splitId } from '../ids';
import { EMPTY_CONFIG, type PortEvent, type PortState } from './protocol';

export function applyPort(state: PortState | null, e: PortEvent & Stamp, id: string): PortState | null {
  switch (e.type) {
    case 'PortRegistered': {
      const [sw, name] = splitId(id);
      return { switch: sw, name, registeredAt: e.at ?? 0, wire: null, config: EMPTY_CONFIG };
    }
    case 'PortDeleted':
      return null;
    case 'PortWired':
      return state && { ...state, wire: { node: e.node, nic: e.nic } };
    case 'PortUnwired':
      // Only a free node's nic is unwired, and it carries no network: the service holds nothing for
      // the port. A doubt stays with the port (a node is released only once its ports are out of doubt).
      return state && { ...state, wire: null, config: EMPTY_CONFIG };
    case 'PortConfigured':
      return state && { ...state, config: e.config };
    case 'PortInDoubt': {
      if (!state) return state;
      const vlans = [...new Set([...(state.doubt?.vlans ?? []), ...e.vlans])].sort((a, b) => a - b);
      return { ...state, doubt: { vlans, since: state.doubt?.since ?? e.at ?? 0 } };
    }
    case 'PortDoubtCleared': {
      if (!state) return state;
      const { doubt: _cleared, setBackOwed: _owed, ...rest } = state;
      return rest;
    }
    case 'PortDoubtClearedByHand': {
      // The holds end; the set-back is still owed until the switch confirms the port.
      if (!state) return state;
      const { doubt: _cleared, ...rest } = state;
      const vlans = [...new Set([...(state.setBackOwed?.vlans ?? []), ...e.vlans])].sort((a, b) => a - b);
      return { ...rest, setBackOwed: { vlans, since: state.setBackOwed?.since ?? e.at ?? 0 } };
    }
    default:
      return assertNever(e);
  }
}
