import { Behavior, needsEntity } from '../runtime';
import { duplicate, notFound, conflict, badArgument, projectMismatch, blocked } from '../errors';
import type { ReadModel } from '../readmodel';
import type { NetworkUseBook } from '../network/uses';
import type { BootSpec, HeadnodeCommand, HeadnodeEvent, HeadnodeReplies, HeadnodeState, Hnic } from './protocol';
import { applyHeadnode } from './state';

/** The VM's hnics with the VLAN of each attached network. */
export function bootSpec({ rm }: { rm: ReadModel }, state: HeadnodeState): BootSpec {
  return {
    baseImg: state.baseImg,
    // A network cannot be deleted while an hnic holds it, so its VLAN is there.
    hnics: state.hnics.map((h) => ({ name: h.name, vlan: h.network ? rm.networks.get(h.network)?.vlan ?? null : null })),
  };
}

/** What the headnode actor needs: the committed view and the network reservations. */
export interface HeadnodeDeps {
  rm: ReadModel;
  uses: NetworkUseBook;
}

export function headnodeBehavior({ rm, uses }: HeadnodeDeps): Behavior<HeadnodeState, HeadnodeCommand, HeadnodeEvent, HeadnodeReplies> {
  /** A command on an existing headnode. */
  const live = needsEntity<HeadnodeState>((id) => notFound(`headnode ${id}`));

  function hnicOf(state: HeadnodeState, id: string, hnic: string): Hnic {
    const h = state.hnics.find((x) => x.name === hnic);
    if (!h) throw notFound(`hnic ${hnic} of headnode ${id}`);
    return h;
  }

  /** hnics and networks change only before the first start (spec, Headnode rule 1). */
  function modifiable(state: HeadnodeState, id: string): void {
    if (state.status === 'created') return;
    if (state.status === 'deleting') throw conflict(`headnode ${id} is being deleted`);
    if (state.status === 'starting') throw conflict(`headnode ${id} is being started: its hnics can no longer change`);
    if (state.status === 'stopping' && !state.frozen) {
      throw conflict(`headnode ${id} failed to start and its VM may still run (${state.error}): its hnics change once a stop, start or delete has powered it off`);
    }
    throw conflict(`headnode ${id} has been started: its hnics and networks can no longer change`);
  }

  return {
    kind: 'headnode',

    apply: applyHeadnode,

    // docs/api-conventions.md §9 orders, after the route's headnode 404 → auth.
    decide: {
      'headnode.create': (state, cmd, id) => {
        if (state) throw duplicate(`headnode ${id}`);
        if (cmd.overQuota) throw blocked(cmd.overQuota);
        return { events: [{ type: 'HeadnodeCreated', project: cmd.project, baseImg: cmd.baseImg }] };
      },
      'headnode.createHnic': live((state, cmd, id) => {
        if (state.hnics.some((h) => h.name === cmd.hnic)) throw duplicate(`hnic ${cmd.hnic} of headnode ${id}`);
        modifiable(state, id);
        return { events: [{ type: 'HnicCreated', hnic: cmd.hnic }] };
      }),
      'headnode.deleteHnic': live((state, cmd, id) => {
        hnicOf(state, id, cmd.hnic);
        modifiable(state, id);
        return { events: [{ type: 'HnicDeleted', hnic: cmd.hnic }] };
      }),
      'headnode.connectNetwork': live((state, cmd, id) => {
        const h = hnicOf(state, id, cmd.hnic);
        const net = rm.networks.get(cmd.network);
        if (!net) throw notFound(`network ${cmd.network}`);
        if (!net.dynamic) throw badArgument(`network ${cmd.network} has an id assigned by an administrator; headnodes take only networks with an allocated id`);
        modifiable(state, id);
        if (net.access.length && !net.access.includes(state.project)) {
          throw projectMismatch(`project ${state.project} has no access to network ${cmd.network}`);
        }
        if (h.network === cmd.network) return { events: [] };
        // Closes the window against a concurrent network_delete or revoke (see network/uses.ts).
        const key = `headnode\u0000${id}\u0000${cmd.hnic}`;
        if (!uses.reserve(cmd.network, key, state.project)) throw conflict(`network ${cmd.network} is being changed; try again`);
        return {
          events: [{ type: 'HnicNetworkConnected', hnic: cmd.hnic, network: cmd.network }],
          settle: () => uses.release(cmd.network, key),
        };
      }),
      'headnode.detachNetwork': live((state, cmd, id) => {
        const h = hnicOf(state, id, cmd.hnic);
        modifiable(state, id);
        return { events: h.network ? [{ type: 'HnicNetworkDetached', hnic: cmd.hnic }] : [] };
      }),

      'headnode.beginStart': live((state, _cmd, id) => {
        if (state.status === 'running') throw conflict(`headnode ${id} is already running`);
        if (state.status !== 'created' && state.status !== 'stopped' && state.status !== 'died') {
          throw conflict(`headnode ${id} is ${state.status}`);
        }
        return { events: [{ type: 'HeadnodeStartRequested' }], value: bootSpec({ rm }, state) };
      }),
      'headnode.endStart': live((state, cmd) => {
        if (state.status !== 'starting') return { events: [] };
        if (cmd.error === null) return { events: [{ type: 'HeadnodeStarted', vncport: cmd.vncport }] };
        return { events: [cmd.mayRun ? { type: 'HeadnodeStartFailed', error: cmd.error, mayRun: true } : { type: 'HeadnodeStartFailed', error: cmd.error }] };
      }),
      'headnode.beginStop': live((state, _cmd, id) => {
        if (state.status !== 'running') {
          throw conflict(`headnode ${id} is not running (${state.status}${state.error ? `: ${state.error}` : ''})`);
        }
        return { events: [{ type: 'HeadnodeStopRequested' }] };
      }),
      'headnode.endStop': live((state, cmd) => {
        if (state.status !== 'stopping') return { events: [] };
        return { events: [cmd.error === null ? { type: 'HeadnodeStopped' } : { type: 'HeadnodeStopFailed', error: cmd.error }] };
      }),
      'headnode.beginDelete': live((state, _cmd, id) => {
        // HeadnodeControl runs one operation per headnode at a time: starting/stopping here
        // means a crash interrupted one, and recovery finishes it first.
        if (state.status === 'starting' || state.status === 'stopping') throw conflict(`headnode ${id} is ${state.status}; try again`);
        return { events: state.status === 'deleting' ? [] : [{ type: 'HeadnodeDeleteRequested' }] };
      }),
      'headnode.endDelete': live((state, cmd) => {
        if (state.status !== 'deleting') return { events: [] };
        return { events: [cmd.error === null ? { type: 'HeadnodeDeleted' } : { type: 'HeadnodeDeleteFailed', error: cmd.error }] };
      }),
      'headnode.observed': live((state, cmd) => {
        if (state.status !== 'running') return { events: [] };
        if (!cmd.running) {
          const error = cmd.error ?? 'the VM is no longer running';
          return { events: [cmd.mayRun ? { type: 'HeadnodeDied', error, mayRun: true } : { type: 'HeadnodeDied', error }] };
        }
        return { events: cmd.vncport !== state.vncport ? [{ type: 'HeadnodeStarted', vncport: cmd.vncport }] : [] };
      }),
    },
  };
}
