import { open, RootDatabase, Database } from 'lmdb';
import { PersistenceEngine, PersistedEvent, PersistedSnapshot, JournalEntry, MAX_SEQ } from './engine';
import { escapeKeys, unescapeKeys } from './keys';

interface StoredEvent { data: unknown; createdAt: number; tags?: string[] }
interface StoredSnapshot { data: unknown; sequenceNumber: number; createdAt: number }

/**
 * nact persistence on one LMDB environment with three named databases:
 * - `events`    [key, seq] → event   (array keys sort by key then seq: replay is one range read)
 * - `heads`     key → last seq        (written in the same transaction as the event)
 * - `snapshots` key → latest snapshot
 * Durability: on Linux lmdb-js defaults to `overlappingSync`, where a write's promise resolves
 * when its transaction is *committed* (visible), before the OS has flushed it. That would
 * acknowledge changes a power loss can still take away. So the environment is opened with
 * `separateFlushed`, and persist() waits for the write's `.flushed` promise. Syncs still overlap
 * with the next transactions, and writes issued in the same event turn share one commit, so
 * many actors persisting at once cost one fsync.
 */
/** The write's durable-on-disk promise (see the class comment). */
function flushed(p: Promise<unknown>): Promise<unknown> {
  return (p as Promise<unknown> & { flushed?: Promise<unknown> }).flushed ?? p;
}

export class LmdbPersistenceEngine implements PersistenceEngine {
  private readonly root: RootDatabase;
  private readonly eventsDb: Database<StoredEvent, [string, number]>;
  private readonly headsDb: Database<number, string>;
  private readonly snapshotsDb: Database<StoredSnapshot, string>;

  constructor(path: string, opts: { mapSizeGb?: number } = {}) {
    this.root = open({ path, mapSize: (opts.mapSizeGb ?? 16) * 1024 ** 3, maxDbs: 8, separateFlushed: true });
    this.eventsDb = this.root.openDB({ name: 'events' });
    this.headsDb = this.root.openDB({ name: 'heads' });
    this.snapshotsDb = this.root.openDB({ name: 'snapshots' });
  }

  events(key: string, offset = 0, limit?: number): PersistedEvent[] {
    const out: PersistedEvent[] = [];
    for (const { key: k, value } of this.eventsDb.getRange({ start: [key, offset + 1], end: [key, MAX_SEQ], limit })) {
      out.push({ data: unescapeKeys(value.data), sequenceNumber: k[1], key, tags: value.tags ?? [], createdAt: value.createdAt });
    }
    return out;
  }

  persist(event: PersistedEvent): Promise<void> {
    const key = event.key;
    const seq = event.sequenceNumber;
    // Both puts land in the same lmdb-js batch (same turn) and so in one transaction.
    const a = this.eventsDb.put([key, seq], { data: escapeKeys(event.data), createdAt: event.createdAt, tags: event.tags.length ? event.tags : undefined });
    const b = this.headsDb.put(key, seq);
    return Promise.all([flushed(a), flushed(b)]).then(() => undefined);
  }

  async latestSnapshot(key: string): Promise<PersistedSnapshot | undefined> {
    const s = this.snapshotsDb.get(key);
    return s ? { data: unescapeKeys(s.data), sequenceNumber: s.sequenceNumber, key, createdAt: s.createdAt } : undefined;
  }

  async takeSnapshot(snapshot: PersistedSnapshot): Promise<void> {
    // A slower, older snapshot must never replace a newer one.
    await this.snapshotsDb.transaction(() => {
      const cur = this.snapshotsDb.get(snapshot.key);
      if (cur && cur.sequenceNumber >= snapshot.sequenceNumber) return;
      this.snapshotsDb.put(snapshot.key, { data: escapeKeys(snapshot.data), sequenceNumber: snapshot.sequenceNumber, createdAt: snapshot.createdAt });
    });
  }

  head(key: string): number {
    return this.headsDb.get(key) ?? 0;
  }

  keys(prefix: string): string[] {
    return Array.from(this.headsDb.getKeys({ start: prefix, end: prefix + '\uffff' })) as string[];
  }

  *journal(key: string, limit: number): Iterable<JournalEntry> {
    for (const { key: k, value } of this.eventsDb.getRange({ start: [key, MAX_SEQ], end: [key, 0], reverse: true, limit })) {
      yield { sequenceNumber: k[1], createdAt: value.createdAt, data: unescapeKeys(value.data) };
    }
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
