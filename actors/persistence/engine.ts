/**
 * The storage contract under the actors: events and snapshots per actor key, plus the reads
 * the service needs beyond replaying one actor (the keys of one kind and their states at start,
 * the journal). Every method is asynchronous, so an engine may live across a network.
 *
 * Contract (test/actors/persistence/conformance.ts checks it for every engine):
 * - persist(events) commits all its events in one transaction and resolves only once they are
 *   durable; the events of one key are read back in sequence order. All or nothing: an event it
 *   cannot store (cannot encode) fails the call, and none of the call's events is stored.
 * - events(key, offset) yields the events with sequenceNumber > offset, oldest first.
 * - takeSnapshot keeps only the latest snapshot per key (the highest sequenceNumber wins, also
 *   when an older one arrives later).
 * - keys(prefix) yields every key with at least one event, in key order.
 * - journal(key, limit) yields at most `limit` events, newest first, read lazily: a caller
 *   that stops early costs no more reads.
 * - recover(key) is one key's latest snapshot and the events after it (what an actor waking
 *   needs; one round trip on a networked engine); recoverAll(prefix) yields the same for every
 *   key under the prefix: what a start needs to rebuild the read models, in bulk.
 * - One order: every stored event has a `position` in the one commit order of the whole store,
 *   across keys: positions are integers from 1 that grow with each commit (gaps allowed), so an
 *   event committed after another has a higher position, and the events of one key grow with
 *   their sequence numbers. Events written by an earlier release are given positions once, in
 *   the order of their time (then key, then sequence number), below every later one. Every read
 *   that yields events or journal entries sets it.
 * - feed(after) yields the events with position > after, oldest first, up to the newest one that
 *   is durable, read lazily (the event stream and webhooks read it). onCommit(listener) tells a
 *   listener of every commit this engine makes, in commit order, once durable, with positions.
 *   bounds() is the oldest position the stream may resume from and the newest durable one
 *   (and, on a store restored from a backup, the run of positions it went on past);
 *   positionAt(time) is the position after which the events at or after `time` come (the
 *   order's positions follow the clock: the runtime stamps events as it commits them).
 * - history(query) yields the events of every key (under query.prefix), newest first: in the
 *   one order, descending. `since` (inclusive) and `until` (exclusive) bound createdAt (found
 *   through positionAt, then checked on each event); `before` continues strictly after a position
 *   an earlier call yielded. Read lazily, as journal(): a caller that stops early costs no more
 *   reads, however many events the store holds (it must cover events written by earlier
 *   releases too). This is the system-wide audit trail (GET /admin/audit).
 * - mark(name) and setMark(name, value) keep small values beside the journal, outside it (a
 *   webhook's delivery cursor): durable when setMark resolves, fenced like every write.
 * - Object keys in event and snapshot data round-trip exactly, `__proto__` included.
 * - rewrite(changes) replaces the data of stored events (and of snapshots whose sequence number
 *   is still the one given), in one transaction, keeping everything else: key, sequence number,
 *   time, tags, their place in history(). It never adds an event or a snapshot. It re-encodes
 *   what the store already says (credentials sealed, or sealed again under a new key:
 *   docs/identity.md), so nothing that read the old data is wrong about the new.
 * - compact() leaves no copy of rewritten data in the store's files (pages or rows an engine
 *   frees are not erased by themselves); it runs while nothing else uses the engine (at start).
 *
 * - prune(expired) is retention (docs/operations.md, Journal retention): for each key, it removes
 *   the events with sequenceNumber <= upTo, in one transaction, fenced like every write: from
 *   every read (events, journal, history, feed, positionAt, recover), the key's snapshot when it
 *   is at or below upTo, and the key itself (keys(), head() 0, recoverAll) when no event of it is
 *   left; events persisted meanwhile after upTo stay. Positions removed are never given again,
 *   and bounds().first moves past the highest one removed (also across a close and reopen): a
 *   stream cannot resume from before it without missing what went.
 *
 * Optional (an engine without them says so: the service answers that it cannot):
 * - backup(path) writes a consistent copy of the whole store while writes go on: it holds every
 *   event whose persist() resolved before backup() was called. `path` must not exist, nor be
 *   inside the store's own folder; nothing is at `path` until the copy is whole. It
 *   becomes a data folder this engine opens as it is (a restore is a start on the copy: the
 *   first one moves its positions past a gap, above every one any earlier start on a copy of
 *   the same backup could have given). An
 *   engine without it tells the operator what to do instead (noBackup).
 * - stats() tells the size of the store (metrics).
 */
