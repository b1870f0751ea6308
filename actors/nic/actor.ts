import { Asker, Behavior, Decision, needsEntity } from '../runtime';
import { duplicate, notFound, blocked, conflict, projectMismatch } from '../errors';
import type { ReadModel, PortRef } from '../readmodel';
import type { NetworkUseBook } from '../network/uses';
import { newIncarnation, portId, splitId } from '../ids';
import { own } from '../own';
import { attachedTo, quote } from '../../lib/text';
import type { PortCommand, PortReplies } from '../port/protocol';
import { operationTrace } from '../../hardware/op-trace';
import { NATIVE, NetworkAction, NewAction, NicCommand, NicEvent, NicReplies, NicState, NicStatusRef } from './protocol';
import { applyNic } from './state';

/** What the nic actor needs: the committed view, the network reservations, its port's actor, and who carries out its operations. */
export interface NicDeps {
  rm: ReadModel;
  uses: NetworkUseBook;
  ports: Asker<PortCommand, PortReplies>;
  /** An operation of the node was committed: hand it on (the runner keeps the node's order). */
  handOn(node: string): void;
  /**
   * Does the switch carry a tagged VLAN on a port only beside a native one (its driver's
   * `nativeFirst`: Brocade, Dell OS9)? Absent: no switch does.
   */
  nativeFirst?(switchName: string): boolean;
}

