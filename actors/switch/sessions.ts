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
 *
 * Host keys: a session is opened with the fingerprint the switch actor has recorded (read from
 * the committed view at that moment), and a driver refuses a switch that presents another key.
 * When none is recorded, the key of the first login is trusted and recorded through `hostKeys`
 * (the switch actor's `switch.recordHostKey`; this is not an actor, so asking the switch actor
 * keeps the ask order downward) before the session is used; if another key was recorded
 * meanwhile, the session is refused.
 */
import { DeviceQueue } from '../device-queue';
import { SwitchDriver, SwitchError, SwitchInfo, SwitchLog, SwitchSession } from '../../drivers/switch/types';

/** The switch actor's record of host keys, as the sessions need it. */
export interface HostKeyBook {
  /** the fingerprint recorded for the switch (committed view), if any */
  recorded(name: string): string | undefined;
  /** record a first-seen fingerprint; rejects when another one is recorded */
  record(name: string, fingerprint: string): Promise<void>;
}

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
  /** switches whose login is in progress (for the words of a timeout) */
  private readonly loggingIn = new Set<string>();
  /** where sessions and failures are logged (the service sets its logger) */
  log?: SwitchLog;

  constructor(
    private readonly driverFor: (type: string) => SwitchDriver | undefined,
    private readonly timeoutMs: number,
    private readonly hostKeys?: HostKeyBook,
  ) {
    this.queue = new DeviceQueue({
      timeoutMs,
      timeoutError: (_message, t) => new SwitchError(
        `switch ${t.device}: ${t.what} did not finish within ${t.timeoutMs} ms`
        + (t.waiting ? '' : this.loggingIn.has(t.device) ? ' (the login to the switch did not complete: unreachable or not answering)' : ' (the switch stopped answering)'),
      ),
      onIdle: (name) => this.close(name),
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
    return this.queue.run(sw.name, call, { what: 'a port operation' }).catch((err: Error) => {
      const reason = failure ?? err;
      this.log?.warn({ switch: sw.name, reason: reason.message }, 'switch operation failed');
      throw reason;
    });
  }

  /** Operations queued or in progress, per switch. */
  depth(sw: string): number {
    return this.queue.depth(sw);
  }

  /** One operation, in the switch's turn: log in if no session is open, then apply the work. */
  private async apply(sw: SwitchInfo, work: PortWork, signal: AbortSignal): Promise<void> {
    let session = this.sessions.get(sw.name);
    if (!session) {
      await this.closing.get(sw.name);
      signal.throwIfAborted();
      const driver = this.driverFor(sw.type);
      if (!driver) throw new SwitchError(`no driver for switch type ${sw.type}`);
      const recorded = this.hostKeys?.recorded(sw.name);
      let opened: SwitchSession;
      this.loggingIn.add(sw.name);
      try {
        opened = await driver.open({ ...sw, ...(recorded ? { hostKey: recorded } : {}) }, signal, { log: this.log });
        if (!signal.aborted && !recorded && opened.hostKey && this.hostKeys) {
          await this.hostKeys.record(sw.name, opened.hostKey).catch(async (err: Error) => {
            await opened.close().catch(noop);
            throw new SwitchError(`switch ${sw.name}: the switch presented host key ${opened.hostKey}, but another one was recorded meanwhile (${err.message}); nothing was changed`);
          });
          this.log?.info({ switch: sw.name, hostKey: opened.hostKey }, 'recorded the switch\'s SSH host key at its first login (trust on first use)');
        }
      } finally {
        this.loggingIn.delete(sw.name);
      }
      if (signal.aborted) {
        // A session that arrives after its deadline is closed at once, never used.
        await opened.close().catch(noop);
        throw signal.reason;
      }
      this.sessions.set(sw.name, (session = opened));
    }
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
      // The logout (and the save before it) ends when this signal aborts.
      const done: Promise<void> = bounded(session.close(AbortSignal.timeout(this.timeoutMs)), this.timeoutMs).then(() => {
        if (this.closing.get(name) === done) this.closing.delete(name);
      });
      this.closing.set(name, done);
    }
    return this.closing.get(name) ?? Promise.resolve();
  }
}
