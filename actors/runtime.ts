/**
 * The actor runtime: one persistent actor per entity key (`<kind>:<id>`), spawned when a
 * message first needs it and put to sleep after it has been idle (docs/actors.md, rules 2, 5, 6).
 *
 * Every entity actor runs the same loop over its kind's Behavior:
 *   decide(state, command)  -> events (or a HiltError)        may ask actors lower in the ask order
 *   persist(events)         -> durable commit
 *   apply(state, event)     -> next state (pure; also replays during recovery)
 *   onCommit(prev, next)    -> read models updated
 *   reply                   -> only now does the caller (and the HTTP client) hear "ok"
 * A decision may defer its reply (a promise): the mailbox goes on with the next message while
 * the caller waits, e.g. for hardware (rule 4).
 *
 * Only this module and actors/persistence/ touch the storage engine: the journal, an
 * entity's stored state and the keys of a kind are read through an EntityRegistry.
 *
 * Each actor is a mailbox of its own (an `Inbox`): messages are handled one at a time, in the
 * order they arrived, and an idle actor starts on a new message at once (a microtask), not on
 * the event loop's next turn: a network operation crosses four actors, and under load each turn
 * of a busy loop costs milliseconds. The journal and snapshots follow nact's persistent-actor
 * contract: events numbered per key from 1, a snapshot every `snapshotEvery` events, recovery
 * from the latest snapshot plus the events after it.
 *
 * Longer than our other modules on purpose: the behaviour contract, the runtime and the mailbox
 * loop of EntityRegistry share one set of invariants (the order decide → persist → apply →
 * reply, a fault answering every waiting ask, the idle sweep never taking an actor with a
 * message in flight), and they are easiest to check read together.
 */
import { HiltError } from './errors';
import { QUOTE_MAX, shortText } from '../lib/text';
import { MAX_SEQ } from './persistence/engine';
import type { PersistenceEngine, JournalEntry, PersistedEvent, StorageStats, Rewrite } from './persistence/engine';
import { NO_TELEMETRY, Telemetry } from './telemetry';
import { sleep } from '../lib/time';

export interface Command { type: string; /** acting user, recorded in the journal */ by: string }
export interface Event { type: string }
/**
 * An actor that threw where no refusal is expected: its storage could not be read, or its
 * behaviour failed (a bug: a decide that threw something other than a HiltError, an apply that
 * threw). Every message waiting in its mailbox has been answered with `error`, and the actor was
 * dropped: the next message reads it again from storage (docs/actors.md, the loop).
 */
export interface ActorFault {
  kind: string;
  id: string;
  phase: 'recovery' | 'decide' | 'apply';
  /** what was thrown */
  cause: unknown;
  /** what every waiting ask was answered: 503 for storage, 500 for a bug */
  error: HiltError;
  /** asks answered with it */
  answered: number;
}

/** What the runtime adds to every persisted event. */
export interface Stamp { by?: string; at?: number; about?: EventAbout }

/**
 * What the event stream needs to know of an event that the event itself does not say, as of its
 * commit (src/events/describe.ts): the projects it concerns (who may see it), and for a network
 * operation its public status. Stored with the event, so that a replay tells what the live
 * stream told.
 */
export interface EventAbout { projects?: string[]; [detail: string]: unknown }

/** Describes an event as it is committed (kind, entity id, the entity's state before it, the event). */
export type Describe = (kind: string, id: string, state: unknown, event: Event & Record<string, unknown>) => EventAbout | undefined;

/** What each command of a protocol answers: command type → reply value. */
export type Replies<C extends Command> = { [K in C['type']]: unknown };

/**
 * What a handler decides for one command: the events to commit, and the answer its protocol's
 * Replies give that command (required unless the reply is void; a promise defers it: the mailbox
 * moves on).
 */
export type Decision<E, V = void> = {
  events: E[];
  /** Runs once the events are committed or have failed (e.g. to drop a reservation). */
  settle?: () => void;
  /** Side effect after a successful commit (never during recovery): e.g. hand work to hardware. */
  afterCommit?: () => void;
} & ([V] extends [void] ? { value?: Promise<void> } : { value: V | Promise<V> });

