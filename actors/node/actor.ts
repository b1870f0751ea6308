import { Asker, Behavior, Decision, needsEntity } from '../runtime';
import { HiltError, duplicate, notFound, blocked, conflict, forbidden, projectMismatch, unauthorized } from '../errors';
import type { ReadModel } from '../readmodel';
import { newIncarnation, nicId } from '../ids';
import { attachedTo, counted, listed } from '../../lib/text';
import type { NicCommand, NicReplies } from '../nic/protocol';
import { leasePassed, METADATA_MAX_LABELS, NodeCommand, NodeEvent, NodeReplies, NodeState } from './protocol';
import { PLAIN, type Credentials } from '../credentials';
import { applyNode } from './state';

/** What the node actor needs: the committed view, and its nics' actors (node → nic). */
export interface NodeDeps {
  rm: ReadModel;
  nics: Asker<NicCommand, NicReplies>;
  /** seals the BMC's secret fields into the event (actors/credentials.ts); default: none (unit tests) */
  credentials?: Credentials;
}

/**
 * The lease has passed: the node is being released, nothing more is connected, the lease no longer
 * moves. By its time too, not only once the expiry is recorded: the expiry's timer may fire late
 * (a busy process, a forward step of the clock), and a call decided after the lease's end must not
 * win the race against it.
 */
function refuseExpired(state: NodeState, id: string): void {
  if (state.lease && leasePassed(state.lease)) throw conflict(`the lease of node ${id} has expired: the node is being released from project ${state.lease.project}`);
}

const hasLabel = (state: NodeState, label: string) => !!state.metadata && Object.prototype.hasOwnProperty.call(state.metadata, label);

/** The node moved to another project since the route authorized the caller through `project`. */
function stillAuthorized(state: NodeState, id: string, project: string | null): void {
  if (project !== null && state.project !== project) throw unauthorized(`node ${id} no longer belongs to project ${project}`);
}

