/**
 * Power operations of a node, outside the node actor's mailbox: a BMC that hangs for seconds
 * must not hold up the node's other messages (docs/actors.md, rule 4).
 *
 * Every call runs on a DeviceQueue, one per OBM driver, keyed by the BMC its entry names
 * (`device`) and paced as the entry asks: calls to one BMC never interleave their commands (a
 * whole power cycle is one call), and different BMCs work in parallel. Each call is answered
 * within the OBM timeout of being made, waiting behind earlier calls included: one still
 * waiting then never reaches the BMC, and one running then is aborted (its ipmitool killed,
 * its HTTP request cancelled).
 */
import { isIP } from 'node:net';

import { DeviceQueue } from './device-queue';
import { HiltError } from '../actors/errors';
import type { DriverFields, DriverSet } from '../drivers/registry';
import { BootDevice, ConsoleIo, ConsoleLink, ObmDriver, ObmDriverEntry, ObmError, PowerState } from '../drivers/obm/types';
import type { Obm } from '../actors/node/protocol';
import { PLAIN, type Credentials } from '../actors/credentials';
import { driverName, NO_TELEMETRY, Telemetry, timed } from '../actors/telemetry';

type Call<T> = (driver: ObmDriver, fields: DriverFields, signal: AbortSignal) => Promise<T>;

/**
 * Who asked: an admin reads a BMC failure in full; anyone else reads it without the BMC's
 * address and user (docs/api-conventions.md §11), which the service's log keeps.
 */
export interface Asker {
  isAdmin: boolean;
  /**
   * Runs when the call's turn at the BMC comes, before anything is sent to it: throws (a
   * HiltError) when the caller may no longer act on the node (it left the caller's project, the
   * caller lost its membership, the node was deleted). Calls wait behind earlier ones to the same
   * BMC for up to the OBM timeout; what was allowed when the call was made may not be any more.
   */
  recheck?: () => void;
  /** the node the call is for: its outcome is remembered as the node's last known power (PowerControl.seen) */
  node?: { name: string; incarnation: string };
}

/**
 * A node's power as the service last saw it (issue 26: lists show it with its age): the state a
 * power call left or a status read found, and the failure of the last call if it failed. Kept in
 * memory only: an observation, not a fact the service owns; after a restart it is unknown.
 */
export interface PowerSeen {
  state: PowerState | 'unknown';
  /** when the state was seen (ms) */
  at: number | null;
  /** the last call's failure, and when */
  error?: string;
  errorAt?: number;
  incarnation: string;
  /**
   * When `at` or `errorAt` last moved, in this process's order of power calls ended (1, 2, …;
   * 0: never): compared with PowerControl.ended, it says whether a call ended since, whatever
   * the wall clock did meanwhile (a step back, another machine's clock).
   */
  call: number;
}

/** The state each successful call leaves. */
const LEAVES: Record<string, PowerState | undefined> = { power_on: 'on', power_cycle: 'on', power_off: 'off' };

const ADMIN: Asker = { isAdmin: true };

/** The OBM drivers PowerControl calls: the service's, or the same behind the lease's guard (src/lease-guard.ts). */
export type ObmDrivers = Pick<DriverSet<ObmDriver, ObmDriverEntry>, 'registry' | 'get'>;

export class PowerControl {
  /** per OBM type */
  private readonly queues = new Map<string, DeviceQueue>();
  private readonly seenByNode = new Map<string, PowerSeen>();
  private endedCalls = 0;

