import { Behavior, assertNever } from '../runtime';
import { HiltError, duplicate, notFound, blocked } from '../../src/errors';
import { nicKey } from '../readmodel';
import type { World } from '../world';
import type { NodeCommand, NodeEvent, NodeState } from './protocol';

export function nodeBehavior(world: World): Behavior<NodeState, NodeCommand, NodeEvent> {
  return {
    kind: 'node',

    apply(state, e, id) {
      switch (e.type) {
        case 'NodeRegistered':
          return { name: id, project: null, obm: e.obm, ...(e.metadata ? { metadata: e.metadata } : {}), nics: {} };
        case 'NodeDeleted':
          return null;
        case 'NicRegistered':
          return state && { ...state, nics: { ...state.nics, [e.nic]: { macaddr: e.macaddr, networks: {} } } };
        case 'NicDeleted': {
          if (!state) return state;
          const { [e.nic]: _gone, ...nics } = state.nics;
          return { ...state, nics };
        }
        case 'NodeAssigned':
          return state && { ...state, project: e.project };
        case 'NodeReleased':
          return state && { ...state, project: null };
        default:
          return assertNever(e);
      }
    },

    async decide(state, cmd, id) {
      if (cmd.type === 'node.register') {
        if (state) throw duplicate(`node ${id}`);
        return { events: [{ type: 'NodeRegistered', obm: cmd.obm, metadata: cmd.metadata }] };
      }
      if (!state) throw notFound(`node ${id}`);
      switch (cmd.type) {
        case 'node.delete':
          if (state.project) throw blocked(`node ${id} belongs to project ${state.project}`);
          if (Object.keys(state.nics).length) throw blocked(`node ${id} still has nics`);
          return { events: [{ type: 'NodeDeleted' }] };
        case 'node.registerNic':
          if (state.nics[cmd.nic]) throw duplicate(`nic ${cmd.nic} of node ${id}`);
          return { events: [{ type: 'NicRegistered', nic: cmd.nic, macaddr: cmd.macaddr }] };
        case 'node.deleteNic': {
          const nic = state.nics[cmd.nic];
          if (!nic) throw notFound(`nic ${cmd.nic} of node ${id}`);
          if (Object.keys(nic.networks).length) throw blocked(`nic ${cmd.nic} of node ${id} is attached to a network`);
          // Deleting a wired nic frees its port (the switch owns that fact: ask it first).
          const wired = world.rm.wiring.get(nicKey(id, cmd.nic));
          if (wired) {
            await world.switches.ask(wired.switch, { type: 'switch.unwirePort', by: cmd.by, port: wired.port, node: id, nic: cmd.nic });
          }
          return { events: [{ type: 'NicDeleted', nic: cmd.nic }] };
        }
        case 'node.assign':
          if (state.project) throw blocked(`node ${id} is not free`);
          return { events: [{ type: 'NodeAssigned', project: cmd.project }] };
        case 'node.release':
          if (state.project !== cmd.project) throw new HiltError('ProjectMismatchError', `node ${id} does not belong to project ${cmd.project}`);
          if (Object.values(state.nics).some((n) => Object.keys(n.networks).length)) {
            throw blocked(`node ${id} is attached to a network`);
          }
          return { events: [{ type: 'NodeReleased', project: cmd.project }] };
        case 'node.wireNic':
          if (!state.nics[cmd.nic]) throw notFound(`nic ${cmd.nic} of node ${id}`);
          if (world.rm.wiring.has(nicKey(id, cmd.nic))) throw duplicate(`a port connection of nic ${cmd.nic} of node ${id}`);
          await world.switches.ask(cmd.switch, { type: 'switch.wirePort', by: cmd.by, port: cmd.port, node: id, nic: cmd.nic });
          return { events: [] };
        case 'node.unwireNic':
          if (state.project) throw blocked(`node ${id} belongs to project ${state.project}`);
          await world.switches.ask(cmd.switch, { type: 'switch.unwirePort', by: cmd.by, port: cmd.port, node: id, nic: cmd.nic });
          return { events: [] };
        default:
          return assertNever(cmd);
      }
    },
  };
}
