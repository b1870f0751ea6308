/**
 * Narrowed credentials against every route (docs/identity.md), table-driven from the server's
 * route table: a project-scoped token of a user who is a member of two projects acts as a member
 * of its project alone would (same status, same answer), never on the other project's objects;
 * an admin's project-scoped token is no admin; a read-only project-scoped token reads its
 * project and changes nothing (403); an OpenID Connect caller whose groups name that project
 * acts as its member, and one whose groups make it a member of P and a reader of Q as the
 * database user with those roles. The event stream and the dashboard keep to the same rights.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, makeNode, mockSwitch, finished, Res } from '../../helpers/server';
import { SseStream } from '../../helpers/sse';
import { startIssuer, type TestIssuer } from '../../helpers/oidc-issuer';
import { addSecret } from '../../helpers/secrets';
import { apiRoutes } from '../../helpers/api-routes';

/** A valid body per change, naming the objects of `s` (its project, network). */
const bodies = (s: Names): Record<string, object> => ({
  'POST /project/:project/connect_node': { node: 'sc-free' },
  'POST /project/:project/detach_node': { node: s.node },
  'PUT /node/:node': { obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'h', user: 'u', password: 'scoped-obm-pw' } },
  'PUT /node/:node/nic/:nic': { macaddr: 'x' },
  'PUT /node/:node/metadata/:label': { value: 'v' },
  'PUT /node/:node/boot_device': { bootdev: 'pxe' },
  'POST /node/:node/nic/:nic/connect_network': { network: s.network },
  'POST /node/:node/nic/:nic/detach_network': { network: s.network },
  'PUT /switch/:switch': mockSwitch,
  'POST /switch/:switch/port/*': { node: s.node, nic: 'eth0' },
  'PUT /network/:network': { owner: s.project, access: s.project, net_id: '' },
  'PUT /auth/basic/user/:username': { password: 'scoped-new-user-pw' },
  'POST /auth/basic/user/:user/add_project': { project: s.project },
  'POST /auth/basic/user/:user/remove_project': { project: s.project },
  'PATCH /auth/basic/user/:user': { is_admin: true },
  'PUT /headnode/:headnode': { project: s.project, base_img: 'base-headnode' },
  'POST /headnode/:headnode/hnic/:hnic/connect_network': { network: s.network },
  'POST /admin/node/:node/nic/:nic/force_detach': { network: s.network },
  'POST /admin/backup': { path: '/nonexistent/scoped-test-backup' },
  'POST /admin/secret-key/rotate': { key_file: '/nonexistent/scoped-test.key' },
  'PUT /node/:node/lease': { expires_at: new Date(Date.now() + 10 * 86_400_000).toISOString() },
  'PUT /project/:project/quota': { nodes: 5 },
  'POST /admin/webhooks': { url: 'http://127.0.0.1:9/scoped-hook', secret: 'scoped-webhook-secret-1' },
});

interface Names { project: string; node: string; network: string; headnode: string; status: string }