  constructor(
    private readonly drivers: ObmDrivers,
    timeoutMs: number,
    private readonly telemetry: Telemetry = NO_TELEMETRY,
    /** opens the BMC's sealed secrets for the driver's call, and only then (actors/credentials.ts) */
    private readonly credentials: Pick<Credentials, 'open'> = PLAIN,
  ) {
    for (const entry of drivers.registry.entries) {
      this.queues.set(entry.type, new DeviceQueue({
        timeoutMs,
        minIntervalMs: entry.pacing?.minIntervalMs,
        minRunMs: entry.pacing?.minRunMs,
        observe: (e) => telemetry.deviceCall('obm', e.waitedMs / 1000, e.outcome),
        timeoutError: (_message, t) =>
          new ObmError(`BMC ${t.device} did not answer within ${t.timeoutMs} ms (${t.waiting ? 'still busy with an earlier call' : t.what})`),
      }));
    }
  }

  cycle(obm: Obm, force = false, who: Asker = ADMIN): Promise<void> {
    return this.run(obm, who, 'power_cycle', force ? 'power cycle (force)' : 'power cycle', (d, f, s) => d.powerCycle(f, { force }, s));
  }

  off(obm: Obm, who: Asker = ADMIN): Promise<void> {
    return this.run(obm, who, 'power_off', 'power off', (d, f, s) => d.powerOff(f, s));
  }

  on(obm: Obm, who: Asker = ADMIN): Promise<void> {
    return this.run(obm, who, 'power_on', 'power on', (d, f, s) => d.powerOn(f, s));
  }

  status(obm: Obm, who: Asker = ADMIN): Promise<PowerState> {
    return this.run(obm, who, 'power_status', 'power status', (d, f, s) => d.powerStatus(f, s));
  }

  bootDevice(obm: Obm, device: BootDevice, who: Asker = ADMIN): Promise<void> {
    return this.run(obm, who, 'boot_device', `boot device ${device}`, (d, f, s) => d.setBootDevice(f, device, s));
  }

  /** The power calls ended so far in this process: a later one's PowerSeen.call is above it. */
  get ended(): number {
    return this.endedCalls;
  }

  /** The node's power as last seen, if this registration of it was seen at all. */
  seen(node: string, incarnation: string): PowerSeen | undefined {
    const s = this.seenByNode.get(node);
    return s && s.incarnation === incarnation ? s : undefined;
  }

  private remember(who: Asker, name: string, result: unknown, error?: string): void {
    // Power calls only: a console's session says nothing of the power.
    if (!who.node || !(name in LEAVES || name === 'power_status' || name === 'boot_device')) return;
    const { name: node, incarnation } = who.node;
    const before = this.seen(node, incarnation) ?? { state: 'unknown' as const, at: null, incarnation, call: 0 };
    const now = Date.now();
    const call = ++this.endedCalls;
    if (error !== undefined) {
      this.seenByNode.set(node, { ...before, error, errorAt: now, call });
      return;
    }
    const state = name === 'power_status' ? (result as PowerState) : LEAVES[name];
    // A boot device call says nothing of the power, but it did reach the BMC: its last failure is over.
    this.seenByNode.set(node, state ? { state, at: now, incarnation, call } : { state: before.state, at: before.at, incarnation, call: before.call });
  }

  /** Does the node's OBM driver offer a serial console (hardware/consoles.ts)? */
  hasConsole(obm: Obm): boolean {
    return typeof this.drivers.get(obm.type)?.driver.openConsole === 'function';
  }

  /**
   * Opens the node's serial console in the BMC's turn (its stale session deactivated first):
   * the call ends once the session is up, so later calls to the BMC are not held up
   * by a session that lives on outside the queue.
   */
  openConsole(obm: Obm, io: ConsoleIo, stop?: AbortSignal, who: Asker = ADMIN): Promise<ConsoleLink> {
    return this.run(obm, who, 'console_open', 'console (sol activate)', (d, f, s) => {
      if (!d.openConsole) throw new ObmError(`OBM type ${obm.type} has no serial console`);
      // `stop`: the session is no longer wanted (the node stopped recording, the service stops).
      return d.openConsole(f, io, stop ? AbortSignal.any([s, stop]) : s);
    });
  }

  /** Queued calls (waiting or running) on every BMC. */
  size(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.size();
    return n;
  }

