/**
 * One kind's actors: EntityRegistry keeps each live entity's mailbox (an `Inbox`) and runs its
 * behaviour's loop (actors/behavior.ts): decide, persist and wait for the flush, apply, update
 * the read models, then reply (docs/actors.md, the loop). It also wakes an entity from storage,
 * answers every waiting ask when one faults, puts idle ones to sleep for the runtime's sweep,
 * and re-encodes an entity's stored data in its own mailbox turn.
 *
 * Longer than our other modules on purpose: the mailbox loop, recovery, faults and the sweep
 * share one set of invariants (the order decide → persist → apply → reply, a fault answering
 * every waiting ask, no actor put to sleep with a message in flight), easiest to check together.
 */
import { HiltError } from './errors';
import { QUOTE_MAX, shortText } from '../lib/text';
import type { JournalEntry, Rewrite } from './persistence/engine';
import type { AnyDecision, AskOptions, Asker, Behavior, Command, Event, Replies } from './behavior';
import type { ActorFault, ActorRuntime, KindView, StoredState } from './runtime';

type Reply = { ok: true; value: unknown } | { ok: false; error: HiltError };
/** A command, or a re-encoding of the entity's stored data (EntityRegistry.rewrite). */
type Envelope<C> = { cmd: C; reply: (r: Reply) => void; still?: () => void } | { reencode: Reencode; reply: (r: Reply) => void };

/**
 * How an entity's stored data is re-encoded without changing what it says (credentials sealed
 * again under a new key: src/secrets/): each function returns its argument itself when it has
 * nothing to change.
 */
export interface Reencode {
  /** a stored event (with its stamp) */
  event(data: unknown): unknown;
  /** a state: the snapshot's, and the live actor's */
  state(data: unknown): unknown;
}

/** One live actor: its committed state, its mailbox, and what the sweep needs to know. */
interface Inbox<S, C> {
  state: S | null;
  /** sequence number of its last event (0: none) */
  seq: number;
  /** its last snapshot's write, while in flight */
  snapshotting?: Promise<void>;
  /** events persisted since its last snapshot */
  sinceSnapshot: number;
  /** recovered from storage (false until the first message has it recovered) */
  recovered: boolean;
  mailbox: Envelope<C>[];
  /** a message is being handled */
  running: boolean;
  /** asks waiting for an answer (deferred hardware answers excepted) */
  inflight: number;
  /** it faulted and was dropped: its run loop stops */
  faulted?: boolean;
  lastUsed: number;
}

/** Messages handled back to back before the mailbox lets the event loop run. */
const BATCH = 64;

export class EntityRegistry<S, C extends Command, E extends Event, R extends Replies<C>> implements Asker<C, R>, KindView {
  private readonly live = new Map<string, Inbox<S, C>>();
  /** commits of this kind since the start: a view of the kind changed when it moved */
  commits = 0;

  constructor(
    private readonly rt: ActorRuntime,
    readonly behavior: Behavior<S, C, E, R>,
    private readonly onCommit: (id: string, prev: S | null, next: S | null) => void,
  ) {}

  get kind(): string {
    return this.behavior.kind;
  }

  key(id: string): string {
    return `${this.behavior.kind}:${id}`;
  }

