/**
 * Redfish power control (DMTF Redfish, the BMC protocol of iDRAC, iLO, XCC, OpenBMC...), beside
 * IPMI. What it does, per call:
 *
 * - power_status: `PowerState` of the node's ComputerSystem (`On`, `PoweringOn`, `Paused`: on;
 *   `Off`, `PoweringOff`: off).
 * - power_off: `ForceOff`, unless the system is already off.
 * - power_on: `On` (else `ForceOn`, else `PushPowerButton`), unless it is already on.
 * - power_cycle: the boot override set to PXE `Once`, then, for a system that is on,
 *   `ForceRestart` (else `PowerCycle`, else `ForceOff`, a wait for `Off`, and the power on
 *   above), and for one that is off (or refused the restart because it went off since it was
 *   read), the power on above. `force` changes nothing: both of
 *   IPMI's variants (cycle, reset) are hard already, as `ForceRestart` is.
 * - boot_device: the override target `Pxe` or `Hdd` with `Continuous` (persistent, as HIL's
 *   ipmitool `options=persistent`), or `None` with `Disabled`.
 *
 * Reset types are chosen among those the system advertises
 * (`ResetType@Redfish.AllowableValues`, or its `@Redfish.ActionInfo`); a system that advertises
 * none is taken to allow all. A reset the BMC answers 202 (a task) is done only once its task
 * says `Completed`: the call waits for it, and a task that ends otherwise is the call's failure.
 * The boot override is a `PATCH` (a task waited for the same way) with `If-Match` when the BMC
 * gave an ETag (retried once with a fresh one after 412). The BMC's refusals come back with their
 * `@Message.ExtendedInfo` text.
 */
import { setTimeout as pause } from 'node:timers/promises';
import type { DriverFields } from '../../registry';
import { SCHEMA_BASE } from '../../schema';
import { ObmError } from '../types';
import type { BootDevice, ObmDriver, ObmDriverEntry, PowerState } from '../types';
import { BmcCall, RedfishClient, redfishMessages, type Reply } from './client';
import { FIELDS_SCHEMA, parseBaseUrl, parseTarget } from './target';

export type { RedfishFields } from './target';

/** How often a `ForceOff` + `On` cycle looks whether the system is off yet. */
const OFF_POLL_MS = 250;
/** How often the task of an accepted reset or boot override is read. */
const TASK_POLL_MS = 250;
/** Task states (Redfish Task.TaskState) of a task not yet ended. */
const TASK_RUNNING = ['New', 'Starting', 'Running', 'Pending', 'Suspended', 'Stopping', 'Service', 'Interrupted'];

const ON_STATES = ['On', 'PoweringOn', 'Paused'];
const OFF_STATES = ['Off', 'PoweringOff'];

/** The ResetType values wanted for each step, best first. */
const POWER_ON = ['On', 'ForceOn', 'PushPowerButton'];
const POWER_OFF = ['ForceOff'];
const RESTART = ['ForceRestart', 'PowerCycle'];

const BOOT: Record<BootDevice, { target: string; enabled: string }> = {
  pxe: { target: 'Pxe', enabled: 'Continuous' },
  disk: { target: 'Hdd', enabled: 'Continuous' },
  none: { target: 'None', enabled: 'Disabled' },
};

/** A ComputerSystem as read in this call. */
interface System {
  path: string;
  json: Record<string, unknown>;
  etag?: string;
}

export class RedfishDriver implements ObmDriver {
  /**
   * @param closeTimeoutMs bound on the logouts at shutdown (the entry's close makes the signal:
   *   the service's OBM timeout)
   */
  constructor(readonly client = new RedfishClient(), readonly closeTimeoutMs = 10_000) {}

  async powerStatus(fields: DriverFields, signal: AbortSignal): Promise<PowerState> {
    const call = this.call(fields, signal);
    return powerOf(call, await readSystem(call));
  }