/** A decision as the runtime handles it, whatever its command. */
type AnyDecision<E> = { events: E[]; value?: unknown; settle?: () => void; afterCommit?: () => void };

/**
 * One handler per command of the protocol: it validates the command against the actor's state
 * (throw a HiltError to refuse) and decides the events and the answer, typed by the protocol's
 * Replies, so a handler cannot answer its command with the wrong type.
 */
export type Handlers<S, C extends Command, E, R extends Replies<C>> = {
  [K in C['type']]: (state: S | null, cmd: Extract<C, { type: K }>, id: string) => Decision<E, R[K]> | Promise<Decision<E, R[K]>>;
};

export interface Behavior<S, C extends Command, E extends Event, R extends Replies<C>> {
  readonly kind: string;
  /** Pure: the only place state changes. Never mutate `state`: read models hold it. */
  apply(state: S | null, event: E & Stamp, id: string): S | null;
  readonly decide: Handlers<S, C, E, R>;
}

/** A handler of a command that needs the entity to exist: `missing(id)` refuses it otherwise. */
export function existing<S, Cmd, D>(missing: (id: string) => HiltError, handler: (state: S, cmd: Cmd, id: string) => D): (state: S | null, cmd: Cmd, id: string) => D {
  return (state, cmd, id) => {
    if (state === null) throw missing(id);
    return handler(state, cmd, id);
  };
}

/** `existing` for one kind: `live(handler)` wraps each handler of a command on an entity that must exist. */
export function needsEntity<S>(missing: (id: string) => HiltError) {
  return <Cmd, D>(handler: (state: S, cmd: Cmd, id: string) => D) => existing(missing, handler);
}

type Reply = { ok: true; value: unknown } | { ok: false; error: HiltError };
/** A command, or a re-encoding of the entity's stored data (EntityRegistry.rewrite). */
type Envelope<C> = { cmd: C; reply: (r: Reply) => void } | { reencode: Reencode; reply: (r: Reply) => void };

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

export interface RuntimeOptions {
  /** An entity actor idle this long is stopped (it wakes again from storage on the next message). */
  idleMs?: number;
  /** Bound on how long a caller waits for an actor's answer (deferred answers excepted). */
  askTimeoutMs?: number;
  /**
   * Snapshot an entity after this many persisted events. Every snapshot is one more commit in
   * the write pipeline; a wake or a start replays at most this many events.
   */
  snapshotEvery?: number;
  /** where commits are reported (metrics) */
  telemetry?: Telemetry;
}

/** One event of the system-wide history (the audit trail), as the runtime stamped it. */
export interface HistoryEntry {
  kind: string;
  id: string;
  sequenceNumber: number;
  /** when it was committed (ms since the epoch) */
  at: number;
  /** the acting user (or `switch`, `recovery`, … for the service's own work); null when not recorded */
  by: string | null;
  /** the event without its stamp */
  event: Event & Record<string, unknown>;
  /** its place in the store's one commit order: give it as `before` to continue after it */
  position: number;
  /** what the runtime added for the event stream (absent for events written before it did) */
  about?: EventAbout;
}

export interface HistoryFilter {
  /** one kind of entity */
  kind?: string;
  /** one entity (with `kind`) */
  id?: string;
  /** at or after (ms since the epoch) */
  since?: number;
  /** before (ms since the epoch) */
  until?: number;
  /** continue after this position (strictly older) */
  before?: number;
}

function historyEntry(kind: string, id: string, seq: number, createdAt: number, position: number, data: unknown): HistoryEntry {
  const { by, at, about, ...event } = data as Event & Stamp & Record<string, unknown>;
  return { kind, id, sequenceNumber: seq, at: at ?? createdAt, by: by ?? null, event: event as Event & Record<string, unknown>, position, about };
}

