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
 * the switch. The failure of a call that sent the switch nothing that could change a port (its
 * login failed, or its session's change count did not move: switch-session.ts) is marked
 * `nothingSent`, so that the port is not set back.
 *
 * A batch (the drift audit and repair: one call per port, made by each port actor as it gets to
 * it) keeps the switch's session open between its calls, so that they share one login although
 * they do not arrive back to back; and once the batch could not log in, or one of its calls ran
 * out of time, its later calls that would need a login fail at once with that reason instead of
 * each waiting out a timeout on a switch that is gone.
 *
 * Host keys: a session is opened with the fingerprint the switch actor has recorded (read from
 * the committed view at that moment), and a driver refuses a switch that presents another key.
 * When none is recorded, the key of the first login is trusted and recorded through `hostKeys`
 * (the switch actor's `switch.recordHostKey`; this is not an actor, so asking the switch actor
 * keeps the ask order downward) before the session is used; if another key was recorded
 * meanwhile, the session is refused.
 */
import { DeviceQueue } from './device-queue';
import { SwitchDriver, SwitchError, SwitchInfo, SwitchLog, SwitchSession } from '../drivers/switch/types';
import { driverName, NO_TELEMETRY, Telemetry, timed } from '../actors/telemetry';
import { CallProgress, leaseLost, nothingSent, wrapSession } from './switch-session';
import { settledWithin } from '../lib/time';

/** The switch actor's record of host keys, as the sessions need it. */
export interface HostKeyBook {
  /** the fingerprint recorded for the switch (committed view), if any */
  recorded(name: string): string | undefined;
  /** record a first-seen fingerprint; rejects when another one is recorded */
  record(name: string, fingerprint: string): Promise<void>;
}

export type PortWork = (session: SwitchSession) => Promise<void>;

export interface SubmitOptions {
  /** names the call in its timeout message (default: "a port operation") */
  what?: string;
  /** the batch (SwitchSessions.batch) the call belongs to, by id */
  batch?: string;
  /** told the call's deadline (ms since the epoch) when it gets the switch */
  onStart?: (deadline: number) => void;
}

/** Calls made together on one switch (see the header). */
export interface SwitchBatch {
  readonly id: string;
  readonly switch: string;
  /** Why the batch gave up the switch (a failed login, a call that ran out of time), if it did. */
  lost?: string;
}

const noop = () => undefined;


export class SwitchSessions {
  private readonly queue: DeviceQueue;
  /** The open session of each switch; only the call that holds the switch touches its entry. */
  private readonly sessions = new Map<string, SwitchSession>();
  /** Each switch's logout in progress, if any, bounded by the timeout. */
  private readonly closing = new Map<string, Promise<void>>();
  /** Batches under way, by id; a switch with any keeps its session open between calls. */
  private readonly batches = new Map<string, SwitchBatch>();
  private readonly holds = new Map<string, number>();
  private batchIds = 0;
  /** switches whose login is in progress (for the words of a timeout) */
  private readonly loggingIn = new Set<string>();
  /** where sessions and failures are logged (the service sets its logger) */
  log?: SwitchLog;
  /** port operations carried by each switch's open session (metrics) */
  private readonly carried = new Map<string, number>();

  constructor(
    private readonly driverFor: (type: string) => SwitchDriver | undefined,
    private readonly timeoutMs: number,
    private readonly hostKeys?: HostKeyBook,
    private readonly telemetry: Telemetry = NO_TELEMETRY,
    /** false once this process may no longer change hardware (the lease of a standby pair); absent: always */
    private readonly mayAct?: () => boolean,
  ) {
    this.queue = new DeviceQueue({
      timeoutMs,
      timeoutError: (_message, t) => new SwitchError(
        `switch ${t.device}: ${t.what} did not finish within ${t.timeoutMs} ms`
        + (t.waiting ? '' : this.loggingIn.has(t.device) ? ' (the login to the switch did not complete: unreachable or not answering)' : ' (the switch stopped answering)'),
      ),
      onIdle: (name) => (this.held(name) ? Promise.resolve() : this.close(name)),
      observe: (e) => telemetry.deviceCall('switch', e.waitedMs / 1000, e.outcome),
    });
  }

  /** Queue work on a switch; resolves once applied, rejects with SwitchError. */
  submit(sw: SwitchInfo, work: PortWork, opts: SubmitOptions = {}): Promise<void> {
    const batch = opts.batch === undefined ? undefined : this.batches.get(opts.batch);
    // The call's own failure, when it failed before its deadline: the reason to report even if
    // closing the broken session then ran out of time.
    let failure: SwitchError | undefined;
    const progress = new CallProgress();
    const call = (signal: AbortSignal) => {
      opts.onStart?.(Date.now() + this.timeoutMs);
      return this.apply(sw, work, signal, batch, progress).catch((err: unknown) => {
        if (!signal.aborted) failure = err instanceof SwitchError ? err : new SwitchError(`switch ${sw.name}: ${(err as Error).message}`);
        throw failure ?? err;
      });
    };
    return this.queue.run(sw.name, call, { what: opts.what ?? 'a port operation' }).catch((err: Error) => {
      // No failure of its own: it ran out of time.
      if (batch && !failure) batch.lost ??= err.message.replace(`switch ${sw.name}: `, '');
      // Read at the failure (at a deadline: what the call had sent by then).
      const own = failure ?? err;
      const reason = progress.sentChanges ? own : nothingSent(own);
      this.log?.warn({ switch: sw.name, what: opts.what ?? 'a port operation', reason: reason.message, nothingSent: !progress.sentChanges }, 'switch operation failed');
      throw reason;
    });
  }

  /** Operations queued or in progress, on every switch. */
  size(): number {
    return this.queue.size();
  }

  /** Start a batch of calls on a switch (see the header); end it with endBatch. */
  batch(sw: string): SwitchBatch {
    const batch: SwitchBatch = { id: String(++this.batchIds), switch: sw };
    this.batches.set(batch.id, batch);
    this.holds.set(sw, (this.holds.get(sw) ?? 0) + 1);
    return batch;
  }

  /** End a batch: the switch's session is closed as usual once nothing else is queued for it. */
  endBatch(batch: SwitchBatch): void {
    if (!this.batches.delete(batch.id)) return;
    const left = (this.holds.get(batch.switch) ?? 1) - 1;
    if (left > 0) {
      this.holds.set(batch.switch, left);
      return;
    }
    this.holds.delete(batch.switch);
    // In the switch's turn: a call queued meanwhile keeps the session (and logs out itself).
    void this.queue.run(batch.switch, async () => {
      if (this.queue.depth(batch.switch) === 1 && !this.held(batch.switch)) await this.close(batch.switch);
    }, { what: 'closing' }).catch(noop);
  }

  private held(sw: string): boolean {
    return this.holds.has(sw);
  }

  /** Operations queued or in progress, per switch. */
  depth(sw: string): number {
    return this.queue.depth(sw);
  }

  /** One operation, in the switch's turn: log in if no session is open, then apply the work. */
  private async apply(sw: SwitchInfo, work: PortWork, signal: AbortSignal, batch: SwitchBatch | undefined, progress: CallProgress): Promise<void> {
    let session = this.sessions.get(sw.name);
    if (!session) {
      await this.closing.get(sw.name);
      signal.throwIfAborted();
      if (batch?.lost) throw new SwitchError(`switch ${sw.name}: not tried (${batch.lost})`);
      const driver = this.driverFor(sw.type);
      if (!driver) throw new SwitchError(`no driver for switch type ${sw.type}`);
      if (this.mayAct && !this.mayAct()) throw leaseLost();
      const recorded = this.hostKeys?.recorded(sw.name);
      let opened: SwitchSession;
      this.loggingIn.add(sw.name);
      try {
        const name = driverName(sw.type);
        const report = (call: string, seconds: number, ok: boolean) => this.telemetry.driverCall('switch', name, call, seconds, ok);
        const info = { ...sw, ...(recorded ? { hostKey: recorded } : {}) };
        const raw = await timed(() => driver.open(info, signal, { log: this.log }), (sec, ok) => report('login', sec, ok));
        opened = wrapSession(raw, { report, mayAct: this.mayAct });
        if (!signal.aborted && !recorded && opened.hostKey && this.hostKeys) {
          const seen = opened;
          await this.hostKeys.record(sw.name, seen.hostKey!).catch(async (err: Error) => {
            await seen.close().catch(noop);
            throw new SwitchError(`switch ${sw.name}: the switch presented host key ${seen.hostKey}, but another one was recorded meanwhile (${err.message}); nothing was changed`);
          });
          this.log?.info({ switch: sw.name, hostKey: seen.hostKey }, 'recorded the switch\'s SSH host key at its first login (trust on first use)');
        }
      } catch (err) {
        if (batch && !signal.aborted) batch.lost ??= `logging in failed: ${(err as Error).message}`;
        throw err;
      } finally {
        this.loggingIn.delete(sw.name);
      }
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
      progress.start(session);
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
    if (!signal.aborted && this.queue.depth(sw.name) === 1 && !this.held(sw.name)) void this.close(sw.name);
  }

  /** Log out of the switch's session if one is open; resolves once its last logout has ended (or had its timeout). */
  private close(name: string): Promise<void> {
    const session = this.sessions.get(name);
    if (session) {
      this.sessions.delete(name);
      this.telemetry.sessionClosed(name, this.carried.get(name) ?? 0);
      this.carried.delete(name);
      // The logout (and the save before it) ends when this signal aborts.
      const done: Promise<void> = settledWithin(session.close(AbortSignal.timeout(this.timeoutMs)), this.timeoutMs).then(() => {
        if (this.closing.get(name) === done) this.closing.delete(name);
      });
      this.closing.set(name, done);
    }
    return this.closing.get(name) ?? Promise.resolve();
  }
}
