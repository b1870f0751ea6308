/**
 * A nic's state from its events: the pure apply that a live actor, a rebuild and a checkpoint's
 * replay share. What this module and its imports compile to names the checkpoint's build
 * (actors/checkpoint.ts): keep it free of anything but the state's derivation.
 */
import { assertNever, type Stamp } from '../behavior';
import { splitId } from '../ids';
import { RECENT_ACTIONS, type NetworkAction, type NicEvent, type NicState } from './protocol';

/** Replace one action (by seq) in the history and in the pending slot; apply its effect when DONE. */
function finish(state: NicState, seq: number, status: 'DONE' | 'ERROR', at: number | undefined, error?: string): NicState {
  const action = state.actions.find((a) => a.seq === seq);
  if (!action) return state;
  const done: NetworkAction = { ...action, status, finishedAt: at, ...(error !== undefined ? { error } : {}) };
  let networks = state.networks;
  if (status === 'DONE') {
    if (action.type === 'revert_port') networks = {};
    else if (action.type === 'reapply_port') networks = state.networks;
    else if (action.newNetwork) networks = { ...networks, [action.channel]: action.newNetwork };
    else {
      const { [action.channel]: _gone, ...rest } = networks;
      networks = rest;
    }
  }
  return {
    ...state,
    networks,
    pending: state.pending?.seq === seq ? null : state.pending,
    actions: state.actions.map((a) => (a.seq === seq ? done : a)),
  };
}

export function applyNic(state: NicState | null, e: NicEvent & Stamp, id: string): NicState | null {
  switch (e.type) {
    case 'NicRegistered': {
      const [node, name] = splitId(id);
      return {
        node, name, incarnation: e.incarnation, nodeIncarnation: e.nodeIncarnation, registeredAt: e.at ?? 0, macaddr: e.macaddr,
        networks: {}, pending: null, lastSeq: 0, actions: [],
      };
    }
    case 'NicDeleted':
      return null;
    case 'NetworkActionQueued': {
      if (!state) return state;
      const a = e.action;
      const actions = [...state.actions, a];
      // Trim the oldest finished statuses; a pending one is never dropped.
      for (let i = 0; actions.length > RECENT_ACTIONS && i < actions.length; ) {
        if (actions[i].status === 'PENDING') i++;
        else actions.splice(i, 1);
      }
      return { ...state, lastSeq: Math.max(state.lastSeq, a.seq), actions, pending: a };
    }
    case 'NetworkActionDone':
      return state && finish(state, e.seq, 'DONE', e.at);
    case 'NetworkActionFailed':
      return state && finish(state, e.seq, 'ERROR', e.at, e.error);
    case 'NicNetworkForceDetached': {
      if (!state) return state;
      const { [e.channel]: _gone, ...networks } = state.networks;
      return { ...state, networks };
    }
    default:
      return assertNever(e);
  }
}
