import { Behavior, needsEntity } from '../runtime';
import { duplicate, notFound, blocked, conflict } from '../errors';
import { splitId } from '../ids';
import type { PortHardware } from '../../hardware/port-hardware';
import { configAfter, sameConfig } from './config';
import { PortCommand, PortEvent, PortReplies, PortState, Wire } from './protocol';
import { applyPort } from './state';

/** What the port actor needs: its hardware path. */
export interface PortDeps {
  hardware: PortHardware;
}

export function portBehavior({ hardware }: PortDeps): Behavior<PortState, PortCommand, PortEvent, PortReplies> {
  const named = (id: string) => {
    const [sw, port] = splitId(id);
    return `port ${port} of switch ${sw}`;
  };
  const inDoubt = (id: string) => blocked(`${named(id)} is in doubt: a change failed after it may have reached the port, which may carry VLANs beyond its configuration; it is being set back`);
  /** A command on a registered port. */
  const live = needsEntity<PortState>((id) => notFound(named(id)));
  const wiredTo = (wire: Wire | null, cmd: { node: string; nic: string }) => !!wire && wire.node === cmd.node && wire.nic === cmd.nic;

  return {
    kind: 'port',

    apply: applyPort,

    decide: {
      'port.register': (state, _cmd, id) => {
        if (state) throw duplicate(named(id));
        return { events: [{ type: 'PortRegistered' }] };
      },
      'port.delete': live((state, _cmd, id) => {
        if (state.wire) throw blocked(`${named(id)} is connected to nic ${state.wire.nic} of node ${state.wire.node}`);
        // Its doubt would go with it, and the guards that hold its VLAN's network with the doubt.
        if (state.doubt) throw inDoubt(id);
        return { events: [{ type: 'PortDeleted' }] };
      }),
      'port.wire': live((state, cmd, id) => {
        if (state.wire) throw duplicate(`a nic connection of ${named(id)}`);
        // The nic's node would be on the VLANs the port may carry (another tenant's, once it is reserved).
        if (state.doubt) throw inDoubt(id);
        return { events: [{ type: 'PortWired', node: cmd.node, nic: cmd.nic }] };
      }),
      'port.unwire': live((state, cmd, id) => {
        if (!wiredTo(state.wire, cmd)) throw notFound(`a nic connection of ${named(id)}`);
        return { events: [{ type: 'PortUnwired' }] };
      }),
      'port.apply': live((state, cmd, id) => {
        // A nic with a pending operation cannot be unwired, so this holds; an outcome, not a refusal, if not.
        if (!wiredTo(state.wire, cmd)) return { events: [], value: `${named(id)} is no longer wired to nic ${cmd.nic} of node ${cmd.node}` };
        // Deferred: answered when the switch is done, while this mailbox goes on.
        return { events: [], value: hardware.apply(state, cmd.change, { resumed: !!cmd.resumed }) };
      }),
      'port.doubt': live((state, cmd) => {
        const more = cmd.vlans.filter((v) => !state.doubt?.vlans.includes(v));
        // An empty doubt is a doubt all the same: the port may differ from its record.
        if (state.doubt && !more.length) return { events: [] };
        return { events: [{ type: 'PortInDoubt', vlans: [...new Set(cmd.vlans)].sort((a, b) => a - b) }] };
      }),
      'port.settled': live((state, cmd, id) => {
        // Confirmed before a force-detach took a VLAN off the record: the switch may carry it since.
        if (cmd.forgets !== undefined && cmd.forgets !== hardware.forgetCount(id)) return { events: [] };
        return { events: state.doubt || state.setBackOwed ? [{ type: 'PortDoubtCleared' }] : [] };
      }),
      'port.clearDoubt': live((state, _cmd, id) => {
        if (!state.doubt) throw conflict(`${named(id)} is not in doubt`);
        // A switch only unreachable may come back with those VLANs: the set-back goes on (owed).
        return { events: [{ type: 'PortDoubtClearedByHand', vlans: state.doubt.vlans }], afterCommit: () => void hardware.retry(id) };
      }),
      // Deferred like port.apply.
      'port.settle': live((state) => ({ events: [], value: hardware.settle(state) })),
      'port.configured': live((state, cmd) => {
        // A record for the wiring it was made for only: a port rewired meanwhile holds its own.
        const wire = state.wire;
        const sameWire = cmd.wire === wire || (!!cmd.wire && wiredTo(wire, cmd.wire));
        if (!sameWire || sameConfig(state.config, cmd.config)) return { events: [] };
        return { events: [{ type: 'PortConfigured', config: cmd.config }] };
      }),
      'port.forget': live((state, cmd, id) => {
        const config = configAfter(hardware.current(state), { kind: 'detach', native: cmd.native, vlan: cmd.vlan });
        // A change of this port not written yet must not put the VLAN back.
        hardware.supersede(state, config);
        hardware.forgetting(id);
        const events: PortEvent[] = sameConfig(state.config, config) ? [] : [{ type: 'PortConfigured', config }];
        // The switch is not told, and may still carry the VLAN: until it confirms the port's
        // set-back (or an admin clears the doubt), the VLAN's network is not deleted, so the
        // VLAN is not given to another tenant, nor is the node released. Durable with the record.
        if (!state.doubt?.vlans.includes(cmd.vlan)) events.push({ type: 'PortInDoubt', vlans: [cmd.vlan] });
        // The set-back, queued at once, also shuts a port left with nothing (hardware/port-hardware.ts).
        return { events, afterCommit: () => hardware.setBackSoon(id) };
      }),
      // Deferred like port.apply: the port is the only caller of hardware for itself.
      'port.check': live((state, cmd) => ({ events: [], value: hardware.check(state, { repair: cmd.repair, batch: cmd.batch }) })),
    },
  };
}
