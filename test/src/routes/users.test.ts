import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, ADMIN } from '../../helpers/server';
import { hashPassword } from '../../../src/auth/password';

describe('users (database auth extension)', () => {
  let ts: TestServer;
  let api: Client;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await must(api.put('/project/up'));
  });

  it('creates a user who can authenticate; is-admin defaults to false', async () => {
    await must(api.put('/auth/basic/user/u1', { password: 'p1' }));
    const u1 = api.with({ user: 'u1', password: 'p1' });
    expect((await u1.get('/nodes/all')).status).to.equal(200);
    expect((await u1.get('/projects')).status).to.equal(401);
  });
  it('creates admins with "is-admin" or HIL\'s client key "is_admin", but not both', async () => {
    await must(api.put('/auth/basic/user/adm1', { password: 'p', 'is-admin': true }));
    await must(api.put('/auth/basic/user/adm2', { password: 'p', is_admin: true }));
    expect((await api.with({ user: 'adm1', password: 'p' }).get('/projects')).status).to.equal(200);
    expect((await api.with({ user: 'adm2', password: 'p' }).get('/projects')).status).to.equal(200);
    expect((await api.put('/auth/basic/user/adm3', { password: 'p', is_admin: true, 'is-admin': true })).status).to.equal(400);
  });
  it('returns 409 for an existing user, 400 for bad bodies', async () => {
    expect((await api.put('/auth/basic/user/u1', { password: 'other' })).status).to.equal(409);
    expect((await api.with({ user: 'u1', password: 'other' }).get('/nodes/all')).status).to.equal(401);
    for (const body of [{}, { password: 1 }, { password: 'p', 'is-admin': 'yes' }, { password: 'p', admin: true }]) {
      expect((await api.put('/auth/basic/user/u9', body)).status, JSON.stringify(body)).to.equal(400);
    }
  });
  it('refuses a user named as the service\'s own work (hilt, switch, monitor, …): its calls would pass for the service\'s in the audit log and the event stream', async () => {
    for (const name of ['hilt', 'switch', 'recovery', 'monitor', 'bootstrap', 'upgrade']) {
      const r = await api.put(`/auth/basic/user/${name}`, { password: 'svc-name-pw-1' });
      expect(r.status, name).to.equal(400);
      expect(r.body.msg, name).to.include('the service');
      expect((await api.get(`/auth/basic/user/${name}`)).status, name).to.equal(404);
    }
  });
  it('adds and removes project membership, which grants and takes away access', async () => {
    const u1 = api.with({ user: 'u1', password: 'p1' });
    expect((await u1.get('/project/up/nodes')).status).to.equal(401);
    await must(api.post('/auth/basic/user/u1/add_project', { project: 'up' }));
    expect((await u1.get('/project/up/nodes')).status).to.equal(200);
    expect((await api.post('/auth/basic/user/u1/add_project', { project: 'up' })).status).to.equal(409);
    await must(api.post('/auth/basic/user/u1/remove_project', { project: 'up' }));
    expect((await u1.get('/project/up/nodes')).status).to.equal(401);
    expect((await api.post('/auth/basic/user/u1/remove_project', { project: 'up' })).status).to.equal(404);
  });
  it('checks membership calls in order: user 404, then project 404', async () => {
    const a = await api.post('/auth/basic/user/nope/add_project', { project: 'nope' });
    expect(a.status).to.equal(404);
    expect(a.body.msg).to.match(/user/);
    const b = await api.post('/auth/basic/user/u1/add_project', { project: 'nope' });
    expect(b.status).to.equal(404);
    expect(b.body.msg).to.match(/project/);
  });
  it('sets the admin flag with PATCH, but not a user\'s own', async () => {
    await must(api.call('PATCH', '/auth/basic/user/u1', { body: { is_admin: true } }));
    expect((await api.with({ user: 'u1', password: 'p1' }).get('/projects')).status).to.equal(200);
    expect((await api.call('PATCH', `/auth/basic/user/${ADMIN.user}`, { body: { is_admin: false } })).status).to.equal(409);
    expect((await api.call('PATCH', '/auth/basic/user/nope', { body: { is_admin: true } })).status).to.equal(404);
    await must(api.call('PATCH', '/auth/basic/user/u1', { body: { is_admin: false } }));
    expect((await api.with({ user: 'u1', password: 'p1' }).get('/projects')).status).to.equal(401);
  });
  it('deletes a user, who can no longer authenticate; the name can be reused', async () => {
    await must(api.del('/auth/basic/user/u1'));
    expect((await api.with({ user: 'u1', password: 'p1' }).get('/nodes/all')).status).to.equal(401);
    expect((await api.del('/auth/basic/user/u1')).status).to.equal(404);
    await must(api.put('/auth/basic/user/u1', { password: 'new' }));
    expect((await api.with({ user: 'u1', password: 'p1' }).get('/nodes/all')).status).to.equal(401);
    expect((await api.with({ user: 'u1', password: 'new' }).get('/nodes/all')).status).to.equal(200);
  });
  it('project_delete is not refused by a member deleted while it runs (its leave of a missing user is a no-op)', async () => {
    await must(api.put('/project/gone-member'));
    await must(api.put('/auth/basic/user/gm', { password: 'pw' }));
    await must(api.post('/auth/basic/user/gm/add_project', { project: 'gone-member' }));
    await must(api.del('/auth/basic/user/gm'));
    // What project_delete asks of each member it read before the user was deleted:
    await ts.world.users.ask('gm', { type: 'user.leave', by: 'admin', project: 'gone-member', ifMember: true });
    const err = await ts.world.users.ask('gm', { type: 'user.leave', by: 'admin', project: 'gone-member' }).catch((e) => e);
    expect(err).to.have.property('type', 'NotFoundError');
    await must(api.del('/project/gone-member'));
  });

  it('lets an admin delete itself', async () => {
    const me = { user: 'selfdel', password: 'p' };
    await must(api.put('/auth/basic/user/selfdel', { password: 'p', 'is-admin': true }));
    await must(api.with(me).del('/auth/basic/user/selfdel'));
    expect((await api.with(me).get('/nodes/all')).status).to.equal(401);
  });
  it('stores passwords as salted scrypt hashes', async () => {
    await must(api.put('/auth/basic/user/h1', { password: 'same' }));
    await must(api.put('/auth/basic/user/h2', { password: 'same' }));
    const h1 = ts.world.rm.users.get('h1')!.passwordHash;
    const h2 = ts.world.rm.users.get('h2')!.passwordHash;
    expect(h1).to.match(/^scrypt\$/).and.not.include('same');
    expect(h1).to.not.equal(h2);
  });
  it('lists the active extensions to admins', async () => {
    const r = await api.get('/active_extensions');
    expect(r.body).to.include.members(['hilt.auth.database', 'hilt.switches.mock', 'hilt.headnodes.qemu']);
  });
});

