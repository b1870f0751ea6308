/**
 * The listener's bounds (docs/operations.md, Settings: HILT_REQUEST_TIMEOUT_MS and
 * HILT_MAX_CONNECTIONS): a request whose headers or body do not arrive in time loses its
 * connection, and connections past the cap are refused; the long-lived answers (the event
 * stream, a console's WebSocket) are not requests still arriving, and outlive the bound.
 */
import { expect } from 'chai';
import { connect, Socket } from 'node:net';
import { startTestServer, stopTestServer, TestServer, must, obm, ADMIN, basic } from '../../helpers/server';
import { SseStream } from '../../helpers/sse';
import { watch } from '../../helpers/console-ws';
import { sleep, until } from '../../helpers/wait';
import type { Config } from '../../../src/config';

const BOUND_MS = 1000;

/** A socket that sends `text` and then nothing; resolves once connected. */
function stall(url: string, text: string): Promise<{ socket: Socket; got: () => string; closedAt: Promise<number> }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    let got = '';
    const socket = connect(Number(port), '127.0.0.1');
    const closedAt = new Promise<number>((r) => socket.on('close', () => r(Date.now())));
    socket.on('data', (d) => (got += d));
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      socket.off('error', reject);
      if (text) socket.write(text);
      resolve({ socket, got: () => got, closedAt });
    });
    socket.once('error', reject);
  });
}

/** hilt_http_requests_total's series, as [labels, value]. */
const requestCounts = (text: string): [string, number][] =>
  [...text.matchAll(/^hilt_http_requests_total(\{[^}]*\}) (\d+)$/gm)].map((m) => [m[1], Number(m[2])]);

/** Whether `p` settled within `ms`. */
const within = (p: Promise<unknown>, ms: number) => Promise.race([p.then(() => true), sleep(ms).then(() => false)]);

