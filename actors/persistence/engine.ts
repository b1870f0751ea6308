/**
 * The storage contract under nact's persistent actors, plus the two reads the service needs
 * beyond nact: the list of keys of one kind (to rebuild read models at start) and the journal
 * (audit trail).
 *
 * Contract (checked by test/actors/persistence/engine.conformance.ts for every engine):
 * - persist(event) resolves only once the event is durable; events of one key are read back in
 *   sequence order by events(key, offset), which returns those with sequenceNumber > offset.
 * - takeSnapshot keeps only the latest snapshot per key (highest sequenceNumber wins).
 * - keys(prefix) lists every key that has at least one event, in key order.
 */
/** Shape of nact's PersistedEvent (nact's typings declare it as a type only). */
export interface PersistedEvent {
  data: unknown;
  sequenceNumber: number;
  key: string;
  tags: string[];
  createdAt: number;
  isDeleted?: boolean;
}

/** Shape of nact's PersistedSnapshot. */
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

export interface PersistenceEngine {
  events(key: string, offset?: number, limit?: number): PersistedEvent[];
  persist(event: PersistedEvent): Promise<void>;
  latestSnapshot(key: string): Promise<PersistedSnapshot | undefined>;
  takeSnapshot(snapshot: PersistedSnapshot): Promise<void>;
  /** Highest persisted sequence number of a key (0 when none). */
  head(key: string): number;
  keys(prefix: string): string[];
  /** Newest first, at most `limit` entries; read lazily (stop early and the rest is not read). */
  journal(key: string, limit: number): Iterable<JournalEntry>;
  close(): Promise<void>;
}

const MAX_SEQ = Number.MAX_SAFE_INTEGER;

export { MAX_SEQ };
