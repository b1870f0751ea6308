/**
 * The storage contract under the actors: events and snapshots per actor key, plus the reads
 * the service needs beyond replaying one actor (the keys of one kind and their states at start,
 * the journal). Every method is asynchronous, so an engine may live across a network.
 *
 * Contract (test/actors/persistence/conformance.ts checks it for every engine):
 * - persist(events) commits all its events in one transaction and resolves only once they are
 *   durable; the events of one key are read back in sequence order.
 * - events(key, offset) yields the events with sequenceNumber > offset, oldest first.
 * - takeSnapshot keeps only the latest snapshot per key (the highest sequenceNumber wins, also
 *   when an older one arrives later).
 * - keys(prefix) yields every key with at least one event, in key order.
 * - journal(key, limit) yields at most `limit` events, newest first, read lazily: a caller
 *   that stops early costs no more reads.
 * - recover(key) is one key's latest snapshot and the events after it (what an actor waking
 *   needs; one round trip on a networked engine); recoverAll(prefix) yields the same for every
 *   key under the prefix: what a start needs to rebuild the read models, in bulk.
 * - history(query) yields the events of every key (under query.prefix), newest first: by
 *   createdAt descending, ties by key then sequenceNumber, both descending (keys in the order
 *   keys() uses). `since` (inclusive) and `until` (exclusive) bound createdAt; `before` continues
 *   strictly after a position an earlier call yielded. Read lazily, as journal(): a caller that
 *   stops early costs no more reads, however many events the store holds (an engine keeps an
 *   index by time for it; it must cover events written by earlier releases too). This is the
 *   system-wide audit trail (GET /admin/audit).
 * - Object keys in event and snapshot data round-trip exactly, `__proto__` included.
 * - rewrite(changes) replaces the data of stored events (and of snapshots whose sequence number
 *   is still the one given), in one transaction, keeping everything else: key, sequence number,
 *   time, tags, their place in history(). It never adds an event or a snapshot. It re-encodes
 *   what the store already says (credentials sealed, or sealed again under a new key:
 *   docs/identity.md), so nothing that read the old data is wrong about the new.
 * - compact() leaves no copy of rewritten data in the store's files (pages or rows an engine
 *   frees are not erased by themselves); it runs while nothing else uses the engine (at start).
 *
 * Optional (an engine without them says so: the service answers that it cannot):
 * - backup(path) writes a consistent copy of the whole store while writes go on: it holds every
 *   event whose persist() resolved before backup() was called. `path` must not exist; it
 *   becomes a data folder this engine opens as it is (a restore is a start on the copy). An
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
}

/** Where an event stands in the order of history(): what `before` continues from. */
export interface HistoryPosition {
  createdAt: number;
  key: string;
  sequenceNumber: number;
}

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
  /** only events after this position (older), to continue a listing */
  before?: HistoryPosition;
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
  /** Re-encode stored data in place (see above). */
  rewrite(changes: Rewrite): Promise<void>;
  /** Erase what rewrite() replaced from the store's files (see above). */
  compact(): Promise<void>;
  /** optional: a consistent online copy (see above) */
  backup?(path: string): Promise<void>;
  /** without backup(): why, and what the operator does instead (the answer to POST /admin/backup) */
  readonly noBackup?: string;
  /** optional: the store's size */
  stats?(): Promise<StorageStats>;
  close(): Promise<void>;
}

export const MAX_SEQ = Number.MAX_SAFE_INTEGER;
