/**
 * The request log as docs/operations.md (Logs) describes it: each request is logged when it
 * arrives and when it is answered, with its reqId, method and URL, then its status and
 * responseTime; and nothing secret reaches a line at any level (trace here): the Authorization
 * and Cookie headers, the dashboard bridge's header, passwords in bodies, secrets a client put
 * in a query string.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, basic } from '../../helpers/server';
import { loggerOptions } from '../../../src/redact';

describe('the request log', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  const lines: string[] = [];
  const parsed = () => lines.map((l) => JSON.parse(l) as Record<string, any>);

  before(async () => {
    ts = await startTestServer({ logLevel: 'trace' }, { logger: loggerOptions('trace', { write: (l: string) => void lines.push(l) }) });
    api = ts.api;
  });
  after(() => stopTestServer(ts));

  it('logs each request when it arrives and when it is answered, with the fields the runbook lists', async () => {
    lines.length = 0;
    await must(api.put('/project/logged'));
    const all = parsed();
    const arrived = all.find((l) => l.msg === 'incoming request' && l.req?.url === '/project/logged');
    expect(arrived, 'the line of its arrival').to.not.equal(undefined);
    expect(arrived!.req.method).to.equal('PUT');
    expect(arrived!.level).to.equal(30);
    const answered = all.find((l) => l.msg === 'request completed' && l.reqId === arrived!.reqId);
    expect(answered, 'the line of its answer').to.not.equal(undefined);
    expect(answered!.res.statusCode).to.equal(200);
    expect(answered!.responseTime).to.be.a('number');
  });

  it('logs no credential of a header, a body or a query string, at level trace', async () => {
    lines.length = 0;
    const secrets = ['hdr-cookie-secret', 'query-token-secret', 'query-password-secret', 'body-password-secret', 'bearer-secret-token', 'bridge-secret'];
    await api.get('/nodes/free', { headers: { cookie: `hilt_ui=${secrets[0]}` } });
    await api.get(`/nodes/free?access_token=${secrets[1]}&password=${secrets[2]}`);
    await api.get(`/v0/nodes/free?token=${secrets[1]}`);
    await api.get(`/no/such/call?api_token=${secrets[1]}`);
    await must(api.put('/auth/basic/user/logged-user', { password: secrets[3] }));
    await api.put('/auth/basic/user/logged-user2', { password: secrets[3], unknown: { password: secrets[3] } });
    await api.with({ token: secrets[4] }).get('/nodes/free');
    await api.get('/nodes/free', { headers: { 'x-hilt-ui-bridge': secrets[5] } });
    const text = lines.join('');
    expect(lines.length).to.be.at.least(16);
    for (const s of secrets) expect(text, s).to.not.include(s);
    expect(text).to.not.include(basic({ user: 'admin', password: 'admin-secret' }).slice(6));
    // What was taken out is said, and the rest of the URL kept.
    const urls = parsed().filter((l) => l.msg === 'incoming request').map((l) => l.req.url as string);
    expect(urls).to.include('/nodes/free?access_token=[redacted]&password=[redacted]');
    expect(urls).to.include('/no/such/call?api_token=[redacted]');
  });

  it('logs no API token pasted into a path (a revoke given the whole token rather than its id), nor the dashboard\'s action naming it', async () => {
    const user = { user: 'path-token-user', password: 'path-token-pw' };
    await must(api.put(`/auth/basic/user/${user.user}`, { password: user.password }));
    const t = (await must(api.with(user).post('/auth/tokens', {}))).body as { id: string; token: string };
    const secret = t.token.slice(`hilt_${t.id}_`.length);
    lines.length = 0;
    const login = await api.call('POST', '/ui/api/login', { as: null, body: user });
    const cookie = String([login.headers['set-cookie']].flat()[0]).split(';')[0];
    // The whole token revokes it: by the dashboard's action, then again (its answer quotes only the id).
    const r = await api.call('POST', '/ui/api/action', { as: null, body: { action: 'token_revoke', id: t.token }, headers: { cookie, 'x-csrf-token': login.body.csrf } });
    expect(r.status, r.text).to.equal(200);
    expect((await api.with({ token: t.token }).get('/nodes/free')).status).to.equal(401);
    const again = await api.with(user).del(`/auth/tokens/${t.token}`);
    expect(again.status).to.equal(404);
    expect(again.body.msg).to.equal(`token ${t.id} does not exist`);
    expect(lines.length).to.be.at.least(4);
    for (const l of lines) expect(l).to.not.include(secret);
    // The id stays, to say which token it was.
    const urls = parsed().filter((l) => l.msg === 'incoming request').map((l) => l.req.url as string);
    expect(urls).to.include(`/auth/tokens/hilt_${t.id}_[redacted]`);
  });
});