  async powerOff(fields: DriverFields, signal: AbortSignal): Promise<void> {
    const call = this.call(fields, signal);
    const sys = await readSystem(call);
    if (sys.json.PowerState === 'Off') return;
    await reset(call, sys, await choose(call, sys, POWER_OFF, 'power off'));
  }

  async powerOn(fields: DriverFields, signal: AbortSignal): Promise<void> {
    const call = this.call(fields, signal);
    const sys = await readSystem(call);
    if (powerOf(call, sys) === 'on') return;
    await reset(call, sys, await choose(call, sys, POWER_ON, 'power on'));
  }

  async powerCycle(fields: DriverFields, _opts: { force?: boolean }, signal: AbortSignal): Promise<void> {
    const call = this.call(fields, signal);
    let sys = await readSystem(call);
    sys = await setBoot(call, sys, 'Pxe', 'Once');
    if (powerOf(call, sys) === 'off') {
      await reset(call, sys, await choose(call, sys, POWER_ON, 'power on'));
      return;
    }
    const allowed = await allowedResets(call, sys);
    const restart = RESTART.find((t) => !allowed || allowed.includes(t));
    if (restart) {
      try {
        await reset(call, sys, restart);
      } catch (err) {
        // Refused (an HTTP 4xx: not a lost answer to a restart that did happen, which may read
        // Off for a moment) because the system went off since it was read (its OS shut it down):
        // power it on, as for a system found off. One still on keeps the refusal.
        if (!(err instanceof ObmError) || call.signal.aborted || !/refused \(HTTP 4\d\d\)/.test(err.message)) throw err;
        const now = await readSystem(call);
        if (now.json.PowerState !== 'Off') throw err;
        await reset(call, now, await choose(call, now, POWER_ON, 'power on'));
      }
      return;
    }
    // Neither ForceRestart nor PowerCycle: off, then on once the BMC says it is off.
    const on = await choose(call, sys, POWER_ON, 'power on');
    await reset(call, sys, await choose(call, sys, POWER_OFF, 'power cycle'));
    for (;;) {
      sys = await readSystem(call);
      if (sys.json.PowerState === 'Off') break;
      await pause(OFF_POLL_MS, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) throw call.error('power cycle', 'stopped: the system did not report Off in time');
    }
    await reset(call, sys, on);
  }

  async setBootDevice(fields: DriverFields, device: BootDevice, signal: AbortSignal): Promise<void> {
    const call = this.call(fields, signal);
    const { target, enabled } = BOOT[device];
    const sys = await readSystem(call);
    // Clearing an override is `Enabled: Disabled`, which every service takes; the target goes
    // with it only where the BMC allows `None` (sushy-tools, OpenStack's emulator, does not).
    const clearing = enabled === 'Disabled' && !allows(sys, 'BootSourceOverrideTarget', target);
    await setBoot(call, sys, clearing ? null : target, enabled);
  }

  /** Logs out of every BMC session (the service is stopping), each DELETE bounded by `signal`. */
  close(signal: AbortSignal): Promise<void> {
    return this.client.close(signal);
  }

  private call(fields: DriverFields, signal: AbortSignal): BmcCall {
    return this.client.call(parseTarget(fields), signal);
  }
}

async function readSystem(call: BmcCall): Promise<System> {
  const path = await call.systemPath();
  let reply;
  try {
    reply = await call.get(path, `reading the system ${path}`);
  } catch (e) {
    if (!call.target.system) call.forgetSystem(); // found by a lookup: look it up again next time
    throw e;
  }
  const etag = reply.headers.get('etag') ?? (typeof reply.json['@odata.etag'] === 'string' ? reply.json['@odata.etag'] : undefined);
  return { path, json: reply.json, etag: etag ?? undefined };
}

function powerOf(call: BmcCall, sys: System): PowerState {
  const state = sys.json.PowerState;
  if (typeof state === 'string' && ON_STATES.includes(state)) return 'on';
  if (typeof state === 'string' && OFF_STATES.includes(state)) return 'off';
  throw call.error(`reading the system ${sys.path}`, `gave no power state I know (PowerState ${call.bmcText(JSON.stringify(state ?? null))})`);
}

