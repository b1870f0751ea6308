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
});
