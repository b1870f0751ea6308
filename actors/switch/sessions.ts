/**
 * Drives switches: one session at a time per switch, and every operation queued for that
 * switch while its session is open is applied in the same session (HIL did the same: one
 * login per batch). Different switches work in parallel. The calls of one switch run on a
 * DeviceQueue: each gets one timeout, covering its port change and, when it opens the session,
 * the login. The session is closed when the switch's queue runs empty: the last queued call
 * starts the logout as soon as its work is done, and the queue's onIdle, the switch's next
 * turn, waits for it to end (as does a login that comes meanwhile).
 *
 * A failed or timed-out call fails only its own operation, and the session is dropped so that
 * the next operation starts on a fresh one — but only once the failed call has finished (or
 * had four timeouts to: the queue's settle time), since a timed-out call may still be changing
 * the switch.
 */
import { DeviceQueue } from '../device-queue';
import { SwitchDriver, SwitchError, SwitchInfo, SwitchSession } from '../../drivers/switch/types';
import { driverName, instrument, NO_TELEMETRY, Telemetry, timed } from '../telemetry';

/** The session calls, as metrics name them. */
const SESSION_CALLS = {
  setNative: 'set_native', removeNative: 'remove_native', addTagged: 'add_tagged', removeTagged: 'remove_tagged',
  resetPort: 'reset_port', getPortVlans: 'get_port_vlans', close: 'logout',
};

export type PortWork = (session: SwitchSession) => Promise<void>;

const noop = () => undefined;

/** Resolves when `p` settles or after `ms`, whichever comes first. */
function bounded(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout;
  return Promise.race([p.then(noop, noop), new Promise<void>((r) => { timer = setTimeout(r, ms); })]).finally(() => clearTimeout(timer));
}

export class SwitchSessions {
  private readonly queue: DeviceQueue;
  /** The open session of each switch; only the call that holds the switch touches its entry. */
  private readonly sessions = new Map<string, SwitchSession>();
  /** Each switch's logout in progress, if any, bounded by the timeout. */
  private readonly closing = new Map<string, Promise<void>>();
  /** port operations carried by each switch's open session (metrics) */
  private readonly carried = new Map<string, number>();

  constructor(
    private readonly driverFor: (type: string) => SwitchDriver | undefined,
    private readonly timeoutMs: number,
    private readonly telemetry: Telemetry = NO_TELEMETRY,
  ) {
    this.queue = new DeviceQueue({
      timeoutMs,
      timeoutError: (_message, t) => new SwitchError(`switch ${t.device}: ${t.what} did not finish within ${t.timeoutMs} ms`),
      onIdle: (name) => this.close(name),
      observe: (e) => telemetry.deviceCall('switch', e.waitedMs / 1000, e.outcome),
    });
  }

  /** Queue work on a switch; resolves once applied, rejects with SwitchError. */
  submit(sw: SwitchInfo, work: PortWork): Promise<void> {
    // The call's own failure, when it failed before its deadline: the reason to report even if
    // closing the broken session then ran out of time.
    let failure: SwitchError | undefined;
    const call = (signal: AbortSignal) => this.apply(sw, work, signal).catch((err: unknown) => {
      if (!signal.aborted) failure = err instanceof SwitchError ? err : new SwitchError(`switch ${sw.name}: ${(err as Error).message}`);
      throw failure ?? err;
    });
    return this.queue.run(sw.name, call, { what: 'a port operation' }).catch((err: Error) => { throw failure ?? err; });
  }

  /** Operations queued or in progress, per switch. */
  depth(sw: string): number {
    return this.queue.depth(sw);
  }

  /** Operations queued or in progress, on every switch. */
  size(): number {
    return this.queue.size();
  }

  /** One operation, in the switch's turn: log in if no session is open, then apply the work. */
  private async apply(sw: SwitchInfo, work: PortWork, signal: AbortSignal): Promise<void> {
    let session = this.sessions.get(sw.name);
    if (!session) {
      await this.closing.get(sw.name);
      signal.throwIfAborted();
      const driver = this.driverFor(sw.type);
      if (!driver) throw new SwitchError(`no driver for switch type ${sw.type}`);
      const name = driverName(sw.type);
      const report = (call: string, seconds: number, ok: boolean) => this.telemetry.driverCall('switch', name, call, seconds, ok);
      const opened = instrument(await timed(() => driver.open(sw, signal), (s, ok) => report('login', s, ok)), SESSION_CALLS, report);
      if (signal.aborted) {
        // A session that arrives after its deadline is closed at once, never used.
        await opened.close().catch(noop);
        throw signal.reason;
      }
      this.sessions.set(sw.name, (session = opened));
      this.carried.set(sw.name, 0);
      this.telemetry.sessionOpened(sw.name);
    }
    this.carried.set(sw.name, (this.carried.get(sw.name) ?? 0) + 1);
    // At the deadline, or on failure, the session may be in any state: close it (a driver ends
    // its pending calls then), and the next operation gets a new one.
    let closing: Promise<void> | undefined;
    const drop = () => { closing ??= this.close(sw.name); };
    signal.addEventListener('abort', drop);
    try {
      await work(session);
    } catch (err) {
      drop();
      throw err;
    } finally {
      signal.removeEventListener('abort', drop);
      await closing;
    }
    // Nothing else is queued for the switch: log out now (its next turn waits for it). Not
    // after the deadline: the switch may belong to a later call by now.
    if (!signal.aborted && this.queue.depth(sw.name) === 1) void this.close(sw.name);
  }

  /** Log out of the switch's session if one is open; resolves once its last logout has ended (or had its timeout). */
  private close(name: string): Promise<void> {
    const session = this.sessions.get(name);
    if (session) {
      this.sessions.delete(name);
      this.telemetry.sessionClosed(name, this.carried.get(name) ?? 0);
      this.carried.delete(name);
      const done: Promise<void> = bounded(session.close(), this.timeoutMs).then(() => {
        if (this.closing.get(name) === done) this.closing.delete(name);
      });
      this.closing.set(name, done);
    }
    return this.closing.get(name) ?? Promise.resolve();
  }
}
