/**
 * API tokens (docs/identity.md): POST /auth/tokens, Authorization: Bearer, GET and DELETE
 * /auth/tokens, scopes, expiry, revocation, the throttle.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, makeNode, ADMIN } from '../../helpers/server';
import { sleep } from '../../helpers/wait';
import { spyScrypt } from '../../helpers/scrypt-spy';

describe('API tokens', () => {
  let ts: TestServer;
  let api: Client;
  const alice = { user: 'alice', password: 'alice-token-pw' };
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    for (const p of ['tp1', 'tp2']) await must(api.put(`/project/${p}`));
    await makeUser(api, alice.user, alice.password, ['tp1', 'tp2']);
    await makeNode(api, 'tn1');
    await must(api.post('/project/tp1/connect_node', { node: 'tn1' }));
  });
  after(() => stopTestServer(ts));

  const make = async (as: Client, body: object = {}) => (await must(as.post('/auth/tokens', body))).body as { id: string; token: string; expires_at: string };

  it('creates a token, shown once, that authenticates as its user on every route basic auth does', async () => {
    const a = api.with(alice);
    const before = Date.now();
    const t = await make(a, { description: 'ci job' });
    expect(t.token).to.match(/^hilt_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(t.token).to.include(t.id);
    // default: one day
    expect(Date.parse(t.expires_at) - before).to.be.within(86_400_000 - 5_000, 86_400_000 + 5_000);
    const bearer = api.with({ token: t.token });
    expect((await bearer.get('/project/tp1/nodes')).body).to.deep.equal(['tn1']);
    expect((await bearer.get('/v0/project/tp1/nodes')).status).to.equal(200);
    // a change, with the user's rights
    await must(bearer.put('/network/tnet', { owner: 'tp1', access: 'tp1', net_id: '' }));
    const audit = await must(api.get('/admin/audit?kind=network&name=tnet'));
    expect(audit.body.entries[0].by).to.equal('alice');
    // not an admin
    expect((await bearer.get('/projects')).status).to.equal(401);
  });

  it('lists the caller\'s tokens without their secrets; an admin lists another user\'s', async () => {
    const a = api.with(alice);
    const t = await make(a, { description: 'listed', read_only: true, project: 'tp1', expires_in: 600 });
    await must(api.with({ token: t.token }).get('/project/tp1/nodes'));
    const list = (await must(a.get('/auth/tokens'))).body as Record<string, unknown>[];
    const row = list.find((x) => x.id === t.id)!;
    expect(row).to.include({ user: 'alice', description: 'listed', project: 'tp1', read_only: true, expired: false });
    expect(Date.parse(row.created_at as string)).to.be.closeTo(Date.now(), 60_000);
    expect(Date.parse(row.expires_at as string) - Date.parse(row.created_at as string)).to.equal(600_000);
    expect(Date.parse(row.last_used_at as string)).to.be.closeTo(Date.now(), 60_000);
    const text = JSON.stringify(list);
    // The secret is what follows `hilt_<id>_` (base64url: it may hold `_` itself).
    const secret = t.token.slice(`hilt_${t.id}_`.length);
    expect(secret).to.have.length(43);
    expect(text).to.not.include(secret);
    expect(text).to.not.match(/secret|hash/i);
    expect((await must(api.get('/auth/tokens?user=alice'))).body.map((x: { id: string }) => x.id)).to.include(t.id);
    expect((await a.get(`/auth/tokens?user=${ADMIN.user}`)).status).to.equal(401);
    expect((await api.get('/auth/tokens?user=nobody')).status).to.equal(404);
    expect((await api.get('/auth/tokens?user=')).status).to.equal(400);
  });

  it('refuses bad token requests with 400 and changes nothing', async () => {
    const a = api.with(alice);
    const count = async () => (await must(a.get('/auth/tokens'))).body.length;
    const n = await count();
    for (const body of [{ expires_in: 0 }, { expires_in: -1 }, { expires_in: 1.5 }, { expires_in: '60' }, { expires_in: 90 * 86_400 + 1 },
      { read_only: 'yes' }, { description: 'x'.repeat(201) }, { project: '' }, { scope: 'all' }, { token: 'mine' }]) {
      const r = await a.post('/auth/tokens', body);
      expect(r.status, JSON.stringify(body)).to.equal(400);
      expect(r.body.type).to.equal('BadArgumentError');
    }
    expect((await a.post('/auth/tokens', { project: 'nope' })).status).to.equal(404);
    expect(await count()).to.equal(n);
  });

  it('a token expires: a 2-second token is refused after 3 s, as a wrong one is', async () => {
    const t = await make(api.with(alice), { expires_in: 2 });
    const bearer = api.with({ token: t.token });
    expect((await bearer.get('/nodes/all')).status).to.equal(200);
    await sleep(3000);
    const late = await bearer.get('/nodes/all');
    const wrong = await api.with({ token: t.token.slice(0, -4) + 'AAAA' }).get('/nodes/all');
    expect(late.status).to.equal(401);
    expect(late.body).to.deep.equal(wrong.body);
    expect(late.body).to.deep.equal({ type: 'AuthorizationError', msg: 'invalid or expired token' });
    const row = (await must(api.with(alice).get('/auth/tokens'))).body.find((x: { id: string }) => x.id === t.id);
    expect(row.expired).to.equal(true);
  });

  it('revokes a token at once: its owner or an admin; another user is told it does not exist', async () => {
    const a = api.with(alice);
    await makeUser(api, 'bob', 'bob-token-pw');
    const bob = api.with({ user: 'bob', password: 'bob-token-pw' });
    const t1 = await make(a);
    const t2 = await make(a);
    expect((await bob.del(`/auth/tokens/${t1.id}`)).status).to.equal(404);
    expect((await api.with({ token: t1.token }).get('/nodes/all')).status).to.equal(200);
    await must(a.del(`/auth/tokens/${t1.id}`));
    expect((await api.with({ token: t1.token }).get('/nodes/all')).status).to.equal(401);
    await must(api.del(`/auth/tokens/${t2.id}`));
    expect((await api.with({ token: t2.token }).get('/nodes/all')).status).to.equal(401);
    expect((await a.del(`/auth/tokens/${t2.id}`)).status).to.equal(404);
    expect((await must(a.get('/auth/tokens'))).body.map((x: { id: string }) => x.id)).to.not.include.members([t1.id, t2.id]);
  });

  it('a project-scoped token acts only within its project, as a member of it alone would', async () => {
    const t = await make(api.with(alice), { project: 'tp1' });
    const bearer = api.with({ token: t.token });
    expect((await bearer.get('/project/tp1/nodes')).status).to.equal(200);
    // alice is a member of tp2 too, but not through this token
    expect((await api.with(alice).get('/project/tp2/nodes')).status).to.equal(200);
    expect((await bearer.get('/project/tp2/nodes')).status).to.equal(401);
    expect((await bearer.put('/network/t2net', { owner: 'tp2', access: 'tp2', net_id: '' })).status).to.equal(401);
    await must(bearer.put('/network/t1net', { owner: 'tp1', access: 'tp1', net_id: '' }));
    // an admin's scoped token is no admin
    await must(api.post(`/auth/basic/user/${ADMIN.user}/add_project`, { project: 'tp2' }));
    const adminScoped = await make(api, { project: 'tp2' });
    expect((await api.with({ token: adminScoped.token }).get('/projects')).status).to.equal(401);
    expect((await api.with({ token: adminScoped.token }).get('/project/tp2/nodes')).status).to.equal(200);
    // scoped to a project the caller is not in
    await must(api.put('/project/tp3'));
    expect((await api.with(alice).post('/auth/tokens', { project: 'tp3' })).status).to.equal(401);
  });

  it('a project-scoped token reads its user\'s record with that project only, not the user\'s other projects', async () => {
    const t = await make(api.with(alice), { project: 'tp1' });
    const shown = await must(api.with({ token: t.token }).get('/auth/basic/user/alice'));
    expect(shown.body.projects).to.deep.equal({ tp1: 'member' });
    // The password and an unscoped token see them all.
    expect(Object.keys((await must(api.with(alice).get('/auth/basic/user/alice'))).body.projects).sort()).to.deep.equal(['tp1', 'tp2']);
    const plain = await make(api.with(alice), { read_only: true });
    expect(Object.keys((await must(api.with({ token: plain.token }).get('/auth/basic/user/alice'))).body.projects).sort()).to.deep.equal(['tp1', 'tp2']);
  });

  it('a scoped token dies with its user\'s place in the project; every token dies with its user', async () => {
    await makeUser(api, 'carol', 'carol-token-pw', ['tp1']);
    const carol = api.with({ user: 'carol', password: 'carol-token-pw' });
    const scoped = await make(carol, { project: 'tp1' });
    const plain = await make(carol);
    await must(api.post('/auth/basic/user/carol/remove_project', { project: 'tp1' }));
    expect((await api.with({ token: scoped.token }).get('/nodes/all')).status).to.equal(401);
    // back in the project: the token stays dead
    await must(api.post('/auth/basic/user/carol/add_project', { project: 'tp1' }));
    expect((await api.with({ token: scoped.token }).get('/nodes/all')).status).to.equal(401);
    expect((await api.with({ token: plain.token }).get('/nodes/all')).status).to.equal(200);
    await must(api.del('/auth/basic/user/carol'));
    expect((await api.with({ token: plain.token }).get('/nodes/all')).status).to.equal(401);
    // a new user of the same name does not inherit them
    await makeUser(api, 'carol', 'carol-token-pw2');
    expect((await api.with({ token: plain.token }).get('/nodes/all')).status).to.equal(401);
    expect((await must(api.get('/auth/tokens?user=carol'))).body).to.deep.equal([]);
  });

  it('a token cannot make tokens (it would outlive itself through them)', async () => {
    const t = await make(api.with(alice));
    const r = await api.with({ token: t.token }).post('/auth/tokens', {});
    expect(r.status).to.equal(403);
    expect(r.body.type).to.equal('ForbiddenError');
    // it may list and revoke its user's tokens
    expect((await api.with({ token: t.token }).get('/auth/tokens')).status).to.equal(200);
    await must(api.with({ token: t.token }).del(`/auth/tokens/${t.id}`));
  });

  it('malformed and unknown bearer tokens are the same 401', async () => {
    const t = await make(api.with(alice));
    for (const bad of ['x', 'hilt_', t.token + 'x', t.token.replace(/^hilt_[0-9a-f]{16}/, 'hilt_0000000000000000'), 'eyJhbGciOiJub25lIn0.e30.']) {
      const r = await api.with({ token: bad }).get('/nodes/all');
      expect(r.status, bad).to.equal(401);
      expect(r.body).to.deep.equal({ type: 'AuthorizationError', msg: 'invalid or expired token' });
    }
    expect((await api.call('GET', '/nodes/all', { as: null, headers: { authorization: 'Bearer' } })).status).to.equal(401);
  });
});

describe('API tokens and the login throttle', () => {
  it('counts bad secrets for a token id: 429 for that token after the limit, other tokens unaffected', async () => {
    const ts = await startTestServer({ loginMaxFailures: 3, loginLockMs: 60_000 });
    const user = { user: 'dora', password: 'dora-token-pw' };
    await makeUser(ts.api, user.user, user.password);
    const t = (await must(ts.api.with(user).post('/auth/tokens', {}))).body.token as string;
    const other = (await must(ts.api.with(user).post('/auth/tokens', {}))).body.token as string;
    const wrong = t.slice(0, -6) + 'AAAAAA';
    for (let i = 0; i < 3; i++) expect((await ts.api.with({ token: wrong }).get('/nodes/all')).status).to.equal(401);
    const locked = await ts.api.with({ token: wrong }).get('/nodes/all');
    expect(locked.status).to.equal(429);
    expect(Number(locked.headers['retry-after'])).to.be.above(0);
    // the right secret of that token too, while locked
    expect((await ts.api.with({ token: t }).get('/nodes/all')).status).to.equal(429);
    expect((await ts.api.with({ token: other }).get('/nodes/all')).status).to.equal(200);
    expect((await ts.api.with(user).get('/nodes/all')).status).to.equal(200);
    await stopTestServer(ts);
  });

  it('a wrong token costs what a wrong password costs: one scrypt of the same parameters, finished before the 401', async () => {
    const ts = await startTestServer();
    await makeUser(ts.api, 'erin', 'erin-token-pw');
    const t = (await must(ts.api.with({ user: 'erin', password: 'erin-token-pw' }).post('/auth/tokens', {}))).body.token as string;
    const spy = spyScrypt();
    try {
      const password = await spy.one(() => ts.api.with({ user: 'erin', password: 'not-it' }).get('/nodes/all'), 401);
      const token = await spy.one(() => ts.api.with({ token: t.slice(0, -4) + 'AAAA' }).get('/nodes/all'), 401);
      const unknown = await spy.one(() => ts.api.with({ token: t.replace(/^hilt_[0-9a-f]{16}/, 'hilt_0000000000000000') }).get('/nodes/all'), 401);
      expect(token).to.equal(password);
      expect(unknown).to.equal(password);
    } finally {
      spy.restore();
    }
    await stopTestServer(ts);
  });
});
