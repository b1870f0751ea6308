import { randomUUID } from 'node:crypto';
import { Behavior, Decision, assertNever } from '../runtime';
import { HiltError, duplicate, notFound, blocked, conflict, unauthorized } from '../../src/errors';
import { nicKey } from '../readmodel';
import type { World } from '../world';
import { RECENT_ACTIONS, upcastObm, NetworkAction, NodeCommand, NodeEvent, NodeState, NicState } from './protocol';
import { own } from '../own';

const NATIVE = 'vlan/native';

/** 12 random hex digits. randomUUID draws from a pool; a randomBytes call per registration cost ~4% of node_register's CPU. */
const newIncarnation = () => randomUUID().replace(/-/g, '').slice(0, 12);

/** Replace one action (by seq) in the history and in its nic's pending slot. */
function finish(state: NodeState, seq: number, status: 'DONE' | 'ERROR', at: number | undefined, error?: string): NodeState {
  const action = state.actions.find((a) => a.seq === seq);
  if (!action) return state;
  const done: NetworkAction = { ...action, status, finishedAt: at, ...(error !== undefined ? { error } : {}) };
  const nic = own(state.nics, action.nic);
  let nics = state.nics;
  if (nic) {
    let networks = nic.networks;
    if (status === 'DONE') {
      if (action.type === 'revert_port') networks = {};
      else if (action.newNetwork) networks = { ...networks, [action.channel]: action.newNetwork };
      else {
        const { [action.channel]: _gone, ...rest } = networks;
        networks = rest;
      }
    }
    nics = { ...state.nics, [action.nic]: { ...nic, networks, pending: nic.pending?.seq === seq ? null : nic.pending } };
  }
  return { ...state, nics, actions: state.actions.map((a) => (a.seq === seq ? done : a)) };
}

/** The node moved to another project since the route authorized the caller through `project`. */
function stillAuthorized(state: NodeState, id: string, project: string | null): void {
  if (project !== null && state.project !== project) throw unauthorized(`node ${id} no longer belongs to project ${project}`);
}

