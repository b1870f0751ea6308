/**
 * What the PostgreSQL engine adds to the conformance kit (engine.test.ts runs the kit on it):
 * group commit, a refused write failing only its own caller, the bulk start-up read, the schema
 * migrations. Against a real PostgreSQL the tests start (test/helpers/postgres.ts).
 */
import { expect } from 'chai';
import { Client } from 'pg';
import { createConnection, createServer, Server, Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrateDatabase, OutcomeUnknownError, PostgresPersistenceEngine, prefixRange } from '../../../actors/persistence/postgres';
import { MIGRATIONS, SCHEMA_VERSION } from '../../../actors/persistence/postgres-schema';
import type { PersistedEvent } from '../../../actors/persistence/engine';
import { freshDatabase, sql, testPostgres } from '../../helpers/postgres';

/**
 * A unix-socket proxy in front of the tests' PostgreSQL whose connections the test can cut, or
 * stall (the database's answers on the open connections stop coming, as over a network that
 * drops packets; new connections work).
 */
async function cuttableProxy(): Promise<{ url(db: string): string; cut(): void; stall(): void; fatalAfterAnswer(): void; close(): Promise<void> }> {
  const pg = await testPostgres();
  const dir = mkdtempSync(join(tmpdir(), 'hilt-pgproxy-'));
  const sockets = new Set<Socket>();
  const answers = new Map<Socket, Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection(join(pg.socketDir, `.s.PGSQL.${pg.port}`));
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    answers.set(upstream, client);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(join(dir, `.s.PGSQL.${pg.port}`), r));
  return {
    url: (db) => pg.url(db).replace(encodeURIComponent(pg.socketDir), encodeURIComponent(dir)),
    cut: () => { for (const s of sockets) s.destroy(); },
    // The database's next complete answer (up to ReadyForQuery: the transaction is over) never
    // reaches the client: a FATAL error does, then the connection ends (as a pooler says that
    // its server connection broke).
    fatalAfterAnswer: () => {
      for (const [upstream, client] of answers) {
        upstream.unpipe(client);
        let got = Buffer.alloc(0);
        upstream.on('data', (chunk: Buffer) => {
          got = Buffer.concat([got, chunk]);
          const z = got.length - 6;
          if (z < 0 || got[z] !== 0x5a || got.readInt32BE(z + 1) !== 5) return;
          const fields = Buffer.from('SFATAL\0VFATAL\0C08P01\0Mserver conn crashed?\0\0');
          const head = Buffer.alloc(5);
          head.write('E');
          head.writeInt32BE(fields.length + 4, 1);
          client.end(Buffer.concat([head, fields]));
          upstream.destroy();
        });
        upstream.resume();
      }
      answers.clear();
    },
    stall: () => {
      for (const [upstream, client] of answers) {
        upstream.unpipe(client);
        upstream.pause();
      }
      answers.clear();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const ev = (key: string, seq: number, data: unknown): PersistedEvent => ({ key, sequenceNumber: seq, data, tags: [], createdAt: 1_700_000_000_000 + seq });

/** A write the engine refuses, sending nothing, once a commit's outcome is unknown. */
async function expectRefused(write: Promise<void>): Promise<void> {
  expect((await write.then(() => undefined, (e: Error) => e))?.message).to.match(/^not written: an earlier commit's outcome is unknown/);
}

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('PostgreSQL engine', () => {
  let url: string;
  let engine: PostgresPersistenceEngine;
  beforeEach(async () => {
    url = await freshDatabase();
    await migrateDatabase({ url });
    engine = new PostgresPersistenceEngine({ url, poolSize: 2 });
  });
  afterEach(async () => { await engine.close(); });

  it('commits concurrent writes of many actors together (group commit), answering each after its commit', async () => {
    await engine.persist([ev('warm', 1, 0)]);
    const before = { ...engine.counters };
    const answered: number[] = [];
    await Promise.all(Array.from({ length: 600 }, (_, i) => engine.persist([ev(`node:g${i}`, 1, { i }), ev(`node:g${i}`, 2, { i })]).then(() => answered.push(i))));
    const commits = engine.counters.commits - before.commits;
    expect(answered).to.have.length(600);
    // 600 writes in one turn: one transaction (at most a few when they arrive over several turns).
    expect(commits).to.be.at.least(1).and.at.most(3);
    expect(await all(engine.keys('node:g'))).to.have.length(600);
    expect((await sql<{ n: string }>(url, 'SELECT count(*) AS n FROM hilt_events'))[0].n).to.equal('1201');
  });

  it('batches what arrives while a commit is in flight into the next commit', async () => {
    await engine.persist([ev('warm', 1, 0)]);
    const before = engine.counters.commits;
    const first = engine.persist([ev('a', 1, 'a')]);
    // Issued over several turns while the first commit is in flight.
    const later: Promise<void>[] = [];
    for (let i = 0; i < 50; i++) {
      later.push(engine.persist([ev(`b${i}`, 1, i)]));
      if (i % 10 === 0) await new Promise((r) => setImmediate(r));
    }
    await Promise.all([first, ...later]);
    expect(engine.counters.commits - before).to.be.below(20);
  });

  it('fails only the write the database refuses, not the others of its batch', async () => {
    await engine.persist([ev('dup', 1, 'first')]);
    const results = await Promise.allSettled([
      engine.persist([ev('ok1', 1, 'x')]),
      engine.persist([ev('dup', 1, 'again')]),
      engine.persist([ev('ok2', 1, 'y'), ev('ok2', 2, 'z')]),
      engine.takeSnapshot({ key: 'ok1', sequenceNumber: 1, data: { s: 1 }, createdAt: 1 }),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(((results[1] as PromiseRejectedResult).reason as Error).message).to.match(/duplicate key/);
    expect((await all(engine.events('dup'))).map((e) => e.data)).to.deep.equal(['first']);
    expect(await engine.head('ok2')).to.equal(2);
    expect((await engine.latestSnapshot('ok1'))?.data).to.deep.equal({ s: 1 });
  });

  it('says a commit\'s outcome is unknown when its connection breaks before the answer (it may well have committed)', async () => {
    const proxy = await cuttableProxy();
    const db = new URL(url).pathname.slice(1);
    let doubt: Error | undefined;
    const cut = new PostgresPersistenceEngine({ url: proxy.url(db), poolSize: 1 }, { onDoubt: (e) => (doubt = e) });
    try {
      await cut.persist([ev('node:d', 1, 'one')]);
      // Hold the commit up in the database, then cut its connection while it waits.
      const locker = new Client({ connectionString: url });
      await locker.connect();
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE hilt_heads IN EXCLUSIVE MODE');
      const write = cut.persist([ev('node:d', 2, 'two')]);
      await new Promise((r) => setTimeout(r, 300));
      proxy.cut();
      let err: Error | undefined;
      await write.catch((e: Error) => (err = e));
      expect(err).to.be.instanceOf(OutcomeUnknownError);
      expect(doubt).to.equal(err);
      await locker.query('COMMIT');
      await locker.end();
      // The database went on with it: "unknown" was the honest answer.
      await new Promise((r) => setTimeout(r, 300));
      expect(await engine.head('node:d')).to.equal(2);
      // Nothing more from this engine (the service steps down); a new one writes after it.
      await expectRefused(cut.persist([ev('node:d', 3, 'three')]));
      await engine.persist([ev('node:d', 3, 'three')]);
      expect(await engine.head('node:d')).to.equal(3);
    } finally {
      await cut.close();
      await proxy.close();
    }
  });

  it('a FATAL error in answer to a commit leaves its outcome unknown (the session ended, maybe after the commit): no retry, the service is told', async () => {
    const proxy = await cuttableProxy();
    let doubt: Error | undefined;
    const relayed = new PostgresPersistenceEngine({ url: proxy.url(new URL(url).pathname.slice(1)), poolSize: 1 }, { onDoubt: (e) => (doubt = e) });
    try {
      await relayed.persist([ev('node:f', 1, 'one')]);
      proxy.fatalAfterAnswer();
      const err = await relayed.persist([ev('node:f', 2, 'two')]).then(() => undefined, (e: Error) => e);
      // It did commit: "refused" would have been a lie, which the actor would believe.
      expect(await engine.head('node:f')).to.equal(2);
      expect(err).to.be.instanceOf(OutcomeUnknownError);
      expect(err?.message).to.match(/server conn crashed/);
      expect(doubt).to.equal(err);
    } finally {
      await relayed.close();
      await proxy.close();
    }
  });

  it('bounds each read: the server cancels one held up by a lock after timeoutMs, the client gives up on one whose answer never comes; the next read works', async () => {
    await engine.persist([ev('node:r', 1, 'one')]);
    const bounded = new PostgresPersistenceEngine({ url, poolSize: 1, timeoutMs: 500 });
    const proxy = await cuttableProxy();
    const stalled = new PostgresPersistenceEngine({ url: proxy.url(new URL(url).pathname.slice(1)), poolSize: 1, timeoutMs: 500 });
    const locker = new Client({ connectionString: url });
    try {
      await locker.connect();
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE hilt_events IN ACCESS EXCLUSIVE MODE');
      const t0 = Date.now();
      const err = await bounded.recover('node:r').then(() => undefined, (e: Error) => e);
      expect(err?.message).to.match(/statement timeout/);
      expect(Date.now() - t0).to.be.within(400, 1400);
      await locker.query('COMMIT');
      expect((await bounded.recover('node:r')).events.map((e) => e.data)).to.deep.equal(['one']);

      expect(await stalled.head('node:r')).to.equal(1);
      proxy.stall();
      const t1 = Date.now();
      const lost = await stalled.head('node:r').then(() => undefined, (e: Error) => e);
      expect(lost?.message).to.match(/timeout/);
      // The server's bound cannot answer here: the client's, a second later.
      expect(Date.now() - t1).to.be.within(1400, 2500);
      expect(await stalled.head('node:r')).to.equal(1);
    } finally {
      await locker.end().catch(() => undefined);
      await bounded.close();
      await stalled.close();
      await proxy.close();
    }
  });

  it('bounds each commit: one without an answer within timeoutMs has an unknown outcome, which the database may still carry out', async () => {
    let doubt: Error | undefined;
    const bounded = new PostgresPersistenceEngine({ url, poolSize: 1, timeoutMs: 500 }, { onDoubt: (e) => (doubt = e) });
    const locker = new Client({ connectionString: url });
    try {
      await bounded.persist([ev('node:w', 1, 'one')]);
      await locker.connect();
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE hilt_heads IN EXCLUSIVE MODE');
      const t0 = Date.now();
      const err = await bounded.persist([ev('node:w', 2, 'two')]).then(() => undefined, (e: Error) => e);
      expect(err).to.be.instanceOf(OutcomeUnknownError);
      expect(err?.message).to.match(/500 ms passed/);
      expect(Date.now() - t0).to.be.within(400, 1400);
      expect(doubt).to.equal(err);
      await locker.query('COMMIT');
      // Its server session was still waiting for the lock: it committed once it had it.
      await new Promise((r) => setTimeout(r, 300));
      expect(await engine.head('node:w')).to.equal(2);
      await expectRefused(bounded.persist([ev('node:w', 3, 'three')]));
      await engine.persist([ev('node:w', 3, 'three')]);
      expect(await engine.head('node:w')).to.equal(3);
    } finally {
      await locker.end().catch(() => undefined);
      await bounded.close();
    }
  });

  it('after a commit in doubt commits nothing more: a later commit would take positions above the doubted one\'s, which may still commit after it', async () => {
    const bounded = new PostgresPersistenceEngine({ url, poolSize: 1, timeoutMs: 500 });
    const locker = new Client({ connectionString: url });
    const told: number[] = [];
    bounded.onCommit((events) => told.push(...events.map((e) => e.position!)));
    const positions = async () => (await all(engine.feed(0))).map((e) => e.position!);
    try {
      await bounded.persist([ev('node:s', 1, 'one')]);
      await bounded.takeSnapshot({ key: 'node:s', sequenceNumber: 1, data: 1, createdAt: 1 });
      await locker.connect();
      await locker.query('BEGIN');
      // Holds the doubted commit up after it took its positions (snapshots are written after events).
      await locker.query("SELECT 1 FROM hilt_snapshots WHERE key = 'node:s' FOR UPDATE");
      const doubted = Promise.allSettled([
        bounded.persist([ev('node:a', 1, 'a')]),
        bounded.takeSnapshot({ key: 'node:s', sequenceNumber: 2, data: 2, createdAt: 2 }),
      ]);
      await new Promise((r) => setTimeout(r, 100));
      // Queued while the first commit is in flight: the next batch.
      const later = bounded.persist([ev('node:b', 1, 'b')]);
      expect((await doubted).map((r) => r.status === 'rejected' && r.reason instanceof OutcomeUnknownError)).to.deep.equal([true, true]);
      await expectRefused(later);
      // A reader resuming after the newest position it saw must not miss any committed later.
      const seen = await positions();
      await locker.query('COMMIT');
      await new Promise((r) => setTimeout(r, 300));
      const after = (await positions()).filter((p) => !seen.includes(p));
      const top = Math.max(0, ...seen, ...told);
      expect(after.filter((p) => p < top), 'positions committed below one already seen').to.deep.equal([]);
      expect(await engine.head('node:a')).to.equal(1);
      await expectRefused(bounded.persist([ev('node:c', 1, 'c')]));
    } finally {
      await locker.end().catch(() => undefined);
      await bounded.close();
    }
  });

  it('compacts a store larger than one read or commit may take: VACUUM FULL is not bound by timeoutMs, and the engine writes after it', async function () {
    // 500,000 rows written and compacted: 2 s on the fastest machine seen (200,000 took 0.8 s
    // there, under the bound), about 12 s on a slow quiet one, over 50 on a loaded one.
    // The bound is 1 s: with 100 ms, the first commit after the compaction's WAL outlasted it on
    // a loaded CI machine. No autovacuum of the new rows may hold the table meanwhile: the
    // compaction waits for its locks no longer than the bound.
    this.timeout(240_000);
    const BOUND_MS = 1000;
    await sql(url, 'ALTER TABLE hilt_events SET (autovacuum_enabled = false)');
    await sql(url, `INSERT INTO hilt_events (key, seq, created_at, data)
                    SELECT 'bulk:' || (i / 100), i % 100, 0, json_build_object('pad', repeat('x', 200)) FROM generate_series(1, 500000) AS i`);
    const bounded = new PostgresPersistenceEngine({ url, poolSize: 1, timeoutMs: BOUND_MS });
    try {
      const t0 = Date.now();
      await bounded.compact();
      // Longer than the bound: the store is large enough for this test to show it.
      expect(Date.now() - t0).to.be.above(BOUND_MS);
      await bounded.persist([ev('node:v', 1, 'one')]);
      expect(await bounded.head('node:v')).to.equal(1);
    } finally {
      await bounded.close();
      await sql(url, 'ALTER TABLE hilt_events RESET (autovacuum_enabled)');
    }
  });

  it('a compaction that cannot have its locks within timeoutMs fails, saying what failed and why', async () => {
    const bounded = new PostgresPersistenceEngine({ url, poolSize: 1, timeoutMs: 300 });
    const locker = new Client({ connectionString: url });
    try {
      await locker.connect();
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE hilt_snapshots IN ACCESS SHARE MODE');
      const t0 = Date.now();
      const err = await bounded.compact().then(() => undefined, (e: Error) => e);
      expect(err?.message).to.match(/^compacting the store \(VACUUM FULL hilt_events, hilt_snapshots, hilt_checkpoint_parts\) failed after \d+ ms: .*lock timeout/);
      expect(Date.now() - t0).to.be.below(3000);
    } finally {
      await locker.end().catch(() => undefined);
      await bounded.close();
    }
  });

  it('keeps the newest of several snapshots of one key written in one batch', async () => {
    await Promise.all([5, 9, 7].map((seq) => engine.takeSnapshot({ key: 's', sequenceNumber: seq, data: { seq }, createdAt: seq })));
    expect((await engine.latestSnapshot('s'))?.data).to.deep.equal({ seq: 9 });
  });

  it('reads a large inventory at start in bulk: a couple of queries per thousand keys, not one per actor', async () => {
    const keys = 2500;
    const events: PersistedEvent[] = [];
    for (let i = 0; i < keys; i++) for (let s = 1; s <= 3; s++) events.push(ev(`node:n${String(i).padStart(5, '0')}`, s, { i, s }));
    await engine.persist(events);
    await engine.persist([ev('nic:x', 1, 'not a node')]);
    // Half of them have a snapshot at 2: only the event after it comes back.
    await Promise.all(Array.from({ length: keys / 2 }, (_, i) => engine.takeSnapshot({ key: `node:n${String(i * 2).padStart(5, '0')}`, sequenceNumber: 2, data: { snap: i * 2 }, createdAt: 0 })));
    const reads = engine.counters.reads;
    const got = await all(engine.recoverAll('node:'));
    expect(engine.counters.reads - reads).to.be.at.most(2 * Math.ceil(keys / 1000) + 1);
    expect(got).to.have.length(keys);
    expect(got.map((g) => g.key)).to.deep.equal([...got.map((g) => g.key)].sort());
    expect(got[0].snapshot?.data).to.deep.equal({ snap: 0 });
    expect(got[0].events.map((e) => e.sequenceNumber)).to.deep.equal([3]);
    expect(got[1].snapshot).to.equal(undefined);
    expect(got[1].events.map((e) => e.sequenceNumber)).to.deep.equal([1, 2, 3]);
    expect(got[2499].events.map((e) => e.data)).to.deep.equal([{ i: 2499, s: 1 }, { i: 2499, s: 2 }, { i: 2499, s: 3 }]);
  });

  it('lists keys and replays long journals across pages', async () => {
    const many = Array.from({ length: 2100 }, (_, i) => ev('long', i + 1, i + 1));
    await engine.persist(many);
    expect(await all(engine.events('long', 5))).to.have.length(2095);
    expect((await all(engine.journal('long', 250))).map((e) => e.sequenceNumber).slice(0, 3)).to.deep.equal([2100, 2099, 2098]);
    expect(await all(engine.journal('long', 250))).to.have.length(250);
    await engine.persist(Array.from({ length: 1500 }, (_, i) => ev(`k:${i}`, 1, i)));
    expect(await all(engine.keys('k:'))).to.have.length(1500);
  });

  it('stores data as readable JSON, in the order it was written', async () => {
    await engine.persist([ev('node:j', 1, { type: 'NodeRegistered', z: 1, a: 2 })]);
    const rows = await sql<{ data: string }>(url, "SELECT data::text AS data FROM hilt_events WHERE key = 'node:j'");
    expect(rows[0].data).to.equal('{"type":"NodeRegistered","z":1,"a":2}');
  });

  it('bounds a prefix by the next string in byte order', () => {
    expect(prefixRange('node:')).to.deep.equal(['node:', 'node;']);
    expect(prefixRange('')).to.deep.equal(['', null]);
    expect(prefixRange('a\u{10ffff}')).to.deep.equal(['a\u{10ffff}', 'b']);
  });
  it('records a restore at the next start: a sequence moved far past every position (the runbook\'s setval) is a gap no stream resumes in, recorded once', async () => {
    await engine.persist([ev('node:a', 1, 0), ev('node:a', 2, 0), ev('node:b', 1, 0)]);
    // Positions a failed batch took and never used are no restore.
    await sql(url, "SELECT setval('hilt_events_pos_seq', 1000)");
    expect((await migrateDatabase({ url })).restoreGap).to.equal(undefined);
    const top = 3 + 2 ** 32;
    await sql(url, "SELECT setval('hilt_events_pos_seq', $1)", [top]);
    expect((await migrateDatabase({ url })).restoreGap).to.deep.equal([4, top]);
    expect(await engine.bounds()).to.deep.equal({ first: top + 1, last: top, gap: [4, top], removed: 0 });
    // Another start, before any write and after: nothing new to record.
    expect((await migrateDatabase({ url })).restoreGap).to.equal(undefined);
    await engine.persist([ev('node:a', 3, 0)]);
    expect((await migrateDatabase({ url })).restoreGap).to.equal(undefined);
    expect(await engine.bounds()).to.deep.equal({ first: top + 1, last: top + 1, gap: [4, top], removed: 0 });
    expect((await all(engine.feed(top))).map((e) => e.position)).to.deep.equal([top + 1]);
  });
});

describe('PostgreSQL schema migrations', () => {
  it('creates the schema once, records its version, and does nothing the second time', async () => {
    const url = await freshDatabase();
    expect(await migrateDatabase({ url })).to.deep.equal({ from: 0, to: SCHEMA_VERSION });
    expect(await migrateDatabase({ url })).to.deep.equal({ from: SCHEMA_VERSION, to: SCHEMA_VERSION });
    const versions = await sql<{ version: number }>(url, 'SELECT version FROM hilt_schema ORDER BY version');
    expect(versions.map((v) => v.version)).to.deep.equal(MIGRATIONS.map((m) => m.version));
  });

  it('applies each migration once when several processes start together', async () => {
    const url = await freshDatabase();
    const results = await Promise.all([1, 2, 3, 4].map(() => migrateDatabase({ url })));
    expect(results.filter((r) => r.from === 0)).to.have.length(1);
    expect((await sql<{ n: string }>(url, 'SELECT count(*) AS n FROM hilt_schema'))[0].n).to.equal(String(MIGRATIONS.length));
  });

  it('refuses a database whose schema is newer than this release', async () => {
    const url = await freshDatabase();
    await migrateDatabase({ url });
    await sql(url, "INSERT INTO hilt_schema (version, description) VALUES ($1, 'from the future')", [SCHEMA_VERSION + 1]);
    let err: Error | undefined;
    await migrateDatabase({ url }).catch((e: Error) => (err = e));
    expect(err?.message).to.match(new RegExp(`schema has version ${SCHEMA_VERSION + 1}; this release knows versions up to ${SCHEMA_VERSION}`));
  });

  it('brings a database written by the release before the one commit order (schema 2) to it: its events keep their order, new ones come after', async () => {
    const url = await freshDatabase();
    // Schema 2 as that release created it, and events written through its hilt_write.
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      await c.query('CREATE TABLE hilt_schema (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
      for (const m of MIGRATIONS.filter((x) => x.version <= 2)) {
        await c.query(m.sql);
        await c.query('INSERT INTO hilt_schema (version, description) VALUES ($1, $2)', [m.version, m.description]);
      }
      for (let i = 1; i <= 5; i++) {
        await c.query('SELECT hilt_write(NULL, $1, NULL)', [JSON.stringify([{ k: `old:${i % 2}`, s: Math.ceil(i / 2), c: 1000 + i, t: null, d: { i } }])]);
      }
    } finally {
      await c.end();
    }
    expect(await migrateDatabase({ url })).to.deep.equal({ from: 2, to: SCHEMA_VERSION });
    const engine = new PostgresPersistenceEngine({ url, poolSize: 2 });
    try {
      await engine.persist([ev('new:1', 1, 'n')]);
      const fed = await all(engine.feed(0));
      expect(fed.map((e) => (e.data as { i?: number }).i ?? e.data)).to.deep.equal([1, 2, 3, 4, 5, 'n']);
      for (let i = 1; i < fed.length; i++) expect(fed[i].position!).to.be.above(fed[i - 1].position!);
      expect((await engine.bounds()).last).to.equal(fed[5].position);
      expect((await all(engine.history({}))).map((e) => e.key)).to.deep.equal(['new:1', 'old:1', 'old:0', 'old:1', 'old:0', 'old:1']);
    } finally {
      await engine.close();
    }
  });
});