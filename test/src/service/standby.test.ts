/**
 * Active/standby in one test process (docs/high-availability.md): /health, a standby's 503s, a
 * clean hand-over, a process that is deposed stepping down and standing by again, and the
 * metrics of each (`hilt_active`; a standby's served only when they are open). The failover of
 * killed and paused processes: test/src/service/failover.test.ts.
 */
import { expect } from 'chai';
import { Client as PgClient } from 'pg';
import { ADMIN, Client, must, makeNode, startTestServer, stopTestServer, TestServer } from '../../helpers/server';
import { freshDatabase, testPostgres } from '../../helpers/postgres';
import { loggerOptions } from '../../../src/redact';
import { SwitchSessions } from '../../../hardware/switch-sessions';
import { RecordingSwitch } from '../../helpers/world';
import { parseExposition, parseWithPrometheusClient, value } from '../../helpers/prometheus';
import { LEASE_LOCK_CLASS } from '../../../actors/persistence/postgres-schema';
import { readLease } from '../../../actors/persistence/lease';
import type { PersistenceEngine } from '../../../actors/persistence/engine';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, cond: () => Promise<boolean>, timeoutMs = 15_000): Promise<number> {
  const t = Date.now();
  while (!(await cond())) {
    if (Date.now() - t > timeoutMs) throw new Error(`timed out waiting for: ${what}`);
    await sleep(20);
  }
  return Date.now() - t;
}

async function sql(url: string, text: string, params: unknown[] = []) {
  const c = new PgClient({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, params)).rows;
  } finally {
    await c.end();
  }
}

describe('/health', () => {
  it('says active, without authentication, on the embedded engine', async () => {
    const ts = await startTestServer();
    const r = await ts.api.get('/health', { as: null });
    expect(r.status).to.equal(200);
    expect(r.body).to.include({ status: 'active' });
    expect(ts.role).to.equal('active');
    expect((await ts.api.call('HEAD', '/health', { as: null })).status).to.equal(200);
    await stopTestServer(ts);
  });
});

