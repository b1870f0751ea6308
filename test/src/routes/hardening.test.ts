/**
 * Issue 11 over HTTP: a storage fault answers at once and frees the project (item 1); one name
 * rule for every name in paths, bodies and query strings, and errors that quote only a prefix of
 * a bad input (item 2); any data folder path (item 3).
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, mockSwitch, obm, MOCK_OBM } from '../../helpers/server';
import { FaultInjectingEngine } from '../../helpers/faulty-engine';
import { loggerOptions } from '../../../src/redact';
import { startServerProcess } from '../../helpers/process';

const LONG = 'x'.repeat(3000);
/** 255 bytes: the longest name; 256: one too many */
const MAX_ASCII = 'n'.repeat(255);
const MAX_UTF8 = 'é'.repeat(127) + 'n'; // 127 × 2 + 1 = 255 bytes
const OVER_UTF8 = 'é'.repeat(128); // 256 bytes, 128 characters
/** outside the BMP: sorts after U+FFFF in LMDB's byte order */
const MAX_ASTRAL = '😀'.repeat(63) + 'nnn';
const enc = encodeURIComponent;

function expectShortError(r: { status: number; body: any; text: string }, status: number, type: string): void {
  expect(r.status, r.text.slice(0, 300)).to.equal(status);
  expect(r.body).to.have.keys('type', 'msg');
  expect(r.body.type).to.equal(type);
  // Never more than a short prefix of the bad input (a list of the valid choices aside, which
  // grows with the drivers).
  const own = r.body.msg.replace(/ \(known: [^)]*\)$/, '');
  expect(own.length, r.body.msg.slice(0, 200)).to.be.below(400);
  expect(r.body.msg).to.not.include('x'.repeat(100));
}

describe('hardening: a storage fault answers at once and frees the project (HTTP)', function () {
  this.timeout(30_000);
  let ts: TestServer;
  let engine: FaultInjectingEngine;
  const lines: string[] = [];

  before(async () => {
    ts = await startTestServer(
      { logLevel: 'info' },
      { logger: loggerOptions('info', { write: (l: string) => void lines.push(l) }), wrapEngine: (e) => (engine = new FaultInjectingEngine(e)) },
    );
    await must(ts.api.put('/project/P'));
    await makeNode(ts.api, 'n1');
    await makeNode(ts.api, 'n2');
  });
  after(() => stopTestServer(ts));

  it('answers a call whose node cannot be read from storage in under a second (503), and the project answers at once', async () => {
    // The node is asleep: the next message must read it from storage, which now throws.
    await new Promise((r) => setTimeout(r, 20));
    ts.world.nodes.sleep(['n1']);
    expect(ts.world.nodes.isLive('n1')).to.equal(false);
    engine.failing.add('node:n1');
    const t0 = Date.now();
    const [faulty, other] = await Promise.all([
      ts.api.post('/project/P/connect_node', { node: 'n1' }),
      // queued behind it in P's mailbox
      ts.api.post('/project/P/connect_node', { node: 'n2' }),
    ]);
    expect(Date.now() - t0).to.be.below(1000);
    expectShortError(faulty, 503, 'ServiceUnavailableError');
    expect(other.status, other.text).to.equal(200);
    // P's mailbox is free: a call through it answers at once.
    const t1 = Date.now();
    await must(ts.api.put('/network/pw', { owner: 'P', access: 'P', net_id: '' }));
    expect(Date.now() - t1).to.be.below(1000);
    // The fault was logged with the thrown error's stack.
    const fault = lines.map((l) => JSON.parse(l)).find((l) => /an actor failed/.test(l.msg));
    expect(fault, lines.join('\n')).to.not.equal(undefined);
    expect(fault.actor).to.equal('node:n1');
    expect(fault.phase).to.equal('recovery');
    expect(fault.err.stack).to.include('RangeError').and.to.include('faulty-engine');
    // Restarted cleanly once storage reads again.
    engine.failing.delete('node:n1');
    await must(ts.api.post('/project/P/connect_node', { node: 'n1' }));
    expect((await ts.api.get('/project/P/nodes')).body).to.have.members(['n1', 'n2']);
  });

  it('answers a bug in an actor (an event it cannot replay) with a 500 at once, logged with the stack of what was thrown', async () => {
    await makeNode(ts.api, 'buggy');
    await new Promise((r) => setTimeout(r, 20));
    ts.world.nodes.sleep(['buggy']);
    engine.corrupt.add('node:buggy');
    const t0 = Date.now();
    const r = await ts.api.post('/project/P/connect_node', { node: 'buggy' });
    expect(Date.now() - t0).to.be.below(1000);
    expect(r.status, r.text).to.equal(500);
    expect(r.body).to.deep.equal({ type: 'ServerError', msg: 'internal error; see the service log' });
    const logged = lines.map((l) => JSON.parse(l)).filter((l) => l.level >= 50 && JSON.stringify(l).includes('NoSuchEvent'));
    expect(logged.length, lines.slice(-5).join('\n')).to.be.at.least(1);
    // The log line of the 500 carries where it was thrown: the node's apply.
    expect(logged.some((l) => /node[\\/]state\.ts/.test(l.err?.stack ?? '')), JSON.stringify(logged[0]).slice(0, 500)).to.equal(true);
    engine.corrupt.delete('node:buggy');
    await must(ts.api.post('/project/P/connect_node', { node: 'buggy' }));
  });

  it('answers a name too long for storage with a 404 at once, quoting a prefix of it (the issue\'s 3,000 characters)', async () => {
    const t0 = Date.now();
    const r = await ts.api.post('/project/P/connect_node', { node: LONG });
    expect(Date.now() - t0).to.be.below(1000);
    expectShortError(r, 404, 'NotFoundError');
    expect(r.body.msg).to.match(/^node "x{64}"… \(3000 characters\) does not exist$/);
    await must(ts.api.put('/project/P2'));
  });
});