function resetAction(call: BmcCall, sys: System): Record<string, unknown> {
  const actions = sys.json.Actions as Record<string, unknown> | undefined;
  const action = actions?.['#ComputerSystem.Reset'];
  if (!action || typeof action !== 'object') throw call.error(`the system ${sys.path}`, 'has no #ComputerSystem.Reset action');
  return action as Record<string, unknown>;
}

/** The ResetType values the system allows, or undefined when it does not say (then: all). */
async function allowedResets(call: BmcCall, sys: System): Promise<string[] | undefined> {
  const action = resetAction(call, sys);
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : undefined);
  const inline = strings(action['ResetType@Redfish.AllowableValues']);
  if (inline) return inline;
  const info = action['@Redfish.ActionInfo'];
  if (typeof info === 'string' && info.startsWith('/')) {
    const reply = await call.get(info, 'reading the reset action\'s ActionInfo');
    const params = Array.isArray(reply.json.Parameters) ? reply.json.Parameters as Record<string, unknown>[] : [];
    return strings(params.find((p) => p && p.Name === 'ResetType')?.AllowableValues);
  }
  return undefined;
}

async function choose(call: BmcCall, sys: System, wanted: string[], what: string): Promise<string> {
  const allowed = await allowedResets(call, sys);
  const type = wanted.find((t) => !allowed || allowed.includes(t));
  if (!type) {
    throw call.error(what, `impossible: the system ${sys.path} allows the ResetType values ${call.bmcText(allowed!.join(', ')) || '(none)'}, ` +
      `none of ${wanted.join(', ')}`);
  }
  return type;
}

async function reset(call: BmcCall, sys: System, type: string): Promise<void> {
  const target = resetAction(call, sys).target;
  if (typeof target !== 'string' || !target.startsWith('/')) throw call.error(`the system ${sys.path}`, 'has a reset action without a target');
  const what = `reset ${type}`;
  const reply = await call.request('POST', target, what, { ResetType: type });
  if (reply.status < 200 || reply.status >= 300) throw call.refused(what, reply);
  if (reply.status === 202) await taskOutcome(call, reply, what);
}

