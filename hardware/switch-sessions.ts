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
 * Commits: on a switch whose changes take effect only at a commit (SwitchSession.commit: Junos,
 * NVUE, whose commits take seconds on real switches), a call that staged changes and has more
 * calls queued behind it gives up the switch without committing; its outcome waits for the
 * commit of the next call that has none behind it (or the MAX_GROUP-th), which commits every
 * staged change at once. Each call is then answered by the commit's verdict on the ports it
 * changed. A call that fails leaves the changes of the calls before it staged (the driver took
 * its failed change out): they are committed before its session is dropped, with any earlier
 * change of the failed call itself still staged, so that call then counts as having sent it
 * (its port is set back). The closing call of a batch (endBatch) may be the next call too,
 * though it has no change of its own: when nothing is queued behind it, it commits the staged
 * changes before it closes the session, so that a call staged at the end of a batch is
 * committed, or fails with the commit's reason, never left waiting. A session closed with staged changes discards them, and their calls fail as having
 * sent nothing.
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
import { SwitchHealth } from './switch-health';
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

/** Calls whose staged changes share one commit at most (their wait for it is bounded so). */
const MAX_GROUP = 32;

/** A call that staged changes and waits for the commit of a later one. */
interface Awaiting {
  ports: ReadonlySet<string>;
  resolve(): void;
  reject(err: SwitchError): void;
}

/** The outcome of a call that waits for a later call's commit (wrapped: a promise resolved with a promise would wait for it). */
interface Later { outcome: Promise<void> }

