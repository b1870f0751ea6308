/**
 * Odd but well-formed HTTP the fuzz tests (test/fuzz/routes.test.ts) do not send: HEAD on the
 * event streams, a body on a request that asks to switch protocols, calls no route serves.
 * Each gets a prompt answer with the API's error body where it is an error, and changes nothing.
 */
import { expect } from 'chai';
import { connect } from 'node:net';
import { request } from 'node:http';
import { startTestServer, stopTestServer, TestServer, Client, ADMIN, must, basic } from '../../helpers/server';
import { parseExposition, value } from '../../helpers/prometheus';

interface Answer { status: number; headers: Record<string, string | string[] | undefined>; text: string }

/** One request; rejects when no answer has ended within `ms`. */
function send(url: string, method: string, headers: Record<string, string>, ms = 2000): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.setTimeout(ms, () => req.destroy(new Error(`no answer to ${method} ${url} within ${ms} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** Raw bytes on a socket; resolves with what came back once the service closed the connection. */
function raw(url: string, text: string, ms = 2000): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), '127.0.0.1', () => s.write(text));
    let got = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`the connection was not closed within ${ms} ms; got ${JSON.stringify(got.slice(0, 300))}`));
    }, ms);
    s.on('data', (d) => (got += d));
    s.on('error', reject);
    s.on('close', () => {
      clearTimeout(timer);
      resolve(got);
    });
  });
}

describe('odd requests: HEAD on streams, bodies with Upgrade, unknown calls', function () {
  let ts: TestServer;
  let api: Client;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
  });
  after(async () => {
    if (ts) await stopTestServer(ts);
  });

  it('answers HEAD /events at once with the stream\'s headers, and opens no stream', async () => {
    for (const path of ['/events', '/v0/events']) {
      const a = await send(ts.url + path, 'HEAD', { authorization: basic(ADMIN) });
      expect(a.status, path).to.equal(200);
      expect(a.headers['content-type'], path).to.match(/^text\/event-stream/);
      expect(a.text, path).to.equal('');
    }
    expect(ts.app.hilt.events.size, 'streams open').to.equal(0);
    // Its checks are GET's: bad input is still a 400, no credentials a 401.
    expect((await send(`${ts.url}/events?since=x`, 'HEAD', { authorization: basic(ADMIN) })).status).to.equal(400);
    expect((await send(`${ts.url}/events`, 'HEAD', {})).status).to.equal(401);
  });

  it('answers HEAD /ui/api/events at once, and opens no stream', async () => {
    const login = await must(api.call('POST', '/ui/api/login', { as: null, body: { user: ADMIN.user, password: ADMIN.password } }));
    const cookie = String([login.headers['set-cookie']].flat()[0]).split(';')[0];
    const a = await send(`${ts.url}/ui/api/events`, 'HEAD', { cookie });
    expect(a.status).to.equal(200);
    expect(a.headers['content-type']).to.match(/^text\/event-stream/);
    expect(ts.app.hilt.events.size, 'streams open').to.equal(0);
  });

  it('refuses a body on a call that asks to switch protocols (curl --http2 on http://), which would reach the call without it; nothing changes', async () => {
    const head = (path: string) => `PUT ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic(ADMIN)}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n`;
    const body = '{"zz":1}';
    const answers = [
      await raw(ts.url, `${head('/project/upg-length')}Content-Length: ${body.length}\r\n\r\n${body}`),
      await raw(ts.url, `${head('/project/upg-chunked')}Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`),
    ];
    for (const a of answers) {
      expect(a, a).to.match(/^HTTP\/1\.1 400 /);
      const msg = JSON.parse(a.slice(a.indexOf('\r\n\r\n') + 4));
      expect(msg.type).to.equal('BadArgumentError');
      expect(msg.msg).to.match(/Upgrade/);
    }
    const projects = (await must(api.get('/projects'))).body as string[];
    expect(projects.filter((p) => p.startsWith('upg-'))).to.deep.equal([]);
    // Without a body the upgrade is ignored and the call served.
    expect(await raw(ts.url, `${head('/project/upg-empty')}\r\n`)).to.match(/^HTTP\/1\.1 200 /);
    expect((await must(api.get('/projects'))).body).to.include('upg-empty');
  });

  it('counts those 400s in /metrics as any answer, by the call\'s route, and an unknown path\'s as unmatched', async () => {
    const count = async (labels: Record<string, string>) => value(parseExposition(await ts.metrics.text()), 'hilt_http_requests_total', labels);
    const put = { route: '/project/:project', method: 'PUT', status: '400' };
    const unknown = { route: 'unmatched', method: 'PUT', status: '400' };
    const before = [await count(put), await count(unknown)];
    const body = '{"zz":1}';
    for (const path of ['/project/upg-counted', '/v0/project/upg-counted', '/no/such/call']) {
      const a = await raw(ts.url, `PUT ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      expect(a, path).to.match(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(a.slice(a.indexOf('\r\n\r\n') + 4)).msg, path).to.match(/Upgrade/);
    }
    // A GET's chunked body is not waited for either.
    const get = await raw(ts.url, `GET /projects HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
    expect(get).to.match(/^HTTP\/1\.1 400 /);
    expect((await count(put)) - before[0], 'the call\'s route').to.equal(2);
    expect((await count(unknown)) - before[1], 'unmatched').to.equal(1);
  });

  it('never answers a good request with the 400 of a malformed one pipelined behind it (that change was made): the connection is closed instead', async () => {
    for (const [i, bad] of ['GE T / HTTP/1.1\r\n\r\n', `GET / HTTP/1.1\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`].entries()) {
      const out = await raw(ts.url, `PUT /project/piped-${i} HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic(ADMIN)}\r\n\r\n${bad}`);
      // The change may still be committing when the connection closes.
      await new Promise((r) => setTimeout(r, 300));
      const made = ((await must(api.get('/projects'))).body as string[]).includes(`piped-${i}`);
      // The first answer is the PUT's: its 200, or none at all; never a refusal of a change that was made.
      const first = /^HTTP\/1\.1 (\d{3})/.exec(out)?.[1];
      expect(first === undefined || first === '200' || !made, `first answer ${first} (the project ${made ? 'was' : 'was not'} made): ${out.slice(0, 200)}`).to.equal(true);
    }
  });

  it('refuses a body whose strings hold a lone surrogate or a NUL (400, before authentication): it could not be stored as given', async () => {
    await must(api.put('/node/sur', { obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'h', user: 'u', password: 'p' } }));
    const before = (await must(api.get('/node/sur'))).text;
    const cases: [string, string, string][] = [
      ['PUT', '/node/sur/nic/eth0', '{"macaddr":"a\\ud800b"}'],
      ['PUT', '/node/sur/metadata/rack', '{"value":"r\\udfff"}'],
      ['PUT', '/node/sur/metadata/rack', '{"value":"\\udc00\\ud800"}'],
      ['PUT', '/node/sur2', '{"obm":{"type":"http://schema.massopencloud.org/haas/v0/obm/mock","host":"h","user":"u","password":"p\\uD83D"}}'],
      ['PUT', '/node/sur3', '{"obm":{"type":"http://schema.massopencloud.org/haas/v0/obm/mock","host":"h","user":"u","password":"p"},"metadata":{"k\\ud800":1}}'],
      ['PUT', '/auth/basic/user/sur', '{"password":"pw\\ud800"}'],
      ['POST', '/auth/tokens', '{"description":"d\\ud800"}'],
      ['PUT', '/node/sur/nic/eth0', '{"macaddr":"a\\u0000b"}'],
      ['PUT', '/node/sur/metadata/k\\u0000', '{"value":"\\u0000"}'],
      ['PUT', '/node/sur3', '{"obm":{"type":"http://schema.massopencloud.org/haas/v0/obm/mock","host":"h","user":"u","password":"p"},"metadata":{"k\\u0000":1}}'],
    ];
    for (const [method, path, raw] of cases) {
      for (const as of [undefined, null]) {
        const r = await api.call(method, path, { raw, as });
        expect(r.status, `${method} ${path} ${raw}: ${r.text}`).to.equal(400);
        expect(r.body.type).to.equal('BadArgumentError');
        expect(r.body.msg).to.match(/lone surrogate .* or a NUL/);
      }
    }
    expect((await must(api.get('/node/sur'))).text).to.equal(before);
    expect((await api.get('/node/sur2')).status).to.equal(404);
    expect((await api.get('/auth/basic/user/sur')).status).to.equal(404);
    expect((await must(api.get('/auth/tokens'))).body).to.deep.equal([]);
    // A pair is one character (U+1F600), an escaped backslash before "ud800" no escape at all.
    await must(api.put('/node/sur/nic/eth0', undefined, { raw: '{"macaddr":"\\ud83d\\ude00 \\\\ud800"}' }));
    const nic = (await must(api.get('/node/sur'))).body.nics[0];
    expect(nic.macaddr).to.equal('😀 \\ud800');
    // Other odd text is kept verbatim: controls, a BOM.
    await must(api.put('/node/sur/nic/eth1', { macaddr: 'a\u001b[31m\ufeff' }));
    expect((await must(api.get('/node/sur'))).body.nics.find((n: { label: string }) => n.label === 'eth1').macaddr).to.equal('a\u001b[31m\ufeff');
  });

  it('answers an unknown path or method 404 whoever calls, without checking credentials (docs/api-conventions.md, Paths)', async () => {
    const failures = ts.app.hilt.auth.throttle.size;
    const callers = [null, { user: ADMIN.user, password: 'wrong' }, { user: 'nobody', password: 'x' }, ADMIN];
    for (const who of callers) {
      for (const [method, path] of [['GET', '/no/such/call'], ['OPTIONS', '/projects'], ['DELETE', '/projects'], ['GET', '/v0'], ['GET', '/projects/']]) {
        const r = await api.with(who).call(method, path);
        expect(r.status, `${method} ${path} as ${who?.user ?? 'nobody'}`).to.equal(404);
        expect(r.body.type).to.equal('NotFoundError');
      }
    }
    // No login was checked, so none failed.
    expect(ts.app.hilt.auth.throttle.size).to.equal(failures);
  });

  it('answers a WebSocket handshake the console stream cannot take (bad key, version, protocol, Upgrade) 400 with the API\'s error body', async () => {
    await must(api.put('/node/wsn', { obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'bmc.example', user: 'u', password: 'obm-secret' } }));
    const key = 'dGhlIHNhbXBsZSBub25jZQ==';
    const handshake = (h: string) => `GET /node/wsn/console/stream HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic(ADMIN)}\r\nConnection: Upgrade\r\n${h}\r\n`;
    const cases = {
      key: handshake(`Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: x\r\n`),
      version: handshake(`Upgrade: websocket\r\nSec-WebSocket-Version: 7\r\nSec-WebSocket-Key: ${key}\r\n`),
      protocol: handshake(`Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Protocol: a b\r\n`),
      upgrade: handshake(`Upgrade: h2c, websocket2\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\n`),
    };
    for (const [what, text] of Object.entries(cases)) {
      const got = await raw(ts.url, text);
      expect(got, what).to.match(/^HTTP\/1\.1 400 /);
      const [head, body] = got.split('\r\n\r\n');
      expect(head.toLowerCase(), what).to.contain('content-type: application/json');
      const parsed = JSON.parse(body);
      expect(Object.keys(parsed).sort(), what).to.deep.equal(['msg', 'type']);
      expect(parsed.type, what).to.equal('BadArgumentError');
    }
    expect(ts.app.hilt.events.size, 'streams open').to.equal(0);
  });

  it('answers an Upgrade to a WebSocket path with another method than GET (HEAD, POST, DELETE) or a malformed path, and closes the connection', async () => {
    const ws = 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
    for (const [method, path] of [['POST', '/node/wsn/console/stream'], ['DELETE', '/v0/node/wsn/console/stream'], ['HEAD', '/node/wsn/console/stream'], ['PUT', '/ui/api/console/stream?node=wsn'],
      ['GET', '/node/%zz/console/stream'], ['GET', '/node/%ED%A0%80/console/stream'], ['GET', '/ui/api/node/%zz/console/stream']]) {
      // raw() rejects when the service does not close the connection within 2 s
      const got = await raw(ts.url, `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic(ADMIN)}\r\n${ws}\r\n`);
      expect(got, `${method} ${path}`).to.match(/^HTTP\/1\.1 4\d\d /);
    }
  });
});
