/**
 * The dashboard over HTTP (its browser tests are in test/ui/): the page and its assets, login
 * and the session cookie (Secure over built-in HTTPS and behind a trusted proxy's HTTPS only),
 * CSRF and origin checks on every change, what a member may read, the actions through the
 * API's own routes, and that the bridge the actions use cannot be forged.
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpsRequest } from 'node:https';
import { makeCertificate } from '../../helpers/redfish-sim';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, makeUser, mockSwitch, Res, ADMIN, basic, obm, finished } from '../../helpers/server';
import { request as httpRequest } from 'node:http';
import WebSocket from 'ws';
import { UiSessions } from '../../../src/ui/sessions';
import { ReadModel } from '../../../actors/readmodel';
import { SseStream } from '../../helpers/sse';
import { until } from '../../helpers/wait';
import { watch } from '../../helpers/console-ws';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A dashboard client: keeps the session cookie, sends the CSRF token on changes. */
class Browser {
  cookie = '';
  csrf = '';
  constructor(readonly api: Client) {}
  private headers(extra: Record<string, string> = {}) {
    return { ...(this.cookie ? { cookie: this.cookie } : {}), ...extra };
  }
  async login(user: string, password: string, extra: Record<string, string> = {}): Promise<Res> {
    const r = await this.api.call('POST', '/ui/api/login', { as: null, body: { user, password }, headers: extra });
    const set = r.headers['set-cookie'];
    if (r.status === 200 && set) {
      this.cookie = String([set].flat()[0]).split(';')[0];
      this.csrf = r.body.csrf;
    }
    return r;
  }
  get(path: string): Promise<Res> {
    return this.api.call('GET', path, { as: null, headers: this.headers() });
  }
  post(path: string, body?: unknown, extra: Record<string, string> = {}, csrf = true): Promise<Res> {
    return this.api.call('POST', path, { as: null, body, headers: this.headers({ ...(csrf ? { 'x-csrf-token': this.csrf } : {}), ...extra }) });
  }
}

