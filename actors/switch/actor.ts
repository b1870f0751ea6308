import { Asker, Behavior, needsEntity } from '../runtime';
import { duplicate, notFound, blocked, conflict } from '../errors';
import type { ReadModel } from '../readmodel';
import { portId } from '../ids';
import { counted, listed } from '../../lib/text';
import type { PortCommand, PortReplies } from '../port/protocol';
import type { SwitchCommand, SwitchEvent, SwitchReplies, SwitchState } from './protocol';
import { PLAIN, type Credentials } from '../credentials';
import { applySwitch } from './state';

/** What the switch actor needs: the committed view and its ports' actors (switch → port). */
export interface SwitchDeps {
  rm: ReadModel;
  ports: Asker<PortCommand, PortReplies>;
  /** seals the switch's secret fields into the event (actors/credentials.ts); default: none (unit tests) */
  credentials?: Credentials;
}

export function switchBehavior({ rm, ports, credentials = PLAIN }: SwitchDeps): Behavior<SwitchState, SwitchCommand, SwitchEvent, SwitchReplies> {
  /** A command on a registered switch. */
  const live = needsEntity<SwitchState>((id) => notFound(`switch ${id}`));

  return {
    kind: 'switch',

    apply: applySwitch,

    decide: {
      'switch.register': (state, cmd, id) => {
        if (state) throw duplicate(`switch ${id}`);
        const fields = credentials.seal('switch', cmd.switchType, cmd.fields);
        return { events: [{ type: 'SwitchRegistered', switchType: cmd.switchType, fields, ...(cmd.hostKey ? { hostKey: cmd.hostKey } : {}) }] };
      },
      'switch.delete': live((_state, _cmd, id) => {
        // Every port is registered through this mailbox: the committed view is complete here.
        if (rm.portsBySwitch.get(id).size) throw blocked(`switch ${id} still has ${counted(rm.portsBySwitch.get(id).size, 'port')} (${listed(rm.portsBySwitch.get(id))})`);
        return { events: [{ type: 'SwitchDeleted' }] };
      }),
      'switch.registerPort': live(async (_state, cmd, id) => {
        await ports.ask(portId(id, cmd.port), { type: 'port.register', by: cmd.by });
        return { events: [] };
      }),
      'switch.recordHostKey': live((state, cmd, id) => {
        if (state.hostKey === cmd.fingerprint) return { events: [] };
        // Another login recorded a key first (or an admin pinned one): this one is not trusted.
        if (state.hostKey) throw conflict(`switch ${id}: host key ${cmd.fingerprint} differs from the recorded ${state.hostKey}`);
        return { events: [{ type: 'SwitchHostKeyRecorded', fingerprint: cmd.fingerprint }] };
      }),
      'switch.clearHostKey': live((state) => ({ events: state.hostKey ? [{ type: 'SwitchHostKeyCleared' }] : [] })),
      'switch.deletePort': live(async (_state, cmd, id) => {
        await ports.ask(portId(id, cmd.port), { type: 'port.delete', by: cmd.by });
        return { events: [] };
      }),
      'switch.clearPortDoubt': live(async (_state, cmd, id) => {
        await ports.ask(portId(id, cmd.port), { type: 'port.clearDoubt', by: cmd.by });
        return { events: [] };
      }),
    },
  };
}
