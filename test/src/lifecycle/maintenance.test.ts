/**
 * The maintenance pool (issue 20 item 3), as HIL v0.3 defines it plus hilt's signed, durable,
 * retried notices: a local receiver gets exactly one signed POST per release while the node sits
 * in the pool's project; its own project_detach_node frees the node (and no notice follows); a
 * receiver that refuses for a while gets the notice after a restart of hilt in between; a node
 * back in the pool while the POST of its earlier notice is in flight gets its new notice POSTed;
 * a delivery that finds the process may not act for a moment (the lease) is tried again.
 */
import { expect } from 'chai';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { createHmac } from 'node:crypto';
import { AddressInfo } from 'node:net';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, obm, TEST_STORAGE } from '../../helpers/server';
import { until, sleep } from '../../helpers/wait';
import { MaintenanceDeliveries } from '../../../src/lifecycle/maintenance';
import { NO_LIFECYCLE_TELEMETRY, NO_LOG } from '../../../src/lifecycle/common';
import type { ReadModel } from '../../../actors/readmodel';
import type { NodeState } from '../../../actors/node/protocol';
import { loadConfig } from '../../../src/config';
import { addSecret } from '../../helpers/secrets';

const SECRET = 'maint-HMAC-key-2f9';

/**
 * A data folder with the pool's project, p1 and the given nodes, made by a service without a
 * maintenance pool (the pool's settings come with the next start on the folder).
 */
async function poolFolder(nodes: string[]): Promise<string> {
  const first = await startTestServer();
  await must(first.api.put('/project/maint'));
  await must(first.api.put('/project/p1'));
  for (const n of nodes) await must(first.api.put(`/node/${n}`, { obm: obm(`bmc-${n}`) }));
  await stopTestServer(first, false);
  return first.dataDir;
}
addSecret(SECRET);

interface Received { body: string; headers: IncomingMessage['headers'] }

/** A maintenance service on the loopback: it records every POST and answers `status`. */
class Receiver {
  readonly got: Received[] = [];
  status = 200;
  private server!: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.got.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
        res.writeHead(this.status).end();
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hilt-notices`;
    return this;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

const hmac = (body: string) => `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;

async function counter(api: Client, line: string): Promise<number> {
  const found = (await must(api.get('/metrics'))).text.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.split(' ').pop()) : 0;
}