describe('hardening: a nic deleted while wired is deleted whole, even if the service stops halfway', function () {
  this.timeout(30_000);

  it('frees the port at the next start when the nic\'s deletion was stored but its port\'s was not', async () => {
    let engine!: FaultInjectingEngine;
    let ts = await startTestServer({}, { wrapEngine: (e) => (engine = new FaultInjectingEngine(e)) });
    await makeNode(ts.api, 'dn', ['e0']);
    await must(ts.api.put('/switch/ds', mockSwitch));
    await must(ts.api.put('/switch/ds/port/gi1/0/1'));
    await must(ts.api.post('/switch/ds/port/gi1/0/1/connect_nic', { node: 'dn', nic: 'e0' }));
    // The port's write fails: the state a crash between the two writes leaves.
    engine.failingWrites.add('port:ds/gi1%2F0%2F1');
    const r = await ts.api.del('/node/dn/nic/e0');
    expect(r.status, r.text).to.equal(503);
    expect((await ts.api.get('/node/dn')).body.nics).to.deep.equal([]);
    await stopTestServer(ts, false);
    ts = await startTestServer({}, {}, ts.dataDir);
    expect((await ts.api.get('/switch/ds/port/gi1/0/1')).body).to.deep.equal({});
    expect((await ts.api.get('/node/dn')).body.nics).to.deep.equal([]);
    await must(ts.api.put('/node/dn/nic/e0', { macaddr: 'm' }));
    await must(ts.api.post('/switch/ds/port/gi1/0/1/connect_nic', { node: 'dn', nic: 'e0' }));
    await stopTestServer(ts);
  });
});