describe('the listener\'s bounds: slow requests and too many connections', function () {
  this.timeout(60_000);
  let ts: TestServer;
  before(async () => {
    ts = await startTestServer({ requestTimeoutMs: BOUND_MS, maxConnections: 20, eventsHeartbeatMs: 200 } as Partial<Config>);
  });
  after(async () => {
    if (ts) await stopTestServer(ts);
  });

  it('answers 408 and closes a request whose body stalls once the bound has passed (node\'s own bound was 300 s); nothing changes', async () => {
    const started = Date.now();
    const s = await stall(ts.url, `PUT /project/slow-body HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic(ADMIN)}\r\nContent-Length: 100\r\n\r\n{"a`);
    expect(await within(s.closedAt, 4 * BOUND_MS), 'closed within four times the bound').to.equal(true);
    expect((await s.closedAt) - started).to.be.at.least(BOUND_MS - 50);
    expect(s.got()).to.match(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(s.got().slice(s.got().indexOf('\r\n\r\n') + 4))).to.deep.equal({ type: 'BadArgumentError', msg: 'the request took too long to arrive' });
    expect((await must(ts.api.get('/projects'))).body).not.to.include('slow-body');
  });

  it('answers 408 with the error body to a request whose headers stall, and to a connection that sends nothing', async () => {
    for (const text of ['GET /projects HTTP/1.1\r\nHost: x\r\n', '']) {
      const s = await stall(ts.url, text);
      expect(await within(s.closedAt, 4 * BOUND_MS), `closed within four times the bound (${JSON.stringify(text)})`).to.equal(true);
      expect(s.got()).to.match(/^HTTP\/1\.1 408 /);
      expect(JSON.parse(s.got().slice(s.got().indexOf('\r\n\r\n') + 4)).type).to.equal('BadArgumentError');
    }
  });

  it('counts each 408 (and 400 of the parser) in hilt_http_requests_total (route "unread", the method when its headers had arrived), and nothing else for them', async () => {
    const before = await ts.metrics.text();
    for (const text of [`PUT /project/slow-count HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic(ADMIN)}\r\nContent-Length: 100\r\n\r\n{"a`, 'GET /projects HTTP/1.1\r\nHost: x\r\n', '']) {
      const s = await stall(ts.url, text);
      await s.closedAt;
      expect(s.got()).to.match(/^HTTP\/1\.1 408 /);
    }
    // And a 400 of node's parser, counted the same way.
    const bad = await stall(ts.url, 'NOT A REQUEST\r\n\r\n');
    await bad.closedAt;
    expect(bad.got()).to.match(/^HTTP\/1\.1 400 /);
    const after = await ts.metrics.text();
    const moved = requestCounts(after).filter(([k, n]) => requestCounts(before).find(([b]) => b === k)?.[1] !== n && !k.includes('route="/metrics"'));
    expect(moved.map(([k, n]) => `${k} ${n - (requestCounts(before).find(([b]) => b === k)?.[1] ?? 0)}`).sort()).to.deep.equal([
      '{route="unread",method="PUT",status="408"} 1',
      '{route="unread",method="unknown",status="400"} 1',
      '{route="unread",method="unknown",status="408"} 2',
    ]);
    // No duration: node's parser answered before any handler saw a request whole.
    expect(after).not.to.match(/^hilt_http_request_duration_seconds_count\{route="unread"/m);
  });

  it('leaves an idle keep-alive connection alone past the bound: its next request is served, no unasked 408', async () => {
    const s = await stall(ts.url, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    await until('the first answer', () => /\r\n\r\n\{.*\}$/.test(s.got()));
    const first = s.got();
    await sleep(2.5 * BOUND_MS);
    expect(s.got(), 'nothing more written').to.equal(first);
    s.socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    await until('the second answer', () => s.got().length > first.length && s.got().slice(first.length).endsWith('}'));
    expect(s.got().slice(first.length)).to.match(/^HTTP\/1\.1 200 /);
    s.socket.destroy();
  });

  it('keeps an event stream and a console\'s WebSocket open well past the bound', async () => {
    await must(ts.api.put('/project/p'));
    await must(ts.api.put('/node/w1', { obm: obm('bmc-w1') }));
    await must(ts.api.post('/project/p/connect_node', { node: 'w1' }));
    const stream = new SseStream(`${ts.url}/events`, { as: ADMIN });
    expect(await stream.answered()).to.equal(200);
    const w = await watch(ts.url, 'w1', ADMIN);
    await until('the banner', () => w.text().includes('mock serial console of bmc-w1'));
    await sleep(3 * BOUND_MS);
    await must(ts.api.put('/project/after-the-bound'));
    await stream.until(() => stream.events.some((e) => e.data.name === 'after-the-bound'), 5000, 'the event after the bound');
    w.send('still-here\r');
    await until('echoed after the bound', () => w.text().includes('still-here\r\n'));
    expect(await within(w.closed, 0)).to.equal(false);
    stream.close();
    w.ws.close();
  });

});

describe('the listener\'s bounds: HILT_MAX_CONNECTIONS', function () {
  this.timeout(60_000);
  let ts: TestServer;
  before(async () => {
    ts = await startTestServer({ maxConnections: 5 } as Partial<Config>);
  });
  after(async () => {
    if (ts) await stopTestServer(ts);
  });

  it('refuses connections past the cap (closed at once, unanswered), and serves again once some close', async () => {
    const held: Socket[] = [];
    try {
      // Idle connections count as any: they hold a file descriptor each.
      for (let i = 0; i < 5; i++) held.push((await stall(ts.url, '')).socket);
      const extra = await stall(ts.url, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(await within(extra.closedAt, 2000), 'the connection past the cap is closed').to.equal(true);
      expect(extra.got()).to.equal('');
      const metrics = await ts.metrics.text();
      expect(metrics).to.match(/^hilt_http_connections_refused_total [1-9]/m);
      expect(metrics).to.match(/^hilt_http_connections 5$/m);
      // The held ones are served.
      const first = held[0];
      const answer = new Promise<string>((r) => first.once('data', (d) => r(String(d))));
      first.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(await answer).to.match(/^HTTP\/1\.1 200 /);
    } finally {
      for (const s of held) s.destroy();
    }
    await until('a call served again', async () => (await ts.api.get('/projects').catch(() => ({ status: 0 }))).status === 200, 5000);
  });
});
