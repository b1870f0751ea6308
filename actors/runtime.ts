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
 * The contract behaviours are written against is actors/behavior.ts, the mailbox loop of one
 * kind actors/entity.ts; this module hosts the kinds, sweeps idle actors, and reads the
 * system-wide history.
 */
import { HiltError } from './errors';
import { MAX_SEQ } from './persistence/engine';
import type { PersistenceEngine, JournalEntry, PersistedEvent, StorageStats } from './persistence/engine';
import { NO_TELEMETRY, Telemetry } from './telemetry';
import { sleep } from '../lib/time';
import type { Behavior, Command, Describe, Event, EventAbout, Replies, Stamp } from './behavior';
import { EntityRegistry } from './entity';

// The contract and the loop, for the modules that import them from here.
export * from './behavior';
export { EntityRegistry, asHiltError } from './entity';
export type { Reencode } from './entity';

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

/** Told what reaches the read models: the checkpoint's watermark (actors/checkpoint.ts). */
export interface CommitTracking {
  /** the key's events up to `seq` are in the read models; `prev`: its state before them */
  applied(key: string, seq: number, prev: unknown): void;
  /** stored events that never reached the read models (an apply threw after the commit) */
  missed(): void;
}

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
  /** told of each commit applied to the read models (none: nobody keeps a checkpoint) */
  tracking?: CommitTracking;
  /** re-encodings under way (EntityRegistry.rewrite): the read models lag the store until each ends */
  rewriting = 0;

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