describe('the dashboard over HTTP (/ui)', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  before(async () => {
    ts = await startTestServer({ headnodeDriver: 'mock', mockSwitchFailPorts: ['s1/gi1/0/9'] });
    api = ts.api;
    await must(api.put('/project/p'));
    await must(api.put('/project/q'));
    await must(api.put('/switch/s1', mockSwitch));
    for (const [node, port, project] of [['n1', 'gi1/0/1', 'p'], ['n2', 'gi1/0/2', 'q']]) {
      await makeNode(api, node, ['eth0']);
      await must(api.put(`/switch/s1/port/${port}`));
      await must(api.post(`/switch/s1/port/${port}/connect_nic`, { node, nic: 'eth0' }));
      await must(api.post(`/project/${project}/connect_node`, { node }));
    }
    await makeNode(api, 'spare');
    await must(api.put('/network/wp', { owner: 'p', access: 'p', net_id: '' }));
    await must(api.put('/network/wq', { owner: 'q', access: 'q', net_id: '' }));
    await makeUser(api, 'mia', 'mia-pw', ['p']);
  });
  after(() => stopTestServer(ts));

  it('serves the page and its assets from the service, with a strict content security policy', async () => {
    const r = await api.with(null).get('/ui');
    expect(r.status).to.equal(302);
    expect(r.headers.location).to.equal('/ui/');
    const page = await api.with(null).get('/ui/');
    expect(page.status).to.equal(200);
    expect(page.headers['content-type']).to.match(/^text\/html/);
    expect(page.text).to.include('<script type="module" src="app.js"></script>');
    expect(page.headers['content-security-policy']).to.include("default-src 'none'").and.include("script-src 'self'").and.include("frame-ancestors 'none'");
    expect(page.headers['x-frame-options']).to.equal('DENY');
    expect(page.headers['strict-transport-security'], 'over plain HTTP').to.equal(undefined);
    const js = await api.with(null).get('/ui/app.js');
    expect(js.headers['content-type']).to.match(/^text\/javascript/);
    const again = await api.with(null).get('/ui/app.js', { headers: { 'if-none-match': String(js.headers.etag) } });
    expect(again.status).to.equal(304);
    expect((await api.with(null).get('/ui/app.css')).headers['content-type']).to.match(/^text\/css/);
    // Beside the API: not under /v0, not in its description.
    expect((await api.get('/v0/ui/')).status).to.equal(404);
    expect(Object.keys((await must(api.get('/openapi.json'))).body.paths).filter((p) => p.startsWith('/ui'))).to.deep.equal([]);
  });

  it('keeps in no cache what shows a secret or a console\'s output: every answer of its API, the API\'s console log; its static pages are revalidated', async () => {
    const b = new Browser(api);
    await must(b.login('admin', 'admin-secret'));
    const created = await must(b.post('/ui/api/action', { action: 'token_create', description: 'cache check' }));
    expect(created.body.token, 'the answer holds the secret').to.be.a('string');
    expect(created.headers['cache-control']).to.equal('no-store');
    for (const path of ['/ui/api/me', '/ui/api/tokens', '/ui/api/node/n1', '/ui/api/node?name=n1', '/ui/api/table/nodes', '/ui/api/table/nope']) {
      expect((await b.get(path)).headers['cache-control'], path).to.equal('no-store');
    }
    await must(b.post('/ui/api/action', { action: 'token_revoke', id: created.body.id }));
    await must(api.put('/node/spare/console'));
    try {
      const log = await must(api.get('/node/spare/console'));
      expect(log.text).to.include('mock serial console');
      expect(log.headers['cache-control'], 'the console log').to.equal('no-store');
    } finally {
      await must(api.del('/node/spare/console'));
    }
    // The pages are the same for every user and node (no output in them: it comes over the
    // WebSocket): cached, but asked again each time (no-cache with an ETag).
    for (const path of ['/ui/', '/ui/console.html']) {
      const page = await api.with(null).get(path);
      expect(page.headers['cache-control'], path).to.equal('no-cache');
      expect(page.headers.etag, path).to.be.a('string');
      expect(page.text).to.not.include('mock serial console');
    }
  });

  it('logs in with hilt\'s users: an HttpOnly, SameSite=Strict session cookie for /ui that expires; a wrong password gets none', async () => {
    const b = new Browser(api);
    const bad = await b.login('admin', 'not-the-password');
    expect(bad.status).to.equal(401);
    expect(bad.body.type).to.equal('AuthorizationError');
    expect(bad.headers['set-cookie']).to.equal(undefined);
    expect((await b.login('nobody', 'x')).status).to.equal(401);
    const ok = await b.login('admin', 'admin-secret');
    expect(ok.status).to.equal(200);
    const cookie = String([ok.headers['set-cookie']].flat()[0]);
    expect(cookie).to.match(/^hilt_ui=[A-Za-z0-9_-]{43};/);
    expect(cookie).to.match(/; Max-Age=28800(;|$)/).and.match(/; Path=\/ui(;|$)/).and.match(/; HttpOnly(;|$)/).and.match(/; SameSite=Strict(;|$)/);
    expect(cookie).to.not.match(/Secure/);
    expect(ok.body).to.include({ user: 'admin', isAdmin: true });
    expect(ok.body.csrf).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect((await b.get('/ui/api/me')).body.user).to.equal('admin');
  });

  it('refuses a request without the session cookie, or with one that ended (logout, user deleted)', async () => {
    for (const path of ['/ui/api/me', '/ui/api/summary', '/ui/api/table/nodes', '/ui/api/node/n1', '/ui/api/audit']) {
      const r = await api.with(null).get(path);
      expect(r.status, path).to.equal(401);
      expect(r.body.type).to.equal('AuthorizationError');
    }
    // Basic authentication is the API's, not the dashboard's.
    expect((await api.get('/ui/api/summary')).status).to.equal(401);
    const b = new Browser(api);
    await b.login('admin', 'admin-secret');
    expect((await b.post('/ui/api/logout')).status).to.equal(200);
    expect((await b.get('/ui/api/me')).status).to.equal(401);
    const forged = new Browser(api);
    forged.cookie = 'hilt_ui=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    expect((await forged.get('/ui/api/me')).status).to.equal(401);
    await makeUser(api, 'temp', 'temp-pw', [], true);
    const t = new Browser(api);
    await t.login('temp', 'temp-pw');
    expect((await t.get('/ui/api/me')).status).to.equal(200);
    await must(api.del('/auth/basic/user/temp'));
    expect((await t.get('/ui/api/me')).status).to.equal(401);
  });

  it('disconnects the session\'s console viewers at logout, at once', async () => {
    await must(api.put('/node/spare/console'));
    const b = new Browser(api);
    await must(b.login('admin', 'admin-secret'));
    const w = await watch(ts.url, 'spare', null, { cookie: b.cookie, origin: ts.url }, '/ui/api');
    await until('the banner', () => w.text().includes('mock serial console'));
    await must(b.post('/ui/api/logout'));
    // The viewers' periodic check (every 5 s) would find the session over too: not what this waits for.
    const closed = await Promise.race([w.closed, sleep(250).then(() => undefined)]);
    w.ws.close();
    await must(api.del('/node/spare/console'));
    expect(closed, 'closed with the logout').to.deep.equal({ code: 4403, reason: 'the dashboard session ended' });
  });

  it('ends a session at its expiry', async () => {
    const rm = new ReadModel();
    rm.users.set('u', { name: 'u', passwordHash: 'h', isAdmin: false, projects: [] });
    const sessions = new UiSessions(rm, 50);
    try {
      const s = sessions.create('u', 'h');
      expect(sessions.get(s.token)?.caller.user).to.equal('u');
      expect(sessions.get(s.token + 'x')).to.equal(undefined);
      await sleep(80);
      expect(sessions.get(s.token)).to.equal(undefined);
      expect(sessions.size()).to.equal(0);
    } finally {
      sessions.close();
    }
  });

  it('needs the CSRF token and the dashboard\'s own origin for every change', async () => {
    const b = new Browser(api);
    // A login posted by another site is refused.
    expect((await b.login('admin', 'admin-secret', { origin: 'http://evil.test' })).status).to.equal(401);
    expect((await b.login('admin', 'admin-secret', { 'sec-fetch-site': 'cross-site' })).status).to.equal(401);
    expect((await b.login('admin', 'admin-secret', { origin: ts.url, 'sec-fetch-site': 'same-origin' })).status).to.equal(200);
    const reapply = { action: 'reapply', node: 'n1', nic: 'eth0' };
    const none = await b.post('/ui/api/action', reapply, {}, false);
    expect(none.status).to.equal(401);
    expect(none.body.msg).to.match(/CSRF/);
    expect((await b.post('/ui/api/action', reapply, { 'x-csrf-token': 'wrong' }, false)).status).to.equal(401);
    expect((await b.post('/ui/api/action', reapply, { origin: 'http://evil.test' })).status).to.equal(401);
    expect((await b.post('/ui/api/logout', undefined, {}, false)).status).to.equal(401);
    const ok = await b.post('/ui/api/action', reapply, { origin: ts.url });
    expect(ok.status).to.equal(202);
    expect(ok.body.status_id).to.be.a('string');
    // The action is the API's call, made as the logged-in user: its audit trail says so.
    const audit = (await must(api.get('/admin/audit?kind=nic&name=n1%2Feth0&limit=5'))).body.entries as { by: string; call: string; event: { type: string } }[];
    expect(audit.find((e) => e.event.type === 'NetworkActionQueued')).to.include({ by: 'admin', call: 'admin_reapply' });
    // The API's own answers come through: a 404 for an unknown nic, a 400 for a bad action.
    expect((await b.post('/ui/api/action', { action: 'reapply', node: 'n1', nic: 'nope' })).status).to.equal(404);
    expect((await b.post('/ui/api/action', { action: 'format-disks' })).status).to.equal(400);
    // The drift audit (GET /admin/switch/<s>/drift) is offered, and runs as the admin.
    expect((await b.get('/ui/api/me')).body.features.drift).to.equal(true);
    const drift = await b.post('/ui/api/action', { action: 'drift', switch: 's1' });
    expect(drift.status).to.equal(200);
    expect(drift.body.switch).to.equal('s1');
    expect((await b.post('/ui/api/action', { action: 'drift', switch: 'nope' })).status).to.equal(404);
    // The wiring check (GET /admin/switch/<s>/wiring), as the admin: the dashboard shows its mismatches.
    const w = await b.post('/ui/api/action', { action: 'wiring', switch: 's1' });
    expect(w.status).to.equal(200);
    expect(w.body).to.include({ switch: 's1' });
    expect(w.body.summary).to.have.all.keys('ok', 'mismatch', 'unseen', 'unwired');
    expect((await b.post('/ui/api/action', { action: 'wiring', switch: 'nope' })).status).to.equal(404);
    // The clear of a port's doubt (POST /admin/switch/<s>/port/<p>/clear_doubt): the API's checks, a `/` in the port name kept.
    const clear = (sw: string, port: string) => b.post('/ui/api/action', { action: 'clear_doubt', switch: sw, port });
    const notInDoubt = await clear('s1', 'gi1/0/1');
    expect(notInDoubt.status).to.equal(409);
    expect(notInDoubt.body).to.deep.equal({ type: 'IllegalStateError', msg: 'port gi1/0/1 of switch s1 is not in doubt' });
    expect((await clear('s1', 'gi1/0/9')).status).to.equal(404);
    expect((await clear('nope', 'gi1/0/1')).status).to.equal(404);
    expect((await b.post('/ui/api/action', { action: 'clear_doubt', switch: 's1' })).status).to.equal(400);
    const m = new Browser(api);
    await must(m.login('mia', 'mia-pw'));
    expect((await m.post('/ui/api/action', { action: 'clear_doubt', switch: 's1', port: 'gi1/0/1' })).status).to.equal(401);
  });

  it('answers 400, not 500, to an action whose names are not Unicode text (a lone surrogate)', async () => {
    const b = new Browser(api);
    await must(b.login('admin', 'admin-secret'));
    for (const body of [
      { action: 'power_on', node: '\ud800' }, { action: 'reserve', node: 'spare', project: 'p\udfff' }, { action: 'token_revoke', id: '\ud800' },
      { action: 'wiring', switch: '\ud800' }, { action: 'reapply', node: 'n1', nic: '\ud800' }, { action: 'revert', switch: 's1', port: '\ud800' },
      { action: 'clear_doubt', switch: '\ud800', port: 'gi1/0/1' },
    ]) {
      const r = await b.post('/ui/api/action', body);
      expect(r.status, JSON.stringify(body)).to.equal(400);
      expect(r.body.type).to.equal('BadArgumentError');
    }
  });

  it('acts on nodes and projects named "." and "..", which a URL parser would drop from the path, and on nothing else', async () => {
    // The API takes such names (any of A-Za-z0-9._-): sent with the path as is (%2E), never through a URL parser.
    const raw = (method: string, path: string, body?: unknown) => new Promise<Res>((resolve, reject) => {
      const u = new URL(ts.url);
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = httpRequest({ hostname: u.hostname, port: u.port, path, method, headers: { authorization: basic(ADMIN), ...(payload ? { 'content-type': 'application/json' } : {}) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, text, raw: Buffer.concat(chunks), body: /^application\/json/.test(res.headers['content-type'] ?? '') ? JSON.parse(text) : undefined, headers: res.headers });
        });
      });
      req.on('error', reject);
      req.end(payload);
    });
    await must(raw('PUT', '/project/%2E%2E'));
    const b = new Browser(api);
    await must(b.login('admin', 'admin-secret'));
    for (const [name, enc] of [['.', '%2E'], ['..', '%2E%2E']]) {
      await must(b.post('/ui/api/action', { action: 'register_node', node: name, obm: obm() }));
      await must(b.post('/ui/api/action', { action: 'register_nic', node: name, nic: 'eth0', macaddr: 'de:ad:be:ef:00:09' }));
      await must(b.post('/ui/api/action', { action: 'reserve', node: name, project: '..' }));
      await must(b.post('/ui/api/action', { action: 'boot_device', node: name, bootdev: 'pxe' }));
      const shown = (await must(raw('GET', `/node/${enc}`))).body;
      expect(shown, name).to.deep.include({ name, project: '..' });
      expect(shown.nics.map((n: { label: string }) => n.label), name).to.deep.equal(['eth0']);
      // The dashboard's own read of the node (the browser cannot send such a segment either).
      expect((await must(b.get(`/ui/api/node?name=${enc}`))).body.name, name).to.equal(name);
      // Its live console, recorded by the dashboard's action and watched by the query's name.
      await must(b.post('/ui/api/action', { action: 'console_start', node: name }));
      const ws = new WebSocket(`${ts.url.replace(/^http/, 'ws')}/ui/api/console/stream?node=${enc}`, { headers: { cookie: b.cookie, origin: ts.url } });
      let got = '';
      ws.on('message', (d: Buffer) => (got += d.toString('latin1')));
      await until(`the banner of ${name}`, () => got.includes('mock serial console'));
      ws.close();
      expect((await must(raw('GET', `/node/${enc}/console`))).text, name).to.include('mock serial console');
      await must(raw('DELETE', `/node/${enc}/console`));
      await must(b.post('/ui/api/action', { action: 'release', node: name, project: '..' }));
    }
    // Nothing else was touched: no node named after the call's next segment, and the other nodes as they were.
    const names = (await must(api.get('/nodes/all'))).body as string[];
    expect(names.filter((n) => !['n1', 'n2', 'spare', '.', '..'].includes(n))).to.deep.equal([]);
    for (const enc of ['%2E', '%2E%2E']) {
      await must(raw('DELETE', `/node/${enc}/nic/eth0`));
      await must(raw('DELETE', `/node/${enc}`));
    }
    await must(raw('DELETE', '/project/%2E%2E'));
  });

  it('cannot be used from outside to act as someone: the bridge header without the secret is ignored', async () => {
    for (const forged of ['x.YWRtaW4', 'YWRtaW4', '.YWRtaW4']) {
      const r = await api.with(null).get('/admin/audit', { headers: { 'x-hilt-ui-bridge': forged } });
      expect(r.status, forged).to.equal(401);
    }
    // Bad basic credentials stay bad with it.
    expect((await api.with({ user: 'admin', password: 'x' }).get('/admin/audit', { headers: { 'x-hilt-ui-bridge': 'x.YWRtaW4' } })).status).to.equal(401);
  });

  it('shows a project member its projects only (and the free nodes it may reserve): nodes, networks, operations; no switches, health or audit', async () => {
    const m = new Browser(api);
    expect((await m.login('mia', 'mia-pw')).body).to.deep.include({ isAdmin: false, projects: ['p'] });
    const nodes = (await must(m.get('/ui/api/table/nodes'))).body;
    expect(nodes.rows.map((r: { name: string }) => r.name), 'its project\'s node and the free one (show_node\'s rule)').to.deep.equal(['n1', 'spare']);
    expect(nodes.rows[0]).to.not.have.property('obm');
    expect((await must(m.get('/ui/api/table/nodes?f.state=free'))).body.rows.map((r: { name: string }) => r.name), 'the free filter finds them (issue 26)').to.deep.equal(['spare']);
    expect((await must(m.get('/ui/api/table/projects'))).body.rows.map((r: { name: string }) => r.name)).to.deep.equal(['p']);
    expect((await must(m.get('/ui/api/table/networks'))).body.rows.map((r: { name: string }) => r.name)).to.deep.equal(['wp']);
    const summary = (await must(m.get('/ui/api/summary'))).body;
    expect(summary).to.not.have.property('health');
    expect(summary.inventory).to.include({ nodes: 2, inUse: 1, projects: 1 });
    const detail = (await must(m.get('/ui/api/node/n1'))).body;
    expect(detail.nics[0]).to.not.have.property('switch');
    expect((await m.get('/ui/api/node/n2')).status).to.equal(404);
    const spare = (await must(m.get('/ui/api/node/spare'))).body;
    expect(spare.project, 'a free node opens: the member may reserve it').to.equal(null);
    expect(spare).to.not.have.property('obm');
    for (const path of ['/ui/api/table/switches', '/ui/api/table/ports', '/ui/api/audit']) expect((await m.get(path)).status, path).to.equal(401);
    // An admin action as a member: the API refuses it.
    expect((await m.post('/ui/api/action', { action: 'reapply', node: 'n1', nic: 'eth0' })).status).to.equal(401);
  });

  it('shows a member of a project named "admin" no network the admin owns (the API does not either)', async () => {
    await must(api.put('/project/admin'));
    await must(api.put('/network/wa', { owner: 'admin', access: 'q', net_id: '' }));
    const ada = await makeUser(api, 'ada', 'ada-pw', ['admin']);
    expect((await api.with(ada).get('/network/wa')).status, 'show_network').to.equal(401);
    const m = new Browser(api);
    await must(m.login('ada', 'ada-pw'));
    expect((await must(m.get('/ui/api/table/networks'))).body.rows.map((r: { name: string }) => r.name)).to.deep.equal([]);
    expect((await must(m.get('/ui/api/table/networks?f.project=admin'))).body.rows.map((r: { name: string }) => r.name)).to.deep.equal([]);
    expect((await must(m.get('/ui/api/summary'))).body.networks).to.equal(0);
    // Nor is it offered to connect a node of project "admin" to (it is not that project's).
    const b = new Browser(api);
    await b.login('admin', 'admin-secret');
    expect((await must(b.get('/ui/api/table/networks?f.project=admin'))).body.rows.map((r: { name: string }) => r.name)).to.deep.equal([]);
    await must(api.del('/auth/basic/user/ada'));
    await must(api.del('/network/wa'));
    await must(api.del('/project/admin'));
  });

  it('filters, sorts and pages its tables on the service; refuses bad paging', async () => {
    const b = new Browser(api);
    await b.login('admin', 'admin-secret');
    const all = (await must(b.get('/ui/api/table/nodes?sort=name&dir=desc'))).body;
    expect(all.rows.map((r: { name: string }) => r.name)).to.deep.equal(['spare', 'n2', 'n1']);
    expect((await must(b.get('/ui/api/table/nodes?f.state=free'))).body.rows.map((r: { name: string }) => r.name)).to.deep.equal(['spare']);
    expect((await must(b.get('/ui/api/table/nodes?q=N2'))).body.rows.map((r: { name: string }) => r.name)).to.deep.equal(['n2']);
    const paged = (await must(b.get('/ui/api/table/nodes?sort=name&offset=1&limit=1'))).body;
    expect(paged).to.deep.include({ total: 3, offset: 1 });
    expect(paged.rows.map((r: { name: string }) => r.name)).to.deep.equal(['n2']);
    expect((await must(b.get('/ui/api/table/networks?f.project=q'))).body.rows.map((r: { name: string }) => r.name)).to.deep.equal(['wq']);
    expect((await must(b.get('/ui/api/table/ports?f.switch=s1'))).body.rows.map((r: { port: string; node: string }) => `${r.port} ${r.node}`)).to.deep.equal(['gi1/0/1 n1', 'gi1/0/2 n2']);
    for (const q of ['limit=0', 'limit=5000', 'offset=-1', 'dir=up']) expect((await b.get(`/ui/api/table/nodes?${q}`)).status, q).to.equal(400);
    expect((await b.get('/ui/api/table/fridges')).status).to.equal(404);
    // Unknown or repeated parameters are refused, not ignored; names are quoted short.
    for (const q of ['table/nodes?zz=1', 'table/nodes?limit=1&limit=2', 'table/nodes?f.=x', 'audit?zz=1', 'audit?kind=node&kind=nic']) {
      const r = await b.get(`/ui/api/${q}`);
      expect(r.status, q).to.equal(400);
      expect(r.body).to.have.all.keys('type', 'msg');
    }
    for (const path of [`/ui/api/table/${'t'.repeat(2000)}`, `/ui/api/node/${'n'.repeat(2000)}`]) {
      const r = await b.get(path);
      expect(r.status).to.equal(404);
      expect(r.body.msg.length, r.body.msg.slice(0, 80)).to.be.below(200);
    }
  });
  it('names each switch\'s driver and family, the data-centre families among them', async () => {
    const b = new Browser(api);
    await b.login('admin', 'admin-secret');
    const T = 'http://schema.massopencloud.org/haas/v0/switches/';
    await must(api.put('/switch/dc-junos', { type: `${T}junos`, hostname: '127.0.0.1:2201', username: 'u', password: 'p' }));
    await must(api.put('/switch/dc-nvue', { type: `${T}cumulus_nvue`, hostname: '127.0.0.1:2202', username: 'u', password: 'p' }));
    const rows = (await must(b.get('/ui/api/table/switches?q=dc-'))).body.rows as { name: string; type: string; family: string }[];
    expect(rows.map((r) => [r.name, r.type, r.family]).sort()).to.deep.equal([
      ['dc-junos', 'junos', 'Juniper Junos (ELS)'], ['dc-nvue', 'cumulus_nvue', 'NVIDIA Cumulus Linux (NVUE)'],
    ]);
    for (const s of ['dc-junos', 'dc-nvue']) await must(api.del(`/switch/${s}`));
  });

  it('shows a member no wiring in its operations (their switch and port), as the API\'s statuses do not; an admin sees it', async () => {
    const done = await finished(api, (await must(api.post('/node/n1/nic/eth0/connect_network', { network: 'wp' }), 202)).body.status_id);
    expect(done.status).to.equal('DONE');
    try {
      const m = new Browser(api);
      await must(m.login('mia', 'mia-pw'));
      const rows = (await must(m.get('/ui/api/table/operations'))).body.rows as Record<string, unknown>[];
      expect(rows.map((r) => r.node)).to.include('n1');
      for (const r of rows) expect(r, 'an operation row').to.not.have.any.keys('switch', 'port');
      expect((await must(m.get('/ui/api/table/operations?q=gi1/0/1'))).body.total, 'found by its port').to.equal(0);
      const detail = (await must(m.get('/ui/api/node/n1'))).body;
      for (const r of [...detail.operations, detail.nics[0].last]) expect(r, 'a node\'s operation').to.not.have.any.keys('switch', 'port');
      const b = new Browser(api);
      await must(b.login('admin', 'admin-secret'));
      const mine = (await must(b.get('/ui/api/table/operations?f.node=n1'))).body.rows as Record<string, unknown>[];
      expect(mine[0]).to.include({ switch: 's1', port: 'gi1/0/1' });
    } finally {
      await finished(api, (await must(api.post('/node/n1/nic/eth0/detach_network', { network: 'wp' }), 202)).body.status_id);
    }
  });

  it('counts in a member\'s summary only the failures it may read: none of the project that held the node before', async () => {
    await makeNode(api, 'fx', ['eth0']);
    await must(api.put('/switch/s1/port/gi1/0/9'));
    await must(api.post('/switch/s1/port/gi1/0/9/connect_nic', { node: 'fx', nic: 'eth0' }));
    await must(api.post('/project/q/connect_node', { node: 'fx' }));
    const failed = await finished(api, (await must(api.post('/node/fx/nic/eth0/connect_network', { network: 'wq' }), 202)).body.status_id);
    expect(failed.status, 'q\'s failure').to.equal('ERROR');
    await must(api.post('/project/q/detach_node', { node: 'fx' }));
    await must(api.post('/project/p/connect_node', { node: 'fx' }));
    try {
      const m = new Browser(api);
      await must(m.login('mia', 'mia-pw'));
      expect((await must(m.get('/ui/api/table/operations?f.status=ERROR'))).body.total, 'the failures it reads').to.equal(0);
      expect((await must(m.get('/ui/api/summary'))).body.operations.failuresLastDay, 'the Failures card').to.equal(0);
      const b = new Browser(api);
      await must(b.login('admin', 'admin-secret'));
      expect((await must(b.get('/ui/api/summary'))).body.operations.failuresLastDay, 'an admin\'s').to.equal(1);
    } finally {
      await must(api.post('/project/p/detach_node', { node: 'fx' }));
    }
  });
});

