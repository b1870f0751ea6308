/**
 * The PostgreSQL schema of hilt's store, created and migrated by the service at start:
 * versioned (the table `hilt_schema` records each migration applied) and idempotent (a start
 * applies only the migrations the database lacks). Migrations run in one transaction under an
 * advisory lock, so processes starting together apply each one once; a database whose schema
 * is newer than this release knows is refused (no downgrade).
 *
 * Tables (every key column is `COLLATE "C"`: keys sort by their bytes, as LMDB sorts them, and a
 * prefix is one index range):
 * - `hilt_events`    (key, seq) → created_at, tags, data, token, pos   the journal (retention prunes it);
 *                    token: the fencing token of the activation that wrote the event (which
 *                    process held the lease; null when written without a lease: tools, tests);
 *                    pos: the order in which events were written, across keys. Fencing makes
 *                    tokens never go down in that order: no event of a deposed process follows
 *                    one of its successor's.
 * - `hilt_heads`     key → last seq                         written in the same transaction
 * - `hilt_snapshots` key → seq, created_at, data           the latest snapshot of each key
 * - `hilt_lease`     one row: the fencing token, its holder, when it was last renewed
 * - `hilt_marks`     name → value, small values beside the journal (a webhook's cursor, the
 *                    highest position retention removed, the gap of the last restore)
 * - `hilt_checkpoint` one row: the generation of the read model's checkpoint that is current;
 *   `hilt_checkpoint_parts` (gen, part) → bytes, its parts (actors/persistence/postgres-checkpoint.ts)
 * and indexes of the journal by time (all keys; per kind) for positionAt(), and by position
 * (all keys; per kind) for history() and feed(): `pos` is the store's one commit order (one
 * writer commits one transaction at a time, and hilt_write takes an event's position in the
 * order of its batch).
 * Event and snapshot data are `json` (not `jsonb`): exactly the text hilt wrote, object keys in
 * their order, readable with psql.
 *
 * Every write of the service is one call of `hilt_write(token, events, snapshots)`: one
 * statement, so one transaction that never waits for its client. It first takes a KEY SHARE lock
 * on the lease row if the token is still the current one, else refuses (SQLSTATE HL001). A
 * takeover changes the token, a unique column, which needs a lock that conflicts with KEY SHARE:
 * it waits for the writes in flight to commit, and every write after it sees the new token. So
 * a process that lost the lease can never write again, however long it was paused.
 */
import type { ClientBase } from 'pg';

/** Advisory lock classes (two-key form), `hilt` in ASCII: schema migrations, and the lease holder's session. */
export const SCHEMA_LOCK_CLASS = 0x68696c74;
export const LEASE_LOCK_CLASS = 0x68696c75;

/** SQLSTATE of a write refused because its fencing token is no longer the lease's. */
export const FENCED_SQLSTATE = 'HL001';

