/**
 * The dashboard's security against a running server: each action is authorized as the API call
 * it stands for (a member's project only, no admin action; an auditor, a reader and a read-only
 * token change nothing); access ends at once for its views, actions, live updates and console
 * viewers when a user leaves a project, is deleted, or its token is revoked; CSRF tokens are
 * the session's own; no view shows a secret; bad input to /ui/api is a 4xx with the API's error
 * body that changes nothing.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, mockSwitch, obm, Res } from '../../helpers/server';
import { SseStream } from '../../helpers/sse';
import { watch } from '../../helpers/console-ws';

/** A dashboard client: keeps the session cookie, sends the CSRF token on changes. */
class Browser {
  cookie = '';
  csrf = '';
  constructor(readonly api: Client) {}
  private headers(extra: Record<string, string> = {}) {
    return { ...(this.cookie ? { cookie: this.cookie } : {}), ...extra };
  }
  private keep(r: Res): Res {
    const set = r.headers['set-cookie'];
    if (r.status === 200 && set) {
      this.cookie = String([set].flat()[0]).split(';')[0];
      this.csrf = r.body.csrf;
    }
    return r;
  }
  async login(user: string, password: string): Promise<Res> {
    return this.keep(await this.api.call('POST', '/ui/api/login', { as: null, body: { user, password }, headers: this.headers() }));
  }
  async loginToken(token: string): Promise<Res> {
    return this.keep(await this.api.call('POST', '/ui/api/login', { as: null, body: { token } }));
  }
  get(path: string): Promise<Res> {
    return this.api.call('GET', path, { as: null, headers: this.headers() });
  }
  post(path: string, body?: unknown, extra: Record<string, string> = {}, csrf = true): Promise<Res> {
    return this.api.call('POST', path, { as: null, body, headers: this.headers({ ...(csrf ? { 'x-csrf-token': this.csrf } : {}), ...extra }) });
  }
  raw(path: string, raw: string): Promise<Res> {
    return this.api.call('POST', path, { as: null, raw, headers: this.headers({ 'x-csrf-token': this.csrf, 'content-type': 'application/json' }) });
  }
  action(body: Record<string, unknown>): Promise<Res> {
    return this.post('/ui/api/action', body);
  }
}

const SWITCH_SECRET = mockSwitch.password;
const WEBHOOK_SECRET = 'ui-webhook-secret-0123456789';

