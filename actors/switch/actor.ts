import { Behavior, assertNever } from '../runtime';
import { duplicate, notFound, blocked } from '../../src/errors';
import type { SwitchCommand, SwitchEvent, SwitchState } from './protocol';

export function switchBehavior(): Behavior<SwitchState, SwitchCommand, SwitchEvent> {
  return {
    kind: 'switch',

    apply(state, e, id) {
      switch (e.type) {
        case 'SwitchRegistered':
          return { name: id, type: e.switchType, fields: e.fields, ports: {} };
        case 'SwitchDeleted':
          return null;
        case 'PortRegistered':
          return state && { ...state, ports: { ...state.ports, [e.port]: null } };
        case 'PortDeleted': {
          if (!state) return state;
          const { [e.port]: _gone, ...ports } = state.ports;
          return { ...state, ports };
        }
        case 'PortWired':
          return state && { ...state, ports: { ...state.ports, [e.port]: { node: e.node, nic: e.nic } } };
        case 'PortUnwired':
          return state && { ...state, ports: { ...state.ports, [e.port]: null } };
        default:
          return assertNever(e);
      }
    },

    decide(state, cmd, id) {
      if (cmd.type === 'switch.register') {
        if (state) throw duplicate(`switch ${id}`);
        return { events: [{ type: 'SwitchRegistered', switchType: cmd.switchType, fields: cmd.fields }] };
      }
      if (!state) throw notFound(`switch ${id}`);
      if (cmd.type === 'switch.delete') {
        if (Object.keys(state.ports).length) throw blocked(`switch ${id} still has ports`);
        return { events: [{ type: 'SwitchDeleted' }] };
      }
      if (cmd.type === 'switch.registerPort') {
        if (Object.hasOwn(state.ports, cmd.port)) throw duplicate(`port ${cmd.port} of switch ${id}`);
        return { events: [{ type: 'PortRegistered', port: cmd.port }] };
      }
      if (!Object.hasOwn(state.ports, cmd.port)) throw notFound(`port ${cmd.port} of switch ${id}`);
      const wire = state.ports[cmd.port];
      switch (cmd.type) {
        case 'switch.deletePort':
          if (wire) throw blocked(`port ${cmd.port} of switch ${id} is connected to a nic`);
          return { events: [{ type: 'PortDeleted', port: cmd.port }] };
        case 'switch.wirePort':
          if (wire) throw duplicate(`a nic connection of port ${cmd.port} of switch ${id}`);
          return { events: [{ type: 'PortWired', port: cmd.port, node: cmd.node, nic: cmd.nic }] };
        case 'switch.unwirePort':
          if (!wire || wire.node !== cmd.node || wire.nic !== cmd.nic) throw notFound(`a nic connection of port ${cmd.port} of switch ${id}`);
          return { events: [{ type: 'PortUnwired', port: cmd.port }] };
        default:
          return assertNever(cmd);
      }
    },
  };
}