/** One stored event of an actor: its data, numbered per key from 1. */
export interface PersistedEvent {
  data: unknown;
  sequenceNumber: number;
  key: string;
  tags: string[];
  createdAt: number;
  isDeleted?: boolean;
  /** its place in the store's one commit order (set by the engine on every read; ignored by persist) */
  position?: number;
}

/** An actor's state as of one of its events. */
export interface PersistedSnapshot {
  data: unknown;
  sequenceNumber: number;
  key: string;
  createdAt: number;
}

export interface JournalEntry {
  sequenceNumber: number;
  createdAt: number;
  data: unknown;
  /** its place in the store's one commit order */
  position: number;
}

/** The stream's range: it may resume after any position from first - 1 to last. */
export interface OrderBounds {
  /** the oldest position a stream may start from (1 unless the store was restored from a backup) */
  first: number;
  /** the newest durable position (0: nothing stored) */
  last: number;
  /** positions no event took, first and last (a store restored from a backup went on past them); none: no such run */
  gap?: [number, number];
  /** with a gap: the highest position prune() removed (0: none), which `first` no longer tells */
  removed?: number;
}

/** Told of each commit, in commit order, once durable: its events with their positions (never mutate them). */
export type CommitListener = (events: readonly PersistedEvent[]) => void;

export interface HistoryQuery {
  /**
   * only keys that start with this; default: every key. A kind's prefix (`node:`) is the
   * common case: an engine should serve it without reading other kinds' events.
   */
  prefix?: string;
  /** only events with createdAt >= since */
  since?: number;
  /** only events with createdAt < until */
  until?: number;
  /** only events with a lower position (older), to continue a listing */
  before?: number;
}

export interface StorageStats {
  /** bytes the store takes on disk (for LMDB, its data file) */
  sizeBytes: number;
  /** bytes in use within it (LMDB: pages up to the last one written), when the engine knows */
  usedBytes?: number;
}

/** One key's state as stored: its latest snapshot and the events after it. */
export interface StoredEntity {
  key: string;
  snapshot?: PersistedSnapshot;
  events: PersistedEvent[];
}

/** What rewrite() replaces: stored events' data, and snapshots' data (when still at that sequence number). */
export interface Rewrite {
  events: { key: string; sequenceNumber: number; data: unknown }[];
  snapshots: { key: string; sequenceNumber: number; data: unknown }[];
}

/** What prune() removes of one key: its events up to and including a sequence number. */
export interface Expiry { key: string; upTo: number }

export interface PruneResult {
  /** events removed */
  events: number;
  /** keys removed whole (no event left) */
  keys: number;
}

/**
 * Derived data kept beside the store: the read model's checkpoint (actors/checkpoint.ts). The
 * engine drops it in every change of stored data that gives no new position (rewrite()), so a
 * checkpoint read back never describes data the store no longer holds; a restore starts
 * without one (backup() does not copy it).
 */
/** A checkpoint's bytes, read where asked (a frame at a time: a large one is never whole in memory). */
export interface CheckpointSource {
  readonly size: number;
  /** Fills `into` from `position`; returns how many bytes it read (fewer only at the end). */
  readAt(into: Buffer, position: number): number;
  close(): void;
}