  /** `name`: the call as metrics name it; `what`: as messages do. */
  private async run<T>(obm: Obm, who: Asker, name: string, what: string, call: Call<T>): Promise<T> {
    const found = this.drivers.get(obm.type);
    if (!found) throw new HiltError('OBMError', `no driver is configured for OBM type ${obm.type}`);
    let device: string | undefined;
    try {
      device = found.entry.device(obm.fields);
      const driver = driverName(obm.type);
      const report = (seconds: number, ok: boolean) => this.telemetry.driverCall('obm', driver, name, seconds, ok);
      const result = await this.queues.get(obm.type)!.run(device, (signal) => {
        who.recheck?.();
        return timed(() => call(found.driver, this.credentials.open(obm.fields), signal), report);
      }, { from: 'submit', what });
      this.remember(who, name, result);
      return result;
    } catch (err) {
      if (!(err instanceof ObmError)) throw err;
      // Kept as a project may read it: lists show it to the node's project too.
      const forMembers = withoutBmcIdentity(err.forMembers ?? err.message, obm.fields, device);
      this.remember(who, name, undefined, forMembers);
      if (who.isAdmin) throw new HiltError('OBMError', err.message);
      // The full text stays in the service's log (the error handler logs `detail` with a 502).
      throw Object.assign(new HiltError('OBMError', forMembers), { detail: err.message });
    }
  }
}

/**
 * A BMC failure as a node's project may read it: the BMC's address (as the device key, as the
 * `host` field and as its bare host name) and the BMC user replaced by placeholders, and any
 * other IPv4 or IPv6 address, with its port, too (a host name resolves to an address that none
 * of those spell, and a BMC's own text may name addresses of its network).
 */
export function withoutBmcIdentity(message: string, fields: DriverFields, device?: string): string {
  const host = typeof fields.host === 'string' ? fields.host : '';
  // `https://[::1]:8443/` → `::1`; `127.0.0.1:623` → `127.0.0.1`
  const authority = host.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').split('/')[0]!;
  const bare = /^\[([^\]]*)\]/.exec(authority)?.[1] ?? (authority.split(':').length === 2 ? authority.split(':')[0]! : authority);
  const places = [...new Set([device, host, authority, bare].filter((s): s is string => !!s && s.length > 0))]
    .sort((a, b) => b.length - a.length);
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  let out = message;
  if (device) out = out.split(`BMC ${device}`).join("the node's BMC");
  for (const p of places) out = out.replace(new RegExp(escape(p), 'gi'), '[BMC]');
  out = withoutAddresses(out).replace(/\[BMC\]:\d{1,5}\b/g, '[BMC]');
  const user = typeof fields.user === 'string' ? fields.user : '';
  if (user) out = out.split(user).join('[user]');
  return out;
}

/** IPv4 and IPv6 literals (bracketed or not, with a port or a zone) replaced by `[address]`. */
export function withoutAddresses(text: string): string {
  const v4 = text.replace(/(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?(?![\w.])/g, (m) =>
    isIP(m.split(':')[0]!) === 4 ? '[address]' : m);
  // Candidates hold a colon; only those that are an IPv6 address (once a port is taken off) go.
  return v4.replace(/(?<![\w:.%\]])\[?[0-9A-Fa-f]*:[0-9A-Fa-f:.]*(?:%[\w.-]+)?\]?(?::\d{1,5})?/g, (m) => {
    const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(m);
    const core = (bracketed ? bracketed[1]! : m).replace(/%[\w.-]+$/, '');
    if (isIP(core) === 6) return '[address]';
    // unbracketed with a port (`2001:db8:0:0:0:0:0:1:443`); `::1:8443` is an address as it is
    const cut = core.replace(/:\d{1,5}$/, '');
    return !bracketed && cut !== core && isIP(cut) === 6 ? '[address]' : m;
  });
}