/** The commit's verdict on `ports`: the reasons of those that did not read back as asked, or null. */
function verdict(verdicts: Map<string, string>, ports: Iterable<string>): SwitchError | null {
  const bad = [...ports].flatMap((p) => (verdicts.has(p) ? [verdicts.get(p)!] : []));
  return bad.length ? new SwitchError(bad.join('; ')) : null;
}

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
  /** calls waiting for the next commit on each switch (see the header) */
  private readonly awaiting = new Map<string, Awaiting[]>();
  /** the call that holds each switch now */
  private readonly current = new Map<string, CallProgress>();
  /** what the last call on each switch showed (lists show it) */
  readonly health = new SwitchHealth();

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
    const what = opts.what ?? 'a port operation';
    return this.queue.run(sw.name, call, { what }).then(
      // A call waiting for a later commit: that commit's verdict, which says itself whether it sent anything.
      async (later) => {
        await later?.outcome.catch((err: SwitchError) => {
          this.log?.warn({ switch: sw.name, what, reason: err.message, nothingSent: err.nothingSent }, 'switch operation failed');
          this.health.failed(sw.name, err.message);
          throw err;
        });
        this.health.worked(sw.name);
      },
      (err: Error) => {
        // No failure of its own: it ran out of time.
        if (batch && !failure) batch.lost ??= err.message.replace(`switch ${sw.name}: `, '');
        // Read at the failure (at a deadline: what the call had sent by then).
        const own = failure ?? err;
        const reason = progress.sentChanges ? own : nothingSent(own);
        this.log?.warn({ switch: sw.name, what, reason: reason.message, nothingSent: !progress.sentChanges }, 'switch operation failed');
        this.health.failed(sw.name, reason.message);
        throw reason;
      },
    );
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

  /**
   * End a batch: the switch's session is closed as usual once nothing else is queued for it.
   * The closing call runs in the switch's turn, and a call staged just before it may be waiting
   * for it as for a later call's commit (see the header), so it commits what is staged first.
   */
  endBatch(batch: SwitchBatch): void {
    if (!this.batches.delete(batch.id)) return;
    const left = (this.holds.get(batch.switch) ?? 1) - 1;
    if (left > 0) {
      this.holds.set(batch.switch, left);
      return;
    }
    this.holds.delete(batch.switch);
    void this.queue.run(batch.switch, (signal) => this.closeBatch(batch.switch, signal), { what: 'closing' }).catch(noop);
  }

  /**
   * A batch's closing call, in the switch's turn. A call queued behind it keeps the session: it
   * commits what is staged and logs out itself (or, another closing call, does as this one).
   * Else the staged changes of the calls waiting for a commit are committed now, each call
   * answered by the verdict as usual (a failed commit fails them with its own reason), and the
   * session is closed unless a batch begun since holds the switch. A failed or timed-out commit
   * drops the session even then, as after a failed call.
   */
  private async closeBatch(name: string, signal: AbortSignal): Promise<void> {
    if (this.queue.depth(name) > 1) return;
    let closing: Promise<void> | undefined;
    const drop = () => { closing ??= this.close(name); };
    let failed = false;
    const session = this.sessions.get(name);
    if (session && this.awaiting.has(name)) {
      // At the deadline the session is closed, which ends the commit (its group fails with it).
      signal.addEventListener('abort', drop);
      try {
        failed = await this.commit(name, session).then(() => false, () => true);
      } finally {
        signal.removeEventListener('abort', drop);
      }
    }
    // Checked again: a call queued during the commit keeps the session (and logs out itself).
    if (failed || signal.aborted || (this.queue.depth(name) === 1 && !this.held(name))) drop();
    await closing;
  }

  private held(sw: string): boolean {
    return this.holds.has(sw);
  }

  /** Operations queued or in progress, per switch. */
  depth(sw: string): number {
    return this.queue.depth(sw);
  }

  /**
   * One operation, in the switch's turn: log in if no session is open, then apply the work.
   * Resolves with the outcome of a commit still to come when the work staged changes that wait
   * for a later call's commit.
   */
  private async apply(sw: SwitchInfo, work: PortWork, signal: AbortSignal, batch: SwitchBatch | undefined, progress: CallProgress): Promise<Later | undefined> {
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
        opened = wrapSession(raw, { report, mayAct: this.mayAct, changing: (port) => this.current.get(sw.name)?.touch(port) });
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
    let later: Later | undefined;
    try {
      progress.start(session);
      this.current.set(sw.name, progress);
      await work(session);
      later = await this.commitOrWait(sw.name, session, progress, signal);
    } catch (err) {
      // The earlier calls' staged changes go on (see the header).
      if (!signal.aborted && this.awaiting.has(sw.name)) {
        // The driver took out only the change that failed: one of this call's ports still
        // staged may carry its earlier changes, which this commit applies as its own.
        if (![...progress.ports].some((p) => session.uncommitted?.has(p))) progress.stop();
        await this.commit(sw.name, session).catch(noop);
        progress.stop();
      }
      drop();
      throw err;
    } finally {
      this.current.delete(sw.name);
      signal.removeEventListener('abort', drop);
      await closing;
    }
    // Nothing else is queued for the switch: log out now (its next turn waits for it). Not
    // after the deadline: the switch may belong to a later call by now.
    if (!signal.aborted && this.queue.depth(sw.name) === 1 && !this.held(sw.name)) void this.close(sw.name);
    return later;
  }

  /**
   * After a call's work, on a session with staged changes: wait for a later call's commit (the
   * promise of its verdict) when more calls are queued, else commit now and answer this call's
   * own verdict (see the header).
   */
  private async commitOrWait(name: string, session: SwitchSession, progress: CallProgress, signal: AbortSignal): Promise<Later | undefined> {
    if (!session.uncommitted?.size || !session.commit) return undefined;
    const group = this.awaiting.get(name) ?? [];
    if (!signal.aborted && this.queue.depth(name) > 1 && group.length + 1 < MAX_GROUP) {
      const outcome = new Promise<void>((resolve, reject) => group.push({ ports: progress.ports, resolve, reject }));
      this.awaiting.set(name, group);
      return { outcome };
    }
    const own = verdict(await this.commit(name, session), progress.ports);
    if (own) throw own;
    return undefined;
  }

  /** Commit the switch's staged changes, and answer the calls waiting for it; rejects when the commit failed. */
  private async commit(name: string, session: SwitchSession): Promise<Map<string, string>> {
    const group = this.awaiting.get(name) ?? [];
    this.awaiting.delete(name);
    let verdicts: Map<string, string>;
    try {
      verdicts = await session.commit!();
    } catch (err) {
      const e = err instanceof SwitchError ? err : new SwitchError(`switch ${name}: ${(err as Error).message}`);
      for (const a of group) a.reject(e);
      throw e;
    }
    for (const a of group) {
      const bad = verdict(verdicts, a.ports);
      if (bad) a.reject(bad);
      else a.resolve();
    }
    return verdicts;
  }

  /** Calls still waiting for a commit when their session ends: their changes were discarded with it. */
  private abandon(name: string): void {
    const group = this.awaiting.get(name);
    if (!group) return;
    this.awaiting.delete(name);
    for (const a of group) a.reject(new SwitchError(`switch ${name}: not applied: the session ended before its commit (a later call on the switch failed), and the staged change was discarded`, { nothingSent: true }));
  }

  /** Log out of the switch's session if one is open; resolves once its last logout has ended (or had its timeout). */
  private close(name: string): Promise<void> {
    const session = this.sessions.get(name);
    this.abandon(name);
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
