/**
 * The storage contract on PostgreSQL (HILT_STORAGE=postgres, HILT_DATABASE_URL), for a standby
 * pair: several hilt processes on one database, one of them active (actors/persistence/lease.ts).
 * The schema and its migrations: actors/persistence/postgres-schema.ts.
 *
 * Writes: one dedicated connection commits them, one transaction at a time (group commit):
 * every persist() and takeSnapshot() that arrives while a commit is in flight waits for the next
 * one, and that next one carries them all; each caller is answered once the transaction that
 * holds its writes has committed (durable as the database's synchronous_commit makes it: on,
 * the default, is what hilt's durability rule needs). A batch is one statement,
 * `hilt_write(token, events, snapshots)`, so no transaction is ever left open waiting for this
 * process (a process paused mid-write holds no lock). With a fencing token, each transaction
 * checks that the token is still the lease's, in the same transaction: once another process took
 * over, every write is refused (`FencedError`) and `onFenced` tells the service to step down.
 *
 * A batch the database refuses (an error answer: nothing of it committed) is retried one
 * persist call at a time, so one bad write (e.g. a sequence number already stored) fails only
 * its own caller. A batch whose connection broke before the answer (or whose answer is an error
that ends the session, which may come after the commit) may or may not have
 * committed: its callers get an error (`OutcomeUnknownError`) and `onDoubt` tells the service,
 * which steps down and rebuilds from the database rather than guess. The engine writes nothing
 * more after that (later commits would take positions above the doubted one's and could commit
 * before it: a reader of positions would miss it).
 *
 * Reads go through a pool of connections. Start-up reads in bulk (`recoverAll`): per chunk of
 * keys, one query for their heads and latest snapshots, one for the events after the snapshots.
 *
 * Every read and every commit is bounded (`timeoutMs`): a database that hangs (a lock held by
 * someone else, a network that drops packets) becomes an error after the bound, so an actor
 * waking on a read answers 503 at once rather than holding its callers until theirs give up.
 * Reads: the server cancels the statement (statement_timeout), and the client gives up a little
 * later if even that answer does not come. A commit is bounded on the client only: a commit
 * cancelled on the server while it waits for a synchronous standby is kept and reported as done
 * (with a warning), which would acknowledge a change the standby may not have. A commit without
 * an answer in time is a commit whose outcome is unknown, as one whose connection broke.
 *
 * Longer than our other modules on purpose: it is one engine of the storage contract (reads,
 * the group-committing writer, fencing, bounded calls), checked as a whole by the conformance kit.
 */
import { Client, DatabaseError, Pool, PoolConfig, QueryResultRow, types as pgTypes } from 'pg';
import { CommitOrder } from './engine';
import type { HistoryQuery, PersistenceEngine, PersistedEvent, PersistedSnapshot, JournalEntry, StorageStats, StoredEntity, OrderBounds, CommitListener, Rewrite, Expiry, PruneResult } from './engine';
import { FENCED_SQLSTATE, migrate, MigrationResult, PRUNED_MARK, RESTORE_GAP_MARK } from './postgres-schema';
import { CLEAR_CHECKPOINT, PostgresCheckpointSlot } from './postgres-checkpoint';
import { HiltError } from '../errors';

/** A write refused because this process no longer holds the lease. */
export class FencedError extends Error {
  override name = 'FencedError';
}

/** A commit whose connection broke, or that got no answer in time: it may or may not have happened. */
export class OutcomeUnknownError extends Error {
  override name = 'OutcomeUnknownError';
}

export interface PostgresSettings {
  /** postgres://user:password@host:port/database?sslmode=… (libpq's parameters, as pg reads them) */
  url: string;
  /** read connections (the writer has one more of its own) */
  poolSize?: number;
  /** shown in pg_stat_activity */
  applicationName?: string;
  /** bound on each read and each commit, in ms (none: unbounded, for tools that copy or inspect) */
  timeoutMs?: number;
}

export interface PostgresEngineOptions {
  /** the lease's fencing token: every write carries it and is refused once it is not current (none: unfenced, for tools and tests) */
  fence?: number;
  /** a write was refused for the fencing token (called once) */
  onFenced?: (err: FencedError) => void;
  /** a commit's outcome is unknown (its connection broke) */
  onDoubt?: (err: OutcomeUnknownError) => void;
}

const INT8_OID = 20;
/** bigint columns (sequence numbers, times in ms) as numbers: they stay far below 2^53. */
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (v: string) => Number(v) : pgTypes.getTypeParser(oid, format as 'text')) as typeof pgTypes.getTypeParser,
};

