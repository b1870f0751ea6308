import { Behavior, assertNever } from '../runtime';
import { duplicate, notFound, blocked } from '../errors';
import { splitId } from '../ids';
import type { PortHardware } from '../../hardware/port-hardware';
import { configAfter, sameConfig } from './config';
import { EMPTY_CONFIG, PortCommand, PortEvent, PortState } from './protocol';

/** What the port actor needs: its hardware path. */
export interface PortDeps {
  hardware: PortHardware;
}

export function portBehavior({ hardware }: PortDeps): Behavior<PortState, PortCommand, PortEvent> {
  return {
    kind: 'port',

    apply(state, e, id) {
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
          // Only a free node's nic is unwired, and it carries no network: the service holds nothing for the port.
          return state && { ...state, wire: null, config: EMPTY_CONFIG };
        case 'PortConfigured':
          return state && { ...state, config: e.config };
        default:
          return assertNever(e);
      }
    },

    decide(state, cmd, id) {
      const [sw, port] = splitId(id);
      if (cmd.type === 'port.register') {
        if (state) throw duplicate(`port ${port} of switch ${sw}`);
        return { events: [{ type: 'PortRegistered' }] };
      }
      if (!state) throw notFound(`port ${port} of switch ${sw}`);
      const wire = state.wire;
      switch (cmd.type) {
        case 'port.delete':
          if (wire) throw blocked(`port ${port} of switch ${sw} is connected to a nic`);
          return { events: [{ type: 'PortDeleted' }] };
        case 'port.wire':
          if (wire) throw duplicate(`a nic connection of port ${port} of switch ${sw}`);
          return { events: [{ type: 'PortWired', node: cmd.node, nic: cmd.nic }] };
        case 'port.unwire':
          if (!wire || wire.node !== cmd.node || wire.nic !== cmd.nic) throw notFound(`a nic connection of port ${port} of switch ${sw}`);
          return { events: [{ type: 'PortUnwired' }] };
        case 'port.apply':
          // A nic with a pending operation cannot be unwired, so this holds; an outcome, not a refusal, if not.
          if (!wire || wire.node !== cmd.node || wire.nic !== cmd.nic) {
            return { events: [], value: `port ${port} of switch ${sw} is no longer wired to nic ${cmd.nic} of node ${cmd.node}` };
          }
          // Deferred: answered when the switch is done, while this mailbox goes on.
          return { events: [], value: hardware.apply(state, cmd.change) };
        case 'port.configured': {
          // A record for the wiring it was made for only: a port rewired meanwhile holds its own.
          const sameWire = cmd.wire === wire || (!!cmd.wire && !!wire && cmd.wire.node === wire.node && cmd.wire.nic === wire.nic);
          if (!sameWire || sameConfig(state.config, cmd.config)) return { events: [] };
          return { events: [{ type: 'PortConfigured', config: cmd.config }] };
        }
        case 'port.forget': {
          const config = configAfter(hardware.current(state), { kind: 'detach', native: cmd.native, vlan: cmd.vlan });
          // A change of this port not written yet must not put the VLAN back.
          hardware.supersede(state, config);
          // A port left with nothing is shut in the background (hardware/port-hardware.ts).
          return { events: sameConfig(state.config, config) ? [] : [{ type: 'PortConfigured', config }], afterCommit: () => hardware.shutIfInactive(state, config) };
        }
        case 'port.check':
          // Deferred like port.apply: the port is the only caller of hardware for itself.
          return { events: [], value: hardware.check(state, { repair: cmd.repair, batch: cmd.batch }) };
        default:
          return assertNever(cmd);
      }
    },
  };
}
