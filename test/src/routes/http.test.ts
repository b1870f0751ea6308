import { expect } from 'chai';
import { once } from 'node:events';
import { connect } from 'node:net';
import { startTestServer, TestServer, Client, ADMIN, must, basic } from '../../helpers/server';

describe('HTTP conventions (docs/api-conventions.md §1-2)', () => {
  let ts: TestServer;
  let api: Client;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
  });

  it('answers a change with 200 and an empty body', async () => {
    const r = await api.put('/project/basics');
    expect(r.status).to.equal(200);
    expect(r.text).to.equal('');
  });

  it('parses a JSON body whatever the Content-Type, and without one', async () => {
    await must(api.put('/project/ctype'));
    await must(api.call('PUT', '/node/ct1', { raw: JSON.stringify({ obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'h', user: 'u', password: 'p' } }), headers: { 'content-type': 'text/plain' } }));
    await must(api.call('POST', '/project/ctype/connect_node', { raw: '{"node":"ct1"}' }));
    expect((await api.get('/node/ct1')).body.project).to.equal('ctype');
  });

  it('parses a JSON body even under a Content-Type that is empty or not a media type', async () => {
    await must(api.put('/project/ctype2'));
    for (const [i, ct] of ['', '///', 'json', 'application/json; charset', ';'].entries()) {
      const obm = { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'h', user: 'u', password: 'p' };
      const r = await api.call('PUT', `/node/ctx${i}`, { raw: JSON.stringify({ obm }), headers: { 'content-type': ct } });
      expect(r.status, `${JSON.stringify(ct)}: ${r.text}`).to.equal(200);
      // and a bad body under it is the body's 400, a good one reaches the call's own checks
      expect((await api.call('POST', '/project/ctype2/connect_node', { raw: '{"node":', headers: { 'content-type': ct } })).body.msg).to.match(/not valid UTF-8 JSON/);
      expect((await api.call('POST', '/project/ctype2/connect_node', { raw: '{"node":"nope"}', headers: { 'content-type': ct } })).status).to.equal(404);
    }
  });

  it('treats an empty body as {} and rejects any key on calls without a body', async () => {
    expect((await api.call('PUT', '/project/empty', { raw: '' })).status).to.equal(200);
    const r = await api.put('/project/withkey', { x: 1 });
    expect(r.status).to.equal(400);
    expect(r.body.type).to.equal('BadArgumentError');
    expect((await api.get('/projects')).body).to.not.include('withkey');
  });

  for (const [what, raw] of [
    ['invalid JSON', '{"node":'],
    ['a JSON array', '["n"]'],
    ['a JSON string', '"n"'],
    ['JSON null', 'null'],
    ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])],
  ] as const) {
    it(`answers 400 with the error body for ${what}, before authentication`, async () => {
      const r = await api.call('POST', '/project/basics/connect_node', { raw, as: null });
      expect(r.status).to.equal(400);
      expect(r.body).to.have.keys('type', 'msg');
      expect(r.body.type).to.equal('BadArgumentError');
      expect(r.body.msg).to.be.a('string');
    });
  }

  it('answers 400 for a missing key, an unknown key, a wrong type and null', async () => {
    await must(api.put('/node/vn', { obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'h', user: 'u', password: 'p' } }));
    for (const body of [{}, { node: 'vn', extra: 1 }, { node: 5 }, { node: null }, { node: ['vn'] }, { node: 'vn', project: 'basics' }]) {
      const r = await api.post('/project/basics/connect_node', body);
      expect(r.status, JSON.stringify(body)).to.equal(400);
      expect(r.body.type).to.equal('BadArgumentError');
    }
    expect((await api.get('/node/vn')).body.project).to.equal(null);
  });

  it('answers 400 for a GET with a body and for unknown query parameters', async () => {
    expect((await api.call('GET', '/projects', { raw: '{}' })).status).to.equal(400);
    expect((await api.get('/projects?x=1')).status).to.equal(400);
    expect((await api.get('/nodes/all?project=p')).status).to.equal(400);
  });

  it('answers 404 for an unknown path', async () => {
    expect((await api.get('/no/such/thing')).status).to.equal(404);
    expect((await api.get('/node/n/console')).status).to.equal(404);
  });

  it('serves every route under /v0 too', async () => {
    await must(api.put('/v0/project/viav0'));
    expect((await api.get('/v0/projects')).body).to.include('viav0');
    expect((await api.get('/projects')).body).to.include('viav0');
  });

  it('percent-decodes path parameters, and names round-trip exactly', async () => {
    for (const name of ['a.b_c-9', 'with space', 'ünï', 'x'.repeat(200), 'p%q']) {
      await must(api.put(`/project/${encodeURIComponent(name)}`));
      expect((await api.get('/projects')).body).to.include(name);
    }
  });

  it('limits body size with 413 and the error body', async () => {
    const r = await api.call('PUT', '/node/big', { raw: JSON.stringify({ obm: { type: 'x', host: 'h'.repeat(2 * 1024 * 1024) } }) });
    expect(r.status).to.equal(413);
    expect(r.body.type).to.be.a('string');
  });

  it('answers a body over the limit with a 413 the client reads, while it is still sending (a nic with an 8 MiB macaddr: more than the loopback socket buffers hold, so the client is still sending)', async () => {
    await must(api.put('/node/bignic', { obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'h', user: 'u', password: 'p' } }));
    const body = Buffer.from(JSON.stringify({ macaddr: 'a'.repeat(8 * 1024 * 1024) }));
    // As HIL's Python client (requests) does: the whole body is sent, then the answer is read;
    // a write refused on the way (a broken pipe, a reset) fails the test.
    const { port } = new URL(ts.url);
    const socket = connect(Number(port), '127.0.0.1');
    const failed = new Promise<never>((_r, reject) => socket.on('error', reject));
    const answer = (async () => {
      await once(socket, 'connect');
      const head = `PUT /node/bignic/nic/eth0 HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${basic(ADMIN)}\r\ncontent-length: ${body.length}\r\n\r\n`;
      const write = (b: Buffer | string) => new Promise<void>((resolve, reject) => socket.write(b, (err) => (err ? reject(err) : resolve())));
      await write(head);
      for (let at = 0; at < body.length; at += 64 * 1024) await write(body.subarray(at, at + 64 * 1024));
      let raw = '';
      socket.setEncoding('utf8').on('data', (c: string) => (raw += c));
      await once(socket, 'end');
      return raw;
    })();
    const raw = await Promise.race([answer, failed]);
    socket.destroy();
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);
    const text = raw.slice(raw.indexOf('\r\n\r\n') + 4);
    expect(status).to.equal(413);
    expect(JSON.parse(text)).to.deep.equal({ type: 'RequestTooLargeError', msg: 'the request body is larger than 1048576 bytes' });
    expect((await api.get('/node/bignic')).body.nics).to.deep.equal([]);
  });

  describe('authentication', () => {
    const bad: [string, string | undefined][] = [
      ['no header', undefined],
      ['a non-Basic scheme', 'Bearer abc'],
      ['bad base64', 'Basic !!!'],
      ['no colon', 'Basic ' + Buffer.from('adminadmin-secret').toString('base64')],
      ['non-UTF-8 credentials', 'Basic ' + Buffer.from([0x61, 0x3a, 0xff]).toString('base64')],
      ['an unknown user', basic({ user: 'nobody', password: 'x' })],
      ['a wrong password', basic({ user: ADMIN.user, password: 'wrong' })],
    ];
    for (const [what, header] of bad) {
      it(`answers 401 for ${what}`, async () => {
        const r = await api.call('GET', '/nodes/all', { as: null, headers: header ? { authorization: header } : {} });
        expect(r.status).to.equal(401);
        expect(r.body.type).to.equal('AuthorizationError');
      });
    }

    it('splits credentials at the first colon: passwords may hold ":" and any Unicode', async () => {
      const password = 'pa:ss:wörd ✓';
      await must(api.put('/auth/basic/user/colon', { password }));
      expect((await api.with({ user: 'colon', password }).get('/nodes/all')).status).to.equal(200);
      expect((await api.with({ user: 'colon', password: 'pa' }).get('/nodes/all')).status).to.equal(401);
    });

    it('never returns a password hash or a password in any answer', async () => {
      const r = await api.get('/admin/actors/user/colon');
      expect(r.status).to.equal(200);
      expect(r.text).to.not.match(/scrypt\$/);
      expect(r.body.state.passwordHash).to.equal('[redacted]');
    });
  });
});