/** The path of `location` (relative, or absolute on the BMC's own origin), else undefined. */
function samePath(call: BmcCall, location: string | null): string | undefined {
  if (!location) return undefined;
  try {
    const url = new URL(location, call.target.origin);
    return url.origin === call.target.origin ? url.pathname + url.search : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A 202 only says the BMC took the request: the reset is a task whose monitor (`Location`, else
 * the task's own `@odata.id`) says how it ended. It is read until the task is no longer running;
 * the call's signal bounds the wait, like every request. A monitor whose last answer shows no
 * task has the task itself read, when a task was shown.
 */
async function taskOutcome(call: BmcCall, accepted: Reply, what: string): Promise<void> {
  const monitor = call.odataId({ '@odata.id': samePath(call, accepted.headers.get('location')) }) ?? call.odataId(accepted.json);
  if (!monitor) return; // nothing to follow: the BMC's acceptance is all there is
  let reply = accepted;
  // The task resource, as a task the BMC showed (accepted, or running) names itself.
  let task: string | undefined;
  for (;;) {
    const state = reply.json?.TaskState;
    if (state !== undefined) task = call.odataId(reply.json) ?? task;
    if (reply.status !== 202 && !(typeof state === 'string' && TASK_RUNNING.includes(state))) break;
    await pause(TASK_POLL_MS, undefined, { signal: call.signal }).catch(() => undefined);
    reply = await call.request('GET', monitor, `${what} (reading its task ${monitor})`);
  }
  if (reply.status < 200 || reply.status >= 300) throw call.refused(what, reply);
  if (reply.json?.TaskState === undefined && task && task !== monitor) {
    // The monitor's answer without a task: OpenBMC's is a 204 however the task ended, so the
    // task itself says how; one already gone leaves the monitor's answer.
    const read = await call.request('GET', task, `${what} (reading its task ${task})`);
    if (read.status !== 404) reply = read;
  }
  if (reply.status < 200 || reply.status >= 300) throw call.refused(what, reply);
  const state = reply.json?.TaskState;
  if (state === undefined || state === 'Completed') return; // the operation's own answer, or the task done
  const messages = Array.isArray(reply.json?.Messages)
    ? (reply.json!.Messages as unknown[]).map((m) => (m && typeof m === 'object' ? (m as Record<string, unknown>).Message : undefined))
      .filter((m): m is string => typeof m === 'string')
    : [];
  const said = [...messages, ...redfishMessages(reply.json)].join(' ');
  throw call.error(what, `failed: its task ended ${call.bmcText(String(state))}${said ? `: ${call.bmcText(said)}` : ''}`);
}

/** Whether the system's Boot property allows `value` for `key` (a BMC that lists no values allows all). */
function allows(sys: System, key: string, value: string): boolean {
  const allowed = (sys.json.Boot as Record<string, unknown> | undefined)?.[`${key}@Redfish.AllowableValues`];
  return !Array.isArray(allowed) || allowed.includes(value);
}

/**
 * PATCH of the boot override (`target` null: the target is left as it is), with If-Match when
 * the BMC gave an ETag; the system as it is now.
 */
async function setBoot(call: BmcCall, sys: System, target: string | null, enabled: string): Promise<System> {
  const what = `boot override ${target ?? '(target unchanged)'} ${enabled}`;
  const boot = sys.json.Boot as Record<string, unknown> | undefined;
  if (!boot || typeof boot !== 'object') throw call.error(what, `impossible: the system ${sys.path} has no Boot property`);
  const wanted = { ...(target !== null ? { BootSourceOverrideTarget: target } : {}), BootSourceOverrideEnabled: enabled };
  for (const [key, value] of Object.entries(wanted)) {
    if (!allows(sys, key, value)) {
      const allowed = boot[`${key}@Redfish.AllowableValues`] as unknown[];
      throw call.error(what, `impossible: the system ${sys.path} allows ${key} ${call.bmcText(allowed.join(', '))}`);
    }
  }
  const body = { Boot: wanted };
  let current = sys;
  for (let attempt = 0; ; attempt++) {
    const reply = await call.request('PATCH', current.path, what, body, current.etag ? { 'If-Match': current.etag } : {});
    // Accepted as a task, as a reset may be: a reset before it completed would boot the old way.
    if (reply.status === 202) await taskOutcome(call, reply, what);
    if (reply.status >= 200 && reply.status < 300) return current;
    // Someone changed the system since it was read: read it again and repeat, once.
    if (reply.status === 412 && attempt === 0) {
      current = await readSystem(call);
      continue;
    }
    throw call.refused(what, reply);
  }
}

export const redfish: ObmDriverEntry<RedfishDriver> = {
  type: `${SCHEMA_BASE}/v0/obm/redfish`,
  extension: 'hilt.obm.redfish',
  fields: FIELDS_SCHEMA,
  // Refuse settings the driver could never use now (400), rather than at the first power call (502).
  check: (fields) => {
    try {
      parseTarget(fields);
      return null;
    } catch (err) {
      if (err instanceof ObmError) return err.message;
      throw err;
    }
  },
  // A login may take one OBM timeout of its own: it outlives the call it began in (client.ts).
  create: ({ settings: config }) => new RedfishDriver(new RedfishClient(config.obmTimeoutMs), config.obmTimeoutMs),
  // One BMC, one line of the device queue, whatever the node, user or system.
  device: (fields) => parseBaseUrl(fields.host).origin,
  // At shutdown, the logouts of all BMCs at once, within one OBM timeout.
  close: (driver) => driver.close(AbortSignal.timeout(driver.closeTimeoutMs)),
};