describe('the maintenance pool', function () {
  this.timeout(60_000);
  let receiver: Receiver;
  let ts: TestServer;
  let api: Client;
  let dir: string;
  const CLEANER = { user: 'cleaner', password: 'cleaner-Pw-77' };

  const pool = () => ({ maintenanceProject: 'maint', maintenanceUrl: receiver.url, maintenanceSecret: SECRET });

  before(async () => {
    receiver = await new Receiver().start();
    // The pool's project is made before the pool is set: a start with a pool it cannot find stops.
    const first = await startTestServer();
    dir = first.dataDir;
    await must(first.api.put('/project/maint'));
    await must(first.api.put('/project/p1'));
    await makeUser(first.api, CLEANER.user, CLEANER.password, ['maint']);
    for (const n of ['n1', 'n2']) await must(first.api.put(`/node/${n}`, { obm: obm(`bmc-${n}`) }));
    await stopTestServer(first, false);
    ts = await startTestServer(pool(), {}, dir);
    api = ts.api;
  });
  after(async () => {
    if (ts) await stopTestServer(ts);
    await receiver.close();
  });

  it('refuses a start with the project or the URL alone, or with a project that does not exist', async () => {
    expect(() => loadConfig({ HILT_MAINTENANCE_PROJECT: 'maint' })).to.throw(/HILT_MAINTENANCE_PROJECT and HILT_MAINTENANCE_URL go together/);
    expect(() => loadConfig({ HILT_MAINTENANCE_URL: 'http://127.0.0.1:9/x' })).to.throw(/go together/);
    expect(() => loadConfig({ HILT_MAINTENANCE_PROJECT: 'maint', HILT_MAINTENANCE_URL: 'ftp://127.0.0.1/x' })).to.throw(/http/);
    // Credentials that cannot be percent-decoded for basic authentication: said at once, without them.
    for (const url of ['http://cleaner:50%off@127.0.0.1/x', 'http://cl%zzner:pw@127.0.0.1/x']) {
      expect(() => loadConfig({ HILT_MAINTENANCE_PROJECT: 'maint', HILT_MAINTENANCE_URL: url })).to.throw(/^HILT_MAINTENANCE_URL has a user or password whose percent-encoding is malformed/);
    }
    const missing = /HILT_MAINTENANCE_PROJECT names the project "nowhere", which does not exist/;
    if (TEST_STORAGE !== 'postgres') {
      let err: Error | undefined;
      await startTestServer({ maintenanceProject: 'nowhere', maintenanceUrl: receiver.url }).catch((e: Error) => (err = e));
      expect(err?.message).to.match(missing);
      return;
    }
    // A process of a standby pair does not stop: it cannot activate, stands by and says why in its log.
    const logs: string[] = [];
    const standby = await startTestServer({ maintenanceProject: 'nowhere', maintenanceUrl: receiver.url }, { waitForActive: false, logger: { level: 'info', stream: { write: (l: string) => void logs.push(l) } } });
    try {
      const said = () => logs.map((l) => JSON.parse(l) as { msg?: string; err?: string }).some((l) => l.msg === 'could not activate; standing by' && missing.test(l.err ?? ''));
      await until('the log says why', said, 20_000);
      expect(standby.role).to.equal('standby');
    } finally {
      await stopTestServer(standby);
    }
  });

  it('a release moves the node into the pool and POSTs exactly one signed notice; the pool frees it', async () => {
    receiver.got.length = 0;
    const quarantines = await counter(api, 'hilt_node_quarantines_total');
    await must(api.post('/project/p1/connect_node', { node: 'n1' }));
    await must(api.post('/node/n1/power_on'));
    await must(api.post('/project/p1/detach_node', { node: 'n1' }));
    // Never free in between: the release's own commit put it into the pool.
    expect((await must(api.get('/nodes/free'))).body).to.not.include('n1');
    expect((await must(api.get('/project/maint/nodes'))).body).to.deep.equal(['n1']);
    expect((await must(api.get('/node/n1'))).body.project).to.equal('maint');
    await until('the notice arrives', () => receiver.got.length === 1);
    const [notice] = receiver.got;
    expect(JSON.parse(notice.body)).to.deep.equal({ node: 'n1' });
    expect(notice.headers['content-type']).to.equal('application/json');
    expect(notice.headers['x-hilt-signature']).to.equal(hmac(notice.body));
    await until('the node is off', () => ts.mockObm.state('bmc-n1').power === 'off');
    await until('the delivery is recorded', async () => (await must(api.get('/admin/maintenance'))).body[0]?.delivered_at !== null);
    const [entry] = (await must(api.get('/admin/maintenance'))).body;
    expect(entry).to.deep.include({ node: 'n1', from: 'p1', attempts: 0, last_error: null });
    expect(await counter(api, 'hilt_node_quarantines_total')).to.equal(quarantines + 1);
    expect(await counter(api, 'hilt_maintenance_deliveries_total{outcome="ok"}')).to.be.at.least(1);
    // The maintenance service cleans the node, then frees it: no notice for that release.
    await must(api.post('/project/maint/detach_node', { node: 'n1' }, { as: CLEANER }));
    expect((await must(api.get('/nodes/free'))).body).to.include('n1');
    expect((await must(api.get('/admin/maintenance'))).body).to.deep.equal([]);
    // A repeat of the notice (a crash between POST and record) is answered 409 by the pool's detach.
    expect((await api.post('/project/maint/detach_node', { node: 'n1' }, { as: CLEANER })).status).to.equal(409);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.got).to.have.length(1);
    // The journal tells the story, the service's own steps as `hilt`.
    const journal = (await must(api.get('/admin/actors/node/n1/journal'))).body as { by: string; event: { type: string } }[];
    const types = journal.map((e) => `${e.event.type} ${e.by}`).reverse();
    expect(types).to.include.members(['NodeReleased admin', 'MaintenanceNoticeDelivered hilt', 'NodeReleased cleaner']);
  });

  it('the pool\'s project cannot be deleted while it is the pool', async () => {
    const r = await api.del('/project/maint');
    expect(r.status).to.equal(409);
    expect(r.body.msg).to.match(/maintenance pool/);
  });

  it('a receiver that refuses for a while gets the notice after a restart of hilt in between', async () => {
    receiver.got.length = 0;
    receiver.status = 503;
    await must(api.post('/project/p1/connect_node', { node: 'n2' }));
    await must(api.post('/project/p1/detach_node', { node: 'n2' }));
    await until('two refused POSTs', async () => (await must(api.get('/admin/maintenance'))).body[0]?.attempts >= 2, 15_000);
    const [entry] = (await must(api.get('/admin/maintenance'))).body;
    expect(entry).to.deep.include({ node: 'n2', delivered_at: null, last_error: 'the maintenance service answered 503' });
    expect((await must(api.get('/admin/nodes/attention'))).body.map((a: { node: string; problem: string }) => `${a.node} ${a.problem}`)).to.include('n2 maintenance_notice');
    await stopTestServer(ts, false);
    const refused = receiver.got.length;
    receiver.status = 204;
    ts = await startTestServer(pool(), {}, dir);
    api = ts.api;
    await until('the notice arrives after the restart', () => receiver.got.length === refused + 1);
    const last = receiver.got[receiver.got.length - 1];
    expect(JSON.parse(last.body)).to.deep.equal({ node: 'n2' });
    expect(last.headers['x-hilt-signature']).to.equal(hmac(last.body));
    await until('the delivery is recorded', async () => (await must(api.get('/admin/maintenance'))).body[0]?.delivered_at !== null);
    expect((await must(api.get('/admin/nodes/attention'))).body).to.deep.equal([]);
    expect((await must(api.get('/project/maint/nodes'))).body).to.deep.equal(['n2']);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.got.length).to.equal(refused + 1);
  });
});