export function nodeBehavior(world: World): Behavior<NodeState, NodeCommand, NodeEvent> {
  const rm = world.rm;

  /** The nic of a node in a project that is wired to a switch port, for a network operation. */
  function wiredNic(state: NodeState, id: string, nic: string): { st: NicState; port: { switch: string; port: string } } {
    const st = own(state.nics, nic);
    if (!st) throw notFound(`nic ${nic} of node ${id}`);
    const port = rm.wiring.get(nicKey(id, nic));
    if (!port) throw notFound(`a switch port connected to nic ${nic} of node ${id}`);
    return { st, port };
  }

  function queue(state: NodeState, id: string, action: Omit<NetworkAction, 'seq' | 'status' | 'acceptedAt'>, extra: Partial<Decision<NodeEvent>> = {}): Decision<NodeEvent> {
    const seq = state.nextSeq;
    return {
      events: [{ type: 'NetworkActionQueued', action: { ...action, seq, status: 'PENDING', acceptedAt: Date.now() } }],
      value: seq,
      ...extra,
      afterCommit: () => world.pumpActions(id),
    };
  }

  return {
    kind: 'node',

    apply(state, e, id) {
      switch (e.type) {
        case 'NodeRegistered':
          return {
            name: id, incarnation: e.incarnation, project: null, obm: upcastObm(e.obm), ...(e.metadata ? { metadata: e.metadata } : {}),
            nics: {}, nextSeq: 1, actions: [],
          };
        case 'NodeDeleted':
          return null;
        case 'NicRegistered':
          return state && { ...state, nics: { ...state.nics, [e.nic]: { macaddr: e.macaddr, networks: {}, pending: null } } };
        case 'NicDeleted': {
          if (!state) return state;
          const { [e.nic]: _gone, ...nics } = state.nics;
          return { ...state, nics };
        }
        case 'NodeAssigned':
          return state && { ...state, project: e.project };
        case 'NodeReleased':
          return state && { ...state, project: null };
        case 'NetworkActionQueued': {
          if (!state) return state;
          const a = e.action;
          const nic = own(state.nics, a.nic);
          let actions = [...state.actions, a];
          // Trim the oldest finished statuses; a pending one is never dropped.
          for (let i = 0; actions.length > RECENT_ACTIONS && i < actions.length; ) {
            if (actions[i].status === 'PENDING') i++;
            else actions.splice(i, 1);
          }
          return {
            ...state,
            nextSeq: a.seq + 1,
            actions,
            nics: nic ? { ...state.nics, [a.nic]: { ...nic, pending: a } } : state.nics,
          };
        }
        case 'NetworkActionDone':
          return state && finish(state, e.seq, 'DONE', e.at);
        case 'NetworkActionFailed':
          return state && finish(state, e.seq, 'ERROR', e.at, e.error);
        case 'NicNetworkForceDetached': {
          const nic = state && own(state.nics, e.nic);
          if (!state || !nic) return state;
          const { [e.channel]: _gone, ...networks } = nic.networks;
          return { ...state, nics: { ...state.nics, [e.nic]: { ...nic, networks } } };
        }
        default:
          return assertNever(e);
      }
    },

    async decide(state, cmd, id) {
      if (cmd.type === 'node.register') {
        if (state) throw duplicate(`node ${id}`);
        return { events: [{ type: 'NodeRegistered', obm: cmd.obm, metadata: cmd.metadata, incarnation: newIncarnation() }] };
      }
      if (!state) throw notFound(`node ${id}`);
      const anyPending = () => Object.values(state.nics).some((n) => n.pending);
      switch (cmd.type) {
        case 'node.delete':
          if (state.project) throw blocked(`node ${id} belongs to project ${state.project}`);
          if (Object.keys(state.nics).length) throw blocked(`node ${id} still has nics`);
          return { events: [{ type: 'NodeDeleted' }] };
        case 'node.registerNic':
          if (own(state.nics, cmd.nic)) throw duplicate(`nic ${cmd.nic} of node ${id}`);
          return { events: [{ type: 'NicRegistered', nic: cmd.nic, macaddr: cmd.macaddr }] };
        case 'node.deleteNic': {
          const nic = own(state.nics, cmd.nic);
          if (!nic) throw notFound(`nic ${cmd.nic} of node ${id}`);
          if (Object.keys(nic.networks).length) throw blocked(`nic ${cmd.nic} of node ${id} is attached to a network`);
          if (nic.pending) throw blocked(`nic ${cmd.nic} of node ${id} has a pending network operation`);
          // Deleting a wired nic frees its port (the switch owns that fact: ask it first).
          const wired = rm.wiring.get(nicKey(id, cmd.nic));
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
          if (anyPending()) throw blocked(`node ${id} has pending network operations`);
          return { events: [{ type: 'NodeReleased', project: cmd.project }] };
        case 'node.wireNic':
          if (!own(state.nics, cmd.nic)) throw notFound(`nic ${cmd.nic} of node ${id}`);
          if (rm.wiring.has(nicKey(id, cmd.nic))) throw duplicate(`a port connection of nic ${cmd.nic} of node ${id}`);
          await world.switches.ask(cmd.switch, { type: 'switch.wirePort', by: cmd.by, port: cmd.port, node: id, nic: cmd.nic });
          return { events: [] };
        case 'node.unwireNic':
          if (state.project) throw blocked(`node ${id} belongs to project ${state.project}`);
          // A queued revert or re-apply still targets this port: it must not reach a port
          // that is meanwhile wired to another nic.
          if (own(state.nics, cmd.nic)?.pending) throw blocked(`nic ${cmd.nic} of node ${id} has a pending network operation`);
          await world.switches.ask(cmd.switch, { type: 'switch.unwirePort', by: cmd.by, port: cmd.port, node: id, nic: cmd.nic });
          return { events: [] };

        case 'node.connectNetwork': {
          // decisions.md §8, after the route's node 404 → nic 404 → network 404 → free 409 → auth.
          if (!state.project) throw conflict(`node ${id} is free: it belongs to no project`);
          stillAuthorized(state, id, cmd.project);
          const { st, port } = wiredNic(state, id, cmd.nic);
          if (st.pending) throw conflict(`nic ${cmd.nic} of node ${id} already has a pending network operation`);
          const net = rm.networks.get(cmd.network);
          if (!net) throw notFound(`network ${cmd.network}`);
          if (net.access.length && !net.access.includes(state.project)) {
            throw conflict(`project ${state.project} has no access to network ${cmd.network}`);
          }
          if (Object.values(st.networks).includes(cmd.network)) throw conflict(`network ${cmd.network} is already attached to nic ${cmd.nic}`);
          if (own(st.networks, cmd.channel)) throw conflict(`channel ${cmd.channel} of nic ${cmd.nic} is already in use`);
          if (cmd.channel !== NATIVE && cmd.channel !== `vlan/${net.vlan}`) {
            throw conflict(`channel ${cmd.channel} is not legal for network ${cmd.network} (vlan/native or vlan/${net.vlan})`);
          }
          const key = `${nicKey(id, cmd.nic)}\u0000${state.nextSeq}`;
          if (!world.uses.reserve(cmd.network, key, state.project)) throw conflict(`network ${cmd.network} is being changed; try again`);
          return queue(state, id, {
            nic: cmd.nic, type: 'modify_port', channel: cmd.channel, newNetwork: cmd.network, vlan: net.vlan, ...port,
          }, { settle: () => world.uses.release(cmd.network, key) });
        }
        case 'node.detachNetwork': {
          // decisions.md §8: … pending 409 → not attached 409; the wiring is no step of its own
          // (an attached nic is wired: a node in a project cannot be unwired).
          if (!state.project) throw conflict(`node ${id} is free: it belongs to no project`);
          stillAuthorized(state, id, cmd.project);
          const st = own(state.nics, cmd.nic);
          if (!st) throw notFound(`nic ${cmd.nic} of node ${id}`);
          if (st.pending) throw conflict(`nic ${cmd.nic} of node ${id} already has a pending network operation`);
          const channel = Object.keys(st.networks).find((c) => st.networks[c] === cmd.network);
          if (!channel) throw conflict(`network ${cmd.network} is not attached to nic ${cmd.nic} of node ${id}`);
          const { port } = wiredNic(state, id, cmd.nic);
          return queue(state, id, {
            nic: cmd.nic, type: 'modify_port', channel, newNetwork: null, oldNetwork: cmd.network, vlan: rm.networks.get(cmd.network)?.vlan, ...port,
          });
        }
        case 'node.revertPort': {
          const { st, port } = wiredNic(state, id, cmd.nic);
          if (st.pending) throw conflict(`nic ${cmd.nic} of node ${id} already has a pending network operation`);
          return queue(state, id, { nic: cmd.nic, type: 'revert_port', channel: '', newNetwork: null, ...port });
        }
        case 'node.reapplyPort': {
          const { st, port } = wiredNic(state, id, cmd.nic);
          if (st.pending) throw conflict(`nic ${cmd.nic} of node ${id} already has a pending network operation`);
          return queue(state, id, { nic: cmd.nic, type: 'reapply_port', channel: '', newNetwork: null, config: world.portConfig(id, cmd.nic), ...port });
        }
        case 'node.forceDetach': {
          const st = own(state.nics, cmd.nic);
          if (!st) throw notFound(`nic ${cmd.nic} of node ${id}`);
          if (st.pending) throw conflict(`nic ${cmd.nic} of node ${id} has a pending network operation`);
          const channel = Object.keys(st.networks).find((c) => st.networks[c] === cmd.network);
          if (!channel) throw conflict(`network ${cmd.network} is not attached to nic ${cmd.nic} of node ${id}`);
          return { events: [{ type: 'NicNetworkForceDetached', nic: cmd.nic, channel, network: cmd.network }] };
        }
        case 'node.actionFinished': {
          const action = state.actions.find((a) => a.seq === cmd.seq);
          // Already finished (e.g. replayed after a restart): nothing to record.
          if (!action || action.status !== 'PENDING') return { events: [] };
          const event: NodeEvent = cmd.error === null
            ? { type: 'NetworkActionDone', seq: cmd.seq }
            : { type: 'NetworkActionFailed', seq: cmd.seq, error: cmd.error };
          return { events: [event] };
        }
        default:
          return assertNever(cmd);
      }
    },
  };
}
