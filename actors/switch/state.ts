/**
 * A switch's state from its events: the pure apply that a live actor, a rebuild and a checkpoint's
 * replay share. What this module and its imports compile to names the checkpoint's build
 * (actors/checkpoint.ts): keep it free of anything but the state's derivation.
 */
import { assertNever, type Stamp } from '../behavior';
import type { SwitchEvent, SwitchState } from './protocol';

export function applySwitch(state: SwitchState | null, e: SwitchEvent & Stamp, id: string): SwitchState | null {
  switch (e.type) {
    case 'SwitchRegistered':
      return { name: id, type: e.switchType, fields: e.fields, ...(e.hostKey ? { hostKey: e.hostKey } : {}) };
    case 'SwitchHostKeyRecorded':
      return state && { ...state, hostKey: e.fingerprint };
    case 'SwitchHostKeyCleared': {
      if (!state) return state;
      const { hostKey: _gone, ...rest } = state;
      return rest;
    }
    case 'SwitchDeleted':
      return null;
    case 'SwitchUpgraded':
      return e.state;
    // The first data format's port events: the port actors hold those facts now.
    case 'PortRegistered':
    case 'PortDeleted':
    case 'PortWired':
    case 'PortUnwired':
      return state;
    default:
      return assertNever(e);
  }
}