/** Connection settings shared by every connection hilt opens to the database. */
export function connectionConfig(settings: PostgresSettings, role: string): PoolConfig {
  return {
    connectionString: settings.url,
    application_name: `${settings.applicationName ?? 'hilt'} ${role}`.slice(0, 63),
    keepAlive: true,
    keepAliveInitialDelayMillis: 1000,
    connectionTimeoutMillis: 10_000,
    types: TYPES,
  };
}

/** How much later than the server's statement_timeout a read gives up on the client (the server's answer is the clearer one). */
const CLIENT_GRACE_MS = 1000;

/** Bound on compact()'s VACUUM FULL, which rewrites every row of the store (once, at a start). */
export const COMPACT_TIMEOUT_MS = 60 * 60_000;
const COMPACTED_TABLES = 'hilt_events, hilt_snapshots, hilt_checkpoint_parts';

/** Open a connection of its own (the writer's, the lease's), with an error handler so a broken one never crashes the process. */
export async function connect(settings: PostgresSettings, role: string, onBroken?: (err: Error) => void, extra: Partial<PoolConfig> = {}): Promise<Client> {
  const client = new Client({ ...connectionConfig(settings, role), ...extra });
  client.on('error', (err) => onBroken?.(err));
  client.on('end', () => onBroken?.(new Error('the connection ended')));
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return client;
}