  /** Send a command to the entity's actor; its answer is the protocol's reply to that command. */
  ask<K extends C['type']>(id: string, cmd: Extract<C, { type: K }>, opts: AskOptions = {}): Promise<R[K]> {
    if (this.rt.stopped) return Promise.reject(new HiltError('ServiceUnavailableError', 'the service is shutting down'));
    const actor = this.wake(id);
    // A deferred answer on hardware keeps no message in the mailbox: it neither holds the actor
    // awake nor delays a shutdown, and its answer does not need the actor.
    const counted = !opts.hardware;
    if (counted) actor.inflight++;
    return new Promise<R[K]>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let answered = false;
      const done = () => {
        answered = true;
        clearTimeout(timer);
        if (counted) actor.inflight--;
        actor.lastUsed = Date.now();
      };
      const reply = (r: Reply) => {
        if (answered) return;
        done();
        if (r.ok) resolve(r.value as R[K]);
        else reject(r.error);
      };
      if (!opts.unbounded && !opts.hardware) {
        timer = setTimeout(() => {
          if (answered) return;
          done();
          reject(new HiltError('ServiceUnavailableError', `${this.behavior.kind} ${shortId(id)} did not answer in time; the change may not have been applied`));
        }, this.rt.askTimeoutMs);
      }
      actor.mailbox.push({ cmd, reply, still: opts.still });
      if (!actor.running) void this.run(id, actor);
    });
  }

  /** Live actors of this kind, with the number of messages queued or being handled. */
  liveActors(): { id: string; mailbox: number }[] {
    return [...this.live.entries()].map(([id, a]) => ({ id, mailbox: a.inflight }));
  }

  /** Live actors, the messages queued or being handled in all their mailboxes, and in the fullest one. */
  load(): { live: number; messages: number; busiest: number } {
    let messages = 0;
    let busiest = 0;
    for (const a of this.live.values()) {
      messages += a.inflight;
      if (a.inflight > busiest) busiest = a.inflight;
    }
    return { live: this.live.size, messages, busiest };
  }

  isLive(id: string): boolean {
    return this.live.has(id);
  }

  busy(): boolean {
    for (const a of this.live.values()) if (a.inflight > 0 || a.running) return true;
    return false;
  }

  /**
   * Rebuild every stored entity's committed state, in bulk (at start, for the read models),
   * handing each to `each` (a callback, not an iterator of its own: one asynchronous step per
   * entity less, which a start of hundreds of thousands of entities feels).
   */
  async recoverAll(each: (id: string, state: S | null) => void): Promise<void> {
    const prefix = `${this.behavior.kind}:`;
    for await (const stored of this.rt.engine.recoverAll(prefix)) {
      const id = stored.key.slice(prefix.length);
      let state = (stored.snapshot?.data ?? null) as S | null;
      for (const ev of stored.events) state = this.behavior.apply(state, ev.data as E, id);
      each(id, state);
    }
  }

  /** One entity's committed state as stored (its actor may be asleep), or null if it never existed. */
  async inspect(id: string): Promise<StoredState<S> | null> {
    const stored = await this.rt.engine.recover(this.key(id));
    const sequenceNumber = stored.events.at(-1)?.sequenceNumber ?? stored.snapshot?.sequenceNumber ?? 0;
    if (!sequenceNumber) return null;
    let state = (stored.snapshot?.data ?? null) as S | null;
    for (const ev of stored.events) state = this.behavior.apply(state, ev.data as E, id);
    return { state, sequenceNumber, live: this.isLive(id) };
  }

  /** The entity's events, newest first, read lazily: the audit trail. */
  journal(id: string, limit: number): AsyncIterable<JournalEntry> {
    return this.rt.engine.journal(this.key(id), limit);
  }

  /** Ids (starting with `idPrefix`) of every entity of this kind that has ever persisted an event. */
  async storedIds(idPrefix = ''): Promise<string[]> {
    const prefix = `${this.behavior.kind}:`;
    const out: string[] = [];
    for await (const k of this.rt.engine.keys(prefix + idPrefix)) out.push(k.slice(prefix.length));
    return out;
  }

  /** Idle actors, in slices of at most `size`. */
  *idleSlices(now: number, idleMs: number, size: number): Generator<string[]> {
    let batch: string[] = [];
    for (const [id, a] of this.live) {
      if (a.inflight === 0 && !a.running && now - a.lastUsed >= idleMs) batch.push(id);
      if (batch.length >= size) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length) yield batch;
  }

  /** Put these actors to sleep if they are still idle (a message may have arrived between slices). */
  sleep(ids: string[]): void {
    for (const id of ids) {
      const a = this.live.get(id);
      // The next ask wakes a fresh actor, which recovers from storage.
      if (a && a.inflight === 0 && !a.running && !a.mailbox.length) this.live.delete(id);
    }
  }

  /**
   * Recover these actors from storage now, before they are sent anything. A start that hands
   * them messages in an order that matters (resumed network operations: hardware/network-
   * operations.ts) does so once they are all in memory: a message to a recovered actor reaches
   * its decide in the same turn, so their effects keep the order of the messages, whatever the
   * order the store answered the reads in (PostgreSQL's pool answers them in any order). A read
   * that fails is left to the actor's first message.
   */
  async preload(ids: Iterable<string>): Promise<void> {
    await Promise.all([...new Set(ids)].map(async (id) => {
      const actor = this.wake(id);
      if (actor.recovered || actor.running) return;
      actor.running = true;
      try {
        await this.recover(id, actor);
      } catch {
        // the first message recovers it again
      } finally {
        actor.running = false;
        if (actor.mailbox.length) void this.run(id, actor);
      }
    }));
  }

  private wake(id: string): Inbox<S, C> {
    let actor = this.live.get(id);
    if (!actor) {
      actor = { state: null, seq: 0, sinceSnapshot: 0, recovered: false, mailbox: [], running: false, inflight: 0, lastUsed: Date.now() };
      this.live.set(id, actor);
    }
    return actor;
  }

  /** Handle the mailbox's messages one at a time until it is empty (or the actor faults). */
  private async run(id: string, actor: Inbox<S, C>): Promise<void> {
    actor.running = true;
    try {
      if (!actor.recovered) {
        try {
          await this.recover(id, actor);
        } catch (err) {
          // Nothing can be decided without the state: answer what waits, and let the next
          // message try again on a fresh actor.
          const storage = err instanceof StorageFault;
          const cause = storage ? err.cause : err;
          const error = storage
            ? new HiltError('ServiceUnavailableError', `${this.behavior.kind} ${shortId(id)} could not be read from storage: ${shortText((cause as Error)?.message ?? String(cause))}`, { cause })
            : asHiltError(cause);
          this.fault(id, actor, 'recovery', cause, error);
          return;
        }
      }
      for (let handled = 0; actor.mailbox.length && !actor.faulted; handled++) {
        if (handled && handled % BATCH === 0) await new Promise((r) => setImmediate(r));
        const env = actor.mailbox.shift()!;
        await ('reencode' in env ? this.reencode(id, actor, env.reencode, env.reply) : this.handle(id, actor, env));
      }
    } finally {
      actor.running = false;
      actor.lastUsed = Date.now();
    }
  }

  /**
   * The actor failed where no refusal is expected: answer every waiting ask at once with the
   * error, drop the actor (the next message reads it again from storage) and tell the service.
   * No ask is left waiting on it, so no actor above it stays blocked.
   */
  private fault(id: string, actor: Inbox<S, C>, phase: ActorFault['phase'], cause: unknown, error: HiltError, answered = 0): void {
    actor.faulted = true;
    if (this.live.get(id) === actor) this.live.delete(id);
    const waiting = actor.mailbox.splice(0);
    for (const env of waiting) env.reply({ ok: false, error });
    try {
      this.rt.onFault({ kind: this.behavior.kind, id, phase, cause, error, answered: answered + waiting.length });
    } catch {
      // a failing logger must not take the actor's callers with it
    }
  }

  /** The latest snapshot, then every event after it (pure apply: no side effects). */
  private async recover(id: string, actor: Inbox<S, C>): Promise<void> {
    // One read: the latest snapshot and the events after it.
    const stored = await storage(() => this.rt.engine.recover(this.key(id)));
    let state = (stored.snapshot?.data ?? null) as S | null;
    let seq = stored.snapshot?.sequenceNumber ?? 0;
    let since = 0;
    for (const ev of stored.events) {
      state = this.behavior.apply(state, ev.data as E, id);
      seq = ev.sequenceNumber;
      since++;
    }
    Object.assign(actor, { state, seq, sinceSnapshot: since, recovered: true });
  }

  /**
   * Re-encode one entity's stored events and snapshot, and its live state, in its mailbox's
   * turn: no command of it is decided meanwhile, so no event is written in the old encoding
   * after its journal was re-encoded. The read model gets the new state as after a commit.
   * Answers how many stored values changed.
   */
  rewrite(id: string, f: Reencode): Promise<number> {
    if (this.rt.stopped) return Promise.reject(new HiltError('ServiceUnavailableError', 'the service is shutting down'));
    const actor = this.wake(id);
    actor.inflight++;
    return new Promise<number>((resolve, reject) => {
      actor.mailbox.push({
        reencode: f,
        reply: (r) => {
          actor.inflight--;
          actor.lastUsed = Date.now();
          if (r.ok) resolve(r.value as number);
          else reject(r.error);
        },
      });
      if (!actor.running) void this.run(id, actor);
    });
  }

  private async reencode(id: string, actor: Inbox<S, C>, f: Reencode, answer: (r: Reply) => void): Promise<void> {
    const key = this.key(id);
    this.rt.rewriting++;
    try {
      // A snapshot still being written would land after the rewrite, in the old encoding.
      await actor.snapshotting;
      const events: Rewrite['events'] = [];
      for await (const e of this.rt.engine.events(key)) {
        const data = f.event(e.data);
        if (data !== e.data) events.push({ key, sequenceNumber: e.sequenceNumber, data });
      }
      const snap = await this.rt.engine.latestSnapshot(key);
      const snapData = snap ? f.state(snap.data) : undefined;
      const snapshots = snap && snapData !== snap.data ? [{ key, sequenceNumber: snap.sequenceNumber, data: snapData }] : [];
      if (events.length || snapshots.length) await this.rt.engine.rewrite({ events, snapshots });
      const prev = actor.state;
      const next = f.state(prev) as S | null;
      if (next !== prev) {
        actor.state = next;
        this.onCommit(id, prev, next);
      }
      answer({ ok: true, value: events.length + snapshots.length });
    } catch (err) {
      answer({ ok: false, error: new HiltError('ServiceUnavailableError', `${this.behavior.kind} ${shortId(id)} could not be rewritten: ${shortText((err as Error)?.message ?? String(err))}`, { cause: err }) });
    } finally {
      this.rt.rewriting--;
    }
  }

  private async handle(id: string, actor: Inbox<S, C>, { cmd, reply: answer, still }: { cmd: C; reply: (r: Reply) => void; still?: () => void }): Promise<void> {
    const state = actor.state;
    let reply: Reply | undefined;
    let decision: AnyDecision<E> | undefined;
    let phase: 'decide' | 'apply' = 'decide';
    try {
      still?.();
      const handler = this.behavior.decide[cmd.type as C['type']] as (s: S | null, c: C, id: string) => AnyDecision<E> | Promise<AnyDecision<E>>;
      decision = await handler(state, cmd, id);
      if (decision.events.length) {
        const key = this.key(id);
        const at = Date.now();
        const stamped = decision.events.map((e) => {
          const about = this.rt.describe(this.behavior.kind, id, state, e as unknown as Event & Record<string, unknown>);
          return about ? { ...e, by: cmd.by, at, about } : { ...e, by: cmd.by, at };
        });
        const t0 = performance.now();
        try {
          // One call, one transaction: a decision's events are committed together or not at all.
          await this.rt.engine.persist(stamped.map((data, i) => ({ key, sequenceNumber: actor.seq + i + 1, data, tags: [], createdAt: at })));
        } catch (err) {
          this.rt.telemetry.committed(this.behavior.kind, stamped.length, (performance.now() - t0) / 1000, false);
          // Refused, nothing stored: the actor's state is still what storage holds.
          throw new HiltError('ServiceUnavailableError', `storage refused the change: ${shortText((err as Error)?.message ?? String(err))}`, { cause: err });
        }
        this.rt.telemetry.committed(this.behavior.kind, stamped.length, (performance.now() - t0) / 1000, true);
        this.commits++;
        actor.seq += stamped.length;
        // Stored: an apply that throws now leaves this actor's state behind storage's (a fault).
        phase = 'apply';
        let next = state;
        for (const e of stamped) next = this.behavior.apply(next, e, id);
        actor.state = next;
        this.onCommit(id, state, next);
        this.rt.tracking?.applied(key, actor.seq, state);
        this.snapshot(key, actor, stamped.length);
      }
      decision.afterCommit?.();
      const value = decision.value;
      if (value instanceof Promise) {
        // Deferred: answered when it settles, while this mailbox goes on.
        value.then((v) => answer({ ok: true, value: v }), (err) => answer({ ok: false, error: asHiltError(err) }));
      } else {
        reply = { ok: true, value };
      }
    } catch (err) {
      if (err instanceof HiltError && phase === 'decide') {
        reply = { ok: false, error: err };
      } else {
        // A bug (decide threw something other than a refusal, or apply threw after the commit):
        // this message and every one waiting are answered at once, and the actor starts again
        // from storage on the next message.
        const error = asHiltError(err);
        answer({ ok: false, error });
        if (phase === 'apply') this.rt.tracking?.missed();
        this.fault(id, actor, phase, err, error, 1);
      }
    } finally {
      decision?.settle?.();
    }
    if (reply) answer(reply);
  }

  /** Every snapshotEvery events, the state as of its last event (not waited for: the events are the truth). */
  private snapshot(key: string, actor: Inbox<S, C>, added: number): void {
    actor.sinceSnapshot += added;
    if (actor.sinceSnapshot < this.rt.snapshotEvery) return;
    actor.sinceSnapshot = 0;
    const write = this.rt.engine.takeSnapshot({ key, sequenceNumber: actor.seq, data: actor.state, createdAt: Date.now() }).catch(() => undefined);
    actor.snapshotting = write;
    void write.then(() => {
      if (actor.snapshotting === write) actor.snapshotting = undefined;
    });
  }
}

/** A refusal as it is; anything else is a bug: a ServerError that keeps the thrown error's stack. */
export function asHiltError(err: unknown): HiltError {
  if (err instanceof HiltError) return err;
  const e = new HiltError('ServerError', err instanceof Error ? err.message : String(err), { cause: err });
  if (err instanceof Error && err.stack) e.stack = err.stack;
  return e;
}

/** The storage engine threw (as opposed to the behaviour replaying what it read). */
class StorageFault extends Error {
  constructor(override readonly cause: unknown) {
    super('storage fault');
  }
}

async function storage<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    throw new StorageFault(err);
  }
}

const shortId = (id: string) => shortText(id, QUOTE_MAX);