describe('the maintenance pool: a receiver that does not answer, credentials in the URL', function () {
  this.timeout(60_000);
  const URL_PASSWORD = 'url-Pass-w0rd-91';
  addSecret(URL_PASSWORD);
  const got: Received[] = [];
  /** POSTs it leaves unanswered before it answers 200 */
  let silent = 2;
  let receiver: Server;
  let ts: TestServer | undefined;

  before(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        got.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
        if (silent-- > 0) return; // no answer: hilt's timeout ends the POST
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  });
  after(async () => {
    if (ts) await stopTestServer(ts);
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  });

  it('retries a POST that gets no answer within HILT_MAINTENANCE_TIMEOUT_MS, sends the URL\'s credentials as basic authentication and logs them nowhere', async () => {
    const dataDir = await poolFolder(['t1']);
    const logs: string[] = [];
    const port = (receiver.address() as AddressInfo).port;
    ts = await startTestServer(
      { maintenanceProject: 'maint', maintenanceUrl: `http://cleaner:${encodeURIComponent(URL_PASSWORD)}@127.0.0.1:${port}/notices`, maintenanceTimeoutMs: 400 },
      { logger: { level: 'info', stream: { write: (l: string) => void logs.push(l) } } },
      dataDir,
    );
    const api = ts.api;
    await must(api.post('/project/p1/connect_node', { node: 't1' }));
    await must(api.post('/project/p1/detach_node', { node: 't1' }));
    await until('the notice is taken', async () => (await must(api.get('/admin/maintenance'))).body[0]?.delivered_at !== null, 20_000);
    const [entry] = (await must(api.get('/admin/maintenance'))).body;
    expect(entry).to.deep.include({ node: 't1', attempts: 2, last_error: 'the maintenance service did not answer within 400 ms' });
    expect(got).to.have.length(3);
    for (const g of got) {
      expect(JSON.parse(g.body)).to.deep.equal({ node: 't1' });
      expect(g.headers.authorization).to.equal(`Basic ${Buffer.from(`cleaner:${URL_PASSWORD}`).toString('base64')}`);
      expect(g.headers['x-hilt-signature'], 'no secret: no signature').to.equal(undefined);
    }
    expect(await counter(api, 'hilt_maintenance_deliveries_total{outcome="error"}')).to.equal(2);
    expect(logs.join('\n')).to.include('could not notify the maintenance service');
    expect(logs.join('\n')).to.not.include(URL_PASSWORD);
    expect(logs.join('\n')).to.not.include(encodeURIComponent(URL_PASSWORD));
  });
});

describe('the maintenance pool: a node back in the pool while the POST of its earlier notice is in flight', function () {
  this.timeout(60_000);
  const got: string[] = [];
  /** answers held back while `hold` is set */
  const held: ServerResponse[] = [];
  let hold = true;
  let receiver: Server;
  let ts: TestServer | undefined;

  before(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        got.push(Buffer.concat(chunks).toString('utf8'));
        if (hold) held.push(res);
        else res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  });
  after(async () => {
    if (ts) await stopTestServer(ts);
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  });

  it('POSTs the new notice once the earlier POST ends', async () => {
    const dataDir = await poolFolder(['r1']);
    const port = (receiver.address() as AddressInfo).port;
    ts = await startTestServer({ maintenanceProject: 'maint', maintenanceUrl: `http://127.0.0.1:${port}/notices`, maintenanceTimeoutMs: 5000 }, {}, dataDir);
    const api = ts.api;
    await must(api.post('/project/p1/connect_node', { node: 'r1' }));
    await must(api.post('/project/p1/detach_node', { node: 'r1' }));
    await until('the first POST is in flight', () => got.length === 1);
    // Freed from the pool (by an operator, or by the maintenance service before it answers), reserved and released again.
    await must(api.post('/project/maint/detach_node', { node: 'r1' }));
    await must(api.post('/project/p1/connect_node', { node: 'r1' }));
    await must(api.post('/project/p1/detach_node', { node: 'r1' }));
    expect((await must(api.get('/project/maint/nodes'))).body).to.deep.equal(['r1']);
    // The first POST is answered now: the new notice's delivery, which found it in flight, follows.
    hold = false;
    for (const res of held.splice(0)) res.writeHead(200).end();
    await until('the new notice is POSTed', () => got.length === 2);
    await until('the new notice is recorded as taken', async () => (await must(api.get('/admin/maintenance'))).body[0]?.delivered_at !== null);
    expect(got.map((b) => JSON.parse(b))).to.deep.equal([{ node: 'r1' }, { node: 'r1' }]);
  });
});