interface Migration { version: number; description: string; sql: string }

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'journal, heads, snapshots, lease, hilt_write',
    sql: `
      CREATE TABLE hilt_events (
        key text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        created_at bigint NOT NULL,
        tags json,
        data json,
        token bigint,
        pos bigserial NOT NULL,
        PRIMARY KEY (key, seq)
      );
      CREATE TABLE hilt_heads (
        key text COLLATE "C" PRIMARY KEY,
        seq bigint NOT NULL
      );
      CREATE TABLE hilt_snapshots (
        key text COLLATE "C" PRIMARY KEY,
        seq bigint NOT NULL,
        created_at bigint NOT NULL,
        data json
      );
      CREATE TABLE hilt_lease (
        id integer PRIMARY KEY CHECK (id = 1),
        token bigint NOT NULL UNIQUE,
        holder text,
        ttl_ms integer NOT NULL DEFAULT 0,
        acquired_at timestamptz,
        renewed_at timestamptz NOT NULL
      );
      INSERT INTO hilt_lease (id, token, renewed_at) VALUES (1, 0, '-infinity');

      CREATE FUNCTION hilt_write(p_token bigint, p_events json, p_snapshots json) RETURNS void
      LANGUAGE plpgsql AS $fn$
      BEGIN
        IF p_token IS NOT NULL THEN
          PERFORM 1 FROM hilt_lease WHERE id = 1 AND token = p_token FOR KEY SHARE;
          IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = '${FENCED_SQLSTATE}',
              MESSAGE = format('fencing token %s is no longer the lease''s: another hilt process took over', p_token);
          END IF;
        END IF;
        IF p_events IS NOT NULL THEN
          WITH x AS (SELECT * FROM json_to_recordset(p_events) AS r(k text, s bigint, c bigint, t json, d json)),
               ins AS (INSERT INTO hilt_events (key, seq, created_at, tags, data, token) SELECT k, s, c, t, d, p_token FROM x)
          INSERT INTO hilt_heads AS h (key, seq) SELECT k, max(s) FROM x GROUP BY k
          ON CONFLICT (key) DO UPDATE SET seq = GREATEST(h.seq, EXCLUDED.seq);
        END IF;
        IF p_snapshots IS NOT NULL THEN
          INSERT INTO hilt_snapshots AS s (key, seq, created_at, data)
            SELECT k, q, c, d FROM json_to_recordset(p_snapshots) AS r(k text, q bigint, c bigint, d json)
          ON CONFLICT (key) DO UPDATE SET seq = EXCLUDED.seq, created_at = EXCLUDED.created_at, data = EXCLUDED.data
          WHERE s.seq < EXCLUDED.seq;
        END IF;
      END
      $fn$;
    `,
  },
  {
    version: 2,
    description: 'time indexes of the journal, for history() (the audit log)',
    // Newest first by time, ties by key then seq (the order history() yields), for every key
    // and per kind (the text before a key's first ':'): a listing reads only what it shows.
    sql: `
      CREATE INDEX hilt_events_by_time ON hilt_events (created_at DESC, key DESC, seq DESC);
      CREATE INDEX hilt_events_by_kind_time ON hilt_events ((split_part(key, ':', 1)), created_at DESC, key DESC, seq DESC);
    `,
  },
  {
    version: 3,
    description: 'one commit order: hilt_write answers the positions it gave, indexes by position, marks',
    // Positions are taken in the order of the batch, one row at a time (generate_series), and
    // given explicitly: a default evaluated beside ORDER BY would leave the order to the planner.
    sql: `
      CREATE UNIQUE INDEX hilt_events_by_pos ON hilt_events (pos);
      CREATE INDEX hilt_events_by_kind_pos ON hilt_events ((split_part(key, ':', 1)), pos);
      CREATE TABLE hilt_marks (
        name text COLLATE "C" PRIMARY KEY,
        value json,
        token bigint
      );

      CREATE FUNCTION hilt_check_token(p_token bigint) RETURNS void
      LANGUAGE plpgsql AS $fn$
      BEGIN
        IF p_token IS NOT NULL THEN
          PERFORM 1 FROM hilt_lease WHERE id = 1 AND token = p_token FOR KEY SHARE;
          IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = '${FENCED_SQLSTATE}',
              MESSAGE = format('fencing token %s is no longer the lease''s: another hilt process took over', p_token);
          END IF;
        END IF;
      END
      $fn$;

      DROP FUNCTION hilt_write(bigint, json, json);
      CREATE FUNCTION hilt_write(p_token bigint, p_events json, p_snapshots json) RETURNS bigint[]
      LANGUAGE plpgsql AS $fn$
      DECLARE
        v_pos bigint[];
      BEGIN
        PERFORM hilt_check_token(p_token);
        IF p_events IS NOT NULL THEN
          WITH x AS (SELECT * FROM ROWS FROM (json_to_recordset(p_events) AS (k text, s bigint, c bigint, t json, d json))
                       WITH ORDINALITY AS r(k, s, c, t, d, i)),
               p AS (SELECT g AS i, nextval(pg_get_serial_sequence('hilt_events', 'pos')) AS pos
                     FROM generate_series(1, json_array_length(p_events)) AS g),
               ins AS (INSERT INTO hilt_events (key, seq, created_at, tags, data, token, pos)
                       SELECT x.k, x.s, x.c, x.t, x.d, p_token, p.pos FROM x JOIN p USING (i)),
               hd AS (INSERT INTO hilt_heads AS h (key, seq) SELECT k, max(s) FROM x GROUP BY k
                      ON CONFLICT (key) DO UPDATE SET seq = GREATEST(h.seq, EXCLUDED.seq))
          SELECT array_agg(p.pos ORDER BY p.i) INTO v_pos FROM p;
        END IF;
        IF p_snapshots IS NOT NULL THEN
          INSERT INTO hilt_snapshots AS s (key, seq, created_at, data)
            SELECT k, q, c, d FROM json_to_recordset(p_snapshots) AS r(k text, q bigint, c bigint, d json)
          ON CONFLICT (key) DO UPDATE SET seq = EXCLUDED.seq, created_at = EXCLUDED.created_at, data = EXCLUDED.data
          WHERE s.seq < EXCLUDED.seq;
        END IF;
        RETURN v_pos;
      END
      $fn$;

      CREATE FUNCTION hilt_set_mark(p_token bigint, p_name text, p_value json) RETURNS void
      LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM hilt_check_token(p_token);
        INSERT INTO hilt_marks AS m (name, value, token) VALUES (p_name, p_value, p_token)
        ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, token = EXCLUDED.token;
      END
      $fn$;
    `,
  },
  {
    version: 4,
    description: 'the read model\'s checkpoint: its parts, and the one row naming the current generation',
    // Parts are written one statement each (no transaction waits on this process), under a new
    // generation; hilt_checkpoint_commit then names it current in one short, fenced transaction,
    // refused unless every part is still there (rewrite() deletes them all: a checkpoint staged
    // before a rewrite can never become current after it). The parts hold msgpack that the
    // service checks itself (CRC per frame): stored as they are, without TOAST compression.
    sql: `
      CREATE TABLE hilt_checkpoint_parts (
        gen bigint NOT NULL,
        part integer NOT NULL,
        bytes bytea NOT NULL,
        PRIMARY KEY (gen, part)
      );
      ALTER TABLE hilt_checkpoint_parts ALTER COLUMN bytes SET STORAGE EXTERNAL;
      CREATE TABLE hilt_checkpoint (
        id integer PRIMARY KEY CHECK (id = 1),
        gen bigint,
        parts integer NOT NULL DEFAULT 0,
        size bigint NOT NULL DEFAULT 0,
        token bigint,
        written_at timestamptz
      );
      INSERT INTO hilt_checkpoint (id) VALUES (1);
      CREATE SEQUENCE hilt_checkpoint_gen;

      CREATE FUNCTION hilt_checkpoint_commit(p_token bigint, p_gen bigint, p_parts integer, p_size bigint) RETURNS boolean
      LANGUAGE plpgsql AS $fn$
      DECLARE
        v_parts integer;
        v_size bigint;
      BEGIN
        PERFORM hilt_check_token(p_token);
        -- Locked until this commits: a rewrite deleting them waits, then finds the new row to clear.
        SELECT count(*), COALESCE(sum(n), 0) INTO v_parts, v_size
          FROM (SELECT octet_length(bytes) AS n FROM hilt_checkpoint_parts WHERE gen = p_gen FOR KEY SHARE) p;
        IF v_parts <> p_parts OR v_size <> p_size THEN
          RETURN false;
        END IF;
        UPDATE hilt_checkpoint SET gen = p_gen, parts = p_parts, size = p_size, token = p_token, written_at = now() WHERE id = 1;
        DELETE FROM hilt_checkpoint_parts WHERE gen <> p_gen;
        RETURN true;
      END
      $fn$;
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

export interface MigrationResult {
  from: number;
  to: number;
  /** this start found the database restored (see noteRestore): the event ids it went on past, first and last */
  restoreGap?: [number, number];
}

/** The mark that keeps the highest position prune() removed. */
export const PRUNED_MARK = 'hilt.pruned';
/** The mark that keeps the positions the last restore went on past, [first, last] (bounds().gap). */
export const RESTORE_GAP_MARK = 'hilt.restoreGap';
/**
 * How far ahead of every position given the sequence must be to be a restore: the runbook's
 * setval moves it at least 2^32 ahead (docs/operations.md); no run of hilt burns half of that.
 */
const RESTORE_AHEAD = 2 ** 31;

/**
 * A restore (pg_restore, then the runbook's setval) leaves the positions' sequence far ahead of
 * every position the database gave: the ids the old database gave after the dump are in
 * between. Recorded at the first start (before any write, under the schema lock), as LMDB records
 * its restore, so that a stream or webhook cursor from there is answered 410 for good, also once
 * new events are written past it. A start that finds it recorded already changes nothing.
 */
async function noteRestore(client: ClientBase): Promise<[number, number] | undefined> {
  const { rows } = await client.query<{ top: string; given: string }>(
    `SELECT (s.last_value - CASE WHEN s.is_called THEN 0 ELSE 1 END)::text AS top,
            GREATEST((SELECT max(pos) FROM hilt_events), (SELECT (value::text)::bigint FROM hilt_marks WHERE name = $1),
                     (SELECT (value->>1)::bigint FROM hilt_marks WHERE name = $2), 0)::text AS given
     FROM hilt_events_pos_seq s`, [PRUNED_MARK, RESTORE_GAP_MARK]);
  const top = Number(rows[0].top);
  const given = Number(rows[0].given);
  if (top - given < RESTORE_AHEAD) return undefined;
  const gap: [number, number] = [given + 1, top];
  await client.query(
    `INSERT INTO hilt_marks (name, value) VALUES ($1, $2::json) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, token = NULL`,
    [RESTORE_GAP_MARK, JSON.stringify(gap)]);
  return gap;
}

/** The database was migrated by a newer release: this one must not touch it. */
export class SchemaTooNewError extends Error {
  override name = 'SchemaTooNewError';
}

/**
 * Bring the database's schema to this release's version, once, whoever else starts at the same
 * time; and record a restore (noteRestore) before any process writes.
 */
export async function migrate(client: ClientBase): Promise<MigrationResult> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1, 0)', [SCHEMA_LOCK_CLASS]);
    await client.query(`CREATE TABLE IF NOT EXISTS hilt_schema (
      version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ v: number | null }>('SELECT max(version) AS v FROM hilt_schema');
    const from = Number(rows[0].v ?? 0);
    if (from > SCHEMA_VERSION) {
      throw new SchemaTooNewError(`the database's hilt schema has version ${from}; this release knows versions up to ${SCHEMA_VERSION}`);
    }
    for (const m of MIGRATIONS) {
      if (m.version <= from) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO hilt_schema (version, description) VALUES ($1, $2)', [m.version, m.description]);
    }
    const restoreGap = await noteRestore(client);
    await client.query('COMMIT');
    return { from, to: SCHEMA_VERSION, ...(restoreGap ? { restoreGap } : {}) };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
