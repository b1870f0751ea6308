/**
 * Read-only roles against every route (docs/identity.md), table-driven from the server's own
 * route table (what the fuzzer's route list is checked against): an auditor reads every GET an
 * admin reads and a reader of P every GET a member of P reads, with the same answer; every
 * change answers 403 to both, and to an admin's read-only token, and changes nothing. Their own
 * tokens (POST and DELETE /auth/tokens) are the only changes an auditor or a reader may make.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, makeNode, mockSwitch, finished, ADMIN } from '../../helpers/server';
import { SseStream } from '../../helpers/sse';
import { apiRoutes } from '../../helpers/api-routes';

/** A valid body per change (validation comes before the 403, so a bad body would answer 400). */
const BODIES: Record<string, object> = {
  'POST /project/:project/connect_node': { node: 'rn2' },
  'POST /project/:project/detach_node': { node: 'rn1' },
  'PUT /node/:node': { obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'h', user: 'u', password: 'role-obm-pw' } },
  'PUT /node/:node/nic/:nic': { macaddr: 'x' },
  'PUT /node/:node/metadata/:label': { value: 'v' },
  'PUT /node/:node/boot_device': { bootdev: 'pxe' },
  'POST /node/:node/nic/:nic/connect_network': { network: 'rw1' },
  'POST /node/:node/nic/:nic/detach_network': { network: 'rw1' },
  'PUT /switch/:switch': mockSwitch,
  'POST /switch/:switch/port/*': { node: 'rn1', nic: 'eth0' },
  'PUT /network/:network': { owner: 'rp1', access: 'rp1', net_id: '' },
  'PUT /auth/basic/user/:username': { password: 'role-new-user-pw' },
  'POST /auth/basic/user/:user/add_project': { project: 'rp1' },
  'POST /auth/basic/user/:user/remove_project': { project: 'rp1' },
  'PATCH /auth/basic/user/:user': { is_admin: true },
  'PUT /headnode/:headnode': { project: 'rp1', base_img: 'base-headnode' },
  'POST /headnode/:headnode/hnic/:hnic/connect_network': { network: 'rw1' },
  'POST /admin/node/:node/nic/:nic/force_detach': { network: 'rw1' },
  'POST /admin/backup': { path: '/nonexistent/role-test-backup' },
  'POST /admin/secret-key/rotate': { key_file: '/nonexistent/role-test.key' },
  'PUT /node/:node/lease': { expires_at: new Date(Date.now() + 10 * 86_400_000).toISOString() },
  'PUT /project/:project/quota': { nodes: 5 },
  'POST /admin/webhooks': { url: 'http://127.0.0.1:9/role-hook', secret: 'role-webhook-secret-1' },
};

