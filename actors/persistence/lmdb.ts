import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { open, RootDatabase, Database } from 'lmdb';
import { PersistenceEngine, PersistedEvent, PersistedSnapshot, JournalEntry, StoredEntity, MAX_SEQ, HistoryQuery, StorageStats, Rewrite } from './engine';
import { escapeKeys, unescapeKeys } from './keys';

interface StoredEvent { data: unknown; createdAt: number; tags?: string[] }
interface StoredSnapshot { data: unknown; sequenceNumber: number; createdAt: number }

/** `history` keys: the order of history(), ascending. */
type HistoryKey = [number, string, number];
/** `historyByKind` keys: a key's kind (the text before its first `:`), then as in `history`. */
type KindHistoryKey = [string, number, string, number];

/** The kind of a key: `node` for `node:n1` (the whole key when it has no `:`). */
const kindOf = (key: string) => {
  const i = key.indexOf(':');
  return i < 0 ? key : key.slice(0, i);
};
/** A prefix that names exactly one kind (`node:`), which historyByKind serves. */
const KIND_PREFIX = /^[^:]+:$/;

/** Events indexed into `history` per write transaction while an older store's index is built. */
const INDEX_CHUNK = 5_000;

/**
 * The storage contract on one LMDB environment (a folder: `data.mdb` and `lock.mdb`) with these
 * named databases:
 * - `events`    [key, seq] → event   (array keys sort by key then seq: replay is one range read)
 * - `heads`     key → last seq        (written in the same transaction as the event)
 * - `snapshots` key → latest snapshot
 * - `history`   [createdAt, key, seq] → 1, the time index of history(), and
 * - `historyByKind` [kind, createdAt, key, seq] → 1, the same per kind (a prefix `<kind>:`
 *   reads only its kind's events); both written in the same transaction as the event; a store
 *   written before they existed is indexed once, in the background, when it is first opened
 *   (`meta` records when that is done)
 * - `meta`      engine bookkeeping
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

function* mapIterable<A, B>(it: Iterable<A>, f: (a: A) => B): Iterable<B> {
  for (const a of it) yield f(a);
}

export class LmdbPersistenceEngine implements PersistenceEngine {
  // Set by openEnvironment(): again after compact() swapped the data file.
  private root!: RootDatabase;
  private eventsDb!: Database<StoredEvent, [string, number]>;
  private headsDb!: Database<number, string>;
  private snapshotsDb!: Database<StoredSnapshot, string>;
  private historyDb!: Database<number, HistoryKey>;
  private kindHistoryDb!: Database<number, KindHistoryKey>;
  private metaDb!: Database<unknown, string>;
  /** resolves once every stored event is in `history` (at once, unless an older store is being indexed) */
  private readonly indexed: Promise<void>;
  private closing = false;

  constructor(private readonly path: string, private readonly opts: { mapSizeGb?: number } = {}) {
    this.openEnvironment();
    this.indexed = this.metaDb.get('historyIndexed') ? Promise.resolve() : this.indexHistory();
    // Read by history(); a failure is reported there.
    this.indexed.catch(() => undefined);
  }

  private openEnvironment(): void {
    // noSubdir: false: `path` is always a folder. lmdb-js would otherwise take a path whose last
    // part has an extension (`/var/lib/hilt.d`) for a file and fail to open it.
    this.root = open({ path: this.path, noSubdir: false, mapSize: (this.opts.mapSizeGb ?? 16) * 1024 ** 3, maxDbs: 8, separateFlushed: true });
    this.eventsDb = this.root.openDB({ name: 'events' });
    this.headsDb = this.root.openDB({ name: 'heads' });
    this.snapshotsDb = this.root.openDB({ name: 'snapshots' });
    this.historyDb = this.root.openDB({ name: 'history' });
    this.kindHistoryDb = this.root.openDB({ name: 'historyByKind' });
    this.metaDb = this.root.openDB({ name: 'meta' });
  }

  /**
   * Index every stored event into `history`, a chunk per transaction, oldest keys first. Events
   * persisted meanwhile are indexed by persist() itself; an entry written twice is the same.
   */
  private async indexHistory(): Promise<void> {
    let start: [string, number] | undefined;
    while (!this.closing) {
      const chunk = [...this.eventsDb.getRange({ start, limit: INDEX_CHUNK + (start ? 1 : 0) })]
        .filter(({ key }) => !start || key[0] !== start[0] || key[1] !== start[1]);
      if (!chunk.length) break;
      let last: Promise<unknown> = Promise.resolve();
      for (const { key, value } of chunk) last = this.index(key[0], key[1], value.createdAt);
      await last;
      start = chunk[chunk.length - 1].key;
    }
    // Stopped by close(): the next open goes on (again from the start; entries are idempotent).
    if (!this.closing) await flushed(this.metaDb.put('historyIndexed', 1));
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
      this.index(e.key, e.sequenceNumber, e.createdAt);
      heads.set(e.key, Math.max(heads.get(e.key) ?? 0, e.sequenceNumber));
    }
    for (const [key, seq] of heads) last = this.headsDb.put(key, seq);
    return flushed(last).then(() => undefined);
  }

  /** The event's entries in the time indexes (issued with the event: the same transaction). */
  private index(key: string, seq: number, createdAt: number): Promise<unknown> {
    this.historyDb.put([createdAt, key, seq], 1);
    return this.kindHistoryDb.put([kindOf(key), createdAt, key, seq], 1);
  }

  async rewrite(changes: Rewrite): Promise<void> {
    // One write transaction: every replacement, or none.
    await flushed(this.root.transaction(() => {
      for (const c of changes.events) {
        const cur = this.eventsDb.get([c.key, c.sequenceNumber]);
        if (cur) this.eventsDb.put([c.key, c.sequenceNumber], { ...cur, data: escapeKeys(c.data) });
      }
      for (const c of changes.snapshots) {
        const cur = this.snapshotsDb.get(c.key);
        if (cur && cur.sequenceNumber === c.sequenceNumber) this.snapshotsDb.put(c.key, { ...cur, data: escapeKeys(c.data) });
      }
    }));
  }

  /**
   * LMDB writes copy-on-write and never erases a freed page: the pages that held rewritten
   * values stay in data.mdb until reused. A compacting copy (mdb_env_copy2 with MDB_CP_COMPACT)
   * holds only the pages in use; it replaces data.mdb by a rename, and the environment is opened
   * again on it.
   */
  async compact(): Promise<void> {
    await this.indexed.catch(() => undefined);
    const tmp = join(this.path, 'compact.tmp');
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { mode: 0o700 });
    try {
      await this.root.backup(tmp, true);
      chmodSync(join(tmp, 'data.mdb'), 0o600);
      await this.root.close();
      renameSync(join(tmp, 'data.mdb'), join(this.path, 'data.mdb'));
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
    this.openEnvironment();
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

  async recover(key: string): Promise<StoredEntity> {
    return this.stored(key);
  }

  private stored(key: string): StoredEntity {
    const snapshot = this.snapshot(key);
    return { key, snapshot, events: this.eventsAfter(key, snapshot?.sequenceNumber ?? 0) };
  }

  async *recoverAll(prefix: string): AsyncIterable<StoredEntity> {
    for (const k of this.headsDb.getKeys({ start: prefix, end: prefixEnd(prefix) })) yield this.stored(k as string);
  }

  async *history(query: HistoryQuery): AsyncIterable<PersistedEvent> {
    await this.indexed;
    const prefix = query.prefix ?? '';
    const b = query.before;
    // Newest first: from the lower of the two upper bounds (both exclusive), down to `since`.
    let upper: [number] | HistoryKey | undefined = query.until !== undefined ? [query.until] : undefined;
    if (b && (query.until === undefined || b.createdAt < query.until)) upper = [b.createdAt, b.key, b.sequenceNumber];
    const lower: [number] | undefined = query.since !== undefined ? [query.since] : undefined;
    // One kind: its own index, so that a rare kind costs no scan of the others.
    const kind = KIND_PREFIX.test(prefix) ? prefix.slice(0, -1) : undefined;
    const keys: Iterable<HistoryKey> = kind !== undefined
      ? mapIterable(this.kindHistoryDb.getKeys({
        start: [kind, ...(upper ?? [Number.MAX_SAFE_INTEGER])], end: [kind, ...(lower ?? [])], reverse: true,
      } as never) as Iterable<KindHistoryKey>, (k) => [k[1], k[2], k[3]] as HistoryKey)
      : this.historyDb.getKeys({ start: upper, end: lower, reverse: true } as never) as Iterable<HistoryKey>;
    for (const [createdAt, key, sequenceNumber] of keys) {
      if (b && createdAt === b.createdAt && key === b.key && sequenceNumber === b.sequenceNumber) continue;
      if (!key.startsWith(prefix)) continue;
      const value = this.eventsDb.get([key, sequenceNumber]);
      if (!value) continue;
      yield { data: unescapeKeys(value.data), sequenceNumber, key, tags: value.tags ?? [], createdAt };
    }
  }

  /**
   * LMDB's own copy (mdb_env_copy2) under one read transaction: consistent, and writers go on
   * meanwhile (pages they free cannot be reused until it ends, so the store may grow a little).
   */
  async backup(path: string): Promise<void> {
    if (existsSync(path)) throw new Error(`${path} exists already`);
    mkdirSync(path, { mode: 0o700 });
    // Compacting: only the pages in use, so no freed page (a value sealed under a key since
    // rotated away: docs/identity.md) reaches a backup.
    await this.root.backup(path, true);
    // It holds what the store holds (BMC and switch credentials): the service's alone.
    chmodSync(join(path, 'data.mdb'), 0o600);
  }

  async stats(): Promise<StorageStats> {
    const s = this.root.getStats() as { pageSize: number; lastPageNumber: number };
    return { sizeBytes: statSync(join(this.path, 'data.mdb')).size, usedBytes: (s.lastPageNumber + 1) * s.pageSize };
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.indexed.catch(() => undefined);
    await this.root.close();
  }
}