describe('the dashboard\'s live updates (/ui/api/events)', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  const stream = (b: Browser, query = '') => new SseStream(`${ts.url}/ui/api/events${query}`, { headers: { cookie: b.cookie } });

  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    for (const p of ['ue-a', 'ue-b']) await must(api.put(`/project/${p}`));
  });
  after(() => stopTestServer(ts));

  it('opens a resuming stream with the session\'s rights after the wait for the store: a membership removed meanwhile counts', async () => {
    await makeUser(api, 'ue-eve', 'ue-eve-pw', ['ue-a']);
    const b = new Browser(api);
    await must(b.login('ue-eve', 'ue-eve-pw'));
    const engine = ts.world.runtime.engine as { bounds: typeof ts.world.runtime.engine.bounds };
    const bounds = engine.bounds.bind(engine);
    // The admin removes eve from ue-a while her resuming stream waits for the store's bounds.
    engine.bounds = async () => {
      engine.bounds = bounds;
      await must(api.post('/auth/basic/user/ue-eve/remove_project', { project: 'ue-a' }));
      return bounds();
    };
    try {
      const s = stream(b, `?after=${(await bounds()).last}`);
      expect(await s.answered()).to.equal(200);
      await s.until(() => s.comments.includes('live'));
      // A change of ue-a after eve left it; then eve joins ue-b, which ends her streams once what
      // came before has gone out.
      await must(api.put('/network/ue-after-removal', { owner: 'ue-a', access: 'ue-a', net_id: '' }));
      await must(api.post('/auth/basic/user/ue-eve/add_project', { project: 'ue-b' }));
      await s.ended;
      expect(s.events.map((e) => e.data.name), 'events of ue-a eve received after she left it').to.not.include('ue-after-removal');
    } finally {
      engine.bounds = bounds;
    }
  });

  it('ends at logout', async () => {
    await makeUser(api, 'ue-dora', 'ue-dora-pw', ['ue-a']);
    const b = new Browser(api);
    await must(b.login('ue-dora', 'ue-dora-pw'));
    const s = stream(b);
    expect(await s.answered()).to.equal(200);
    await s.until(() => s.comments.includes('live'));
    await must(b.post('/ui/api/logout'));
    await s.until(() => s.endedAt !== 0, 5_000, 'the end of the stream at logout');
    expect(s.comments.join(' ')).to.match(/access changed/);
    expect((await b.get('/ui/api/me')).status, 'the session is over').to.equal(401);
    expect((await stream(b).answered()), 'and so is its stream').to.equal(401);
  });

  it('of a session opened with an API token, ends when the token expires (not at the session\'s own expiry)', async () => {
    const ted = await makeUser(api, 'ue-ted', 'ue-ted-pw', ['ue-a']);
    const { token, expires_at: expiresAt } = (await must(api.with(ted).post('/auth/tokens', { expires_in: 2 }))).body as { token: string; expires_at: string };
    const login = await must(api.call('POST', '/ui/api/login', { as: null, body: { token } }));
    const b = new Browser(api);
    b.cookie = String([login.headers['set-cookie']].flat()[0]).split(';')[0];
    const s = stream(b);
    expect(await s.answered()).to.equal(200);
    await s.until(() => s.comments.includes('live'));
    await s.until(() => s.endedAt !== 0, 10_000, 'the end of the stream at the token\'s expiry');
    expect(s.endedAt).to.be.at.least(Date.parse(expiresAt));
    expect((await api.with({ token }).get('/project/ue-a/nodes')).status, 'the token has expired').to.equal(401);
    expect((await b.get('/ui/api/me')).status, 'so has the session').to.equal(401);
  });

  it('is ended by the sessions with its session: at logout, when found over, at the sweep of an expired one', async () => {
    const rm = new ReadModel();
    rm.users.set('u', { name: 'u', passwordHash: 'h', isAdmin: false, projects: [] });
    const sessions = new UiSessions(rm, 200);
    const ended: string[] = [];
    try {
      const a = sessions.create('u', 'h');
      sessions.hold(a.token, () => ended.push('a'));
      const untied = sessions.hold(a.token, () => ended.push('closed first'));
      untied();
      sessions.end(a.token);
      expect(ended).to.deep.equal(['a']);

      const b = sessions.create('u', 'h');
      sessions.hold(b.token, () => ended.push('b'));
      rm.users.set('u', { name: 'u', passwordHash: 'h2', isAdmin: false, projects: [] });
      expect(sessions.get(b.token), 'a new password ends the session').to.equal(undefined);
      expect(ended).to.deep.equal(['a', 'b']);

      const c = sessions.create('u', 'h2');
      sessions.hold(c.token, () => ended.push('c'));
      await until('the sweep of the expired session', () => ended.includes('c'));
      expect(sessions.size()).to.equal(0);
      sessions.hold(c.token, () => ended.push('held after the end'));
      expect(ended).to.deep.equal(['a', 'b', 'c', 'held after the end']);
    } finally {
      sessions.close();
    }
  });
});