export interface CheckpointSlot {
  /** the checkpoint written last (undefined: none), open until closed */
  read(): Promise<CheckpointSource | undefined>;
  /** bumped by every drop(): write() refuses a checkpoint taken before the last one */
  readonly epoch: number;
  /**
   * Replace the checkpoint, atomically and durably, with the chunks `chunks` yields (read
   * lazily, so a large one is never whole in memory). Resolves false, keeping nothing of it,
   * when the slot was dropped since `epoch` was read.
   */
  write(chunks: AsyncIterable<Uint8Array>, epoch: number): Promise<boolean>;
  /** Remove it (durably, before the change that makes it wrong is made). */
  drop(): void;
}

export interface PersistenceEngine {
  events(key: string, offset?: number): AsyncIterable<PersistedEvent>;
  persist(events: PersistedEvent[]): Promise<void>;
  latestSnapshot(key: string): Promise<PersistedSnapshot | undefined>;
  takeSnapshot(snapshot: PersistedSnapshot): Promise<void>;
  /** Highest persisted sequence number of a key (0 when none). */
  head(key: string): Promise<number>;
  keys(prefix: string): AsyncIterable<string>;
  journal(key: string, limit: number): AsyncIterable<JournalEntry>;
  recover(key: string): Promise<StoredEntity>;
  recoverAll(prefix: string): AsyncIterable<StoredEntity>;
  history(query: HistoryQuery): AsyncIterable<PersistedEvent>;
  /** Events with position > after, oldest first, up to the newest durable one. */
  feed(after: number): AsyncIterable<PersistedEvent>;
  bounds(): Promise<OrderBounds>;
  /** The position after which the events at or after `time` (ms since the epoch) come. */
  positionAt(time: number): Promise<number>;
  /** Listen to this engine's commits; returns the way to stop. */
  onCommit(listener: CommitListener): () => void;
  mark(name: string): Promise<unknown>;
  setMark(name: string, value: unknown): Promise<void>;
  /** Re-encode stored data in place (see above). */
  rewrite(changes: Rewrite): Promise<void>;
  /** Erase what rewrite() replaced from the store's files (see above). */
  compact(): Promise<void>;
  /** Remove expired events (retention, see above). */
  prune(expired: Expiry[]): Promise<PruneResult>;
  /** optional: a consistent online copy (see above) */
  backup?(path: string): Promise<void>;
  /** without backup(): why, and what the operator does instead (the answer to POST /admin/backup) */
  readonly noBackup?: string;
  /** set when this open was the first on a backup's copy (the restore): the positions it went on past */
  readonly restored?: [number, number];
  /** optional: the store's size */
  stats?(): Promise<StorageStats>;
  /** optional: where the read model's checkpoint is kept (without it, every start rebuilds from the journal) */
  readonly checkpoints?: CheckpointSlot;
  close(): Promise<void>;
}

export const MAX_SEQ = Number.MAX_SAFE_INTEGER;

/**
 * Tells listeners of commits in commit order, whatever order their promises settle in: each
 * commit takes its place when it starts (`begin`), and is told once it and every one before it
 * have settled. A failed commit is told as nothing (its positions stay unused).
 */
export class CommitOrder {
  private readonly listeners = new Set<CommitListener>();
  private readonly queue: { events: readonly PersistedEvent[]; settled: boolean; ok: boolean }[] = [];

  listen(listener: CommitListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A commit starts: `done` settles when it is durable (or failed). */
  begin(events: readonly PersistedEvent[], done: Promise<unknown>): void {
    const entry = { events, settled: false, ok: false };
    this.queue.push(entry);
    done.then(() => (entry.ok = true), () => undefined).finally(() => {
      entry.settled = true;
      this.drain();
    });
  }

  /** A commit that is durable already, told after any still in flight. */
  committed(events: readonly PersistedEvent[]): void {
    this.queue.push({ events, settled: true, ok: true });
    this.drain();
  }

  private drain(): void {
    while (this.queue.length && this.queue[0].settled) {
      const { events, ok } = this.queue.shift()!;
      if (!ok || !events.length) continue;
      for (const l of this.listeners) {
        try {
          l(events);
        } catch {
          // a listener's fault is its own: the others and the writer go on
        }
      }
    }
  }
}
