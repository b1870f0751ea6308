/**
 * Failover of real hilt processes on one PostgreSQL (docs/high-availability.md): the active one
 * is killed with SIGKILL at random moments under writes and network operations (mock switches
 * with delays), or paused with SIGSTOP past its lease. Each process has its own data folder, so
 * its own mock switch: a real switch is shared by nature, these are not, and that does not
 * matter here (an operation resumed by the new active is applied to the new active's switch).
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'node:http';
import { Client as PgClient } from 'pg';
import { ADMIN, Client, MOCK_SWITCH, must, obm, sharedKeyFile } from '../../helpers/server';
import { startServerProcess, ServerProcess } from '../../helpers/process';
import { freshDatabase } from '../../helpers/postgres';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TTL_MS = 2000;
const STATUS_DONE = new Set(['DONE', 'ERROR']);

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 30_000, everyMs = 20): Promise<T> {
  const t = Date.now();
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v) return v;
    if (Date.now() - t > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    await sleep(everyMs);
  }
}

/** One call on a keep-alive agent (a load balancer's or a client's open connection). */
function keepAliveCall(agent: Agent, base: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const auth = 'Basic ' + Buffer.from(`${ADMIN.user}:${ADMIN.password}`).toString('base64');
  return new Promise((resolve, reject) => {
    const req = request(base + path, { method, agent, headers: { authorization: auth, ...(payload ? { 'content-length': Buffer.byteLength(payload) } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(payload);
  });
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

/**
 * The fencing token of each event never goes down in the order events were written (pos): no
 * write of a process after its successor's first write. And every event was written under a lease.
 */
async function tokensNeverGoBack(url: string): Promise<void> {
  const rows = await sql(url, `SELECT count(*) FILTER (WHERE token < prev) AS back, count(*) FILTER (WHERE token IS NULL) AS unfenced
    FROM (SELECT token, lag(token) OVER (ORDER BY pos) AS prev FROM hilt_events) x`);
  expect(rows[0]).to.deep.equal({ back: '0', unfenced: '0' });
}

describe('failover between hilt processes on PostgreSQL', function () {
  this.timeout(180_000);
  let url: string;
  let root: string;
  let count = 0;
  const procs: ServerProcess[] = [];
  beforeEach(async () => {
    url = await freshDatabase();
    root = mkdtempSync(join(tmpdir(), 'hilt-failover-'));
  });
  afterEach(async () => {
    for (const p of procs.splice(0)) {
      if (p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill('SIGCONT');
        p.child.kill('SIGKILL');
        await p.exited;
      }
    }
    rmSync(root, { recursive: true, force: true });
  });

  /** A hilt process on the test's database; resolves once it is active (or, with `standby`, once it stands by). */
  async function start(env: Record<string, string> = {}, standby = false): Promise<ServerProcess> {
    const name = `p${++count}`;
    const p = await startServerProcess({
      HILT_STORAGE: 'postgres', HILT_DATABASE_URL: url, HILT_LEASE_TTL_MS: String(TTL_MS), HILT_INSTANCE_NAME: name,
      HILT_DATA_DIR: join(root, name), HILT_SECRET_KEY_FILE: sharedKeyFile(url), HILT_ADMIN_PASSWORD: ADMIN.password, HILT_HEADNODE_DRIVER: 'mock', ...env,
    }, 30_000, standby ? /hilt is a standby/ : /hilt is ready/);
    procs.push(p);
    return p;
  }
  const health = async (p: ServerProcess) => (await new Client(p.url, null).get('/health')).body?.status as string | undefined;
  const untilActive = (p: ServerProcess, timeoutMs = 30_000) => until(`${p.url} active`, async () => (await health(p)) === 'active', timeoutMs);

  async function inventory(api: Client, nodes: number): Promise<void> {
    await must(api.put('/project/fp'));
    await must(api.put('/network/fw', { owner: 'fp', access: 'fp', net_id: '' }));
    await must(api.put('/switch/fsw', { type: MOCK_SWITCH, hostname: 'sw', username: 'u', password: 'p' }));
    for (let i = 0; i < nodes; i++) {
      await must(api.put(`/node/fn${i}`, { obm: obm() }));
      await must(api.put(`/node/fn${i}/nic/eth0`, { macaddr: `de:ad:be:ef:00:${i}` }));
      await must(api.put(`/switch/fsw/port/gi1/0/${i + 1}`));
      await must(api.post(`/switch/fsw/port/gi1/0/${i + 1}/connect_nic`, { node: `fn${i}`, nic: 'eth0' }));
      await must(api.post('/project/fp/connect_node', { node: `fn${i}` }));
    }
  }

  it('serves every acknowledged change from the new active after kill -9 of the active, rounds at random moments; every pending operation ends DONE or ERROR', async () => {
    const NODES = 6;
    const ROUNDS = 4;
    const env = { HILT_MOCK_SWITCH_DELAY_MS: '80' };
    let active = await start(env);
    expect(await health(active)).to.equal('active');
    let standby = await start(env, true);
    expect(await health(standby)).to.equal('standby');
    await inventory(new Client(active.url), NODES);
    const ackNodes: string[] = [];
    const ackOps: string[] = [];
    const failovers: number[] = [];

    for (let round = 0; round < ROUNDS; round++) {
      const api = new Client(active.url);
      let stop = false;
      // Writers: node registrations, each recorded only once acknowledged.
      const writer = async (w: number) => {
        for (let i = 0; !stop; i++) {
          const name = `r${round}w${w}n${i}`;
          const r = await api.put(`/node/${name}`, { obm: obm() }).catch(() => undefined);
          if (!r) return;
          if (r.status === 200) ackNodes.push(name);
        }
      };
      // Network clients: each node goes back and forth between attached and detached.
      const netClient = async (i: number) => {
        while (!stop) {
          const node = await api.get(`/node/fn${i}`).catch(() => undefined);
          if (!node) return;
          const attached = Object.keys(node.body.nics?.[0]?.networks ?? {}).length > 0;
          const r = await api.post(`/node/fn${i}/nic/eth0/${attached ? 'detach' : 'connect'}_network`, { network: 'fw' }).catch(() => undefined);
          if (!r) return;
          if (r.status !== 202) {
            await sleep(20);
            continue;
          }
          ackOps.push(r.body.status_id);
          await until('operation finished', async () => {
            if (stop) return true;
            const s = await api.get(`/networking_action/${r.body.status_id}`);
            return s.status === 200 && STATUS_DONE.has(s.body.status);
          }, 10_000, 10).catch(() => undefined);
        }
      };
      const loops = [...[0, 1, 2].map(writer), ...Array.from({ length: NODES }, (_, i) => netClient(i))];
      await sleep(300 + Math.floor(Math.random() * 900));
      const killedAt = Date.now();
      active.child.kill('SIGKILL');
      await active.exited;
      stop = true;
      await Promise.all(loops);

      // The standby takes over: the first write it accepts.
      const next = new Client(standby.url);
      await until('the new active accepts a write', async () => (await next.put(`/project/probe${round}`)).status === 200, 30_000, 10);
      failovers.push(Date.now() - killedAt);

      for (const name of ackNodes) expect((await next.get(`/node/${name}`)).status, name).to.equal(200);
      for (const id of ackOps) {
        const status = await until(`operation ${id} done`, async () => {
          const s = await next.get(`/networking_action/${id}`);
          return s.status === 200 && STATUS_DONE.has(s.body.status) && (s.body.status as string);
        });
        expect(['DONE', 'ERROR']).to.include(status);
      }
      active = standby;
      standby = await start(env, true);
      expect(await health(standby)).to.equal('standby');
    }
    expect(ackNodes.length, 'writes acknowledged before the kills').to.be.above(ROUNDS * 10);
    expect(ackOps.length, 'network operations acknowledged before the kills').to.be.above(ROUNDS * 3);
    await tokensNeverGoBack(url);
    // Operations accepted by a killed process and finished by its successor (pending at the kill).
    const resumed = await sql(url, `SELECT count(*) AS n FROM hilt_events q JOIN hilt_events d
      ON d.key = q.key AND d.data->>'type' IN ('NetworkActionDone', 'NetworkActionFailed') AND d.data->>'seq' = q.data->'action'->>'seq'
      WHERE q.data->>'type' = 'NetworkActionQueued' AND d.token <> q.token`);
    expect(Number(resumed[0].n), 'operations pending at a kill, finished by the next active').to.be.at.least(1);
    // Every failover within the TTL plus a start (here: at once, the killed process's session ended).
    for (const ms of failovers) expect(ms).to.be.below(TTL_MS + 15_000);
    console.log(`      failover (kill -9 to the first write accepted by the new active), ms: ${failovers.join(', ')}`);
  });

  it('refuses the writes of an active paused (SIGSTOP) past its lease once it resumes: it steps down, and the new active carries on', async () => {
    const env = { HILT_MOCK_SWITCH_DELAY_MS: '1500' };
    const a = await start(env);
    const b = await start(env, true);
    const apiA = new Client(a.url);
    const apiB = new Client(b.url);
    await inventory(apiA, 1);
    const tokenA = Number((await sql(url, 'SELECT token FROM hilt_lease'))[0].token);

    // A connection to a that stays open across the pause (a load balancer's, a client's).
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect((await keepAliveCall(agent, a.url, 'GET', '/node/fn0')).status).to.equal(200);
    // An operation in the switch (1.5 s) when a is paused.
    const op = await must(apiA.post('/node/fn0/nic/eth0/connect_network', { network: 'fw' }), 202);
    await sleep(100);
    a.child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    await untilActive(b);
    const tookOver = Date.now() - stoppedAt;
    // a's session is alive (only paused): b waits for the TTL.
    expect(tookOver).to.be.at.least(TTL_MS - 500);
    const tokenB = Number((await sql(url, 'SELECT token FROM hilt_lease'))[0].token);
    expect(tokenB).to.equal(tokenA + 1);
    await must(apiB.put('/node/after-takeover', { obm: obm() }));
    // b resumed the pending operation.
    const done = await until('b finished the operation', async () => {
      const s = await apiB.get(`/networking_action/${op.body.status_id}`);
      return STATUS_DONE.has(s.body.status) && s.body;
    });
    expect(done.status).to.equal('DONE');

    // Calls sent to a while it is paused, one on the connection it already had open, one on a
    // new connection: when a runs again, its own clock tells it first that its lease lapsed (its
    // timers run before it reads the sockets), so it stands by before handling them. Had one of
    // its writes got out, the database would have refused it for its fencing token (that path:
    // the next test).
    const onOpen = keepAliveCall(agent, a.url, 'PUT', '/node/stale-1', { obm: obm() });
    const onNew = apiA.put('/project/stale-2');
    await sleep(300);
    a.child.kill('SIGCONT');
    const [r1, r2] = await Promise.all([onOpen, onNew]);
    agent.destroy();
    expect(r1.status).to.equal(503);
    expect(r2.status, r2.text).to.equal(503);
    await until('a stands by', async () => (await health(a)) === 'standby', 15_000);
    await until('a logs its step-down', async () => /"msg":"stepping down"/.test(a.output()), 5000);
    expect(a.output()).to.match(/"why":"the lease was not renewed within its TTL of 2000 ms","msg":"stepping down"/);
    expect(a.child.exitCode, 'a steps down, it does not exit').to.equal(null);
    // The operation a had in its switch when it was paused has one outcome, recorded by b.
    expect(await sql(url, `SELECT token, data->>'type' AS type FROM hilt_events
      WHERE key = 'nic:fn0/eth0' AND data->>'type' IN ('NetworkActionDone', 'NetworkActionFailed')`)).to.deep.equal([{ token: String(tokenB), type: 'NetworkActionDone' }]);

    // Nothing of a's after the takeover: b serves, a's calls left no trace, tokens never go back.
    expect((await apiB.get('/node/stale-1')).status).to.equal(404);
    expect((await apiB.get('/projects')).body).to.not.include('stale-2');
    expect(await sql(url, "SELECT key FROM hilt_events WHERE key IN ('node:stale-1', 'project:stale-2')")).to.deep.equal([]);
    expect(await sql(url, "SELECT token FROM hilt_events WHERE key = 'node:after-takeover'")).to.deep.equal([{ token: String(tokenB) }]);
    await tokensNeverGoBack(url);
    expect(await health(b)).to.equal('active');
    expect((await apiB.get('/node/fn0')).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'fw' });
    // a stands by for the next failover: b's kill makes it active again.
    b.child.kill('SIGKILL');
    await untilActive(a);
    expect((await apiA.get('/node/after-takeover')).status).to.equal(200);
  });

  it('refuses in the database, by its fencing token, the writes of a paused active that does not notice it lost its lease', async () => {
    // a's own checks are off (its clock, its renewals): only the token can stop its writes.
    const a = await start({ HILT_TEST_FENCING_ONLY: '1' });
    const b = await start({}, true);
    const apiA = new Client(a.url);
    const apiB = new Client(b.url);
    await must(apiA.put('/project/fp'));
    const tokenA = Number((await sql(url, 'SELECT token FROM hilt_lease'))[0].token);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect((await keepAliveCall(agent, a.url, 'GET', '/projects')).status).to.equal(200);

    a.child.kill('SIGSTOP');
    await untilActive(b);
    const tokenB = Number((await sql(url, 'SELECT token FROM hilt_lease'))[0].token);
    expect(tokenB).to.equal(tokenA + 1);
    await must(apiB.put('/node/after-takeover', { obm: obm() }));

    // Resumed, a still believes it is active: it handles the call and its write goes out.
    const stale = keepAliveCall(agent, a.url, 'PUT', '/node/stale', { obm: obm() });
    await sleep(200);
    a.child.kill('SIGCONT');
    const r = await stale;
    agent.destroy();
    expect(r.status).to.equal(503);
    expect(r.body.msg).to.match(/fencing token \d+ is no longer the lease's/);
    await until('a stands by', async () => (await health(a)) === 'standby', 15_000);
    // Its log lines may reach us after its answers.
    await until('a logs its step-down', async () => /"msg":"stepping down"/.test(a.output()), 5000);
    expect(a.output()).to.match(/the database refused a write: this process's fencing token is no longer the lease's/);
    expect(a.output()).to.match(/"why":"write refused: fencing token \d+ is no longer the lease's[^"]*","msg":"stepping down"/);
    expect(a.output()).to.not.match(/the lease was not renewed within its TTL/);

    // Nothing of a's was committed after b's first write; b serves.
    expect(await sql(url, "SELECT key FROM hilt_events WHERE key = 'node:stale'")).to.deep.equal([]);
    expect(await sql(url, `SELECT count(*) AS n FROM hilt_events WHERE token = $1 AND pos > (SELECT min(pos) FROM hilt_events WHERE token = $2)`,
      [tokenA, tokenB])).to.deep.equal([{ n: '0' }]);
    await tokensNeverGoBack(url);
    expect(await health(b)).to.equal('active');
    expect((await apiB.get('/node/stale')).status).to.equal(404);
    await must(apiB.put('/node/after-refusal', { obm: obm() }));
  });
});