describe('read-only roles against every route', () => {
  let ts: TestServer;
  let api: Client;
  let statusId: string;
  const member = { user: 'rmember', password: 'rmember-pw-1' };
  const reader = { user: 'rreader', password: 'rreader-pw-1' };
  const auditor = { user: 'rauditor', password: 'rauditor-pw-1' };
  let adminReadOnly: string;

  before(async () => {
    ts = await startTestServer({ headnodeDriver: 'mock' });
    api = ts.api;
    for (const p of ['rp1', 'rp2']) await must(api.put(`/project/${p}`));
    await makeNode(api, 'rn1', ['eth0']);
    await makeNode(api, 'rn2');
    await must(api.put('/switch/rs1', mockSwitch));
    await must(api.put('/switch/rs1/port/gi1/0/1'));
    await must(api.post('/switch/rs1/port/gi1/0/1/connect_nic', { node: 'rn1', nic: 'eth0' }));
    await must(api.post('/project/rp1/connect_node', { node: 'rn1' }));
    await must(api.put('/network/rw1', { owner: 'rp1', access: 'rp1', net_id: '' }));
    statusId = (await must(api.post('/node/rn1/nic/eth0/connect_network', { network: 'rw1' }), 202)).body.status_id;
    expect((await finished(api, statusId)).status).to.equal('DONE');
    await must(api.put('/headnode/rh1', { project: 'rp1', base_img: 'base-headnode' }));
    await must(api.put('/headnode/rh1/hnic/e0'));
    await makeUser(api, member.user, member.password, ['rp1']);
    await must(api.put(`/auth/basic/user/${reader.user}`, { password: reader.password }));
    await must(api.post(`/auth/basic/user/${reader.user}/add_project`, { project: 'rp1', role: 'reader' }));
    await must(api.put(`/auth/basic/user/${auditor.user}`, { password: auditor.password, role: 'auditor' }));
    adminReadOnly = (await must(api.post('/auth/tokens', { read_only: true }))).body.token;
  });
  after(() => stopTestServer(ts));

  const routes = () => apiRoutes(ts.app);

  /** The route's path with the fixture's names (`user`: the caller's own). */
  function path(method: string, url: string, self: string): string {
    const names: Record<string, string> = {
      project: 'rp1', node: 'rn1', nic: 'eth0', switch: 'rs1', network: 'rw1', headnode: 'rh1', hnic: 'e0', label: 'rack',
      user: self, username: 'rnew', kind: 'node', id: statusId,
    };
    const p = url.replace(/:(\w+)/g, (_m, k: string) => encodeURIComponent(names[k] ?? `x-${k}`));
    // `*`: an actor's id, or a port (POST: connect_nic, the first of the port's actions; the admin's clear_doubt)
    if (url.startsWith('/admin/switch/')) return p.replace('*', 'gi1/0/1/clear_doubt');
    return p.replace('*', url.startsWith('/admin/actors/') ? 'rn1' : method === 'POST' ? 'gi1/0/1/connect_nic' : 'gi1/0/1');
  }

  const as = (c: { user: string; password: string } | { token: string }) => api.with(c);

  it('an auditor reads every GET an admin reads, with the same answer', async () => {
    const gets = routes().filter((r) => r.method === 'GET');
    expect(gets.length).to.be.at.least(25);
    for (const r of gets) {
      const a = await api.get(path(r.method, r.url, ADMIN.user));
      const b = await as(auditor).get(path(r.method, r.url, auditor.user));
      expect(b.status, `GET ${r.url}: admin ${a.status}, auditor ${b.status} ${b.text.slice(0, 200)}`).to.equal(a.status);
      expect(b.status, `GET ${r.url}`).to.not.be.oneOf([401, 403]);
    }
    // the audit log and actor inspection (the table above holds them; said here plainly)
    expect((await as(auditor).get('/admin/audit')).status).to.equal(200);
    expect((await as(auditor).get('/metrics')).status).to.equal(200);
    expect((await as(auditor).get('/projects')).status).to.equal(200);
  });

  it('the event stream: an auditor sees every event, a reader of P the events of P only', async () => {
    const open = (c: { user: string; password: string }) => new SseStream(`${ts.url}/events`, { as: c });
    const [sa, sr] = [open(auditor), open(reader)];
    for (const x of [sa, sr]) expect(await x.answered()).to.equal(200);
    await must(api.put('/node/rn1/metadata/seen', { value: 1 }));
    await must(api.put('/network/rw2', { owner: 'rp2', access: 'rp2', net_id: '' }));
    await must(api.put('/project/rp-end'));
    await sa.until(() => sa.events.some((e) => e.data.name === 'rp-end'));
    expect(sa.events.map((e) => e.data.name)).to.deep.equal(['rn1', 'rw2', 'rp-end']);
    await new Promise((r) => setTimeout(r, 100));
    expect(sr.events.map((e) => `${e.event} ${e.data.name}`)).to.deep.equal(['node.metadata_set rn1']);
    for (const x of [sa, sr]) x.close();
  });

  it('a reader of P reads every GET a member of P reads, with the same answer; nothing of other projects', async () => {
    let allowed = 0;
    for (const r of routes().filter((x) => x.method === 'GET')) {
      const m = await as(member).get(path(r.method, r.url, member.user));
      const rd = await as(reader).get(path(r.method, r.url, reader.user));
      expect(rd.status, `GET ${r.url}: member ${m.status}, reader ${rd.status} ${rd.text.slice(0, 200)}`).to.equal(m.status);
      if (m.status === 200) allowed++;
    }
    expect(allowed).to.be.above(8);
    for (const p of ['/project/rp1/nodes', '/project/rp1/networks', '/project/rp1/headnodes', '/node/rn1', '/network/rw1', '/headnode/rh1', `/networking_action/${statusId}`, '/node/rn1/power_status']) {
      expect((await as(reader).get(p)).status, p).to.equal(200);
    }
    expect((await as(reader).get('/project/rp2/nodes')).status).to.equal(401);
    expect((await as(reader).get('/projects')).status).to.equal(401);
  });

  it('a POST that changes nothing (a wiring proposal) answers an auditor and an admin\'s read-only token as it answers an admin', async () => {
    const reads = routes().filter((r) => r.reads);
    expect(reads.map((r) => `${r.method} ${r.url}`)).to.deep.equal(['POST /admin/switch/:switch/wiring/propose']);
    for (const r of reads) {
      const key = `${r.method} ${r.url}`;
      const admin = await api.call(r.method, path(r.method, r.url, ADMIN.user), { body: BODIES[key] ?? {} });
      expect(admin.status, `${key}: ${admin.text.slice(0, 200)}`).to.equal(200);
      for (const c of [as(auditor), as({ token: adminReadOnly })]) {
        const res = await c.call(r.method, path(r.method, r.url, ADMIN.user), { body: BODIES[key] ?? {} });
        expect(res.status, `${key}: ${res.text.slice(0, 200)}`).to.equal(200);
        expect(res.body).to.deep.equal(admin.body);
      }
    }
  });

  it('every change is 403 for an auditor, a reader and an admin\'s read-only token, and changes nothing', async () => {
    const since = Date.now();
    const changes = routes().filter((r) => r.method !== 'GET' && !r.reads);
    expect(changes.length).to.be.above(35);
    const callers = [
      { name: 'auditor', client: as(auditor), self: auditor.user, ownTokens: true },
      { name: 'reader', client: as(reader), self: reader.user, ownTokens: true },
      { name: 'admin read-only token', client: as({ token: adminReadOnly }), self: ADMIN.user, ownTokens: false },
    ];
    for (const r of changes) {
      const key = `${r.method} ${r.url}`;
      for (const c of callers) {
        const res = await c.client.call(r.method, path(r.method, r.url, c.self), { body: BODIES[key] ?? {} });
        if (res.status === 400) throw new Error(`${key}: 400 ${res.text}: give it a valid body in BODIES`);
        if (r.url.startsWith('/auth/tokens') && c.ownTokens) {
          expect(res.status, `${c.name} ${key} (its own tokens)`).to.be.oneOf([200, 404]);
          continue;
        }
        expect(res.status, `${c.name} ${key}: ${res.text.slice(0, 200)}`).to.equal(403);
        expect(res.body.type).to.equal('ForbiddenError');
      }
    }
    // Nothing changed: no event but the readers' own tokens.
    const audit = (await must(api.get(`/admin/audit?since=${new Date(since).toISOString()}&limit=1000`))).body.entries as { call: string | null; by: string }[];
    expect(audit.filter((e) => e.call !== 'token_create' && e.call !== null), JSON.stringify(audit.slice(0, 5))).to.deep.equal([]);
    expect((await must(api.get('/project/rp1/nodes'))).body).to.deep.equal(['rn1']);
  });

  it('a reader of P changing P gets 403, a member of another project changing P 401; a member changes P', async () => {
    await makeUser(api, 'rmixed', 'rmixed-pw-1', ['rp2']);
    await must(api.post('/auth/basic/user/rmixed/add_project', { project: 'rp1', role: 'reader' }));
    const mixed = as({ user: 'rmixed', password: 'rmixed-pw-1' });
    expect((await mixed.get('/project/rp1/nodes')).status).to.equal(200);
    const r = await mixed.post('/project/rp1/connect_node', { node: 'rn2' });
    expect(r.status).to.equal(403);
    expect(r.body.type).to.equal('ForbiddenError');
    await must(mixed.post('/project/rp2/connect_node', { node: 'rn2' }));
    await must(mixed.post('/project/rp2/detach_node', { node: 'rn2' }));
    expect((await as(member).post('/project/rp2/connect_node', { node: 'rn2' })).status).to.equal(401);
  });

  it('a reader of P who is a member of another project gets 403 for a change of P\'s networks, and changes nothing', async () => {
    await makeUser(api, 'rnet', 'rnet-pw-1', ['rp2']);
    await must(api.post('/auth/basic/user/rnet/add_project', { project: 'rp1', role: 'reader' }));
    const mixed = as({ user: 'rnet', password: 'rnet-pw-1' });
    const before = (await must(api.get('/network/rw1'))).body;
    for (const [method, url] of [['DELETE', '/network/rw1'], ['PUT', '/network/rw1/access/rp2'], ['DELETE', '/network/rw1/access/rp1']]) {
      const r = await mixed.call(method, url);
      expect(r.status, `${method} ${url}: ${r.text}`).to.equal(403);
      expect(r.body.type).to.equal('ForbiddenError');
    }
    expect((await must(api.get('/network/rw1'))).body).to.deep.equal(before);
    // A project it cannot even read stays 401.
    await must(api.put('/project/rp-other'));
    await must(api.put('/network/rw-other', { owner: 'rp-other', access: 'rp-other', net_id: '' }));
    expect((await mixed.call('DELETE', '/network/rw-other')).status).to.equal(401);
  });

  it('shows a user\'s role and projects with roles: to an admin, an auditor, or the user itself', async () => {
    const shown = (await must(api.get('/auth/basic/user/rmixed'))).body;
    expect(shown).to.deep.equal({ name: 'rmixed', role: 'user', is_admin: false, projects: { rp2: 'member', rp1: 'reader' } });
    expect((await must(as(auditor).get('/auth/basic/user/rauditor'))).body).to.include({ role: 'auditor', is_admin: false });
    expect((await must(as(auditor).get('/auth/basic/user/rmixed'))).body.role).to.equal('user');
    expect((await as(member).get('/auth/basic/user/rmixed')).status).to.equal(401);
    expect((await must(as(member).get('/auth/basic/user/rmember'))).body.projects).to.deep.equal({ rp1: 'member' });
    expect((await api.get('/auth/basic/user/nobody')).status).to.equal(404);
    expect((await must(api.get(`/auth/basic/user/${ADMIN.user}`))).body).to.include({ role: 'admin', is_admin: true });
  });

  it('sets roles: PUT with role, PATCH with role or is_admin (HIL\'s bodies unchanged), not both, not one\'s own', async () => {
    await must(api.put('/auth/basic/user/rrole', { password: 'rrole-pw-12', role: 'admin' }));
    expect((await must(api.get('/auth/basic/user/rrole'))).body.role).to.equal('admin');
    expect((await api.put('/auth/basic/user/rrole2', { password: 'x', role: 'admin', is_admin: true })).status).to.equal(400);
    expect((await api.put('/auth/basic/user/rrole2', { password: 'x', role: 'root' })).status).to.equal(400);
    await must(api.call('PATCH', '/auth/basic/user/rrole', { body: { role: 'auditor' } }));
    const rrole = as({ user: 'rrole', password: 'rrole-pw-12' });
    expect((await rrole.get('/projects')).status).to.equal(200);
    expect((await rrole.put('/project/rp9')).status).to.equal(403);
    await must(api.call('PATCH', '/auth/basic/user/rrole', { body: { is_admin: true } }));
    await must(rrole.put('/project/rp9'));
    expect((await must(api.get('/auth/basic/user/rrole'))).body.role).to.equal('admin');
    expect((await api.call('PATCH', '/auth/basic/user/rrole', { body: { is_admin: true, role: 'user' } })).status).to.equal(400);
    expect((await api.call('PATCH', '/auth/basic/user/rrole', { body: {} })).status).to.equal(400);
    expect((await api.call('PATCH', `/auth/basic/user/${ADMIN.user}`, { body: { role: 'user' } })).status).to.equal(409);
  });

  it('is_admin changes only the admin flag: false leaves an auditor an auditor (what GET shows, sent back, changes nothing)', async () => {
    await must(api.put('/auth/basic/user/raud2', { password: 'raud2-pw-12', role: 'auditor' }));
    const shown = (await must(api.get('/auth/basic/user/raud2'))).body;
    expect(shown).to.include({ role: 'auditor', is_admin: false });
    await must(api.call('PATCH', '/auth/basic/user/raud2', { body: { is_admin: shown.is_admin } }));
    expect((await must(api.get('/auth/basic/user/raud2'))).body).to.include({ role: 'auditor', is_admin: false });
    const raud2 = as({ user: 'raud2', password: 'raud2-pw-12' });
    expect((await raud2.get('/admin/audit')).status).to.equal(200); // still reads what an admin reads
    expect((await raud2.put('/project/rp8')).status).to.equal(403);
    // The role is what ends it; an admin made a user with is_admin false is a user.
    await must(api.call('PATCH', '/auth/basic/user/raud2', { body: { role: 'user' } }));
    expect((await must(api.get('/auth/basic/user/raud2'))).body.role).to.equal('user');
    await must(api.call('PATCH', '/auth/basic/user/raud2', { body: { is_admin: true } }));
    await must(api.call('PATCH', '/auth/basic/user/raud2', { body: { is_admin: false } }));
    expect((await must(api.get('/auth/basic/user/raud2'))).body).to.include({ role: 'user', is_admin: false });
  });
});