/** Create or migrate the schema (once per start, before the lease is taken). */
export async function migrateDatabase(settings: PostgresSettings): Promise<MigrationResult> {
  const client = await connect(settings, 'migration');
  try {
    return await migrate(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The bounds of every string starting with `prefix`, in bytewise (C collation) order: [lo, hi), hi null when unbounded. */
export function prefixRange(prefix: string): [string, string | null] {
  const cps = [...prefix];
  while (cps.length) {
    const last = cps.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return [prefix, cps.join('') + String.fromCodePoint(next)];
    }
  }
  return [prefix, null];
}

/** One persist or takeSnapshot call waiting for its commit, its data already encoded. */
interface Write {
  /** JSON of each event row: {k, s, c, t, d} */
  events: string[];
  /** the events as given (told to commit listeners with their positions) */
  source: readonly PersistedEvent[];
  snapshot?: { key: string; seq: number; json: string };
  resolve(): void;
  reject(err: Error): void;
}

/** How many writes one commit carries at most (they arrive as fast as actors decide). */
const MAX_BATCH = 2000;
/** Keys read per bulk query at start. */
const RECOVER_CHUNK = 1000;
/** Events read per query when replaying a key or listing keys. */
const PAGE = 1000;

/** Events read per query of history(): a listing that stops early reads no further. */
const HISTORY_PAGE = 200;

interface EventRow { key: string; seq: number; created_at: number; tags: string[] | null; data: unknown; pos?: number }

const toEvent = (r: EventRow): PersistedEvent => ({ data: r.data, sequenceNumber: r.seq, key: r.key, tags: r.tags ?? [], createdAt: r.created_at, position: r.pos });

/**
 * An error that ends the session (FATAL: the server terminated it, or a pooler in between lost
 * its server connection) says nothing of the transaction: it may come after the commit. Class 08
 * and 57P0x by code too, as the severity's text may be translated.
 */
export const endsSession = (err: DatabaseError): boolean =>
  err.severity === 'FATAL' || err.severity === 'PANIC' || !!err.code?.startsWith('08') || !!err.code?.startsWith('57P0');

/** Events read per query of feed(). */
const FEED_PAGE = 500;

export class PostgresPersistenceEngine implements PersistenceEngine {
  private readonly pool: Pool;
  private readonly queue: Write[] = [];
  private committing = false;
  private writer?: Promise<Client>;
  private fenced?: FencedError;
  /**
   * A commit's outcome is unknown: it may still commit (its server session may be waiting on a
   * lock), at the positions it took. Any later commit would take higher ones and could commit
   * first: a reader of positions (the event stream, a webhook's cursor, a checkpoint's
   * watermark) would pass the doubted ones and miss them. So nothing more is written from here
   * on: the next activation's takeover changes the lease's token, which waits for the doubted
   * commit's lock on the lease row, and writes after it.
   */
  private doubt?: OutcomeUnknownError;
  private closed = false;
  private idle?: () => void;
  private readonly recoveries: { key: string; resolve(s: StoredEntity): void; reject(err: Error): void }[] = [];
  private readonly commits = new CommitOrder();
  /** transactions committed and read queries made (tests and the bench look at them) */
  readonly counters = { commits: 0, writes: 0, reads: 0 };
  /** the read model's checkpoint, in the database beside the journal (postgres-checkpoint.ts) */
  readonly checkpoints: PostgresCheckpointSlot;
  // The database is shared by every hilt process and replicated by its operator: its backup is
  // the database's, not one process's copy.
  readonly noBackup = 'on PostgreSQL, hilt makes no copy of its own: back up the database with PostgreSQL\'s tools (pg_dump -Fc, or the backup tooling of your PostgreSQL), and restore by starting hilt on the restored database (docs/operations.md, Backup and restore)';

  constructor(private readonly settings: PostgresSettings, private readonly opts: PostgresEngineOptions = {}) {
    const t = settings.timeoutMs;
    this.pool = new Pool({
      ...connectionConfig(settings, 'reader'), max: settings.poolSize ?? 8, idleTimeoutMillis: 30_000,
      ...(t ? { statement_timeout: t, query_timeout: t + CLIENT_GRACE_MS } : {}),
    });
    // An idle connection that breaks (database restarted) is dropped by the pool; without a
    // handler its error would end the process.
    this.pool.on('error', () => undefined);
    this.checkpoints = new PostgresCheckpointSlot({
      pool: this.pool, writer: () => this.writerClient(),
      reader: () => connect(settings, 'checkpoint', undefined, settings.timeoutMs ? { statement_timeout: settings.timeoutMs } : {}),
      fence: opts.fence ?? null, fenced: () => !!this.fenced || !!this.doubt,
    });
  }

  /** The fencing token this engine writes with (undefined: unfenced). */
  get fence(): number | undefined {
    return this.opts.fence;
  }

  // ---- writes --------------------------------------------------------------------------------

  persist(events: PersistedEvent[]): Promise<void> {
    if (!events.length) return Promise.resolve();
    // Encoded now: a caller changing its objects after the call cannot change what is stored.
    const rows = events.map((e) => JSON.stringify({ k: e.key, s: e.sequenceNumber, c: e.createdAt, t: e.tags.length ? e.tags : null, d: e.data }));
    return this.submit({ events: rows, source: events });
  }

  takeSnapshot(snapshot: PersistedSnapshot): Promise<void> {
    const json = JSON.stringify({ k: snapshot.key, q: snapshot.sequenceNumber, c: snapshot.createdAt, d: snapshot.data ?? null });
    return this.submit({ events: [], source: [], snapshot: { key: snapshot.key, seq: snapshot.sequenceNumber, json } });
  }

  /**
   * One statement (one transaction) on the writer's connection, fenced as every write is: with
   * the lease row locked only while this process's token is current, the updates join that row,
   * so a process that lost the lease changes nothing. Not a migration: the tables are as they are.
   */
  async rewrite(changes: Rewrite): Promise<void> {
    if (this.fenced) throw this.fenced;
    if (this.doubt) throw this.afterDoubt();
    if (!changes.events.length && !changes.snapshots.length) return;
    // The checkpoint describes the data before: cleared in the same transaction, and a write of
    // one captured before is refused.
    this.checkpoints.dropped();
    const events = JSON.stringify(changes.events.map((c) => ({ k: c.key, s: c.sequenceNumber, d: c.data })));
    const snaps = JSON.stringify(changes.snapshots.map((c) => ({ k: c.key, s: c.sequenceNumber, d: c.data ?? null })));
    const client = await this.writerClient();
    const { rows } = await client.query<{ fenced: boolean }>(
      `WITH lease AS (SELECT 1 FROM hilt_lease WHERE id = 1 AND ($1::bigint IS NULL OR token = $1) FOR KEY SHARE),
            ev AS (UPDATE hilt_events e SET data = x.d FROM json_to_recordset($2::json) AS x(k text, s bigint, d json), lease
                   WHERE e.key = x.k AND e.seq = x.s RETURNING 1),
            sn AS (UPDATE hilt_snapshots n SET data = x.d FROM json_to_recordset($3::json) AS x(k text, s bigint, d json), lease
                   WHERE n.key = x.k AND n.seq = x.s RETURNING 1),
            cp AS (${CLEAR_CHECKPOINT[0]} AND EXISTS (SELECT 1 FROM lease) RETURNING 1),
            cpp AS (${CLEAR_CHECKPOINT[1]} WHERE EXISTS (SELECT 1 FROM lease) RETURNING 1)
       SELECT NOT EXISTS (SELECT 1 FROM lease) AS fenced, (SELECT count(*) FROM ev) AS events, (SELECT count(*) FROM sn) AS snapshots`,
      [this.opts.fence ?? null, events, snaps],
    );
    this.counters.commits++;
    if (rows[0]?.fenced) {
      this.fenced ??= new FencedError(`write refused: fencing token ${this.opts.fence} is no longer the lease's: another hilt process took over`);
      this.opts.onFenced?.(this.fenced);
      throw this.fenced;
    }
  }

  /**
   * Retention: one statement on the writer's connection, fenced as rewrite() is (only the active
   * process prunes). A head is deleted only while it is still at or below `upTo`: a write of the
   * same key committing meanwhile updates the row first (the DELETE then sees its new sequence
   * number and keeps it) or inserts it anew after. The highest position removed is kept in
   * `hilt_marks` (PRUNED_MARK), which bounds() reads: `pos` is a sequence, never given twice.
   */
  async prune(expired: Expiry[]): Promise<PruneResult> {
    if (this.fenced) throw this.fenced;
    if (this.doubt) throw this.afterDoubt();
    if (!expired.length) return { events: 0, keys: 0 };
    const client = await this.writerClient();
    const { rows } = await client.query<{ fenced: boolean; events: number; keys: number }>(
      `WITH lease AS (SELECT 1 FROM hilt_lease WHERE id = 1 AND ($1::bigint IS NULL OR token = $1) FOR KEY SHARE),
            x AS (SELECT k, max(u) AS u FROM json_to_recordset($2::json) AS r(k text, u bigint) GROUP BY k),
            ev AS (DELETE FROM hilt_events e USING x, lease WHERE e.key = x.k AND e.seq <= x.u RETURNING e.pos),
            sn AS (DELETE FROM hilt_snapshots s USING x, lease WHERE s.key = x.k AND s.seq <= x.u RETURNING 1),
            hd AS (DELETE FROM hilt_heads h USING x, lease WHERE h.key = x.k AND h.seq <= x.u RETURNING 1),
            top AS (SELECT max(pos) AS p, count(*) AS n FROM ev),
            mk AS (INSERT INTO hilt_marks AS m (name, value, token) SELECT $3, to_json(top.p), $1 FROM top WHERE top.p IS NOT NULL
                   ON CONFLICT (name) DO UPDATE SET value = to_json(GREATEST((m.value::text)::bigint, (EXCLUDED.value::text)::bigint)), token = EXCLUDED.token
                   RETURNING 1)
       SELECT NOT EXISTS (SELECT 1 FROM lease) AS fenced, (SELECT n FROM top) AS events, (SELECT count(*) FROM hd) AS keys, (SELECT count(*) FROM sn) AS snapshots, (SELECT count(*) FROM mk) AS marks`,
      [this.opts.fence ?? null, JSON.stringify(expired.map((e) => ({ k: e.key, u: e.upTo }))), PRUNED_MARK],
    );
    this.counters.commits++;
    if (rows[0]?.fenced) {
      this.fenced ??= new FencedError(`write refused: fencing token ${this.opts.fence} is no longer the lease's: another hilt process took over`);
      this.opts.onFenced?.(this.fenced);
      throw this.fenced;
    }
    return { events: Number(rows[0]?.events ?? 0), keys: Number(rows[0]?.keys ?? 0) };
  }

  /**
   * Moving from LMDB (copy.ts): events stored at the positions they have there, so that the ids
   * stream clients, webhook receivers and cursors hold name the same events after the move.
   * Unfenced, one statement; for an empty database before any service starts on it.
   */
  async importEvents(events: PersistedEvent[]): Promise<void> {
    if (!events.length) return;
    const rows = `[${events.map((e) => {
      if (e.position === undefined) throw new Error(`event ${e.sequenceNumber} of ${e.key} has no position`);
      return JSON.stringify({ k: e.key, s: e.sequenceNumber, c: e.createdAt, t: e.tags.length ? e.tags : null, d: e.data, p: e.position });
    }).join(',')}]`;
    await this.pool.query(
      `WITH x AS (SELECT * FROM json_to_recordset($1::json) AS r(k text, s bigint, c bigint, t json, d json, p bigint)),
            ins AS (INSERT INTO hilt_events (key, seq, created_at, tags, data, pos) SELECT k, s, c, t, d, p FROM x)
       INSERT INTO hilt_heads AS h (key, seq) SELECT k, max(s) FROM x GROUP BY k
       ON CONFLICT (key) DO UPDATE SET seq = GREATEST(h.seq, EXCLUDED.seq)`, [rows]);
  }

  /**
   * After importEvents: the store's order goes on as the copied one would have (new positions
   * after every one it gave, retention's removals and a restore's gap kept: bounds() the same).
   */
  async importBounds(b: OrderBounds): Promise<void> {
    await this.pool.query("SELECT setval(pg_get_serial_sequence('hilt_events', 'pos'), GREATEST($1::bigint, 1), $1::bigint > 0)", [b.last]);
    const pruned = b.gap ? b.removed ?? 0 : b.first - 1;
    if (pruned > 0) await this.setMark(PRUNED_MARK, pruned);
    if (b.gap) await this.setMark(RESTORE_GAP_MARK, b.gap);
  }

  /**
   * A table's old row versions stay in its files until VACUUM FULL writes it anew (at start only:
   * it locks the tables). It rewrites the whole store, which takes far longer than a read or a
   * commit on a large one: it runs on a connection of its own, bounded by COMPACT_TIMEOUT_MS
   * rather than timeoutMs, and waits for its locks no longer than timeoutMs (everything else
   * queues behind a waiting exclusive lock, e.g. while a pg_dump runs).
   */
  async compact(): Promise<void> {
    const t = this.settings.timeoutMs;
    const t0 = Date.now();
    let client: Client | undefined;
    try {
      client = await connect(this.settings, 'compaction', undefined, { query_timeout: COMPACT_TIMEOUT_MS + CLIENT_GRACE_MS });
      await client.query(`SET statement_timeout = ${COMPACT_TIMEOUT_MS}`);
      if (t) await client.query(`SET lock_timeout = ${t}`);
      await client.query(`VACUUM FULL ${COMPACTED_TABLES}`);
    } catch (err) {
      throw new Error(`compacting the store (VACUUM FULL ${COMPACTED_TABLES}) failed after ${Date.now() - t0} ms: ${(err as Error).message}`);
    } finally {
      await client?.end().catch(() => undefined);
    }
  }

  private submit(w: Omit<Write, 'resolve' | 'reject'>): Promise<void> {
    if (this.fenced) return Promise.reject(this.fenced);
    if (this.doubt) return Promise.reject(this.afterDoubt());
    if (this.closed) return Promise.reject(new Error('the storage engine is closed'));
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ ...w, resolve, reject });
      if (!this.committing) {
        this.committing = true;
        // Everything submitted in this turn of the event loop joins the first commit.
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length) {
        const batch = this.queue.splice(0, MAX_BATCH);
        await this.commit(batch);
      }
    } finally {
      this.committing = false;
      this.idle?.();
    }
  }

  private writerClient(): Promise<Client> {
    if (!this.writer) {
      const t = this.settings.timeoutMs;
      const p = connect(this.settings, 'writer', () => {
        if (this.writer === p) this.writer = undefined;
      }, t ? { query_timeout: t } : {});
      this.writer = p;
      p.catch(() => {
        if (this.writer === p) this.writer = undefined;
      });
    }
    return this.writer;
  }

  /** Commit a batch in one transaction; answer each write. */
  private async commit(batch: Write[]): Promise<void> {
    if (this.fenced) return batch.forEach((w) => w.reject(this.fenced!));
    // Queued behind the doubted commit: refused (see `doubt`).
    if (this.doubt) return batch.forEach((w) => w.reject(this.afterDoubt()));
    let client: Client;
    try {
      client = await this.writerClient();
    } catch (err) {
      // Not connected: nothing was sent, so nothing committed.
      return batch.forEach((w) => w.reject(new Error(`cannot reach the database: ${(err as Error).message}`)));
    }
    try {
      const { rows } = await client.query<{ p: (string | number)[] | null }>({ name: 'hilt_write', text: 'SELECT hilt_write($1, $2, $3) AS p', values: this.params(batch) });
      this.counters.commits++;
      this.counters.writes += batch.length;
      // The positions, in the order of the batch's events.
      const positions = (rows[0]?.p ?? []).map(Number);
      const told: PersistedEvent[] = [];
      for (const w of batch) for (const e of w.source) told.push({ ...e, position: positions[told.length] });
      for (const w of batch) w.resolve();
      if (told.length) this.commits.committed(told);
    } catch (err) {
      if (err instanceof DatabaseError && err.code === FENCED_SQLSTATE) {
        this.fenced ??= new FencedError(`write refused: ${err.message}`);
        for (const w of batch) w.reject(this.fenced);
        this.opts.onFenced?.(this.fenced);
        return;
      }
      if (err instanceof DatabaseError && !endsSession(err)) {
        // The database refused the transaction: none of it committed. One at a time, so only
        // the write that cannot commit fails.
        if (batch.length === 1) return batch[0].reject(err);
        for (const w of batch) await this.commit([w]);
        return;
      }
      // The connection broke, or no answer came in time, or the session ended with an error that
      // may have come after the commit: the transaction may have committed or not (a server still waiting on a lock may commit it later; a takeover waits for it).
      if (this.writer && (await this.writer.catch(() => undefined)) === client) this.writer = undefined;
      client.end().catch(() => undefined);
      const doubt = new OutcomeUnknownError(`a commit got no answer from the database (its connection broke, or ${this.settings.timeoutMs ?? '∞'} ms passed); its outcome is unknown: ${(err as Error).message}`);
      this.doubt = doubt;
      for (const w of batch) w.reject(doubt);
      this.opts.onDoubt?.(doubt);
    }
  }

  /** The refusal of a write after a commit in doubt (nothing of it was sent). */
  private afterDoubt(): Error {
    return new Error('not written: an earlier commit\'s outcome is unknown, and a later one could commit before it in the store\'s order; this process steps down');
  }

  private params(batch: Write[]): [number | null, string | null, string | null] {
    const events: string[] = [];
    // One row per key in a statement: the newest snapshot of each key in the batch.
    const snaps = new Map<string, { seq: number; json: string }>();
    for (const w of batch) {
      for (const e of w.events) events.push(e);
      if (w.snapshot) {
        const cur = snaps.get(w.snapshot.key);
        if (!cur || cur.seq < w.snapshot.seq) snaps.set(w.snapshot.key, w.snapshot);
      }
    }
    return [
      this.opts.fence ?? null,
      events.length ? `[${events.join(',')}]` : null,
      snaps.size ? `[${[...snaps.values()].map((s) => s.json).join(',')}]` : null,
    ];
  }

  // ---- reads ---------------------------------------------------------------------------------

  /** A read on the pool; `name` makes it a prepared statement (parsed and planned once per connection). */
  private read<R extends object>(sql: string, params: unknown[], name?: string): Promise<{ rows: R[] }> {
    this.counters.reads++;
    // A read that fails (past its bound, or the database out of reach) is the service's to retry,
    // not a fault: 503 on every path that reads (the audit log, a journal, the event stream).
    return this.pool.query<R & QueryResultRow>(name ? { name, text: sql, values: params } : { text: sql, values: params })
      .catch((err: Error) => {
        throw new HiltError('ServiceUnavailableError', `the database did not answer a read: ${err.message}`, { cause: err });
      });
  }

  /**
   * One key's snapshot and later events. Actors that wake in the same turn of the event loop
   * share one query (as writes share a commit): under load, many wake at once.
   */
  recover(key: string): Promise<StoredEntity> {
    return new Promise((resolve, reject) => {
      this.recoveries.push({ key, resolve, reject });
      if (this.recoveries.length === 1) setImmediate(() => void this.recoverBatch());
    });
  }

  private async recoverBatch(): Promise<void> {
    const batch = this.recoveries.splice(0);
    const keys = [...new Set(batch.map((r) => r.key))];
    try {
      // The snapshot (kind 0) and the events after it (kind 1) of each key, in one round trip.
      const { rows } = await this.read<EventRow & { i: number; kind: number }>(
        `SELECT k.i, 0 AS kind, s.key, s.seq, s.created_at, NULL::json AS tags, s.data
         FROM unnest($1::text[]) WITH ORDINALITY AS k(key, i) JOIN hilt_snapshots s ON s.key = k.key
         UNION ALL
         SELECT k.i, 1, e.key, e.seq, e.created_at, e.tags, e.data
         FROM unnest($1::text[]) WITH ORDINALITY AS k(key, i)
         CROSS JOIN LATERAL (
           SELECT * FROM hilt_events e
           WHERE e.key = k.key AND e.seq > COALESCE((SELECT seq FROM hilt_snapshots s WHERE s.key = k.key), 0)
           ORDER BY e.seq) e
         ORDER BY 1, 2, 4`,
        [keys], 'hilt_recover',
      );
      const out = new Map<string, StoredEntity>(keys.map((key) => [key, { key, snapshot: undefined, events: [] }]));
      for (const r of rows) {
        const stored = out.get(r.key)!;
        if (r.kind === 0) stored.snapshot = { data: r.data ?? null, sequenceNumber: r.seq, key: r.key, createdAt: r.created_at };
        else stored.events.push(toEvent(r));
      }
      // A key asked for twice in one batch: each caller gets its own copy.
      const given = new Set<string>();
      for (const r of batch) {
        const s = out.get(r.key)!;
        r.resolve(given.has(r.key) ? structuredClone(s) : s);
        given.add(r.key);
      }
    } catch (err) {
      for (const r of batch) r.reject(err as Error);
    }
  }

  async *events(key: string, offset = 0): AsyncIterable<PersistedEvent> {
    for (let after = offset; ;) {
      const { rows } = await this.read<EventRow>(
        'SELECT key, seq, created_at, tags, data, pos FROM hilt_events WHERE key = $1 AND seq > $2 ORDER BY seq LIMIT $3',
        [key, after, PAGE], 'hilt_events',
      );
      for (const r of rows) yield toEvent(r);
      if (rows.length < PAGE) return;
      after = rows[rows.length - 1].seq;
    }
  }

  async latestSnapshot(key: string): Promise<PersistedSnapshot | undefined> {
    const { rows } = await this.read<{ seq: number; created_at: number; data: unknown }>(
      'SELECT seq, created_at, data FROM hilt_snapshots WHERE key = $1', [key], 'hilt_snapshot');
    const r = rows[0];
    return r ? { data: r.data ?? null, sequenceNumber: r.seq, key, createdAt: r.created_at } : undefined;
  }

  async head(key: string): Promise<number> {
    const { rows } = await this.read<{ seq: number }>('SELECT seq FROM hilt_heads WHERE key = $1', [key], 'hilt_head');
    return rows[0]?.seq ?? 0;
  }

  async *keys(prefix: string): AsyncIterable<string> {
    const [lo, hi] = prefixRange(prefix);
    for (let after: string | null = null; ;) {
      const { rows }: { rows: { key: string }[] } = await this.read(
        `SELECT key FROM hilt_heads WHERE key >= $1 AND ($2::text IS NULL OR key < $2) AND ($3::text IS NULL OR key > $3)
         ORDER BY key LIMIT $4`,
        [lo, hi, after, PAGE],
      );
      for (const r of rows) yield r.key;
      if (rows.length < PAGE) return;
      after = rows[rows.length - 1].key;
    }
  }

  async *journal(key: string, limit: number): AsyncIterable<JournalEntry> {
    // A page at a time, newest first: a caller that stops early costs no more reads.
    const page = Math.max(1, Math.min(limit, 100));
    for (let left = limit, before: number | null = null; left > 0;) {
      const n = Math.min(page, left);
      const { rows }: { rows: EventRow[] } = await this.read(
        `SELECT seq, created_at, data, pos FROM hilt_events WHERE key = $1 AND ($2::bigint IS NULL OR seq < $2)
         ORDER BY seq DESC LIMIT $3`,
        [key, before, n],
      );
      for (const r of rows) yield { sequenceNumber: r.seq, createdAt: r.created_at, data: r.data, position: r.pos! };
      if (rows.length < n) return;
      left -= rows.length;
      before = rows[rows.length - 1].seq;
    }
  }

  /** The size of hilt's tables and their indexes in the database. */
  async stats(): Promise<StorageStats> {
    const { rows }: { rows: { bytes: string }[] } = await this.read(
      `SELECT sum(pg_total_relation_size(t))::bigint::text AS bytes
       FROM unnest(ARRAY['hilt_events', 'hilt_heads', 'hilt_snapshots', 'hilt_lease', 'hilt_checkpoint_parts']::regclass[]) AS t`,
      [],
    );
    return { sizeBytes: Number(rows[0].bytes) };
  }

  async positionAt(time: number): Promise<number> {
    // Of the events of the first instant at or after `time`, the lowest position (the time index finds the instant).
    const { rows }: { rows: { p: number | null }[] } = await this.read(
      `SELECT min(pos) AS p FROM hilt_events
       WHERE created_at = (SELECT created_at FROM hilt_events WHERE created_at >= $1 ORDER BY created_at, key, seq LIMIT 1)`,
      [time], 'hilt_position_at',
    );
    if (rows[0]?.p != null) return Number(rows[0].p) - 1;
    return (await this.bounds()).last;
  }

  async bounds(): Promise<OrderBounds> {
    const { rows }: { rows: { first: number | null; last: number | null; pruned: number | null; gap: [number, number] | null }[] } = await this.read(
      `SELECT (SELECT pos FROM hilt_events ORDER BY pos LIMIT 1) AS first, (SELECT pos FROM hilt_events ORDER BY pos DESC LIMIT 1) AS last,
              (SELECT (value::text)::bigint FROM hilt_marks WHERE name = $1) AS pruned,
              (SELECT value FROM hilt_marks WHERE name = $2) AS gap`, [PRUNED_MARK, RESTORE_GAP_MARK], 'hilt_bounds_gap');
    const pruned = Number(rows[0]?.pruned ?? 0);
    const gap = rows[0]?.gap ?? undefined;
    // Everything gone: the stream goes on after the last position removed. Restored and not
    // written since: after the gap (migrate() recorded it; the sequence is past it).
    const last = Math.max(Number(rows[0]?.last ?? 0), pruned, gap?.[1] ?? 0);
    // A restore's gap: no stream resumes before its end (as on LMDB), `removed` says what retention removed.
    if (gap) return { first: Math.max(gap[1], pruned) + 1, last, gap, removed: pruned };
    return { first: Math.max(Number(rows[0]?.first ?? 1), pruned + 1), last };
  }

  async *history(query: HistoryQuery): AsyncIterable<PersistedEvent> {
    const prefix = query.prefix ?? '';
    // A kind's prefix (`node:`) is served by the per-kind index; any other by the position index.
    const kind = /^[^:]+:$/.test(prefix) ? prefix.slice(0, -1) : null;
    const [lo, hi] = prefixRange(prefix);
    // Time bounds become position bounds (then each event's time is checked too).
    let before = query.before ?? null;
    if (query.until !== undefined) {
      const top = (await this.positionAt(query.until)) + 1;
      before = before === null ? top : Math.min(before, top);
    }
    const bottom = query.since !== undefined ? await this.positionAt(query.since) : null;
    for (;;) {
      const { rows }: { rows: EventRow[] } = await this.read(
        `SELECT key, seq, created_at, tags, data, pos FROM hilt_events
         WHERE ${kind !== null ? `split_part(key, ':', 1) = $1 AND $2::text IS NULL` : `key >= $1 AND ($2::text IS NULL OR key < $2)`}
           AND ($3::bigint IS NULL OR created_at >= $3)
           AND ($4::bigint IS NULL OR created_at < $4)
           AND ($5::bigint IS NULL OR pos < $5)
           AND ($6::bigint IS NULL OR pos > $6)
         ORDER BY ${kind !== null ? "split_part(key, ':', 1) DESC, " : ''}pos DESC LIMIT $7`,
        [kind ?? lo, kind !== null ? null : hi, query.since ?? null, query.until ?? null, before, bottom, HISTORY_PAGE],
      );
      for (const r of rows) yield toEvent(r);
      if (rows.length < HISTORY_PAGE) return;
      before = rows[rows.length - 1].pos!;
    }
  }

  async *feed(after: number): AsyncIterable<PersistedEvent> {
    for (;;) {
      const { rows }: { rows: EventRow[] } = await this.read(
        'SELECT key, seq, created_at, tags, data, pos FROM hilt_events WHERE pos > $1 ORDER BY pos LIMIT $2', [after, FEED_PAGE], 'hilt_feed');
      for (const r of rows) yield toEvent(r);
      if (rows.length < FEED_PAGE) return;
      after = rows[rows.length - 1].pos!;
    }
  }

  onCommit(listener: CommitListener): () => void {
    return this.commits.listen(listener);
  }

  async mark(name: string): Promise<unknown> {
    const { rows }: { rows: { value: unknown }[] } = await this.read('SELECT value FROM hilt_marks WHERE name = $1', [name], 'hilt_mark');
    return rows[0]?.value ?? undefined;
  }

  /** A mark is written on a pooled connection, fenced as every write: a deposed process cannot move a cursor. */
  async setMark(name: string, value: unknown): Promise<void> {
    if (this.fenced) throw this.fenced;
    try {
      await this.pool.query({ name: 'hilt_set_mark', text: 'SELECT hilt_set_mark($1, $2, $3)', values: [this.opts.fence ?? null, name, JSON.stringify(value ?? null)] });
    } catch (err) {
      if (err instanceof DatabaseError && err.code === FENCED_SQLSTATE) {
        this.fenced ??= new FencedError(`write refused: ${err.message}`);
        this.opts.onFenced?.(this.fenced);
        throw this.fenced;
      }
      throw err;
    }
  }

  async *recoverAll(prefix: string): AsyncIterable<StoredEntity> {
    const [lo, hi] = prefixRange(prefix);
    for (let after: string | null = null; ;) {
      // The chunk's keys with their latest snapshots…
      const { rows: heads }: { rows: { key: string; seq: number | null; created_at: number | null; data: unknown }[] } = await this.read(
        `SELECT h.key, s.seq, s.created_at, s.data FROM hilt_heads h LEFT JOIN hilt_snapshots s ON s.key = h.key
         WHERE h.key >= $1 AND ($2::text IS NULL OR h.key < $2) AND ($3::text IS NULL OR h.key > $3)
         ORDER BY h.key LIMIT $4`,
        [lo, hi, after, RECOVER_CHUNK],
      );
      if (!heads.length) return;
      // …then only the events after each snapshot, one index range per key.
      const { rows: events }: { rows: EventRow[] } = await this.read(
        `SELECT e.key, e.seq, e.created_at, e.tags, e.data
         FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS k(key, after, i)
         CROSS JOIN LATERAL (SELECT * FROM hilt_events e WHERE e.key = k.key AND e.seq > k.after ORDER BY e.seq) e
         ORDER BY k.i, e.seq`,
        [heads.map((h) => h.key), heads.map((h) => h.seq ?? 0)],
      );
      let i = 0;
      for (const h of heads) {
        const mine: PersistedEvent[] = [];
        while (i < events.length && events[i].key === h.key) mine.push(toEvent(events[i++]));
        const snapshot = h.seq === null ? undefined : { data: h.data ?? null, sequenceNumber: h.seq, key: h.key, createdAt: h.created_at! };
        yield { key: h.key, snapshot, events: mine };
      }
      if (heads.length < RECOVER_CHUNK) return;
      after = heads[heads.length - 1].key;
    }
  }

  /** Finish the commits in flight, then close every connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.committing) await new Promise<void>((r) => (this.idle = r));
    const writer = this.writer;
    this.writer = undefined;
    if (writer) await writer.then((c) => c.end(), () => undefined).catch(() => undefined);
    await this.pool.end().catch(() => undefined);
  }
}