describe('hardening: one name rule for every name, everywhere', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;

  before(async () => {
    ts = await startTestServer({ headnodeDriver: 'mock' });
    api = ts.api;
    await must(api.put('/project/p'));
    await makeNode(api, 'n', ['eth0']);
    await must(api.put('/switch/s', mockSwitch));
    await must(api.put('/switch/s/port/gi1/0/1'));
    await must(api.put('/network/w', { owner: 'p', access: 'p', net_id: '' }));
    await must(api.put('/auth/basic/user/u', { password: 'u-pw' }));
    await must(api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
    await must(api.put('/headnode/h/hnic/e'));
  });
  after(() => stopTestServer(ts));

  /**
   * Every name in a body that looks an object up, by call: [method, path, body with BAD where the
   * name goes]. Looked up as given (docs/api-conventions.md §1): one that cannot exist is unknown.
   */
  const BAD = Symbol('bad');
  const LOOKUPS: [string, string, Record<string, unknown>][] = [
    ['POST', '/project/p/connect_node', { node: BAD }],
    ['POST', '/project/p/detach_node', { node: BAD }],
    ['PUT', '/network/w2', { owner: BAD, access: '', net_id: '' }],
    ['PUT', '/network/w2', { owner: 'admin', access: BAD, net_id: '' }],
    ['POST', '/node/n/nic/eth0/connect_network', { network: BAD }],
    ['POST', '/node/n/nic/eth0/detach_network', { network: BAD }],
    ['PUT', '/headnode/h2', { project: BAD, base_img: 'base-headnode' }],
    ['POST', '/headnode/h/hnic/e/connect_network', { network: BAD }],
    ['POST', '/switch/s/port/gi1/0/1/connect_nic', { node: BAD, nic: 'eth0' }],
    ['POST', '/switch/s/port/gi1/0/1/connect_nic', { node: 'n', nic: BAD }],
    ['POST', '/auth/basic/user/u/add_project', { project: BAD }],
    ['POST', '/auth/basic/user/u/remove_project', { project: BAD }],
    ['POST', '/admin/node/n/nic/eth0/force_detach', { network: BAD }],
  ];
  /** Names in a body that name something new (or an image): the name rule holds, 400. */
  const CREATIONS: [string, string, Record<string, unknown>][] = [
    ['PUT', '/headnode/h2', { project: 'p', base_img: BAD }],
    ['PUT', '/node/n3', { obm: obm(), metadata: { [BAD as unknown as string]: 1 } }],
  ];
  const BAD_NAMES: [string, string][] = [
    ['3,000 characters', LONG], ['256 bytes of UTF-8 (128 characters)', OVER_UTF8], ['a control character', 'a\u0001b'],
    ['a C1 control character', 'a\u0085b'], ['a lone surrogate', 'a\ud800b'], ['DEL', 'a\u007f'], ['nothing (the empty string)', ''],
  ];
  const withBad = (path: string, body: Record<string, unknown>, bad: string) => (path === '/node/n3'
    ? JSON.stringify({ obm: obm(), metadata: { [bad]: 1 } })
    : JSON.stringify(body, (_k, v) => (v === BAD ? bad : v)).replace('"Symbol(bad)"', JSON.stringify(bad)));

  for (const [what, bad] of BAD_NAMES) {
    it(`looks up a name of ${what} in every body that names an existing object: unknown (404; 401 without credentials; a lone surrogate 400), nothing changed`, async () => {
      const before = await snapshot();
      for (const [method, path, body] of LOOKUPS) {
        // network_create's access "" is a public network, not a lookup.
        if (bad === '' && body.access === BAD) continue;
        const raw = withBad(path, body, bad);
        // A lone surrogate is no text at all: the body is refused before anything is looked up.
        if (/\p{Cs}/u.test(bad)) {
          expectShortError(await api.call(method, path, { raw }), 400, 'BadArgumentError');
          expectShortError(await api.call(method, path, { raw, as: null }), 400, 'BadArgumentError');
          continue;
        }
        expectShortError(await api.call(method, path, { raw }), 404, 'NotFoundError');
        expectShortError(await api.call(method, path, { raw, as: null }), 401, 'AuthorizationError');
      }
      expect(await snapshot()).to.deep.equal(before);
    });
    if (bad !== '') {
      it(`refuses a name with ${what} where a body names something new (400, before authentication)`, async () => {
        for (const [method, path, body] of CREATIONS) {
          for (const as of [undefined, null]) {
            const r = await api.call(method, path, { raw: withBad(path, body, bad), as });
            expectShortError(r, 400, 'BadArgumentError');
            expect(r.body.msg, `${method} ${path}`).to.match(/\p{Cs}/u.test(bad) ? /lone surrogate/ : /must be a name/);
          }
        }
      });
    }
  }

  /** What the lookups could have changed. */
  async function snapshot(): Promise<unknown> {
    return Promise.all(['/node/n', '/network/w', '/headnode/h', '/switch/s', '/projects', '/networks', '/project/p/nodes', '/nodes/free'].map(async (p) => (await api.get(p)).body));
  }

  it('refuses such names in every path and in the query string (400)', async () => {
    const paths = (x: string) => [
      ['PUT', `/project/${x}`], ['PUT', `/node/${x}`], ['PUT', `/node/n/nic/${x}`], ['PUT', `/switch/${x}`], ['PUT', `/switch/s/port/${x}`],
      ['PUT', `/network/${x}`], ['PUT', `/auth/basic/user/${x}`], ['PUT', `/headnode/${x}`], ['PUT', `/headnode/h/hnic/${x}`],
      ['PUT', `/node/n/metadata/${x}`], ['GET', `/node/${x}`], ['GET', `/network/w/attachments?project=${x}`],
      ['POST', `/switch/s/port/${x}/connect_nic`], ['GET', `/admin/actors/node/${x}`], ['GET', `/admin/actors/nic/n/${x}`],
    ];
    for (const bad of [OVER_UTF8, 'a\u0001b', 'a\u0085b']) {
      for (const [method, path] of paths(enc(bad))) {
        const r = await api.call(method, path, { body: path.includes('/node/') && method === 'PUT' && !path.includes('/nic/') && !path.includes('metadata') ? { obm: obm() } : undefined });
        expect(r.status, `${method} ${path}: ${r.text}`).to.equal(400);
        expect(r.body.type).to.equal('BadArgumentError');
      }
    }
  });

  it('accepts the longest names (255 bytes, ASCII or not) for every kind, and they survive a restart', async () => {
    for (const x of [MAX_ASCII, MAX_UTF8, MAX_ASTRAL]) {
      const e = enc(x);
      await must(api.put(`/project/${e}`));
      await must(api.put(`/node/${e}`, { obm: obm(), metadata: { [x]: 'v' } }));
      await must(api.put(`/node/${e}/nic/${e}`, { macaddr: 'm' }));
      await must(api.put(`/switch/${e}`, mockSwitch));
      await must(api.put(`/switch/${e}/port/gi9/9/9`));
      await must(api.post(`/switch/${e}/port/gi9/9/9/connect_nic`, { node: x, nic: x }));
      await must(api.put(`/network/${e}`, { owner: x, access: x, net_id: '' }));
      await must(api.put(`/auth/basic/user/${e}`, { password: 'pw' }));
      await must(api.post(`/auth/basic/user/${e}/add_project`, { project: x }));
      await must(api.put(`/headnode/${e}`, { project: x, base_img: 'base-headnode' }));
      await must(api.put(`/headnode/${e}/hnic/${e}`));
      await must(api.put(`/node/${e}/metadata/${e}`, { value: 1 }));
      await must(api.post(`/project/${e}/connect_node`, { node: x }));
      const op = await must(api.post(`/node/${e}/nic/${e}/connect_network`, { network: x }), 202);
      // A status id of two long names is longer than a name: it still resolves.
      expect(op.body.status_id.length).to.be.above(255);
      for (let i = 0; i < 100 && (await api.get(`/networking_action/${op.body.status_id}`)).body.status === 'PENDING'; i++) await new Promise((r) => setTimeout(r, 20));
      expect((await must(api.get(`/networking_action/${op.body.status_id}`))).body.status).to.equal('DONE');
      expect((await must(api.get(`/network/${e}/attachments?project=${e}`))).body).to.have.keys(x);
      expect((await must(api.get(`/admin/actors/nic/${e}/${e}`))).body.id).to.be.a('string');
    }
    // The worst case for storage keys: names of `%` and `/`, which ids escape to three bytes each.
    const pct = '%'.repeat(255);
    const slash = '/'.repeat(255);
    await must(api.put(`/node/${enc(pct)}`, { obm: obm() }));
    await must(api.put(`/node/${enc(pct)}/nic/${enc(slash)}`, { macaddr: 'm' }));
    await must(api.put(`/node/${enc(slash)}`, { obm: obm() }));
    await must(api.put(`/node/${enc(slash)}/nic/${enc(pct)}`, { macaddr: 'm' }));
    const before = await Promise.all([MAX_ASCII, MAX_UTF8, MAX_ASTRAL, pct, slash].map((x) => api.get(`/node/${enc(x)}`)));
    const names = (b: unknown) => (Array.isArray(b) ? b : Object.keys(b as object)).sort();
    const lists = (await Promise.all(['/projects', '/nodes/all', '/switches', '/networks'].map((p) => api.get(p)))).map((r) => names(r.body));
    await stopTestServer(ts, false);
    ts = await startTestServer({ headnodeDriver: 'mock' }, {}, ts.dataDir);
    api = ts.api;
    const after = await Promise.all([MAX_ASCII, MAX_UTF8, MAX_ASTRAL, pct, slash].map((x) => api.get(`/node/${enc(x)}`)));
    expect(after.map((r) => r.body)).to.deep.equal(before.map((r) => r.body));
    // The read models are rebuilt with every name (an emoji first sorted past the range's end).
    expect((await Promise.all(['/projects', '/nodes/all', '/switches', '/networks'].map((p) => api.get(p)))).map((r) => names(r.body))).to.deep.equal(lists);
    expect((await api.get('/nodes/all')).body).to.include(MAX_ASTRAL);
    expect(after[0].body.nics[0].label).to.equal(MAX_ASCII);
    // Actors read from storage again (not only the read models) still answer.
    await must(api.del(`/node/${enc(pct)}/nic/${enc(slash)}`));
    await must(api.del(`/node/${enc(pct)}`));
  });

  it('quotes at most a short prefix of a bad input in every error message', async () => {
    expectShortError(await api.get(`/no/such/${LONG}`), 404, 'NotFoundError');
    expectShortError(await api.get(`/node/%zz${LONG}`), 400, 'BadArgumentError');
    expectShortError(await api.put('/node/n/boot_device', { bootdev: LONG }), 400, 'BadArgumentError');
    expectShortError(await api.put('/network/w3', { owner: 'admin', access: '', net_id: LONG }), 400, 'BadArgumentError');
    expectShortError(await api.put('/network/w3', { owner: 'admin', access: '', net_id: 'x'.repeat(60) }), 400, 'BadArgumentError');
    expectShortError(await api.put('/switch/s9', { ...mockSwitch, type: LONG }), 400, 'BadArgumentError');
    expectShortError(await api.put('/node/n9', { obm: { ...obm(), type: LONG } }), 400, 'BadArgumentError');
    expectShortError(await api.post('/switch/s/port/gi1/0/1/connect_nic', { node: 'n', nic: 'eth0', [LONG]: 1 }), 400, 'BadArgumentError');
    expectShortError(await api.put(`/switch/s/port/x${'x'.repeat(200)}`), 400, 'BadArgumentError');
    expectShortError(await api.put(`/node/n9`, { obm: { type: MOCK_OBM, host: 'h', user: 'u', password: 'p', [LONG]: 1 } }), 400, 'BadArgumentError');
    expectShortError(await api.get(`/admin/actors/node/${LONG.slice(0, 1500)}/x/y`), 404, 'NotFoundError');
    expectShortError(await api.put('/headnode/h3', { project: 'p', base_img: 'x'.repeat(200) }), 400, 'BadArgumentError');
  });
});

