import { open, RootDatabase, Database } from 'lmdb';
import { PersistenceEngine, PersistedEvent, PersistedSnapshot, JournalEntry, StoredEntity, MAX_SEQ } from './engine';
import { escapeKeys, unescapeKeys } from './keys';

interface StoredEvent { data: unknown; createdAt: number; tags?: string[] }
interface StoredSnapshot { data: unknown; sequenceNumber: number; createdAt: number }

/**
 * The storage contract on one LMDB environment with three named databases:
 * - `events`    [key, seq] → event   (array keys sort by key then seq: replay is one range read)
 * - `heads`     key → last seq        (written in the same transaction as the event)
 * - `snapshots` key → latest snapshot
 * Durability: on Linux lmdb-js defaults to `overlappingSync`, where a write's promise resolves
 * when its transaction is *committed* (visible), before the OS has flushed it. That would
 * acknowledge changes a power loss can still take away. So the environment is opened with
 * `separateFlushed`, and persist() waits for the write's `.flushed` promise. Syncs still overlap
 * with the next transactions, and writes issued in the same event turn share one commit, so
 * many actors persisting at once cost one fsync (and one persist() call is one transaction).
 *
 * Reads are synchronous in lmdb-js (memory-mapped); the async iterables only wrap them.
 */
/**
 * The first key after every key that starts with `prefix`, in LMDB's order (UTF-8 bytes).
 * `prefix + '\uffff'` is not: a character outside the BMP (an emoji, F0 9F …) sorts after
 * U+FFFF (EF BF BF), so `node:😀` would have been left out of keys() and recoverAll(), and so out
 * of the read models after a restart. Every prefix here ends with an ASCII character (`:`, `/`).
 */
export function prefixEnd(prefix: string): string {
  const last = prefix.charCodeAt(prefix.length - 1);
  if (last < 0x7f) return prefix.slice(0, -1) + String.fromCharCode(last + 1);
  return prefix + '\u{10FFFF}\u{10FFFF}';
}

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
    // noSubdir: false: `path` is always a folder. lmdb-js would otherwise take a path whose last
    // part has an extension (`/var/lib/hilt.d`) for a file and fail to open it.
    this.root = open({ path, noSubdir: false, mapSize: (opts.mapSizeGb ?? 16) * 1024 ** 3, maxDbs: 8, separateFlushed: true });
    this.eventsDb = this.root.openDB({ name: 'events' });
    this.headsDb = this.root.openDB({ name: 'heads' });
    this.snapshotsDb = this.root.openDB({ name: 'snapshots' });
  }

  async *events(key: string, offset = 0): AsyncIterable<PersistedEvent> {
    yield* this.eventsAfter(key, offset);
  }

  private eventsAfter(key: string, offset: number): PersistedEvent[] {
    const out: PersistedEvent[] = [];
    for (const { key: k, value } of this.eventsDb.getRange({ start: [key, offset + 1], end: [key, MAX_SEQ] })) {
      out.push({ data: unescapeKeys(value.data), sequenceNumber: k[1], key, tags: value.tags ?? [], createdAt: value.createdAt });
    }
    return out;
  }

  persist(events: PersistedEvent[]): Promise<void> {
    if (!events.length) return Promise.resolve();
    // Every put is issued in this one turn: lmdb-js commits them in one transaction.
    const heads = new Map<string, number>();
    let last: Promise<unknown> = Promise.resolve();
    for (const e of events) {
      last = this.eventsDb.put([e.key, e.sequenceNumber], { data: escapeKeys(e.data), createdAt: e.createdAt, tags: e.tags.length ? e.tags : undefined });
      heads.set(e.key, Math.max(heads.get(e.key) ?? 0, e.sequenceNumber));
    }
    for (const [key, seq] of heads) last = this.headsDb.put(key, seq);
    return flushed(last).then(() => undefined);
  }

  async latestSnapshot(key: string): Promise<PersistedSnapshot | undefined> {
    return this.snapshot(key);
  }

  private snapshot(key: string): PersistedSnapshot | undefined {
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

  async head(key: string): Promise<number> {
    return this.headsDb.get(key) ?? 0;
  }

  async *keys(prefix: string): AsyncIterable<string> {
    for (const k of this.headsDb.getKeys({ start: prefix, end: prefixEnd(prefix) })) yield k as string;
  }

  async *journal(key: string, limit: number): AsyncIterable<JournalEntry> {
    for (const { key: k, value } of this.eventsDb.getRange({ start: [key, MAX_SEQ], end: [key, 0], reverse: true, limit })) {
      yield { sequenceNumber: k[1], createdAt: value.createdAt, data: unescapeKeys(value.data) };
    }
  }

  async *recoverAll(prefix: string): AsyncIterable<StoredEntity> {
    for (const k of this.headsDb.getKeys({ start: prefix, end: prefixEnd(prefix) })) {
      const key = k as string;
      const snapshot = this.snapshot(key);
      yield { key, snapshot, events: this.eventsAfter(key, snapshot?.sequenceNumber ?? 0) };
    }
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