export interface AskOptions {
  /**
   * Wait without bound. An actor asking an actor below it waits for the answer however long
   * the commit takes: if it gave up, its own mailbox would move on while the change it asked for
   * may still be committed (only the edge, a route, answers 503 after askTimeoutMs).
   */
  unbounded?: boolean;
  /**
   * A deferred answer that waits on hardware (the device queue bounds it): unbounded, and it
   * neither holds the actor awake nor delays a shutdown.
   */
  hardware?: boolean;
}

/** What a behavior may ask of the actors below it: their typed commands, nothing else. */
export interface Asker<C extends Command, R extends Replies<C>> {
  ask<K extends C['type']>(id: string, cmd: Extract<C, { type: K }>, opts?: AskOptions): Promise<R[K]>;
}

/** What an actor gives the actors above it: asks that wait for the answer without bound. */
export function below<C extends Command, R extends Replies<C>>(reg: Asker<C, R>): Asker<C, R> {
  return { ask: (id, cmd, opts) => reg.ask(id, cmd, { unbounded: true, ...opts }) };
}

/** An entity as stored: state, sequence number, whether its actor is awake. */
export interface StoredState<S> { state: S | null; sequenceNumber: number; live: boolean }

/** What may be read of a kind without asking its actors (operators' inspection, metrics, the audit log). */
export interface KindView {
  readonly kind: string;
  /** an entity's events, newest first */
  journal(id: string, limit: number): AsyncIterable<JournalEntry>;
  inspect(id: string): Promise<StoredState<unknown> | null>;
  storedIds(idPrefix?: string): Promise<string[]>;
  load(): { live: number; messages: number; busiest: number };
  /** the awake actors and their mailboxes' depth */
  liveActors(): { id: string; mailbox: number }[];
  /** commits of this kind since the start: a view of the kind changed when it moved */
  readonly commits: number;
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

/** Actors put to sleep per slice of the idle sweep: a reader waits at most one slice. */
const SWEEP_SLICE = 500;

export class ActorRuntime {
  readonly idleMs: number;
  readonly askTimeoutMs: number;
  readonly snapshotEvery: number;
  readonly telemetry: Telemetry;
  private readonly kinds = new Map<string, EntityRegistry<any, any, any, any>>();
  private readonly sweeper: NodeJS.Timeout;
  private sweeping = false;
  /** set once close() has stopped the actors: asks are refused at once */
  stopped = false;
  /** Told of every actor fault (the service logs it, with the stack). */
  onFault: (fault: ActorFault) => void = () => undefined;
  /** Adds what the event stream needs to each event as it is stamped (none: nothing added). */
  describe: Describe = () => undefined;

  constructor(readonly engine: PersistenceEngine, opts: RuntimeOptions = {}) {
    this.idleMs = opts.idleMs ?? 60_000;
    this.askTimeoutMs = opts.askTimeoutMs ?? 30_000;
    this.snapshotEvery = opts.snapshotEvery ?? 16;
    this.telemetry = opts.telemetry ?? NO_TELEMETRY;
    this.sweeper = setInterval(() => void this.sweep(), Math.max(50, Math.min(this.idleMs, 10_000))).unref();
  }

  register<S, C extends Command, E extends Event, R extends Replies<C>>(
    behavior: Behavior<S, C, E, R>,
    onCommit: (id: string, prev: S | null, next: S | null) => void,
  ): EntityRegistry<S, C, E, R> {
    const reg = new EntityRegistry<S, C, E, R>(this, behavior, onCommit);
    this.kinds.set(behavior.kind, reg);
    return reg;
  }

  registry(kind: string): KindView | undefined {
    return this.kinds.get(kind);
  }

  kindNames(): string[] {
    return [...this.kinds.keys()];
  }