describe('hardening: any data folder path', function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-dir-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('opens a folder whose name has a dot (hilt.d, data.mdb), creating it 0700, in-process and as `npm start` does', async () => {
    for (const name of ['hilt.d', 'data.mdb', 'a.b/c.d']) {
      const d = join(dir, name);
      let ts = await startTestServer({}, {}, d);
      await must(ts.api.put('/project/kept'));
      await must(ts.api.put('/switch/s', mockSwitch));
      await stopTestServer(ts, false);
      expect(statSync(d).isDirectory()).to.equal(true);
      expect(statSync(d).mode & 0o777, d).to.equal(0o700);
      ts = await startTestServer({}, {}, d);
      expect((await ts.api.get('/projects')).body).to.deep.equal(['kept']);
      await stopTestServer(ts, false);
    }
    const d = join(dir, 'proc.d');
    const p = await startServerProcess({ HILT_DATA_DIR: d, HILT_ADMIN_USER: 'root', HILT_ADMIN_PASSWORD: 'root-pw' });
    await must(new Client(p.url, { user: 'root', password: 'root-pw' }).put('/project/x'));
    p.child.kill('SIGTERM');
    expect(await p.exited).to.equal(0);
    expect(statSync(d).mode & 0o777).to.equal(0o700);
  });
});