describe('the maintenance pool moved to another project (HILT_MAINTENANCE_PROJECT changed)', function () {
  this.timeout(60_000);
  let receiver: Receiver;
  let ts: TestServer | undefined;
  before(async () => {
    receiver = await new Receiver().start();
  });
  after(async () => {
    if (ts) await stopTestServer(ts);
    await receiver.close();
  });

  it('POSTs no notice left by the earlier pool: its node is not in this pool; a release into this pool is POSTed', async () => {
    const dataDir = await poolFolder(['s1']);
    const first = await startTestServer({}, {}, dataDir);
    await must(first.api.put('/project/maint2'));
    await stopTestServer(first, false);
    // In the pool of `maint`, its notice refused so far.
    receiver.status = 503;
    ts = await startTestServer({ maintenanceProject: 'maint', maintenanceUrl: receiver.url }, {}, dataDir);
    await must(ts.api.post('/project/p1/connect_node', { node: 's1' }));
    await must(ts.api.post('/project/p1/detach_node', { node: 's1' }));
    await until('a refused POST', async () => (await must(ts!.api.get('/admin/maintenance'))).body[0]?.attempts >= 1);
    await stopTestServer(ts, false);
    // The pool is `maint2` now: s1 stays in `maint`, an ordinary project, which the receiver cannot free it from.
    receiver.status = 200;
    receiver.got.length = 0;
    ts = await startTestServer({ maintenanceProject: 'maint2', maintenanceUrl: receiver.url }, {}, dataDir);
    const api = ts.api;
    await sleep(1500);
    expect(receiver.got.map((r) => r.body), 'POSTs for a node outside the pool').to.deep.equal([]);
    expect((await must(api.get('/node/s1'))).body.project).to.equal('maint');
    // Released from `maint`, it enters this pool: that notice goes.
    await must(api.post('/project/maint/detach_node', { node: 's1' }));
    expect((await must(api.get('/node/s1'))).body.project).to.equal('maint2');
    await until('the notice of the release into this pool', () => receiver.got.length === 1);
    expect(JSON.parse(receiver.got[0].body)).to.deep.equal({ node: 's1' });
  });
});

describe('the maintenance pool: a delivery while the process may not act for a moment (the lease)', function () {
  this.timeout(20_000);
  let receiver: Receiver;
  before(async () => {
    receiver = await new Receiver().start();
  });
  after(() => receiver.close());

  it('is tried again, and the notice POSTed once the process may act again; close() ends the retries', async () => {
    const base: NodeState = { name: 'z1', incarnation: 'i1', project: 'p1', obm: { type: 'mock', fields: {} } };
    const node: NodeState = { ...base, project: 'maint', maintenance: { from: 'p1', since: 1000, attempts: 0 } };
    const rm = { nodes: new Map([['z1', node]]), maintenanceNotices: new Map([['z1', node.maintenance!]]) } as unknown as ReadModel;
    let may = false;
    let asked = 0;
    const deliveries = () => new MaintenanceDeliveries(
      { project: 'maint', url: receiver.url, timeoutMs: 2000 },
      { rm, nodes: { ask: async () => undefined } as never, telemetry: NO_LIFECYCLE_TELEMETRY, log: NO_LOG, mayAct: () => (asked++, may) },
    );
    // The renewal of the lease in flight: mayAct false for a moment, the process still active.
    const m = deliveries();
    try {
      m.watch('z1', base, node);
      await until('the delivery found it may not act', () => asked === 1);
      expect(m.scheduled('z1'), 'the notice waits for a retry').to.equal(true);
      may = true;
      await until('the notice is POSTed', () => receiver.got.length === 1, 5000);
    } finally {
      m.close();
    }
    // Stepping down (close()) ends the retries.
    may = false;
    asked = 0;
    const gone = deliveries();
    gone.watch('z1', base, node);
    await until('the delivery found it may not act', () => asked === 1);
    gone.close();
    expect(gone.scheduled('z1'), 'a retry after close()').to.equal(false);
  });
});
