/**
 * A PostgreSQL that hangs (issue 11, item 1): a session of someone else holds a lock on hilt's
 * tables. Every read and commit of the service has a bound (HILT_DATABASE_TIMEOUT_MS): a read
 * past it is a storage fault (503 at once, the actor read again on its next message), a commit
 * past it has an unknown outcome (503, and the process steps down and rebuilds from the
 * database), rather than callers waiting for the 30 s ask timeout.
 */
import { expect } from 'chai';
import { Client as PgClient } from 'pg';
import { must, obm, startTestServer, stopTestServer, TestServer } from '../../helpers/server';
import { freshDatabase, sql } from '../../helpers/postgres';
import { loggerOptions } from '../../../src/redact';
import { until, sleep } from '../../helpers/wait';

/** A session that holds `lock` in an open transaction until release(). */
async function holdLock(url: string, lock: string): Promise<{ release(): Promise<void> }> {
  const c = new PgClient({ connectionString: url });
  await c.connect();
  await c.query('BEGIN');
  await c.query(lock);
  return {
    async release() {
      await c.query('COMMIT');
      await c.end();
    },
  };
}

describe('a PostgreSQL that hangs', function () {
  this.timeout(30_000);
  const BOUND_MS = 1000;
  let url: string;
  let ts: TestServer | undefined;
  let logs: string[];
  beforeEach(async () => {
    url = await freshDatabase();
    logs = [];
    // The lease's TTL (5 s) is longer than the bound: the bound is the setting's, not the TTL.
    ts = await startTestServer({ storage: 'postgres', databaseUrl: url, instanceName: 'a', databaseTimeoutMs: BOUND_MS },
      { logger: loggerOptions('info', { write: (l: string) => void logs.push(l) }) });
  });
  afterEach(async () => {
    if (ts) await stopTestServer(ts);
    ts = undefined;
  });
  const health = async () => (await ts!.api.get('/health', { as: null })).body.status as string;

  it('a read held up by a lock answers 503 within about the bound; the process stays active and works once the lock is gone', async () => {
    await must(ts!.api.put('/project/p'));
    const lock = await holdLock(url, 'LOCK TABLE hilt_events IN ACCESS EXCLUSIVE MODE');
    // A project not yet in memory: its actor wakes with a read of its journal.
    const t0 = Date.now();
    const r = await ts!.api.put('/project/q');
    const took = Date.now() - t0;
    expect(r.status, r.text).to.equal(503);
    expect(r.body.msg).to.match(/could not be read from storage/);
    expect(took).to.be.within(BOUND_MS - 100, BOUND_MS + 1500);
    // Reads of committed state do not touch the database.
    expect((await ts!.api.get('/projects')).body).to.deep.equal(['p']);
    expect(await health()).to.equal('active');
    await lock.release();
    await must(ts!.api.put('/project/q'));
    expect((await ts!.api.get('/projects')).body).to.deep.equal(['p', 'q']);
    expect(logs.join('')).to.not.match(/stepping down/);
  });

  it('a read of the journal held up by a lock (the audit log, an object\'s journal, the event stream) answers 503 within about the bound, never 500', async () => {
    await must(ts!.api.put('/project/p'));
    const lock = await holdLock(url, 'LOCK TABLE hilt_events IN ACCESS EXCLUSIVE MODE');
    try {
      for (const path of ['/admin/audit', '/admin/actors/project/p/journal', '/events?after=0']) {
        const t0 = Date.now();
        const r = await ts!.api.get(path);
        expect(r.status, `${path}: ${r.text}`).to.equal(503);
        expect(r.body.type).to.equal('ServiceUnavailableError');
        expect(Date.now() - t0).to.be.below(BOUND_MS + 2500);
      }
    } finally {
      await lock.release();
    }
    expect((await ts!.api.get('/admin/audit')).status).to.equal(200);
  });

  it('a commit held up by a lock has an unknown outcome: 503 within about the bound, the process steps down, and activates again from the database once the lock is gone', async () => {
    // Writes wait for this lock; reads do not.
    const lock = await holdLock(url, 'LOCK TABLE hilt_heads IN EXCLUSIVE MODE');
    const t0 = Date.now();
    const r = await ts!.api.put('/node/n1', { obm: obm() });
    const took = Date.now() - t0;
    expect(r.status, r.text).to.equal(503);
    expect(r.body.msg).to.match(/outcome is unknown/);
    expect(took).to.be.within(BOUND_MS - 100, BOUND_MS + 1500);
    await until('a stands by', async () => (await health()) === 'standby', 15_000);
    expect(logs.join('')).to.match(/a commit's outcome is unknown/).and.to.match(/stepping down/);
    // Its server session still waits for the lock (and keeps the lease's token from changing
    // under it): no activation until the lock is gone.
    await sleep(500);
    expect(await health()).to.equal('standby');
    await lock.release();
    await ts!.whenActive();
    // The database carried the commit out after all: "unknown" was the honest answer.
    expect((await ts!.api.get('/node/n1')).status).to.equal(200);
    await must(ts!.api.put('/node/n2', { obm: obm() }));
  });

  it('a commit in doubt that the database carries out later is in the read model of the next activation; a write queued behind it is refused, not committed before it', async () => {
    await must(ts!.api.put('/project/p0'));
    // Another session inserts node:n1's head in an open transaction: the commit registering n1
    // waits for it (its ON CONFLICT needs that transaction's outcome); nothing else does.
    const blocker = new PgClient({ connectionString: url });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query("INSERT INTO hilt_heads (key, seq) VALUES ('node:n1', 0)");
    const d = ts!.api.put('/node/n1', { obm: obm() });
    await until('the commit waits for the lock', async () => (await sql<{ n: string }>(url, "SELECT count(*)::text AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'"))[0].n !== '0', 5_000);
    // Queued behind the commit in doubt: committed, it would take a higher position and be
    // visible (streamed, a webhook's cursor past it) before the one in doubt commits below it.
    const e = ts!.api.put('/node/n2', { obm: obm() });
    const [rd, re] = await Promise.all([d, e]);
    expect(rd.status, rd.text).to.equal(503);
    expect(rd.body.msg).to.match(/outcome is unknown/);
    expect(re.status, re.text).to.equal(503);
    expect(re.body.msg).to.match(/not written: an earlier commit's outcome is unknown/);
    await until('a stands by', async () => (await health()) === 'standby', 15_000);
    // The blocking session goes: the commit in doubt goes through after all.
    await blocker.query('ROLLBACK');
    await blocker.end();
    await ts!.whenActive();
    const keys = (await sql<{ key: string }>(url, "SELECT key FROM hilt_events WHERE key IN ('node:n1', 'node:n2') ORDER BY pos")).map((r) => r.key);
    expect(keys).to.deep.equal(['node:n1']);
    expect((await ts!.api.get('/node/n1')).status).to.equal(200);
    expect((await must(ts!.api.get('/nodes/all'))).body).to.include('n1').and.not.include('n2');
  });
});