describe('active/standby on PostgreSQL, in one process', () => {
  let url: string;
  const pg = (name: string, ttl = 2000) => ({ storage: 'postgres' as const, databaseUrl: url, leaseTtlMs: ttl, instanceName: name });
  beforeEach(async () => { url = await freshDatabase(); });

  it('serves from one process; the other answers 503 with Retry-After and /health standby, then takes over at a clean stop', async () => {
    const a = await startTestServer(pg('a'));
    const b = await startTestServer(pg('b'), { waitForActive: false });
    expect(a.role).to.equal('active');
    expect(b.role).to.equal('standby');
    await must(a.api.put('/project/p'));
    await makeNode(a.api, 'n1', ['eth0']);

    const health = await b.api.get('/health', { as: null });
    expect(health.status).to.equal(503);
    expect(health.body).to.deep.include({ status: 'standby', instance: 'b' });
    expect((await a.api.get('/health', { as: null })).body).to.deep.equal({ status: 'active', instance: 'a' });
    for (const [method, path] of [['GET', '/projects'], ['PUT', '/project/q'], ['GET', '/nodes/all'], ['DELETE', '/node/n1']]) {
      const r = await b.api.call(method, path, method === 'PUT' ? { body: {} } : {});
      expect(r.status, `${method} ${path}`).to.equal(503);
      expect(r.body.type).to.equal('ServiceUnavailableError');
      expect(r.headers['retry-after']).to.equal('2');
    }
    // Unauthenticated too: a standby checks nothing and answers nothing but 503.
    expect((await b.api.get('/projects', { as: null })).status).to.equal(503);

    // A clean stop hands the lease over at once (no TTL to wait for).
    const t = Date.now();
    await stopTestServer(a);
    await b.whenActive();
    expect(Date.now() - t).to.be.below(1500);
    expect(b.role).to.equal('active');
    expect((await b.api.get('/projects')).body).to.deep.equal(['p']);
    expect((await b.api.get('/node/n1')).body.nics).to.have.length(1);
    await must(b.api.put('/project/q'));
    const lease = await sql(url, 'SELECT token, holder FROM hilt_lease');
    expect(lease[0]).to.deep.equal({ token: '2', holder: 'b' });
    await stopTestServer(b);
  });

  it('steps down when another process took the lease (its writes refused by the fencing token), then stands by and takes over again', async () => {
    const logs: string[] = [];
    const a = await startTestServer(pg('a', 2000), { logger: loggerOptions('info', { write: (l: string) => void logs.push(l) }) });
    await must(a.api.put('/project/p'));
    const token = Number((await sql(url, 'SELECT token FROM hilt_lease'))[0].token);

    // Another process takes the lease over; its transaction is still open when a writes, so
    // a's write waits on the lease row and then finds the new token: refused in the database.
    const intruder = new PgClient({ connectionString: url });
    await intruder.connect();
    await intruder.query('BEGIN');
    await intruder.query("UPDATE hilt_lease SET token = token + 1, holder = 'intruder', renewed_at = now()");
    const write = a.api.put('/project/late');
    await sleep(300);
    await intruder.query('COMMIT');
    await intruder.end();
    const r = await write;
    expect(r.status).to.equal(503);
    expect(r.body.msg).to.match(/fencing token \d+ is no longer the lease's/);
    await until('a stands by', async () => (await a.api.get('/health', { as: null })).status === 503);
    expect((await a.api.get('/health', { as: null })).body.reason).to.match(/stepped down/);
    expect((await a.api.get('/projects')).status).to.equal(503);
    expect(logs.join('')).to.match(/the database refused a write/).and.to.match(/stepping down/);
    expect(await sql(url, "SELECT key FROM hilt_events WHERE key = 'project:late'")).to.deep.equal([]);

    // The intruder holds no session lock (as a process that died): a takes over again at once,
    // rebuilt from the database.
    await a.whenActive();
    expect(Number((await sql(url, 'SELECT token FROM hilt_lease'))[0].token)).to.equal(token + 2);
    expect((await a.api.get('/projects')).body).to.deep.equal(['p']);
    await must(a.api.put('/project/q'));
    expect((await a.api.get('/projects')).body).to.deep.equal(['p', 'q']);
    // Each event records the token it was written with.
    const tokens = await sql(url, "SELECT key, token FROM hilt_events WHERE key LIKE 'project:%' ORDER BY key");
    expect(tokens).to.deep.equal([{ key: 'project:p', token: String(token) }, { key: 'project:q', token: String(token + 2) }]);
    await stopTestServer(a);
  });

  /** A scrape without credentials: the status and, on a 200, the samples. */
  const scrape = async (ts: TestServer) => {
    const r = await ts.api.get('/metrics', { as: null });
    return { r, m: r.status === 200 ? parseExposition(r.text) : undefined };
  };
  const has = (m: ReturnType<typeof parseExposition>, name: string) => m.samples.some((s) => s.name === name);

  it('shows hilt_active 1 on the active process and 0 on a standby, whose metrics are served when open and 503 otherwise', async () => {
    const a = await startTestServer({ ...pg('a'), metricsOpen: true });
    const b = await startTestServer({ ...pg('b'), metricsOpen: true }, { waitForActive: false });
    const closed = await startTestServer(pg('closed'), { waitForActive: false });
    await must(a.api.put('/project/p'));

    const active = await scrape(a);
    expect(active.r.status).to.equal(200);
    expect(value(active.m!, 'hilt_active')).to.equal(1);
    expect(value(active.m!, 'hilt_actors_live', { kind: 'project' })).to.be.at.least(1);
    // PostgreSQL tells the size of hilt's tables; there is no map whose use it could tell.
    expect(value(active.m!, 'hilt_storage_size_bytes')).to.be.greaterThan(0);
    expect(has(active.m!, 'hilt_storage_used_bytes')).to.equal(false);

    const standby = await scrape(b);
    expect(standby.r.status).to.equal(200);
    expect(standby.r.headers['content-type']).to.equal('text/plain; version=0.0.4; charset=utf-8');
    expect(value(standby.m!, 'hilt_active')).to.equal(0);
    expect(standby.m!.samples.find((s) => s.name === 'hilt_info')!.labels.storage).to.equal('postgres');
    expect(has(standby.m!, 'process_resident_memory_bytes')).to.equal(true);
    // Nothing it does not know: no actors, no operations, no store.
    for (const name of ['hilt_actors_live', 'hilt_network_operations_pending', 'hilt_device_queue_depth', 'hilt_storage_size_bytes']) expect(has(standby.m!, name), name).to.equal(false);
    expect(await parseWithPrometheusClient(standby.r.text)).to.equal(standby.m!.samples.length);
    // Still nothing else: the API is the active's.
    expect((await b.api.get('/projects')).status).to.equal(503);

    // Behind an admin's login, a standby cannot check one: 503 as every call.
    const refused = await closed.api.get('/metrics');
    expect(refused.status).to.equal(503);
    expect(refused.body.type).to.equal('ServiceUnavailableError');
    expect(refused.headers['retry-after']).to.equal('2');

    await stopTestServer(a);
    await until('b or closed takes over', async () => b.role === 'active' || closed.role === 'active');
    const next = b.role === 'active' ? b : closed;
    const after = await must(next.api.get('/metrics'));
    expect(value(parseExposition(after.text), 'hilt_active')).to.equal(1);
    await stopTestServer(b);
    await stopTestServer(closed);
  });

  it('empties its gauges of what is there when it steps down, and fills them again when it takes over', async () => {
    const a = await startTestServer({ ...pg('a'), metricsOpen: true });
    await must(a.api.put('/project/p'));
    expect(value((await scrape(a)).m!, 'hilt_active')).to.equal(1);

    // Another "process" takes the lease and holds its session lock: a steps down and waits.
    const token = Number((await sql(url, 'SELECT token FROM hilt_lease'))[0].token);
    const intruder = new PgClient({ connectionString: url });
    await intruder.connect();
    try {
      await intruder.query('SELECT pg_advisory_lock($1, $2)', [LEASE_LOCK_CLASS, token + 1]);
      await intruder.query("UPDATE hilt_lease SET token = token + 1, holder = 'intruder', ttl_ms = 60000, renewed_at = now()");
      await until('a stands by', async () => a.role === 'standby');
      const { r, m } = await scrape(a);
      expect(r.status).to.equal(200);
      expect(value(m!, 'hilt_active')).to.equal(0);
      for (const name of ['hilt_actors_live', 'hilt_actor_mailbox_messages', 'hilt_network_operations_pending', 'hilt_device_queue_depth', 'hilt_storage_size_bytes']) expect(has(m!, name), name).to.equal(false);
      // The counters of its activation stay: they count what this process did.
      expect(value(m!, 'hilt_http_requests_total', { route: '/project/:project', method: 'PUT', status: '200' })).to.equal(1);
    } finally {
      await intruder.end();
    }
    // Its session gone, the lease is taken over at once.
    await a.whenActive();
    const m = (await scrape(a)).m!;
    expect(value(m, 'hilt_active')).to.equal(1);
    expect(value(m, 'hilt_storage_size_bytes')).to.be.greaterThan(0);
    expect(has(m, 'hilt_actors_live')).to.equal(true);
    await stopTestServer(a);
  });

  it('waits, standing by, for a database it cannot reach yet; refuses to start on a schema newer than it knows', async () => {
    const server = await testPostgres();
    const name = `hilt_later_${process.pid}`;
    url = server.url(name);
    const ts = await startTestServer(pg('early'), { waitForActive: false });
    expect(ts.role).to.equal('standby');
    const h = await ts.api.get('/health', { as: null });
    expect(h.status).to.equal(503);
    expect(h.body.reason).to.equal('waiting for the database (the log says why)');
    await sql(server.url('postgres'), `CREATE DATABASE ${name}`);
    await ts.whenActive();
    await must(ts.api.put('/project/p'));
    await stopTestServer(ts);

    await sql(url, "INSERT INTO hilt_schema (version, description) VALUES (999, 'from a later release')");
    let err: Error | undefined;
    await startTestServer(pg('old')).catch((e: Error) => (err = e));
    expect(err?.message).to.match(/the database's hilt schema has version 999; this release knows versions up to \d+/);
  });

  it('serves the whole API from PostgreSQL, and keeps it across a restart', async () => {
    let ts: TestServer = await startTestServer(pg('solo'));
    await must(ts.api.put('/project/p'));
    await makeNode(ts.api, 'n1', ['eth0']);
    await must(ts.api.put(`/auth/basic/user/u1`, { password: 'pw', 'is-admin': false }));
    const before = (await ts.api.get('/node/n1')).body;
    await stopTestServer(ts, false);
    ts = await startTestServer(pg('solo'), {}, ts.dataDir);
    expect((await ts.api.get('/node/n1')).body).to.deep.equal(before);
    expect((await ts.api.get('/projects')).body).to.deep.equal(['p']);
    // The user's password hash came back too.
    expect((await new Client(ts.url, { user: 'u1', password: 'pw' }).get('/nodes/all')).status).to.equal(200);
    expect((await new Client(ts.url, { user: 'u1', password: 'wrong' }).get('/nodes/all')).status).to.equal(401);
    expect((await new Client(ts.url, ADMIN).get('/nodes/all')).body).to.deep.equal(['n1']);
    await stopTestServer(ts);
  });

  it('a close while it takes over stops the activation: what it opened is closed before close() returns, and nothing touches the store after', async () => {
    const a = await startTestServer(pg('a'));
    await must(a.api.put('/project/p'));
    // The standby's activation stops at its first read of the store until the test lets it go on.
    let reached!: () => void;
    const atRead = new Promise<void>((r) => (reached = r));
    let letGo!: () => void;
    const go = new Promise<void>((r) => (letGo = r));
    let closed = false;
    let callsAfterClose: string[] | undefined;
    const wrap = (engine: PersistenceEngine): PersistenceEngine => new Proxy(engine, {
      get(t, prop) {
        const v = Reflect.get(t, prop, t);
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          callsAfterClose?.push(String(prop));
          if (prop === 'close') closed = true;
          if (prop !== 'journal') return v.apply(t, args);
          reached();
          return (async function* () {
            await go;
            yield* v.apply(t, args) as AsyncIterable<unknown>;
          })();
        };
      },
    });
    const b = await startTestServer(pg('b'), { waitForActive: false, wrapEngine: wrap });
    await stopTestServer(a);
    await atRead;
    const closing = b.close();
    setTimeout(letGo, 300);
    await closing;
    callsAfterClose = [];
    expect(closed, 'the activation\'s store was closed before close() returned').to.equal(true);
    await sleep(500);
    expect(callsAfterClose, 'store calls after close()').to.deep.equal([]);
    expect(b.role).to.equal('standby');
    // The lease was released: another process takes over at once.
    expect((await readLease({ url })).renewedAgoMs).to.equal(null);
  });
});

describe('switch calls of a process whose lease lapsed', () => {
  it('are refused from the moment its own clock says so: the session in use too', async () => {
    const hw = new RecordingSwitch();
    let held = true;
    const sessions = new SwitchSessions(() => hw, 2000, undefined, undefined, () => held);
    const sw = { name: 's', type: 't', fields: {} };
    // A batch keeps the session open between the calls: the second one runs on the session in use.
    const batch = sessions.batch('s');
    await sessions.submit(sw, (s) => s.setNative('p1', 10), { batch: batch.id });
    held = false;
    const inUse = await sessions.submit(sw, (s) => s.addTagged('p1', 11), { batch: batch.id }).then(() => undefined, (e: Error) => e);
    expect(inUse?.message).to.match(/no longer holds the lease/);
    sessions.endBatch(batch);
    const login = await sessions.submit(sw, async (s) => void (await s.getPortVlans('p1'))).then(() => undefined, (e: Error) => e);
    expect(login?.name, 'no new login either').to.equal('SwitchError');
    expect(login?.message).to.match(/no longer holds the lease/);
    expect(hw.log).to.deep.equal(['s p1 native 10']);
  });

});