describe('the dashboard\'s security (/ui)', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  /** What the service holds that the actions below could change. */
  const state = async () => {
    const nodes: Record<string, unknown> = {};
    for (const n of ['n1', 'n2', 'spare']) {
      const b = (await must(api.get(`/node/${n}`))).body;
      nodes[n] = { project: b.project, nics: b.nics.map((x: { label: string; networks: unknown }) => [x.label, x.networks]) };
    }
    return {
      nodes,
      all: (await must(api.get('/nodes/all'))).body,
      ports: (await must(api.get('/switch/s1'))).body,
      bmcs: ['bmc-n1', 'bmc-n2', 'bmc-spare'].map((h) => ({ ...ts.mockObm.state(h) })),
      consoles: ['n1', 'n2'].map((n) => !!ts.world.rm.nodes.get(n)?.console),
    };
  };

  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await must(api.put('/project/p'));
    await must(api.put('/project/q'));
    await must(api.put('/switch/s1', mockSwitch));
    for (const [node, port, project] of [['n1', 'gi1/0/1', 'p'], ['n2', 'gi1/0/2', 'q'], ['spare', 'gi1/0/3', null]]) {
      await must(api.put(`/node/${node}`, { obm: obm(`bmc-${node}`) }));
      await must(api.put(`/node/${node}/nic/eth0`, { macaddr: `de:ad:be:ef:00:0${port!.slice(-1)}` }));
      await must(api.put(`/switch/s1/port/${port}`));
      await must(api.post(`/switch/s1/port/${port}/connect_nic`, { node, nic: 'eth0' }));
      if (project) await must(api.post(`/project/${project}/connect_node`, { node }));
    }
    await must(api.put('/network/wp', { owner: 'p', access: 'p', net_id: '' }));
    await must(api.put('/network/wq', { owner: 'q', access: 'q', net_id: '' }));
    await makeUser(api, 'mia', 'mia-pw', ['p']);
    await makeUser(api, 'rea', 'rea-pw');
    await must(api.post('/auth/basic/user/rea/add_project', { project: 'p', role: 'reader' }));
    await must(api.put('/auth/basic/user/aud', { password: 'aud-pw', role: 'auditor' }));
  });
  after(() => stopTestServer(ts));

  it('lets a member act on its own project\'s objects only, and do no admin\'s action; the API\'s refusal comes through and nothing changes', async () => {
    const m = new Browser(api);
    await must(m.login('mia', 'mia-pw'));
    const before = await state();
    const refused: Record<string, unknown>[] = [
      // another project's objects
      { action: 'reserve', node: 'spare', project: 'q' },
      { action: 'release', node: 'n2', project: 'q' },
      { action: 'power_on', node: 'n2' }, { action: 'power_off', node: 'n2' }, { action: 'power_cycle', node: 'n2' },
      { action: 'boot_device', node: 'n2', bootdev: 'pxe' },
      { action: 'console_start', node: 'n2' },
      { action: 'connect', node: 'n2', nic: 'eth0', network: 'wq' },
      { action: 'detach', node: 'n2', nic: 'eth0', network: 'wq' },
      // a free node's power is the admin's
      { action: 'power_on', node: 'spare' },
      // an admin's actions, even on the member's own node
      { action: 'reapply', node: 'n1', nic: 'eth0' },
      { action: 'force_detach', node: 'n1', nic: 'eth0', network: 'wp' },
      { action: 'revert', switch: 's1', port: 'gi1/0/1' },
      { action: 'repair', switch: 's1' },
      { action: 'clear_doubt', switch: 's1', port: 'gi1/0/1' },
      { action: 'drift', switch: 's1' },
      { action: 'wiring', switch: 's1' },
      { action: 'register_node', node: 'x1', obm: obm('bmc-x1') },
      { action: 'register_nic', node: 'n1', nic: 'eth9', macaddr: 'de:ad:be:ef:00:19' },
      { action: 'register_switch', switch: 's9', type: mockSwitch.type, fields: { hostname: 'sw9.example', username: 'u', password: 'p' } },
      { action: 'register_port', switch: 's1', port: 'gi1/0/9' },
      { action: 'wire', switch: 's1', port: 'gi1/0/3', node: 'n1', nic: 'eth0' },
      // a token for a project it is not in
      { action: 'token_create', project: 'q' },
    ];
    for (const a of refused) {
      const r = await m.action(a);
      expect(r.status, JSON.stringify(a)).to.equal(401);
      expect(r.body).to.have.all.keys('type', 'msg');
      expect(r.body.type).to.equal('AuthorizationError');
    }
    // Nor another user's token: not even said to exist.
    const adminToken = (await must(api.post('/auth/tokens', { description: 'admin\'s' }))).body;
    const r = await m.action({ action: 'token_revoke', id: adminToken.id });
    expect(r.status).to.equal(404);
    expect(await state()).to.deep.equal(before);
    expect((await must(api.get('/auth/tokens'))).body.map((t: { id: string }) => t.id)).to.include(adminToken.id);
    // What the API allows it, it may do (the refusals above are not a dashboard that refuses everything).
    expect((await m.action({ action: 'power_on', node: 'n1' })).status).to.equal(200);
    expect(ts.mockObm.state('bmc-n1').power).to.equal('on');
    await must(api.post('/node/n1/power_off'));
  });

  it('lets an auditor, a reader and a read-only token change nothing (403), whatever they may read', async () => {
    const mia = { user: 'mia', password: 'mia-pw' };
    const ro = (await must(api.with(mia).post('/auth/tokens', { read_only: true }))).body;
    const browsers: [string, Browser][] = [];
    for (const [who, pw] of [['aud', 'aud-pw'], ['rea', 'rea-pw']]) {
      const b = new Browser(api);
      expect((await must(b.login(who, pw))).body.readOnly, who).to.equal(true);
      browsers.push([who, b]);
    }
    const t = new Browser(api);
    expect((await must(t.loginToken(ro.token))).body.readOnly).to.equal(true);
    browsers.push(['a read-only token', t]);
    const before = await state();
    for (const [who, b] of browsers) {
      for (const a of [
        { action: 'power_on', node: 'n1' }, { action: 'power_cycle', node: 'n1' }, { action: 'boot_device', node: 'n1', bootdev: 'disk' },
        { action: 'reserve', node: 'spare', project: 'p' }, { action: 'release', node: 'n1', project: 'p' },
        { action: 'connect', node: 'n1', nic: 'eth0', network: 'wp' }, { action: 'console_start', node: 'n1' },
        { action: 'reapply', node: 'n1', nic: 'eth0' }, { action: 'register_port', switch: 's1', port: 'gi1/0/8' },
      ]) {
        const r = await b.action(a);
        expect(r.status, `${who}: ${JSON.stringify(a)}`).to.equal(403);
        expect(r.body.type).to.equal('ForbiddenError');
      }
      // It reads what it may: the project's node.
      expect((await b.get('/ui/api/node/n1')).status, who).to.equal(200);
    }
    // A read-only token manages no token either.
    expect((await t.action({ action: 'token_create' })).status).to.equal(403);
    expect((await t.action({ action: 'token_revoke', id: ro.id })).status).to.equal(403);
    expect(await state()).to.deep.equal(before);
    await must(api.with(mia).del(`/auth/tokens/${ro.id}`));
  });

  it('ends a user\'s access at once when it leaves the project: views, actions, the event stream, the console viewer', async () => {
    await makeUser(api, 'rob', 'rob-pw', ['p']);
    const b = new Browser(api);
    await must(b.login('rob', 'rob-pw'));
    await must(api.put('/node/n1/console'));
    try {
      const events = new SseStream(`${ts.url}/ui/api/events`, { headers: { cookie: b.cookie } });
      expect(await events.answered()).to.equal(200);
      await events.until(() => events.comments.includes('live'));
      const viewer = await watch(ts.url, 'n1', null, { cookie: b.cookie, origin: ts.url }, '/ui/api');
      expect((await b.get('/ui/api/node/n1')).status).to.equal(200);
      await must(api.post('/auth/basic/user/rob/remove_project', { project: 'p' }));
      const closed = await Promise.race([viewer.closed, new Promise<null>((r) => setTimeout(() => r(null), 2000))]);
      expect(closed, 'the console viewer closed within 2 s').to.not.equal(null);
      expect(closed!.code).to.equal(4403);
      await events.until(() => events.endedAt !== 0, 2000, 'the end of the event stream');
      expect((await b.get('/ui/api/node/n1')).status).to.equal(404);
      expect((await must(b.get('/ui/api/table/nodes'))).body.rows.map((r: { name: string }) => r.name)).to.not.include('n1');
      expect((await b.action({ action: 'power_on', node: 'n1' })).status).to.equal(401);
      expect(ts.mockObm.state('bmc-n1').power).to.equal('off');
      const again = await watch(ts.url, 'n1', null, { cookie: b.cookie, origin: ts.url }, '/ui/api').then(() => 0, (e: { status?: number }) => e.status);
      expect(again, 'a new viewer is refused').to.equal(401);
    } finally {
      await must(api.del('/node/n1/console'));
    }
  });

  it('ends a session at once when its user is deleted or the token it was opened with is revoked: its stream too', async () => {
    await makeUser(api, 'gone', 'gone-pw', ['p']);
    const mia = { user: 'mia', password: 'mia-pw' };
    const tok = (await must(api.with(mia).post('/auth/tokens', { project: 'p' }))).body;
    const byPassword = new Browser(api);
    await must(byPassword.login('gone', 'gone-pw'));
    const byToken = new Browser(api);
    await must(byToken.loginToken(tok.token));
    const streams = [byPassword, byToken].map((b) => new SseStream(`${ts.url}/ui/api/events`, { headers: { cookie: b.cookie } }));
    for (const s of streams) {
      expect(await s.answered()).to.equal(200);
      await s.until(() => s.comments.includes('live'));
    }
    await must(api.del('/auth/basic/user/gone'));
    await must(api.with(mia).del(`/auth/tokens/${tok.id}`));
    for (const s of streams) await s.until(() => s.endedAt !== 0, 2000, 'the end of the event stream');
    for (const b of [byPassword, byToken]) {
      expect((await b.get('/ui/api/me')).status).to.equal(401);
      expect((await b.get('/ui/api/node/n1')).status).to.equal(401);
      const r = await b.action({ action: 'power_on', node: 'n1' });
      expect(r.status).to.equal(401);
      expect(r.body.msg).to.match(/session/);
    }
    expect(ts.mockObm.state('bmc-n1').power).to.equal('off');
  });

  it('refuses a change with another session\'s CSRF token, an empty one or none (401, nothing done), a console connection from another origin; a login makes a new session id', async () => {
    const a = new Browser(api);
    await must(a.login('mia', 'mia-pw'));
    const b = new Browser(api);
    await must(b.login('mia', 'mia-pw'));
    expect(a.cookie).to.not.equal(b.cookie);
    expect(a.csrf).to.not.equal(b.csrf);
    for (const csrf of [b.csrf, '', a.csrf.slice(0, -1), `${a.csrf}x`]) {
      const r = await a.post('/ui/api/action', { action: 'power_on', node: 'n1' }, { 'x-csrf-token': csrf }, false);
      expect(r.status, csrf).to.equal(401);
      expect(r.body).to.deep.equal({ type: 'AuthorizationError', msg: 'missing or wrong CSRF token: reload the dashboard' });
      expect((await a.post('/ui/api/logout', undefined, { 'x-csrf-token': csrf }, false)).status, csrf).to.equal(401);
    }
    expect(ts.mockObm.state('bmc-n1').power).to.equal('off');
    expect((await a.get('/ui/api/me')).status, 'a logout refused ends nothing').to.equal(200);
    // The console's WebSocket carries no CSRF token: its Origin must be the dashboard's.
    await must(api.put('/node/n1/console'));
    try {
      const origins: Record<string, string>[] = [{ origin: 'http://evil.test' }, { origin: 'null' }, { origin: ts.url.replace('127.0.0.1', 'localhost') }, {}, { origin: ts.url, 'sec-fetch-site': 'same-site' }];
      for (const headers of origins) {
        const status = await watch(ts.url, 'n1', null, { cookie: a.cookie, ...headers }, '/ui/api').then((w) => (w.ws.close(), 101), (e: { status?: number }) => e.status);
        expect(status, JSON.stringify(headers)).to.equal(401);
      }
      expect(ts.consoles.viewerCount()).to.equal(0);
    } finally {
      await must(api.del('/node/n1/console'));
    }
    // A login from a browser that holds a session gets a new id (no fixation).
    const old = a.cookie;
    await must(a.login('mia', 'mia-pw'));
    expect(a.cookie).to.not.equal(old);
    // Logout ends the session on the service: its cookie is worth nothing after.
    await must(b.post('/ui/api/logout'));
    const replay = new Browser(api);
    replay.cookie = b.cookie;
    replay.csrf = b.csrf;
    expect((await replay.get('/ui/api/me')).status).to.equal(401);
    expect((await replay.action({ action: 'power_on', node: 'n1' })).status).to.equal(401);
  });

  it('shows no secret in any view or live update: switch and BMC passwords, webhook secrets, tokens', async () => {
    const admin = new Browser(api);
    await must(admin.login('admin', 'admin-secret'));
    const events = new SseStream(`${ts.url}/ui/api/events`, { headers: { cookie: admin.cookie } });
    expect(await events.answered()).to.equal(200);
    await events.until(() => events.comments.includes('live'));
    const hook = (await must(api.post('/admin/webhooks', { url: 'http://127.0.0.1:9/hook', secret: WEBHOOK_SECRET, types: ['project.created'] }))).body;
    await must(api.put('/switch/s2', { ...mockSwitch, hostname: 'sw2.example' }));
    await must(api.put('/node/secret-node', { obm: obm('bmc-secret') }));
    const token = (await must(admin.action({ action: 'token_create', description: 'shown once' }))).body;
    expect(token.token).to.be.a('string');
    await events.until(() => events.events.some((e) => e.data.name === 'secret-node'));
    const secrets = [SWITCH_SECRET, obm().password, WEBHOOK_SECRET, token.token, 'admin-secret', 'mia-pw'];
    const m = new Browser(api);
    await must(m.login('mia', 'mia-pw'));
    const views = ['/ui/api/me', '/ui/api/summary', '/ui/api/tokens', '/ui/api/node/n1', '/ui/api/node/secret-node', '/ui/api/audit?limit=1000', '/ui/api/history',
      ...['nodes', 'projects', 'networks', 'operations', 'headnodes', 'switches', 'ports', 'maintenance', 'attention', 'members'].map((t) => `/ui/api/table/${t}?limit=200`)];
    for (const [who, b] of [['admin', admin], ['mia', m]] as const) {
      for (const path of views) {
        const r = await b.get(path);
        expect(r.status, `${who} ${path}`).to.be.oneOf([200, 401, 404]);
        for (const s of secrets) expect(r.text, `${who} ${path}`).to.not.include(s);
      }
    }
    const streamed = events.events.map((e) => JSON.stringify(e.data)).join('\n');
    expect(streamed).to.include('secret-node');
    for (const s of secrets) expect(streamed, 'the event stream').to.not.include(s);
    events.close();
    await must(admin.action({ action: 'token_revoke', id: token.id }));
    await must(api.del(`/admin/webhooks/${hook.id}`));
    await must(api.del('/node/secret-node'));
    await must(api.del('/switch/s2'));
  });

  it('answers bad input with a 4xx and the API\'s error body, never a 5xx, and changes nothing', async () => {
    const b = new Browser(api);
    await must(b.login('admin', 'admin-secret'));
    const before = await state();
    const bodies = [
      '[]', '"x"', 'null', '5', '{', 'not json', `{"action":"reapply","node":"${'n'.repeat(1_100_000)}","nic":"e"}`,
      '{}', '{"action":5}', '{"action":"format-disks"}', '{"action":"__proto__"}', '{"action":"toString"}', '{"__proto__":{"action":"power_on"},"node":"n1"}',
      '{"action":"power_on"}', '{"action":"power_on","node":5}', '{"action":"power_on","node":""}', '{"action":"power_on","node":"nope"}',
      '{"action":"boot_device","node":"n1","bootdev":"floppy"}', '{"action":"register_node","node":"x2","obm":"x"}',
      '{"action":"register_switch","switch":"s9","type":"t","fields":[]}', '{"action":"token_create","expires_in":"abc"}',
      // A field of the wrong type, or one the action does not take, is refused: not dropped, the rest done.
      '{"action":"connect","node":"n1","nic":"eth0","network":"wp","channel":5}',
      '{"action":"connect","node":"n1","nic":"eth0","network":"wp","channel":""}',
      '{"action":"power_cycle","node":"n1","force":"yes"}',
      '{"action":"power_on","node":"n1","force":true}',
      '{"action":"reserve","node":"spare","project":"p","nodes":["n2"]}',
      // The switch's type is the action's: one in `fields` would override it.
      `{"action":"register_switch","switch":"s9","type":"t","fields":{"type":"${mockSwitch.type}","hostname":"h","username":"u","password":"p"}}`,
    ];
    for (const raw of bodies) {
      const r = await b.raw('/ui/api/action', raw);
      expect(r.status, raw.slice(0, 100)).to.be.within(400, 499);
      expect(r.body, raw.slice(0, 100)).to.have.all.keys('type', 'msg');
    }
    expect((await must(api.get('/switches'))).body).to.deep.equal(['s1']);
    for (const raw of ['[]', 'null', '{', '{"user":["admin"],"password":"x"}', '{"token":5}', `{"user":"admin","password":"${'p'.repeat(1_100_000)}"}`]) {
      const r = await b.raw('/ui/api/login', raw);
      expect(r.status, raw.slice(0, 100)).to.be.within(400, 499);
      expect(r.body).to.have.all.keys('type', 'msg');
    }
    for (const path of ['/ui/api/nope', '/ui/api/table/__proto__', '/ui/api/table/nodes?sort=name&sort=state', '/ui/api/node?name=a&name=b', '/ui/api/audit?since=yesterday', '/ui/api/node/n1/console/stream']) {
      const r = await b.get(path);
      expect(r.status, path).to.be.within(400, 499);
      expect(r.body).to.have.all.keys('type', 'msg');
    }
    expect(await state()).to.deep.equal(before);
    expect((await b.get('/ui/api/me')).status, 'the session lives on').to.equal(200);
  });
});