export function nodeBehavior({ rm, nics, credentials = PLAIN }: NodeDeps): Behavior<NodeState, NodeCommand, NodeEvent, NodeReplies> {
  /** The nic's actor, once the committed view shows it exists (every nic creation and deletion passes this mailbox). */
  function nicOf(id: string, nic: string): string {
    if (!rm.nic(id, nic)) throw notFound(`nic ${nic} of node ${id}`);
    return nicId(id, nic);
  }

  /**
   * The number of the node's next operation: above every operation its nics hold. A node's
   * accepts are serialized here and each nic commits before it answers, so no two pending
   * operations of one node share a number, and the order of numbers is the order of acceptance.
   */
  const nextSeq = (id: string) => 1 + Math.max(0, ...rm.nicsOf(id).map((n) => n.lastSeq));

  /** Hand a command to the nic; the node records nothing itself. */
  const viaNic = async <V>(value: Promise<V>) => ({ events: [], value: await value }) as Decision<NodeEvent, V>;
  /** A command on a registered node. */
  const live = needsEntity<NodeState>((id) => notFound(`node ${id}`));

  return {
    kind: 'node',

    apply: applyNode,

    decide: {
      'node.register': (state, cmd, id) => {
        if (state) throw duplicate(`node ${id}`);
        const obm = { type: cmd.obm.type, fields: credentials.seal('obm', cmd.obm.type, cmd.obm.fields) };
        return { events: [{ type: 'NodeRegistered', obm, metadata: cmd.metadata, incarnation: newIncarnation() }] };
      },
      'node.delete': live((state, _cmd, id) => {
        if (state.project) throw blocked(`node ${id} belongs to project ${state.project}`);
        const nics = rm.nicsOf(id);
        if (nics.length) throw blocked(`node ${id} still has ${counted(nics.length, 'nic')} (${listed(nics.map((n) => n.name))})`);
        return { events: [{ type: 'NodeDeleted' }] };
      }),
      'node.registerNic': live(async (state, cmd, id) => {
        if (rm.nic(id, cmd.nic)) throw duplicate(`nic ${cmd.nic} of node ${id}`);
        return viaNic(nics.ask(nicId(id, cmd.nic), { type: 'nic.register', by: cmd.by, macaddr: cmd.macaddr, nodeIncarnation: state.incarnation }));
      }),
      'node.deleteNic': live((_state, cmd, id) => viaNic(nics.ask(nicOf(id, cmd.nic), { type: 'nic.delete', by: cmd.by }))),
      'node.assign': live((state, cmd, id) => {
        if (state.project) throw blocked(`node ${id} is not free`);
        // The last tenant's system may still run on it: it would join this project's networks.
        const off = state.releasePowerOff;
        if (off?.status === 'failed') {
          const why = `node ${id} may still be running since its release: its power-off failed`;
          const then = 'an admin\'s power_off must succeed before it is reserved again';
          // The reason (the BMC's, or the project that held it) is an operator's to read.
          throw blocked(`${why} (${off.error ?? 'no reason given'}); ${then}`, `${why}; ${then}`);
        }
        // Decided here, where the node's freedom is settled: the project could not know it.
        if (cmd.overQuota) throw blocked(cmd.overQuota);
        return { events: [{ type: 'NodeAssigned', project: cmd.project }] };
      }),
      'node.release': live((state, cmd, id) => {
        if (state.project !== cmd.project) throw new HiltError('ProjectMismatchError', `node ${id} does not belong to project ${cmd.project}`);
        // An expiry's release, decided here in turn: the project may have released the node and
        // reserved it again since the expiry looked, and that new reservation is not the lease's.
        if (cmd.expiredLease !== undefined && (state.lease?.expiresAt !== cmd.expiredLease || !state.lease.expired)) {
          throw conflict(`the lease of node ${id} that passed at ${new Date(cmd.expiredLease).toISOString()} no longer holds it`);
        }
        // Safe to read from the committed view: a nic gains a network or a pending operation
        // only through this mailbox, and an outcome only ever ends a pending one.
        const attached = rm.nicsOf(id).flatMap((n) => Object.values(n.networks));
        if (attached.length) throw blocked(`node ${id} is attached to ${attachedTo(attached)}`);
        if (rm.pendingByNode.has(id)) throw blocked(`node ${id} has pending network operations (nics ${listed(rm.pendingByNode.get(id))})`);
        // A port that may carry a VLAN beyond its record (hardware/port-hardware.ts): the next
        // holder of the node would be on another tenant's network until it is set back.
        // The ports in doubt (a handful), not the wiring index: a nic of an earlier release may be
        // wired to two ports, of which the index keeps one.
        for (const pid of rm.portsInDoubt) {
          const port = rm.ports.get(pid);
          if (port?.doubt && port.wire?.node === id) {
            const why = 'is in doubt: a change failed after it may have reached the port, which may carry VLANs beyond its configuration; it is being set back';
            throw blocked(`port ${port.name} of switch ${port.switch} (nic ${port.wire.nic} of node ${id}) ${why}`, `the port of nic ${port.wire.nic} of node ${id} ${why}`);
          }
        }
        return {
          events: [{
            type: 'NodeReleased', project: cmd.project,
            ...(cmd.into && cmd.into !== cmd.project ? { into: cmd.into } : {}),
            ...(cmd.powerOff ? { powerOff: true } : {}),
          }],
        };
      }),
      'node.wireNic': live((_state, cmd, id) => viaNic(nics.ask(nicOf(id, cmd.nic), { type: 'nic.wire', by: cmd.by, switch: cmd.switch, port: cmd.port }))),
      'node.unwireNic': live((state, cmd, id) => {
        if (state.project) throw blocked(`node ${id} belongs to project ${state.project}`);
        return viaNic(nics.ask(nicOf(id, cmd.nic), { type: 'nic.unwire', by: cmd.by, switch: cmd.switch, port: cmd.port }));
      }),
      'node.connectNetwork': live((state, cmd, id) => {
        // docs/api-conventions.md §8, after the route's node 404 → nic 404 → network 404 → free 409 → auth.
        if (!state.project) throw projectMismatch(`node ${id} is free: it belongs to no project`);
        stillAuthorized(state, id, cmd.project);
        // The chain's 404s before the lease's 409: the nic, and its port (the nic checks that again).
        const nic = nicOf(id, cmd.nic);
        if (!rm.wiring.get(id, cmd.nic)) throw notFound(`a switch port connected to nic ${cmd.nic} of node ${id}`);
        refuseExpired(state, id);
        return viaNic(nics.ask(nic, {
          type: 'nic.connect', by: cmd.by, seq: nextSeq(id), project: state.project, network: cmd.network, channel: cmd.channel,
        }));
      }),
      'node.detachNetwork': live((state, cmd, id) => {
        if (!state.project) throw projectMismatch(`node ${id} is free: it belongs to no project`);
        stillAuthorized(state, id, cmd.project);
        return viaNic(nics.ask(nicOf(id, cmd.nic), { type: 'nic.detach', by: cmd.by, seq: nextSeq(id), network: cmd.network }));
      }),
      'node.revertPort': live((_state, cmd, id) => viaNic(nics.ask(nicOf(id, cmd.nic), { type: 'nic.revert', by: cmd.by, seq: nextSeq(id) }))),
      'node.reapplyPort': live((_state, cmd, id) => viaNic(nics.ask(nicOf(id, cmd.nic), { type: 'nic.reapply', by: cmd.by, seq: nextSeq(id) }))),
      'node.forceDetach': live((_state, cmd, id) => viaNic(nics.ask(nicOf(id, cmd.nic), { type: 'nic.forceDetach', by: cmd.by, network: cmd.network }))),
      'node.setMetadata': live((state, cmd, id) => {
        // docs/api-conventions.md §5: a new label beyond the limit is refused; replacing a value is not.
        if (!hasLabel(state, cmd.label) && Object.keys(state.metadata ?? {}).length >= METADATA_MAX_LABELS) {
          throw conflict(`node ${id} already has ${METADATA_MAX_LABELS} metadata labels`);
        }
        return { events: [{ type: 'NodeMetadataSet', label: cmd.label, value: cmd.value }] };
      }),
      'node.deleteMetadata': live((state, cmd, id) => {
        if (!hasLabel(state, cmd.label)) throw notFound(`metadata ${cmd.label} of node ${id}`);
        return { events: [{ type: 'NodeMetadataDeleted', label: cmd.label }] };
      }),
      // Serial consoles (docs/consoles.md): the route checked the caller and the OBM driver.
      'node.startConsole': live((state, cmd, id) => {
        stillAuthorized(state, id, cmd.project);
        return { events: state.console ? [] : [{ type: 'NodeConsoleStarted' }] };
      }),
      'node.stopConsole': live((state, cmd, id) => {
        stillAuthorized(state, id, cmd.project);
        return { events: state.console ? [{ type: 'NodeConsoleStopped' }] : [] };
      }),
      'node.attachConsole': live((state, cmd, id) => {
        stillAuthorized(state, id, cmd.project);
        // Decided here, in turn: the route's look at the committed view may predate a stop.
        if (!state.console && !cmd.mayStart) throw forbidden(`the console of node ${id} is not recorded, and starting its recording is a change this caller may not make`);
        return { events: [...(state.console ? [] : [{ type: 'NodeConsoleStarted' } as const]), { type: 'NodeConsoleAttached' }] };
      }),

      // The tenant lifecycle (docs/lifecycle.md).
      'node.setLease': live((state, cmd, id) => {
        if (!state.project) throw conflict(`node ${id} is free: only a node in a project has a lease`);
        stillAuthorized(state, id, cmd.project);
        refuseExpired(state, id);
        return { events: [{ type: 'NodeLeaseSet', project: state.project, expiresAt: cmd.expiresAt }] };
      }),
      'node.deleteLease': live((state, cmd, id) => {
        stillAuthorized(state, id, cmd.project);
        if (!state.lease) throw notFound(`a lease of node ${id}`);
        refuseExpired(state, id);
        return { events: [{ type: 'NodeLeaseDeleted' }] };
      }),
      'node.leaseExpired': live((state, cmd) => {
        if (state.lease?.expiresAt !== cmd.expiresAt || state.lease.expired) return { events: [] };
        return { events: [{ type: 'NodeLeaseExpired', expiresAt: cmd.expiresAt }] };
      }),
      'node.powerOffEnded': live((state, cmd) => {
        const due = state.releasePowerOff;
        if (!due || (cmd.since !== undefined && due.since !== cmd.since)) return { events: [] };
        if (cmd.error === null) return { events: [{ type: 'ReleasePowerOffSucceeded', ...(cmd.since !== undefined ? { since: cmd.since } : {}) }] };
        // Only the release's own power-off records a failure; a pending one stays pending otherwise.
        if (cmd.since === undefined) return { events: [] };
        return { events: [{ type: 'ReleasePowerOffFailed', since: cmd.since, error: cmd.error }] };
      }),
      'node.noticeAttempted': live((state, cmd) => {
        if (state.maintenance?.since !== cmd.since || state.maintenance.deliveredAt !== undefined) return { events: [] };
        return { events: [cmd.error === null ? { type: 'MaintenanceNoticeDelivered', since: cmd.since } : { type: 'MaintenanceNoticeFailed', since: cmd.since, error: cmd.error }] };
      }),
    },
  };
}