describe('users of an older store named as the service\'s own work', function () {
  this.timeout(60_000);
  it('keep working, and each start names them in a warning', async () => {
    const first = await startTestServer();
    // An earlier release let an admin make them; the route refuses them now, so they are written as it did.
    const old = { user: 'monitor', password: 'old-monitor-pw-1' };
    await first.world.users.ask(old.user, { type: 'user.create', by: ADMIN.user, passwordHash: await hashPassword(old.password), isAdmin: false });
    await first.world.users.ask('upgrade', { type: 'user.create', by: ADMIN.user, passwordHash: await hashPassword('old-upgrade-pw-1'), isAdmin: false });
    await stopTestServer(first, false);

    const lines: { level: number; msg: string; users?: string[] }[] = [];
    const again = await startTestServer({}, { logger: { level: 'info', stream: { write: (l: string) => void lines.push(JSON.parse(l)) } } }, first.dataDir);
    const warned = lines.filter((l) => l.msg.includes('the service records its own work under'));
    expect(warned, JSON.stringify(lines.map((l) => l.msg))).to.have.length(1);
    expect(warned[0].level).to.equal(40);
    expect(warned[0].users).to.deep.equal(['monitor', 'upgrade']);
    // Nobody is locked out.
    expect((await again.api.with(old).get('/nodes/all')).status).to.equal(200);
    await stopTestServer(again);
  });
});