export function nicBehavior({ rm, uses, ports, handOn, nativeFirst }: NicDeps): Behavior<NicState, NicCommand, NicEvent, NicReplies> {
  /** A command on a registered nic. */
  const live = needsEntity<NicState>((id) => {
    const [node, nic] = splitId(id);
    return notFound(`nic ${nic} of node ${node}`);
  });
  const named = (state: NicState) => `nic ${state.name} of node ${state.node}`;
  /** HIL's rule on a nativeFirst switch (Brocade, OS9) broken: the switch named to admins only. */
  const nativeFirstRefusal = (sw: string, state: NicState, advice: string) => blocked(
    `switch ${sw} carries a tagged network on a port only beside a native one: ${advice}`,
    `the switch of nic ${state.name} carries a tagged network on a port only beside a native one: ${advice}`);
  /** The port the nic is wired to (its port actor owns that fact; wiring changes pass this mailbox). */
  function wiredPort(state: NicState): PortRef {
    const port = rm.wiring.get(state.node, state.name);
    if (!port) throw notFound(`a switch port connected to nic ${state.name} of node ${state.node}`);
    return port;
  }

  function idle(state: NicState): void {
    if (state.pending) throw blocked(`nic ${state.name} of node ${state.node} already has a pending network operation`);
  }

  /** Record the operation as pending (durable before the caller's 202), then hand it on. */
  function queue(state: NicState, seq: number, action: NewAction, port: PortRef, extra: { settle?: () => void } = {}): Decision<NicEvent, NicStatusRef> {
    // The node numbers its operations above its nics' own (it waits for each accept), so this
    // holds; never reuse a number within one nic all the same.
    const n = Math.max(seq, state.lastSeq + 1);
    operationTrace.mark(state.node, 'accepted');
    // The node's mailbox accepts this (node → nic), so its project cannot change meanwhile.
    const project = rm.nodes.get(state.node)?.project ?? null;
    const queued: NetworkAction = { ...action, seq: n, nic: state.name, ...port, status: 'PENDING', acceptedAt: Date.now(), project };
    return {
      events: [{ type: 'NetworkActionQueued', action: queued }],
      value: { nic: state.name, incarnation: state.incarnation, seq: n },
      ...extra,
      afterCommit: () => handOn(state.node),
    };
  }

  return {
    kind: 'nic',

    apply: applyNic,

    decide: {
      'nic.register': async (state, cmd, id) => {
        if (state) throw duplicate(named(state));
        // A port still wired to an earlier nic of this name, whose release was lost after its
        // deletion committed (nic.delete): freed first, as every start would free it
        // (World.repairPortRecords), so that the new nic does not inherit a wiring nobody made.
        if (rm.wiredWithoutNic.has(id)) {
          const [node, name] = splitId(id);
          // A store of an earlier release may hold a nic wired to two ports: when the port the
          // index holds is freed, the other takes its entry, and is freed in turn.
          for (let port; (port = rm.wiring.port(node, name));) await ports.ask(portId(port.switch, port.name), { type: 'port.unwire', by: cmd.by, node, nic: name });
        }
        return { events: [{ type: 'NicRegistered', macaddr: cmd.macaddr, incarnation: newIncarnation(), nodeIncarnation: cmd.nodeIncarnation }] };
      },
      'nic.delete': live((state, cmd, id) => {
        if (Object.keys(state.networks).length) throw blocked(`${named(state)} is attached to ${attachedTo(Object.values(state.networks))}`);
        if (state.pending) throw blocked(`${named(state)} has a pending network operation`);
        // A node in a project cannot be unwired (§6), and deleting its nic would unwire it: the
        // release, which looks for ports in doubt wired to the node, would then let the node pass
        // to another tenant while its cable is in a port that may carry this project's VLAN. The
        // node's mailbox sends this, so its project cannot change meanwhile.
        if (rm.nodes.get(state.node)?.project) {
          for (const pid of rm.portsInDoubt) {
            const port = rm.ports.get(pid);
            if (port?.doubt && port.wire?.node === state.node && port.wire.nic === state.name) {
              throw blocked(`port ${port.name} of switch ${port.switch} (${named(state)}) is in doubt: a change failed after it may have reached the port, which may carry VLANs beyond its configuration; it is being set back`);
            }
          }
        }
        const events: NicEvent[] = [{ type: 'NicDeleted', incarnation: state.incarnation, nodeIncarnation: state.nodeIncarnation }];
        // Deleting a wired nic frees its port (the port owns that fact). The nic's deletion is
        // committed first and the port freed after it, before the answer: a crash between the
        // two leaves a port wired to a nic that no longer exists, which every start frees
        // (World.repairPortRecords). The other order left the nic there, unwired: half a
        // deletion that no start could tell from an ordinary unwired nic.
        const wired = rm.wiring.get(state.node, state.name);
        if (!wired) return { events };
        let free: () => void = () => undefined;
        const value = new Promise<void>((resolve, reject) => {
          free = () => void ports.ask(portId(wired.switch, wired.port), { type: 'port.unwire', by: cmd.by, node: state.node, nic: state.name }).then(() => resolve(), reject);
        });
        return { events, value, afterCommit: () => free() };
      }),
      'nic.wire': live(async (state, cmd, id) => {
        if (rm.wiring.has(state.node, state.name)) throw duplicate(`a port connection of ${named(state)}`);
        await ports.ask(portId(cmd.switch, cmd.port), { type: 'port.wire', by: cmd.by, node: state.node, nic: state.name });
        return { events: [] };
      }),
      'nic.unwire': live(async (state, cmd) => {
        // A queued operation still targets this port: it must not reach a port that is
        // meanwhile wired to another nic.
        if (state.pending) throw blocked(`${named(state)} has a pending network operation`);
        await ports.ask(portId(cmd.switch, cmd.port), { type: 'port.unwire', by: cmd.by, node: state.node, nic: state.name });
        return { events: [] };
      }),

      'nic.connect': live((state, cmd, id) => {
        // docs/api-conventions.md §8: … nic not wired 404 → pending 409 → access 409 → attached 409 → channel used 409 → channel illegal 409.
        const port = wiredPort(state);
        idle(state);
        const net = rm.networks.get(cmd.network);
        if (!net) throw notFound(`network ${cmd.network}`);
        if (net.access.length && !net.access.includes(cmd.project)) {
          throw projectMismatch(`project ${cmd.project} has no access to network ${cmd.network}`);
        }
        if (Object.values(state.networks).includes(cmd.network)) throw blocked(`network ${cmd.network} is already attached to nic ${state.name}`);
        if (own(state.networks, cmd.channel)) throw blocked(`channel ${cmd.channel} of nic ${state.name} is already in use`);
        if (cmd.channel !== NATIVE && cmd.channel !== `vlan/${net.vlan}`) {
          throw conflict(`channel ${quote(cmd.channel)} is not legal for network ${cmd.network} (vlan/native or vlan/${net.vlan})`);
        }
        // Admin networks may share an id (§7), but a port cannot carry one VLAN both untagged and
        // tagged: the switch would merge the two, and detaching one would take the other's VLAN away.
        const clash = Object.entries(state.networks).find(([, w]) => rm.networks.get(w)?.vlan === net.vlan);
        if (clash) {
          throw blocked(`VLAN ${net.vlan} of network ${cmd.network} is already on ${named(state)}, through network ${clash[1]} on channel ${clash[0]}`);
        }
        // HIL's rule on its Brocade and OS9 switches (checked here, where the nic's networks and
        // its one pending operation are serialized): a tagged network only beside a native one.
        if (cmd.channel !== NATIVE && !own(state.networks, NATIVE) && nativeFirst?.(port.switch)) {
          throw nativeFirstRefusal(port.switch, state, `attach a native network to nic ${state.name} first`);
        }
        // Closes the window against a concurrent network_delete or revoke (see network/uses.ts).
        const key = `${id}\u0000${cmd.seq}`;
        if (!uses.reserve(cmd.network, key, cmd.project)) throw conflict(`network ${cmd.network} is being changed; try again`);
        return queue(state, cmd.seq, { type: 'modify_port', channel: cmd.channel, newNetwork: cmd.network, vlan: net.vlan }, port, {
          settle: () => uses.release(cmd.network, key),
        });
      }),
      'nic.detach': live((state, cmd) => {
        // §8: … pending 409 → not attached 409; the wiring is no step of its own (an attached nic is wired).
        idle(state);
        const channel = Object.keys(state.networks).find((c) => state.networks[c] === cmd.network);
        if (!channel) throw conflict(`network ${cmd.network} is not attached to nic ${state.name} of node ${state.node}`);
        const port = wiredPort(state);
        // … and the native network leaves last.
        if (channel === NATIVE && Object.keys(state.networks).some((c) => c !== NATIVE) && nativeFirst?.(port.switch)) {
          throw nativeFirstRefusal(port.switch, state, `detach the tagged networks of nic ${state.name} before its native one`);
        }
        return queue(state, cmd.seq, {
          type: 'modify_port', channel, newNetwork: null, oldNetwork: cmd.network, vlan: rm.networks.get(cmd.network)?.vlan,
        }, port);
      }),
      'nic.revert': live((state, cmd) => {
        const port = wiredPort(state);
        idle(state);
        return queue(state, cmd.seq, { type: 'revert_port', channel: '', newNetwork: null }, port);
      }),
      'nic.reapply': live((state, cmd) => {
        const port = wiredPort(state);
        idle(state);
        return queue(state, cmd.seq, { type: 'reapply_port', channel: '', newNetwork: null }, port);
      }),
      'nic.forceDetach': live(async (state, cmd, id) => {
        if (state.pending) throw blocked(`${named(state)} has a pending network operation`);
        const channel = Object.keys(state.networks).find((c) => state.networks[c] === cmd.network);
        if (!channel) throw conflict(`network ${cmd.network} is not attached to nic ${state.name} of node ${state.node}`);
        const wired = rm.wiring.get(state.node, state.name);
        // The native leaves last here too: the set-back on a live switch would leave the port up
        // with tagged VLANs only, untagged in the switch's default VLAN, shared with other tenants.
        if (channel === NATIVE && wired && Object.keys(state.networks).some((c) => c !== NATIVE) && nativeFirst?.(wired.switch)) {
          throw nativeFirstRefusal(wired.switch, state, `force-detach the tagged networks of nic ${state.name} before its native one`);
        }
        // The port forgets the VLAN first: a port that holds less than its nic is safe, one
        // that holds more could keep a reused VLAN in another tenant's network on a re-apply.
        const vlan = rm.networks.get(cmd.network)?.vlan;
        if (wired && vlan !== undefined) {
          await ports.ask(portId(wired.switch, wired.port), { type: 'port.forget', by: cmd.by, native: channel === NATIVE, vlan });
        }
        return { events: [{ type: 'NicNetworkForceDetached', channel, network: cmd.network }] };
      }),
      'nic.actionFinished': live((state, cmd) => {
        const action = state.actions.find((a) => a.seq === cmd.seq);
        // Already finished (e.g. resumed after a restart): nothing to record.
        if (!action || action.status !== 'PENDING') return { events: [] };
        const event: NicEvent = cmd.error === null
          ? { type: 'NetworkActionDone', seq: cmd.seq }
          : { type: 'NetworkActionFailed', seq: cmd.seq, error: cmd.error };
        operationTrace.mark(state.node, 'outcomeDecided');
        return { events: [event], afterCommit: () => operationTrace.mark(state.node, 'outcomeDurable') };
      }),
    },
  };
}
