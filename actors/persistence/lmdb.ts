/**
 * The storage contract on LMDB (HILT_STORAGE=lmdb, the default): one environment in the data
 * folder, with named databases for the events, the heads, the snapshots, the time index, the
 * commit order and its marks (the class comment says how writes become durable).
 *
 * Over 500 lines on purpose: it is one engine of the contract, checked as a whole by
 * the conformance kit (test/actors/persistence/conformance.ts).
 */
import { chmodSync, existsSync, mkdirSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { asBinary, open, RootDatabase, Database } from 'lmdb';
import { PersistenceEngine, PersistedEvent, PersistedSnapshot, JournalEntry, StoredEntity, MAX_SEQ, HistoryQuery, StorageStats, Rewrite, OrderBounds, CommitListener, CommitOrder, Expiry, PruneResult } from './engine';
import { escapeKeys, unescapeKeys } from './keys';
import { FileCheckpointSlot } from './checkpoint-file';
import { HiltError } from '../errors';
import { quote } from '../../lib/text';
import { fsyncPath } from '../../lib/durable';

/** `p`: the event's position in the commit order (absent only until an older store is ordered) */
interface StoredEvent { data: unknown; createdAt: number; tags?: string[]; p?: number }
interface StoredSnapshot { data: unknown; sequenceNumber: number; createdAt: number }

/** `history` keys: the time index, ascending. */
type HistoryKey = [number, string, number];
/** `orderByKind` keys: a key's kind (the text before its first `:`), then the position. */
type KindOrderKey = [string, number];

/** The kind of a key: `node` for `node:n1` (the whole key when it has no `:`). */
const kindOf = (key: string) => {
  const i = key.indexOf(':');
  return i < 0 ? key : key.slice(0, i);
};
/** A prefix that names exactly one kind (`node:`), which historyByKind serves. */
const KIND_PREFIX = /^[^:]+:$/;

/** Keys read with one range read of their events at start (recoverAll). */
const RECOVER_RUN = 1_000;

/** Events indexed into `history` (or given positions) per write transaction while an older store is indexed. */
const INDEX_CHUNK = 5_000;
/** Events of one key read per synchronous range read by events(): a long journal is read a page at a time. */
const EVENTS_PAGE = 500;

/**
 * How far a store restored from a backup moves its positions on: ids a stream client got from
 * the store after the backup was taken are then below the copy's first (410), never mistaken
 * for the copy's own later events (etcd bumps its revision on a restore for the same reason).
 */
const RESTORE_GAP = 2 ** 32;
/**
 * A restore also starts at or above this many positions per millisecond of the clock: the
 * same backup restored twice (two copies of it) would otherwise give the same ids twice, and
 * a consumer of the first restore would skip the second's events. The first restore would
 * have to give a thousand ids a millisecond on average to reach the second's first (hilt's
 * commits are far slower); 1,000 × the time stays below 2^53 until the 23rd century.
 */
const RESTORE_IDS_PER_MS = 1_000;

/**
 * The storage contract on one LMDB environment (a folder: `data.mdb` and `lock.mdb`) with these
 * named databases:
 * - `events`    [key, seq] → event   (array keys sort by key then seq: replay is one range read)
 * - `heads`     key → last seq        (written in the same transaction as the event)
 * - `snapshots` key → latest snapshot
 * - `order`     position → [key, seq], the one commit order (history(), feed()): a position is
 *   given in persist(), in call order, which is lmdb-js's commit order; the event keeps it too
 * - `orderByKind` [kind, position] → 1, the same per kind (a prefix `<kind>:` reads only its
 *   kind's events)
 * - `history`   [createdAt, key, seq] → 1, the time index (positionAt())
 * - `historyByKind` [kind, createdAt, key, seq]: written by earlier releases, no longer read
 * - `marks`     name → value (setMark)
 * All are written in the same transaction as the event. A store written before an index existed
 * is indexed once, in the background, when it is first opened (`meta` records when that is
 * done): first the time index, then its events' positions in the order of their time (the
 * positions they take are reserved at the first open, so later writes come after them).
 * - `meta`      engine bookkeeping
 * Durability: on Linux lmdb-js defaults to `overlappingSync`, where a write's promise resolves
 * when its transaction is *committed* (visible), before the OS has flushed it. That would
 * acknowledge changes a power loss can still take away. So persist() waits for the write's
 * `.flushed` promise (`separateFlushed`), and the environment is opened without
 * `overlappingSync`: each commit is flushed by the write thread as LMDB does by default
 * (mdb_txn_commit syncs before it returns), and `.flushed` is the commit itself. Writes issued
 * while a commit and its flush run go into the next transaction, so many actors persisting at
 * once share one fsync (and one persist() call is one transaction). Overlapping the flush with
 * the next transaction took one more hand-over between threads and one more callback on the
 * event loop per commit; on a busy service that cost more than the overlap saved (bench/README.md,
 * Per-request speed).
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

/**
 * lmdb-js's error for a write whose transaction failed (a full disk, a write error): every write
 * of that transaction is rejected with it, and it carries the cause as `commitError`, a promise
 * of its own that is rejected too.
 */
function isCommitFailure(reason: unknown): reason is Error & { commitError: Promise<unknown> } {
  return reason instanceof Error && typeof (reason as { commitError?: { catch?: unknown } }).commitError?.catch === 'function';
}

/**
 * When a transaction fails, lmdb-js also rejects promises of its own that nobody holds (the
 * event turn's batch, and each failure's `commitError`). Node would take those for unhandled
 * rejections and end the process, so one refused commit (a full disk) would kill the service
 * after it answered 503, instead of only failing the writes it held. Those, and only those, are
 * let go here; any other unhandled rejection ends the process as without this listener.
 */
function letCommitFailuresGo(reason: unknown): void {
  if (isCommitFailure(reason)) {
    reason.commitError.catch(() => undefined);
    return;
  }
  // Node raises an unhandled rejection only while nobody listens: this listener changes nothing there.
  if (process.listenerCount('unhandledRejection') === 1) throw reason;
}

/** How long a failed write waits for lmdb-js to say why (see handled()). */
const COMMIT_ERROR_WAIT_MS = 1_000;

/**
 * A write that failed with its transaction fails with the cause (a full disk: `File too large`,
 * `No space left on device`) instead of lmdb-js's "see commitError", its commitError handled.
 */
function handled<T>(p: Promise<T>): Promise<T> {
  return p.catch(async (err: unknown) => {
    if (!isCommitFailure(err)) throw err;
    // Rejected once the write thread reports the failure, at once or nearly (bounded all the same).
    let timer: NodeJS.Timeout | undefined;
    const cause = await Promise.race([
      err.commitError.then(() => undefined, (c: unknown) => c),
      new Promise((r) => { timer = setTimeout(r, COMMIT_ERROR_WAIT_MS); }),
    ]).finally(() => clearTimeout(timer));
    throw cause instanceof Error ? new Error(`the commit failed: ${cause.message}`, { cause }) : err;
  });
}

/** The write's durable-on-disk promise (see the class comment). */
function flushed(p: Promise<unknown>): Promise<unknown> {
  return handled((p as Promise<unknown> & { flushed?: Promise<unknown> }).flushed ?? p);
}

export class LmdbPersistenceEngine implements PersistenceEngine {
  // Set by openEnvironment(): again after compact() swapped the data file.
  private root!: RootDatabase;
  private eventsDb!: Database<StoredEvent, [string, number]>;
  private headsDb!: Database<number, string>;
  private snapshotsDb!: Database<StoredSnapshot, string>;
  private historyDb!: Database<number, HistoryKey>;
  private orderDb!: Database<[string, number], number>;
  private kindOrderDb!: Database<number, KindOrderKey>;
  private marksDb!: Database<unknown, string>;
  private metaDb!: Database<unknown, string>;
  /** resolves once every stored event is in `history` (at once, unless an older store is being indexed) */
  private readonly indexed: Promise<void>;
  /** resolves once every stored event has its position (at once, unless an older store is being ordered) */
  private readonly ordered: Promise<void>;
  /** the position the next event takes */
  private nextPosition: number;
  /** the newest position whose commit is durable (what feed() reads up to) */
  private durable: number;
  /** positions up to this one belong to a timeline before a restore: no stream resumes there */
  private readonly floor: number;
  /** the positions the last restore went on past (none: never restored) */
  private readonly gap?: [number, number];
  /** the highest position prune() removed (meta `pruned`): streams resume only after it */
  private pruned: number;
  private readonly commits = new CommitOrder();
  private closing = false;
  /** the read model's checkpoint, a file in the folder (dropped by rewrite(); backup() copies only data.mdb) */
  readonly checkpoints: FileCheckpointSlot;
  /** set when this open was the first on a backup's copy: the restore, and the gap it fixed */
  readonly restored?: [number, number];

  constructor(private readonly path: string, private readonly opts: { mapSizeGb?: number } = {}) {
    this.openEnvironment();
    // The first open made data.mdb: its name durable in the folder before anything is stored.
    fsyncPath(path);
    this.checkpoints = new FileCheckpointSlot(path);
    this.indexed = this.metaDb.get('historyIndexed') ? Promise.resolve() : this.indexHistory();
    // Read by history(); a failure is reported there.
    this.indexed.catch(() => undefined);
    const restoredFrom = (this.metaDb.get('restoreFrom') as number | undefined) ?? this.earlierReleasesRestore();
    if (restoredFrom !== undefined) {
      // The first open of a backup's copy: a restore. Its floor is fixed before any event takes
      // a position, and durable at once (a crash before it has given none).
      const floor = Math.max(restoredFrom + RESTORE_GAP, Date.now() * RESTORE_IDS_PER_MS);
      this.root.transactionSync(() => {
        this.metaDb.putSync('restoreFloor', floor);
        this.metaDb.putSync('restoreGap', [restoredFrom + 1, floor]);
        this.metaDb.removeSync('restoreFrom');
      });
      this.restored = [restoredFrom + 1, floor];
    }
    this.floor = (this.metaDb.get('restoreFloor') as number | undefined) ?? 0;
    // A store a release before restoreGap restored went on exactly RESTORE_GAP past its copy's last.
    this.gap = (this.metaDb.get('restoreGap') as [number, number] | undefined) ?? (this.floor ? [this.floor - RESTORE_GAP + 1, this.floor] : undefined);
    this.pruned = (this.metaDb.get('pruned') as number | undefined) ?? 0;
    // Positions retention removed are never given again, even the newest ones.
    const last = Math.max(this.lastOrdered(), this.floor, this.pruned);
    if (this.metaDb.get('ordered')) {
      this.ordered = Promise.resolve();
      this.nextPosition = last + 1;
    } else {
      // An older store's events take positions 1..n, in the order of their time; reserved now.
      let legacy = this.metaDb.get('legacyEvents') as number | undefined;
      if (legacy === undefined) {
        legacy = this.eventsDb.getCount();
        // Issued before any event: committed first.
        this.metaDb.put('legacyEvents', legacy);
      }
      this.nextPosition = Math.max(last, legacy) + 1;
      this.ordered = legacy ? this.indexed.then(() => this.orderLegacy()) : flushed(this.metaDb.put('ordered', 1)).then(() => undefined);
      this.ordered.catch(() => undefined);
    }
    this.durable = this.nextPosition - 1;
  }

  /**
   * A copy of a backup an earlier release made (it fixed the floor, `restoreFloor`, when it wrote
   * the backup, and no gap) that has given no position since: restored as a backup of this
   * release is, from the position the backup ended at, so that two copies of it never give the
   * same ids. Nothing above the old floor was given, so moving it changes no id.
   */
  private earlierReleasesRestore(): number | undefined {
    const floor = this.metaDb.get('restoreFloor') as number | undefined;
    if (floor === undefined || this.metaDb.get('restoreGap') !== undefined) return undefined;
    const given = Math.max(this.lastOrdered(), (this.metaDb.get('pruned') as number | undefined) ?? 0, (this.metaDb.get('legacyEvents') as number | undefined) ?? 0);
    return given <= floor ? floor - RESTORE_GAP : undefined;
  }

  private lastOrdered(): number {
    for (const k of this.orderDb.getKeys({ reverse: true, limit: 1 })) return k as number;
    return 0;
  }

  /**
   * Give positions to the events of an older store, in the order of the time index (time, key,
   * sequence number): the order of the audit log of the releases that wrote them. A chunk per
   * transaction, resumable: `meta` keeps the next position and the last time key done.
   */
  private async orderLegacy(): Promise<void> {
    let { next, after } = (this.metaDb.get('legacyOrder') as { next: number; after?: HistoryKey } | undefined) ?? { next: 1 };
    while (!this.closing) {
      const chunk = [...this.historyDb.getKeys({ start: after, limit: INDEX_CHUNK + (after ? 1 : 0) } as never) as Iterable<HistoryKey>]
        .filter((k) => !after || k[0] !== after[0] || k[1] !== after[1] || k[2] !== after[2]);
      if (!chunk.length) break;
      for (const [, key, seq] of chunk) {
        const value = this.eventsDb.get([key, seq]);
        if (!value || value.p !== undefined) continue;
        const p = next++;
        this.eventsDb.put([key, seq], { ...value, p });
        this.orderDb.put(p, [key, seq]);
        this.kindOrderDb.put([kindOf(key), p], 1);
      }
      after = chunk[chunk.length - 1];
      await flushed(this.metaDb.put('legacyOrder', { next, after }));
    }
    if (!this.closing) await flushed(this.metaDb.put('ordered', 1));
  }

  private openEnvironment(): void {
    if (!process.listeners('unhandledRejection').includes(letCommitFailuresGo)) process.on('unhandledRejection', letCommitFailuresGo);
    // noSubdir: false: `path` is always a folder. lmdb-js would otherwise take a path whose last
    // part has an extension (`/var/lib/hilt.d`) for a file and fail to open it.
    this.root = open({ path: this.path, noSubdir: false, mapSize: (this.opts.mapSizeGb ?? 16) * 1024 ** 3, maxDbs: 16, separateFlushed: true, overlappingSync: false });
    this.eventsDb = this.root.openDB({ name: 'events' });
    this.headsDb = this.root.openDB({ name: 'heads' });
    this.snapshotsDb = this.root.openDB({ name: 'snapshots' });
    this.historyDb = this.root.openDB({ name: 'history' });
    this.orderDb = this.root.openDB({ name: 'order' });
    this.kindOrderDb = this.root.openDB({ name: 'orderByKind' });
    this.marksDb = this.root.openDB({ name: 'marks' });
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
      await flushed(last);
      start = chunk[chunk.length - 1].key;
    }
    // Stopped by close(): the next open goes on (again from the start; entries are idempotent).
    if (!this.closing) await flushed(this.metaDb.put('historyIndexed', 1));
  }

  async *events(key: string, offset = 0): AsyncIterable<PersistedEvent> {
    // A page per read: a caller that stops early (retention's chunks) reads no more of a long journal.
    for (let after = offset; ;) {
      const page = this.eventsAfter(key, after, EVENTS_PAGE);
      yield* page;
      if (page.length < EVENTS_PAGE) return;
      after = page[page.length - 1].sequenceNumber;
    }
  }

  private eventsAfter(key: string, offset: number, limit?: number): PersistedEvent[] {
    const out: PersistedEvent[] = [];
    for (const { key: k, value } of this.eventsDb.getRange({ start: [key, offset + 1], end: [key, MAX_SEQ], limit })) {
      out.push({ data: unescapeKeys(value.data), sequenceNumber: k[1], key, tags: value.tags ?? [], createdAt: value.createdAt, position: value.p });
    }
    return out;
  }

  persist(events: PersistedEvent[]): Promise<void> {
    if (!events.length) return Promise.resolve();
    // Every value encoded before the first put: a put queues its write at once, so a value that
    // cannot be encoded (a BigInt beyond 64 bits) half-way would commit the events before it.
    const encoder = (this.eventsDb as unknown as { encoder: { encode(v: unknown): Uint8Array } }).encoder;
    const values = events.map((e, i) => {
      try {
        return asBinary(encoder.encode({ data: escapeKeys(e.data), createdAt: e.createdAt, tags: e.tags.length ? e.tags : undefined, p: this.nextPosition + i }));
      } catch (err) {
        throw new Error(`event ${e.sequenceNumber} of ${e.key} cannot be stored: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
    });
    // Every put is issued in this one turn: lmdb-js commits them in one transaction.
    const heads = new Map<string, number>();
    const told: PersistedEvent[] = [];
    let last: Promise<unknown> = Promise.resolve();
    for (const [i, e] of events.entries()) {
      const p = this.nextPosition++;
      last = this.eventsDb.put([e.key, e.sequenceNumber], values[i] as unknown as StoredEvent);
      this.orderDb.put(p, [e.key, e.sequenceNumber]);
      this.kindOrderDb.put([kindOf(e.key), p], 1);
      this.index(e.key, e.sequenceNumber, e.createdAt);
      heads.set(e.key, Math.max(heads.get(e.key) ?? 0, e.sequenceNumber));
      told.push({ ...e, position: p });
    }
    for (const [key, seq] of heads) last = this.headsDb.put(key, seq);
    const top = this.nextPosition - 1;
    const done = flushed(last).then(() => {
      // Transactions flush in order: this one durable means every earlier one is.
      if (top > this.durable) this.durable = top;
    });
    this.commits.begin(told, done);
    return done;
  }

  /** The event's entry in the time index (issued with the event: the same transaction). */
  private index(key: string, seq: number, createdAt: number): Promise<unknown> {
    return this.historyDb.put([createdAt, key, seq], 1);
  }

  async rewrite(changes: Rewrite): Promise<void> {
    // A checkpoint would describe the data as it was: gone before the data changes.
    if (changes.events.length || changes.snapshots.length) this.checkpoints.drop();
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
   * One write transaction: each key's events up to `upTo` leave `events` and the three indexes
   * (`order`, `orderByKind`, `history`); its snapshot and head go with them when they are at or
   * below `upTo` (a head above means events persisted meanwhile: the key stays). The pages freed
   * are reused by later writes, so a store under churn stops growing.
   */
  async prune(expired: Expiry[]): Promise<PruneResult> {
    await this.ordered;
    const result = { events: 0, keys: 0 };
    let top = this.pruned;
    await flushed(this.root.transaction(() => {
      for (const { key, upTo } of expired) {
        const doomed = [...this.eventsDb.getRange({ start: [key, 0], end: [key, upTo + 1] })];
        for (const { key: k, value } of doomed) {
          this.eventsDb.remove(k);
          this.historyDb.remove([value.createdAt, key, k[1]]);
          if (value.p !== undefined) {
            this.orderDb.remove(value.p);
            this.kindOrderDb.remove([kindOf(key), value.p]);
            if (value.p > top) top = value.p;
          }
          result.events++;
        }
        const snap = this.snapshotsDb.get(key);
        if (snap && snap.sequenceNumber <= upTo) this.snapshotsDb.remove(key);
        const head = this.headsDb.get(key);
        if (head !== undefined && head <= upTo) {
          this.headsDb.remove(key);
          result.keys++;
        }
      }
      if (top > this.pruned) this.metaDb.put('pruned', top);
    }));
    if (top > this.pruned) this.pruned = top;
    return result;
  }

  /**
   * LMDB writes copy-on-write and never erases a freed page: the pages that held rewritten
   * values stay in data.mdb until reused. A compacting copy (mdb_env_copy2 with MDB_CP_COMPACT)
   * holds only the pages in use; it replaces data.mdb by a rename, and the environment is opened
   * again on it.
   */
  async compact(): Promise<void> {
    await this.indexed.catch(() => undefined);
    await this.ordered.catch(() => undefined);
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
    // The rename durable before anything is written to the compacted file.
    fsyncPath(this.path);
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
    await flushed(this.snapshotsDb.transaction(() => {
      const cur = this.snapshotsDb.get(snapshot.key);
      if (cur && cur.sequenceNumber >= snapshot.sequenceNumber) return;
      this.snapshotsDb.put(snapshot.key, { data: escapeKeys(snapshot.data), sequenceNumber: snapshot.sequenceNumber, createdAt: snapshot.createdAt });
    }));
  }

  async head(key: string): Promise<number> {
    return this.headsDb.get(key) ?? 0;
  }

  async *keys(prefix: string): AsyncIterable<string> {
    for (const k of this.headsDb.getKeys({ start: prefix, end: prefixEnd(prefix) })) yield k as string;
  }

  async *journal(key: string, limit: number): AsyncIterable<JournalEntry> {
    for (const { key: k, value } of this.eventsDb.getRange({ start: [key, MAX_SEQ], end: [key, 0], reverse: true, limit })) {
      yield { sequenceNumber: k[1], createdAt: value.createdAt, data: unescapeKeys(value.data), position: value.p ?? 0 };
    }
  }

  async recover(key: string): Promise<StoredEntity> {
    return this.stored(key);
  }

  private stored(key: string): StoredEntity {
    // A key never written (every registration's) has no head: one lookup instead of a snapshot
    // read and a range read. A head is written and removed with the key's events (persist, prune).
    if (this.headsDb.get(key) === undefined) return { key, snapshot: undefined, events: [] };
    const snapshot = this.snapshot(key);
    return { key, snapshot, events: this.eventsAfter(key, snapshot?.sequenceNumber ?? 0) };
  }

  /**
   * A start reads every key: keys without a snapshot (nearly all, at a large site: an entity
   * has fewer than 16 events) are read in runs, one range read of the events per run, which
   * costs a third of a range read per key; a key with a snapshot is read from its snapshot on
   * (no event at all when it is as of the last one), so that a long journal is never decoded whole.
   */
  async *recoverAll(prefix: string): AsyncIterable<StoredEntity> {
    const snapshotted = new Set(this.snapshotsDb.getKeys({ start: prefix, end: prefixEnd(prefix) }) as Iterable<string>);
    let run: { key: string; head: number }[] = [];
    for (const { key, value } of this.headsDb.getRange({ start: prefix, end: prefixEnd(prefix) })) {
      if (snapshotted.has(key as string)) {
        yield* this.storedRun(run);
        run = [];
        // A snapshot as of its last event needs no range read.
        const snapshot = this.snapshot(key as string);
        yield { key: key as string, snapshot, events: snapshot && snapshot.sequenceNumber >= (value as number) ? [] : this.eventsAfter(key as string, snapshot?.sequenceNumber ?? 0) };
        continue;
      }
      run.push({ key: key as string, head: value as number });
      if (run.length >= RECOVER_RUN) {
        yield* this.storedRun(run);
        run = [];
      }
    }
    yield* this.storedRun(run);
  }

  /** Consecutive keys without a snapshot: one range read of their events (checked against their heads). */
  private storedRun(run: { key: string; head: number }[]): StoredEntity[] {
    if (!run.length) return [];
    const events = new Map<string, PersistedEvent[]>(run.map(({ key }) => [key, []]));
    for (const { key: k, value } of this.eventsDb.getRange({ start: [run[0].key, 1], end: [run[run.length - 1].key, MAX_SEQ] })) {
      const list = events.get(k[0]);
      list?.push({ data: unescapeKeys(value.data), sequenceNumber: k[1], key: k[0], tags: value.tags ?? [], createdAt: value.createdAt, position: value.p });
    }
    // A key whose events the range did not hold whole (none should) is read on its own.
    return run.map(({ key, head }) => {
      const list = events.get(key)!;
      return list.length === head && list[list.length - 1]?.sequenceNumber === head ? { key, snapshot: undefined, events: list } : this.stored(key);
    });
  }

  /** The event at a position, read back (undefined: none there). */
  private at(p: number, key: string, seq: number): PersistedEvent | undefined {
    const value = this.eventsDb.get([key, seq]);
    if (!value) return undefined;
    return { data: unescapeKeys(value.data), sequenceNumber: seq, key, tags: value.tags ?? [], createdAt: value.createdAt, position: p };
  }

  async positionAt(time: number): Promise<number> {
    await this.ordered;
    // The first instant at or after `time` in the time index; of its events, the lowest position.
    let instant: number | undefined;
    let lowest = Infinity;
    for (const [t, key, seq] of this.historyDb.getKeys({ start: [time] } as never) as Iterable<HistoryKey>) {
      if (instant !== undefined && t !== instant) break;
      instant = t;
      const p = this.eventsDb.get([key, seq])?.p;
      if (p !== undefined && p < lowest) lowest = p;
    }
    return lowest === Infinity ? this.durable : lowest - 1;
  }

  async *history(query: HistoryQuery): AsyncIterable<PersistedEvent> {
    await this.ordered;
    const prefix = query.prefix ?? '';
    // Newest first, from below the lowest upper bound (all exclusive) down to `since`.
    let top = this.durable + 1;
    if (query.before !== undefined) top = Math.min(top, query.before);
    if (query.until !== undefined) top = Math.min(top, (await this.positionAt(query.until)) + 1);
    const bottom = query.since !== undefined ? await this.positionAt(query.since) : 0;
    if (top <= bottom + 1) return;
    const inTime = (e: PersistedEvent) => (query.since === undefined || e.createdAt >= query.since) && (query.until === undefined || e.createdAt < query.until);
    // One kind: its own index, so that a rare kind costs no scan of the others.
    const kind = KIND_PREFIX.test(prefix) ? prefix.slice(0, -1) : undefined;
    if (kind !== undefined) {
      for (const [, p] of this.kindOrderDb.getKeys({ start: [kind, top], end: [kind, bottom], reverse: true } as never) as Iterable<KindOrderKey>) {
        if (p >= top) continue;
        const ks = this.orderDb.get(p);
        const e = ks && this.at(p, ks[0], ks[1]);
        if (e && inTime(e)) yield e;
      }
      return;
    }
    for (const { key: p, value: ks } of this.orderDb.getRange({ start: top, end: bottom, reverse: true })) {
      if ((p as number) >= top || !ks[0].startsWith(prefix)) continue;
      const e = this.at(p as number, ks[0], ks[1]);
      if (e && inTime(e)) yield e;
    }
  }

  async *feed(after: number): AsyncIterable<PersistedEvent> {
    await this.ordered;
    const end = this.durable;
    for (const { key: p, value: ks } of this.orderDb.getRange({ start: after + 1, end: end + 1 })) {
      const e = this.at(p as number, ks[0], ks[1]);
      if (e) yield e;
    }
  }

  async bounds(): Promise<OrderBounds> {
    const gap = this.gap;
    return { first: Math.max(this.floor, this.pruned) + 1, last: this.durable, ...(gap ? { gap, removed: this.pruned } : {}) };
  }

  onCommit(listener: CommitListener): () => void {
    return this.commits.listen(listener);
  }

  async mark(name: string): Promise<unknown> {
    return this.marksDb.get(name);
  }

  /** Every mark, by name (copy.ts moves them with the journal). */
  *marks(): Iterable<[string, unknown]> {
    for (const { key, value } of this.marksDb.getRange()) yield [key, value];
  }

  async setMark(name: string, value: unknown): Promise<void> {
    await flushed(this.marksDb.put(name, value));
  }

  /**
   * LMDB's own copy (mdb_env_copy2) under one read transaction: consistent, and writers go on
   * meanwhile (pages they free cannot be reused until it ends, so the store may grow a little).
   * Written as `<path>.partial` and renamed to `path` once whole: a process killed midway
   * leaves no half copy at `path`, only a folder whose name says what it is.
   */
  async backup(path: string): Promise<void> {
    this.refuseInside(path);
    if (existsSync(path)) throw new Error(`${path} exists already`);
    const partial = `${path}.partial`;
    try {
      mkdirSync(partial, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      throw new HiltError('DuplicateError', `${quote(partial)} exists: a backup to ${quote(path)} is under way, or one was interrupted (remove that folder)`);
    }
    try {
      // Compacting: only the pages in use, so no freed page (a value sealed under a key since
      // rotated away, a plaintext an upgrade sealed: docs/identity.md) reaches a backup.
      await this.root.backup(partial, true);
      // It holds what the store holds (BMC and switch credentials): the service's alone.
      chmodSync(join(partial, 'data.mdb'), 0o600);
      // The first start on a copy of it is a restore: its positions go on past a gap, fixed
      // then (see RESTORE_GAP and RESTORE_IDS_PER_MS), above every one the copy had given.
      // Its commit syncs data.mdb, the copied pages with it.
      const copy = open({ path: partial, noSubdir: false, maxDbs: 16 });
      try {
        const order = copy.openDB<[string, number], number>({ name: 'order' });
        const meta = copy.openDB<unknown, string>({ name: 'meta' });
        let top = (meta.get('restoreFloor') as number | undefined) ?? 0;
        for (const k of order.getKeys({ reverse: true, limit: 1 })) top = Math.max(top, k as number);
        top = Math.max(top, (meta.get('legacyEvents') as number | undefined) ?? 0, (meta.get('pruned') as number | undefined) ?? 0);
        await flushed(meta.put('restoreFrom', top));
      } finally {
        await copy.close();
      }
      // data.mdb's entry in the new folder: the file's own sync does not make its name durable.
      fsyncPath(partial);
      renameSync(partial, path);
    } catch (err) {
      // The folder is ours (made above): a half-written copy left there would keep the path
      // from being used again.
      rmSync(partial, { recursive: true, force: true });
      throw err;
    }
    // The rename itself durable before the answer says the backup is there.
    fsyncPath(dirname(path));
  }

  /**
   * A backup in the data folder is lost with it (a failed disk), and a restore moves the
   * folder away; at `archive` it would be where retention writes, at `compact.tmp` removed.
   */
  private refuseInside(path: string): void {
    let target: string;
    try {
      target = join(realpathSync(dirname(path)), basename(path));
    } catch {
      return; // a parent that does not exist: mkdir says so
    }
    const rel = relative(realpathSync(this.path), target);
    if (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel)) {
      throw new HiltError('BadArgumentError', `the folder ${quote(path)} is inside the data folder ${quote(this.path)}: a backup there is lost with it, and a restore moves it away. Back up to a folder outside it (on another disk, ideally)`);
    }
  }

  async stats(): Promise<StorageStats> {
    const s = this.root.getStats() as { pageSize: number; lastPageNumber: number };
    return { sizeBytes: statSync(join(this.path, 'data.mdb')).size, usedBytes: (s.lastPageNumber + 1) * s.pageSize };
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.indexed.catch(() => undefined);
    await this.ordered.catch(() => undefined);
    await this.root.close();
  }
}