describe('narrowed credentials against every route', function () {
  this.timeout(120_000);
  let ts: TestServer;
  let api: Client;
  const one = { user: 'sc-one', password: 'sc-one-pw-1' };
  const two = { user: 'sc-two', password: 'sc-two-pw-1' };
  const own: Names = { project: 'scp1', node: 'scn1', network: 'scw1', headnode: 'sch1', status: '' };
  const other: Names = { project: 'scp2', node: 'scn2', network: 'scw2', headnode: 'sch2', status: '' };
  /** a project nobody is in, a free node, a public network */
  const free: Names = { project: 'scp3', node: 'sc-free', network: 'scw-pub', headnode: 'sch-none', status: 'none' };
  /** two's token scoped to scp1; its read-only twin; the admin's token scoped to scp1 */
  let scoped: Client;
  let scopedRead: Client;
  let adminScoped: Client;
  let scopedToken: string;
  /** an OpenID Connect caller whose groups make it a member of scp1 (and of no project that exists besides) */
  let oidc: Client;
  /** an OpenID Connect caller whose groups make it a member of scp1 and a reader of scp2, and the database user with those rights */
  let oidcMixed: Client;
  const mixed = { user: 'sc-mixed', password: 'sc-mixed-pw-1' };
  let issuer: TestIssuer;

  before(async () => {
    issuer = await startIssuer();
    const key = await issuer.newKey('RS256');
    issuer.published.push(key);
    ts = await startTestServer({ headnodeDriver: 'mock', oidcIssuer: issuer.url, oidcAudience: 'hilt', oidcCaFile: issuer.caFile });
    api = ts.api;
    await must(api.put('/switch/scs1', mockSwitch));
    await makeNode(api, 'sc-free');
    for (const [i, s] of [own, other].entries()) {
      await must(api.put(`/project/${s.project}`));
      await makeNode(api, s.node, ['eth0']);
      await must(api.put(`/switch/scs1/port/gi1/0/${i + 1}`));
      await must(api.post(`/switch/scs1/port/gi1/0/${i + 1}/connect_nic`, { node: s.node, nic: 'eth0' }));
      await must(api.post(`/project/${s.project}/connect_node`, { node: s.node }));
      await must(api.put(`/network/${s.network}`, { owner: s.project, access: s.project, net_id: '' }));
      s.status = (await must(api.post(`/node/${s.node}/nic/eth0/connect_network`, { network: s.network }), 202)).body.status_id;
      expect((await finished(api, s.status)).status).to.equal('DONE');
      await must(api.put(`/headnode/${s.headnode}`, { project: s.project, base_img: 'base-headnode' }));
      await must(api.put(`/headnode/${s.headnode}/hnic/e0`));
      await must(api.put(`/node/${s.node}/lease`, { expires_at: new Date(Date.now() + 5 * 86_400_000).toISOString() }));
    }
    await must(api.put('/project/scp3'));
    await must(api.put('/network/scw-pub', { owner: 'admin', access: '', net_id: '' }));
    await makeUser(api, one.user, one.password, [own.project]);
    await makeUser(api, two.user, two.password, [own.project, other.project]);
    await must(api.post('/auth/basic/user/admin/add_project', { project: own.project }));
    scopedToken = (await must(api.with(two).post('/auth/tokens', { project: own.project }))).body.token;
    scoped = api.with({ token: scopedToken });
    scopedRead = api.with({ token: (await must(api.with(two).post('/auth/tokens', { project: own.project, read_only: true }))).body.token });
    adminScoped = api.with({ token: (await must(api.post('/auth/tokens', { project: own.project }))).body.token });
    const jwt = await issuer.token(key, { preferred_username: 'sc-oidc', groups: ['hilt-project-scp1', 'hilt-project-scp-none'] });
    addSecret(jwt);
    oidc = api.with({ token: jwt });
    await makeUser(api, mixed.user, mixed.password, [own.project]);
    await must(api.post(`/auth/basic/user/${mixed.user}/add_project`, { project: other.project, role: 'reader' }));
    const mixedJwt = await issuer.token(key, { preferred_username: 'sc-oidc-mixed', groups: ['hilt-project-scp1', 'hilt-project-scp2-readers'] });
    addSecret(mixedJwt);
    oidcMixed = api.with({ token: mixedJwt });
  });
  after(async () => {
    await stopTestServer(ts);
    await issuer.close();
  });

  const routes = () => apiRoutes(ts.app);

  /** The route's path with the names of `s` (`user`: the caller's own). */
  function path(method: string, url: string, s: Names, self: string): string {
    const names: Record<string, string> = {
      project: s.project, node: s.node, nic: 'eth0', switch: 'scs1', network: s.network, headnode: s.headnode, hnic: 'e0', label: 'rack',
      user: self, username: 'sc-new', kind: 'node', id: 'nonexistent-token', status_id: s.status, is_free: 'all',
    };
    const p = url.replace(/:(\w+)/g, (_m, k: string) => encodeURIComponent(names[k] ?? `x-${k}`));
    const port = s === own ? 'gi1/0/1' : 'gi1/0/2';
    if (url.startsWith('/admin/switch/')) return p.replace('*', `${port}/clear_doubt`);
    return p.replace('*', url.startsWith('/admin/actors/') ? s.node : method === 'POST' ? `${port}/connect_nic` : port);
  }

  /** What two answers may differ in for two callers: the caller's own record (its name and role; its projects as its credential reads them are compared). */
  const comparable = (url: string, r: Res) => (url.startsWith('/auth/basic/user/') && r.status === 200 ? { ...r.body, name: '', role: '', is_admin: '' } : r.body);

  for (const [label, s] of [['its own project', own], ['the other project', other], ['no project (a free node, a public network)', free]] as const) {
    it(`every GET on the objects of ${label}: a scoped token (of a member of both), its read-only twin and an admin's scoped token answer as a member of the one project`, async () => {
      let allowed = 0;
      // Its tokens: a token lists its user's, a read-only one does not (docs/identity.md).
      expect((await scoped.get('/auth/tokens')).status).to.equal(200);
      expect((await scopedRead.get('/auth/tokens')).status).to.equal(403);
      for (const r of routes().filter((x) => x.method === 'GET' && !x.url.startsWith('/auth/tokens'))) {
        const m = await api.with(one).get(path(r.method, r.url, s, one.user));
        for (const [name, c, self] of [['scoped', scoped, two.user], ['read-only scoped', scopedRead, two.user], ['admin scoped', adminScoped, 'admin'], ['OpenID Connect', oidc, 'sc-oidc']] as const) {
          // An OpenID Connect caller has no user record here: its own is a 401, as another's.
          if (c === oidc && r.url === '/auth/basic/user/:user') {
            expect((await c.get(path(r.method, r.url, s, self))).status).to.equal(401);
            continue;
          }
          const got = await c.get(path(r.method, r.url, s, self));
          expect(got.status, `${name} GET ${r.url}: member of one ${m.status}, ${name} ${got.status} ${got.text.slice(0, 200)}`).to.equal(m.status);
          expect(comparable(r.url, got), `${name} GET ${r.url}`).to.deep.equal(comparable(r.url, m));
        }
        if (m.status === 200) allowed++;
      }
      if (s === own) expect(allowed).to.be.above(15);
      else expect(allowed).to.be.below(12);
    });
  }

  for (const [label, s] of [['the other project\'s objects', other], ['a free node and a project nobody is in', free]] as const) it(`every change on ${label}: a scoped token, an admin's scoped token and an OpenID Connect member of the one project answer as a member of the one project, and change nothing`, async () => {
    const since = new Date().toISOString();
    const b = bodies(s);
    let refused = 0;
    for (const r of routes().filter((x) => x.method !== 'GET' && !x.reads)) {
      const key = `${r.method} ${r.url}`;
      // Its own tokens: a token makes none (403) and revokes its user's (docs/identity.md).
      if (r.url.startsWith('/auth/tokens')) continue;
      const m = await api.with(one).call(r.method, path(r.method, r.url, s, one.user), { body: b[key] ?? {} });
      if (m.status === 400) throw new Error(`${key}: 400 ${m.text}: give it a valid body`);
      expect(m.status, `member of one ${key}: ${m.text.slice(0, 200)}`).to.be.at.least(400);
      for (const [name, c, self] of [['scoped', scoped, two.user], ['admin scoped', adminScoped, 'admin'], ['OpenID Connect', oidc, 'sc-oidc']] as const) {
        const got = await c.call(r.method, path(r.method, r.url, s, self), { body: b[key] ?? {} });
        expect(got.status, `${name} ${key}: member of one ${m.status}, ${name} ${got.status} ${got.text.slice(0, 200)}`).to.equal(m.status);
      }
      if (m.status === 401) refused++;
    }
    expect(refused).to.be.above(25);
    const audit = (await must(api.get(`/admin/audit?since=${since}&limit=1000`))).body.entries as { call: string | null }[];
    expect(audit.filter((e) => e.call !== null), JSON.stringify(audit.slice(0, 5))).to.deep.equal([]);
  });

  it('a read-only scoped token: every change is 403, its own project\'s included, and changes nothing', async () => {
    const since = new Date().toISOString();
    for (const s of [own, other]) {
      const b = bodies(s);
      for (const r of routes().filter((x) => x.method !== 'GET' && !x.reads)) {
        const key = `${r.method} ${r.url}`;
        const res = await scopedRead.call(r.method, path(r.method, r.url, s, two.user), { body: b[key] ?? {} });
        if (res.status === 400) throw new Error(`${key}: 400 ${res.text}: give it a valid body`);
        expect(res.status, `${key}: ${res.text.slice(0, 200)}`).to.equal(403);
        expect(res.body.type).to.equal('ForbiddenError');
      }
    }
    const audit = (await must(api.get(`/admin/audit?since=${since}&limit=1000`))).body.entries as { call: string | null }[];
    expect(audit.filter((e) => e.call !== null)).to.deep.equal([]);
  });

  it('an OpenID Connect caller whose groups make it a member of P and a reader of Q answers as the database user with those roles, on every route', async () => {
    const since = new Date().toISOString();
    for (const s of [own, other, free]) {
      const b = bodies(s);
      for (const r of routes().filter((x) => !x.url.startsWith('/auth/'))) {
        const key = `${r.method} ${r.url}`;
        // Only what changes nothing: the other project's objects and those of none (its own project's changes would be made).
        if (r.method !== 'GET' && s === own) continue;
        const m = await api.with(mixed).call(r.method, path(r.method, r.url, s, mixed.user), { body: b[key] ?? {} });
        const o = await oidcMixed.call(r.method, path(r.method, r.url, s, 'sc-oidc-mixed'), { body: b[key] ?? {} });
        expect(o.status, `${key} on ${s.project}: database user ${m.status}, OpenID Connect ${o.status} ${o.text.slice(0, 200)}`).to.equal(m.status);
        if (r.method === 'GET') expect(o.body, key).to.deep.equal(m.body);
        else expect(m.status, `${key} on ${s.project}: ${m.text.slice(0, 200)}`).to.be.at.least(400);
      }
    }
    // A reader of Q: its changes are 403, not 401.
    expect((await oidcMixed.post(`/project/${other.project}/connect_node`, { node: 'sc-free' })).status).to.equal(403);
    const audit = (await must(api.get(`/admin/audit?since=${since}&limit=1000`))).body.entries as { call: string | null }[];
    expect(audit.filter((e) => e.call !== null)).to.deep.equal([]);
  });

  it('the event stream of a scoped token carries its project\'s events only', async () => {
    const open = (token: string) => new SseStream(`${ts.url}/events`, { headers: { authorization: `Bearer ${token}` } });
    const st = open(scopedToken);
    expect(await st.answered()).to.equal(200);
    await must(api.put(`/node/${other.node}/metadata/seen`, { value: 1 }));
    await must(api.put(`/node/${own.node}/metadata/seen`, { value: 1 }));
    await must(api.put('/project/scp-end'));
    await st.until(() => st.events.some((e) => e.data.name === own.node));
    await new Promise((r) => setTimeout(r, 100));
    expect(st.events.map((e) => `${e.event} ${e.data.name}`)).to.deep.equal([`node.metadata_set ${own.node}`]);
    st.close();
  });

  it('the dashboard opened with a scoped token shows its project only', async () => {
    const login = await api.call('POST', '/ui/api/login', { as: null, body: { token: scopedToken } });
    expect(login.status).to.equal(200);
    expect(login.body).to.include({ isAdmin: false, readOnly: false });
    expect(login.body.projects).to.deep.equal([own.project]);
    const cookie = String([login.headers['set-cookie']].flat()[0]).split(';')[0];
    const get = (p: string) => api.call('GET', p, { as: null, headers: { cookie } });
    const seen = JSON.stringify(await Promise.all(['nodes', 'projects', 'networks', 'operations', 'headnodes', 'members'].map(async (t) => (await must(get(`/ui/api/table/${t}`))).body)));
    for (const n of [other.project, other.node, other.network, other.headnode]) expect(seen, n).to.not.include(n);
    expect(seen).to.include(own.node);
    expect((await get(`/ui/api/node/${other.node}`)).status).to.equal(404);
    expect((await must(get(`/ui/api/node/${own.node}`))).body.name).to.equal(own.node);
    const summary = (await must(get('/ui/api/summary'))).body;
    expect(summary.inventory.perProject.map((p: { project: string }) => p.project)).to.deep.equal([own.project]);
    // An action on the other project through the dashboard: the API's 401.
    const act = await api.call('POST', '/ui/api/action', { as: null, body: { action: 'release', project: other.project, node: other.node }, headers: { cookie, 'x-csrf-token': login.body.csrf } });
    expect(act.status).to.equal(401);
    expect((await must(api.get(`/project/${other.project}/nodes`))).body).to.deep.equal([other.node]);
  });
});