describe('the dashboard\'s session cookie over HTTPS', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-ui-tls-')); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** The Set-Cookie of a dashboard login as admin. */
  async function loginCookie(api: Client, headers: Record<string, string> = {}): Promise<string> {
    const r = await must(api.call('POST', '/ui/api/login', { as: null, body: { user: 'admin', password: 'admin-secret' }, headers }));
    return String([r.headers['set-cookie']].flat()[0]);
  }

  it('is Secure when the service serves HTTPS itself (HILT_TLS_CERT, HILT_TLS_KEY)', async () => {
    const { certFile, keyFile } = await makeCertificate(dir, 'ui');
    const ts = await startTestServer({ tlsCert: certFile, tlsKey: keyFile });
    try {
      expect(ts.url).to.match(/^https:/);
      const ca = readFileSync(certFile);
      const call = (method: string, path: string, body?: string) => new Promise<{ status: number; cookie: string; hsts: unknown }>((resolve, reject) => {
        const req = httpsRequest(`${ts.url}${path}`, { method, ca, headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, cookie: String([res.headers['set-cookie']].flat()[0]), hsts: res.headers['strict-transport-security'] }));
        });
        req.on('error', reject);
        req.end(body);
      });
      const r = await call('POST', '/ui/api/login', JSON.stringify({ user: 'admin', password: 'admin-secret' }));
      expect(r.status).to.equal(200);
      expect(r.cookie).to.match(/^hilt_ui=/).and.match(/; Secure(;|$)/).and.match(/; HttpOnly(;|$)/);
      // HTTPS from now on: on the page, its assets, its API, its refusals.
      for (const [method, path] of [['POST', '/ui/api/login'], ['GET', '/ui/'], ['GET', '/ui/console.html'], ['GET', '/ui/app.js'], ['GET', '/ui/api/me']]) {
        const a = method === 'POST' ? r : await call(method, path);
        expect(a.hsts, path).to.equal('max-age=31536000');
      }
    } finally {
      await stopTestServer(ts);
    }
  });

  it('is Secure behind a trusted proxy that says the request came over HTTPS, and only then', async () => {
    const proxied = await startTestServer({ trustProxy: '127.0.0.1' });
    const direct = await startTestServer();
    try {
      expect(await loginCookie(proxied.api, { 'x-forwarded-proto': 'https' })).to.match(/; Secure(;|$)/);
      // Plain HTTP through the proxy: not Secure (the browser would drop a Secure cookie).
      expect(await loginCookie(proxied.api, { 'x-forwarded-proto': 'http' })).to.not.match(/Secure/);
      expect(await loginCookie(proxied.api)).to.not.match(/Secure/);
      // Without HILT_TRUST_PROXY the header is anyone's to send: ignored, plain HTTP is plain.
      expect(await loginCookie(direct.api, { 'x-forwarded-proto': 'https' })).to.not.match(/Secure/);
      expect(await loginCookie(direct.api)).to.not.match(/Secure/);
      // No HSTS from hilt over plain HTTP, nor behind the proxy (the proxy sends it: docs/operations.md).
      for (const [ts, headers] of [[proxied, { 'x-forwarded-proto': 'https' }], [proxied, {}], [direct, {}]] as const) {
        const page = await ts.api.with(null).get('/ui/', { headers });
        expect(page.status).to.equal(200);
        expect(page.headers['strict-transport-security']).to.equal(undefined);
      }
    } finally {
      await stopTestServer(proxied);
      await stopTestServer(direct);
    }
  });
});
