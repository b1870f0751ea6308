/**
 * The dashboard and identity (docs/identity.md): a login with an API token as well as a
 * password, the session ending with its token, the caller's tokens listed, created (the secret
 * shown once) and revoked through the dashboard's actions, and an auditor seeing what an admin
 * sees but changing nothing.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, Res } from '../../helpers/server';
import { addSecret } from '../../helpers/secrets';

class Session {
  cookie = '';
  csrf = '';
  constructor(readonly api: Client) {}
  async login(body: object): Promise<Res> {
    const r = await this.api.call('POST', '/ui/api/login', { as: null, body });
    const set = r.headers['set-cookie'];
    if (r.status === 200 && set) {
      this.cookie = String([set].flat()[0]).split(';')[0];
      this.csrf = r.body.csrf;
    }
    return r;
  }
  get(path: string): Promise<Res> {
    return this.api.call('GET', path, { as: null, headers: { cookie: this.cookie } });
  }
  act(body: object): Promise<Res> {
    return this.api.call('POST', '/ui/api/action', { as: null, body, headers: { cookie: this.cookie, 'x-csrf-token': this.csrf } });
  }
}

describe('the dashboard with tokens and roles', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  const user = { user: 'ui-tok', password: 'ui-tok-pw-1' };
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await makeUser(api, user.user, user.password);
  });
  after(() => stopTestServer(ts));

  it('logs in with an API token; the session ends when the token is revoked', async () => {
    const token = (await must(api.with(user).post('/auth/tokens', { description: 'ui' }))).body as { id: string; token: string };
    const s = new Session(api);
    const r = await s.login({ token: token.token });
    expect(r.status).to.equal(200);
    expect(r.body).to.include({ user: 'ui-tok', via: 'token', isAdmin: false });
    expect((await s.get('/ui/api/me')).status).to.equal(200);
    const bad = await new Session(api).login({ token: token.token.slice(0, -3) + 'AAA' });
    expect(bad.status).to.equal(401);
    expect(bad.body.msg).to.equal('invalid or expired token');
    expect((await new Session(api).login({ token: token.token, user: 'x' })).status).to.equal(401);
    await must(api.with(user).del(`/auth/tokens/${token.id}`));
    expect((await s.get('/ui/api/me')).status).to.equal(401);
  });

  it('a session opened with a token that expires before the session would ends with the token, and says so (expiresAt, the cookie)', async () => {
    const token = (await must(api.with(user).post('/auth/tokens', { description: 'short', expires_in: 60 }))).body as { id: string; token: string; expires_at: string };
    const s = new Session(api);
    const r = await must(s.login({ token: token.token }));
    expect(r.body.expiresAt).to.equal(token.expires_at);
    expect((await must(s.get('/ui/api/me'))).body.expiresAt).to.equal(token.expires_at);
    const maxAge = Number(/Max-Age=(\d+)/i.exec(String([r.headers['set-cookie']].flat()[0]))?.[1]);
    expect(maxAge).to.be.within(58, 60);
    // A token that outlives the session: the session's own lifetime (HILT_UI_SESSION_MINUTES).
    const long = (await must(api.with(user).post('/auth/tokens', { description: 'long', expires_in: 7 * 86400 }))).body as { token: string; expires_at: string };
    const l = await must(new Session(api).login({ token: long.token }));
    expect(Date.parse(l.body.expiresAt)).to.be.below(Date.parse(long.expires_at));
    expect(Date.parse(l.body.expiresAt) - Date.now()).to.be.within(ts.config.uiSessionMinutes * 60_000 - 10_000, ts.config.uiSessionMinutes * 60_000);
  });

  it('lists, creates (the secret shown once) and revokes the caller\'s tokens', async () => {
    const s = new Session(api);
    await must(s.login(user));
    const made = await must(s.act({ action: 'token_create', description: 'from the dashboard', expires_in: 3600, read_only: true }));
    addSecret(made.body.token);
    expect(made.body.token).to.match(/^hilt_/);
    const list = (await must(s.get('/ui/api/tokens'))).body as { id: string; description: string; read_only: boolean }[];
    const row = list.find((t) => t.id === made.body.id)!;
    expect(row).to.include({ description: 'from the dashboard', read_only: true });
    expect(JSON.stringify(list)).to.not.include(made.body.token);
    // it works, read-only
    expect((await api.with({ token: made.body.token }).get('/nodes/all')).status).to.equal(200);
    expect((await api.with({ token: made.body.token }).put('/project/nope')).status).to.equal(403);
    await must(s.act({ action: 'token_revoke', id: made.body.id }));
    expect((await api.with({ token: made.body.token }).get('/nodes/all')).status).to.equal(401);
    expect((await s.act({ action: 'token_revoke', id: made.body.id })).status).to.equal(404);
  });

  it('shows an auditor what an admin sees, and refuses its changes', async () => {
    await must(api.put('/auth/basic/user/ui-aud', { password: 'ui-aud-pw-1', role: 'auditor' }));
    const s = new Session(api);
    const r = await must(s.login({ user: 'ui-aud', password: 'ui-aud-pw-1' }));
    expect(r.body).to.include({ isAdmin: true, readOnly: true });
    expect(r.body.features).to.include({ audit: true, switches: true });
    expect((await s.get('/ui/api/audit')).status).to.equal(200);
    expect((await s.get('/ui/api/table/switches')).status).to.equal(200);
    const change = await s.act({ action: 'reapply', node: 'n', nic: 'e' });
    expect(change.status).to.equal(403);
    // its own tokens it may make
    const t = await must(s.act({ action: 'token_create' }));
    addSecret(t.body.token);
  });
});