  /**
   * Put idle actors to sleep, a slice at a time with a macrotask between slices: tens of
   * thousands going idle together must not stall the event loop (a reading client) in one go.
   */
  async sweep(now = Date.now(), idleMs = this.idleMs): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      for (const reg of this.kinds.values()) {
        for (const batch of reg.idleSlices(now, idleMs, SWEEP_SLICE)) {
          reg.sleep(batch);
          await new Promise((r) => setImmediate(r));
        }
      }
    } finally {
      this.sweeping = false;
    }
  }

  /**
   * Every kind's events, newest first (the audit trail), read lazily: one entity's from its
   * journal, otherwise from the storage engine's time index. Keys of no registered kind (the
   * stored data's format marker) are left out.
   */
  async *history(f: HistoryFilter = {}): AsyncIterable<HistoryEntry> {
    if (f.id !== undefined) {
      const reg = f.kind !== undefined ? this.kinds.get(f.kind) : undefined;
      if (!reg) return;
      const key = reg.key(f.id);
      // One key's journal is in its commit order already.
      for await (const e of this.engine.journal(key, MAX_SEQ)) {
        if (f.before !== undefined && e.position >= f.before) continue;
        if ((f.until !== undefined && e.createdAt >= f.until) || (f.since !== undefined && e.createdAt < f.since)) continue;
        yield historyEntry(reg.kind, f.id, e.sequenceNumber, e.createdAt, e.position, e.data);
      }
      return;
    }
    if (f.kind !== undefined && !this.kinds.has(f.kind)) return;
    for await (const e of this.engine.history({ prefix: f.kind !== undefined ? `${f.kind}:` : '', since: f.since, until: f.until, before: f.before })) {
      const entry = this.entryOf(e);
      if (entry) yield entry;
    }
  }

  /** A stored event as the history shows it; undefined for a key of no registered kind (the format marker). */
  entryOf(e: PersistedEvent): HistoryEntry | undefined {
    const colon = e.key.indexOf(':');
    const kind = e.key.slice(0, colon);
    if (colon < 0 || !this.kinds.has(kind)) return undefined;
    return historyEntry(kind, e.key.slice(colon + 1), e.sequenceNumber, e.createdAt, e.position ?? 0, e.data);
  }

  /** A consistent copy of the whole store into `path` while the service runs, if the engine can make one. */
  backup(path: string): Promise<void> {
    if (!this.engine.backup) return Promise.reject(new HiltError('IllegalStateError', this.engine.noBackup ?? 'this storage engine cannot make an online backup'));
    return this.engine.backup(path);
  }

  /** Does the engine tell the store's size? */
  get tellsStorageSize(): boolean {
    return !!this.engine.stats;
  }

  /** The store's size, if the engine tells it. */
  storageStats(): Promise<StorageStats | undefined> {
    return this.engine.stats ? this.engine.stats() : Promise.resolve(undefined);
  }

  /** Wait until no actor has a message in flight, then stop them all. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const deadline = Date.now() + this.askTimeoutMs;
    while ([...this.kinds.values()].some((r) => r.busy()) && Date.now() < deadline) {
      await sleep(10);
    }
    this.stopped = true;
  }
}

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
      actor.mailbox.push({ cmd, reply });
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

  /** Rebuild every stored entity's committed state, in bulk (at start, for the read models). */
  async *recoverAll(): AsyncIterable<{ id: string; state: S | null }> {
    const prefix = `${this.behavior.kind}:`;
    for await (const stored of this.rt.engine.recoverAll(prefix)) {
      const id = stored.key.slice(prefix.length);
      let state = (stored.snapshot?.data ?? null) as S | null;
      for (const ev of stored.events) state = this.behavior.apply(state, ev.data as E, id);
      yield { id, state };
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
    }
  }

  private async handle(id: string, actor: Inbox<S, C>, { cmd, reply: answer }: { cmd: C; reply: (r: Reply) => void }): Promise<void> {
    const state = actor.state;
    let reply: Reply | undefined;
    let decision: AnyDecision<E> | undefined;
    let phase: 'decide' | 'apply' = 'decide';
    try {
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

/** Exhaustiveness check for protocol switches (the TS counterpart of a sealed trait). */
export function assertNever(x: never): never {
  throw new Error(`unexpected message ${JSON.stringify(x)}`);
}
