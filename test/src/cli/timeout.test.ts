/**
 * The CLI's timeout (--timeout, HILT_TIMEOUT): a server that takes the connection and never
 * answers fails the command with exit code 3 and says so, instead of hanging it; an open stream
 * (hilt events --follow) is not cut by it however quiet.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { createServer, Server, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { startTestServer, stopTestServer, TestServer, must, ADMIN } from '../../helpers/server';
import { hilt, CLI } from '../../helpers/cli';
import { addCredentials, record } from '../../helpers/secrets';
import { until } from '../../helpers/wait';
import { Client, DEFAULT_TIMEOUT_S } from '../../../src/cli/client';

describe('hilt\'s timeout on a server that does not answer', function () {
  this.timeout(60_000);
  let silent: Server;
  let url: string;
  const sockets: Socket[] = [];
  before(async () => {
    // Takes every connection and reads it, but never writes a byte.
    silent = createServer((s) => {
      sockets.push(s);
      s.resume();
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  });

  const timed = async (args: string[], env: Record<string, string>) => {
    const start = Date.now();
    const r = await hilt(url, args, { env, timeoutMs: 20_000 });
    return { ...r, seconds: (Date.now() - start) / 1000 };
  };

  it('fails a call after HILT_TIMEOUT seconds with exit code 3 and the reason', async () => {
    const r = await timed(['node', 'list', 'all'], { HILT_TIMEOUT: '1' });
    expect(r.code, r.stderr).to.equal(3);
    expect(r.stderr).to.include(`hilt: ${url} did not answer GET /nodes/all/details within 1 s (--timeout or HILT_TIMEOUT`);
    expect(r.seconds).to.be.below(10);
  });

  it('--timeout wins over HILT_TIMEOUT; a change is bounded as a read is', async () => {
    const r = await timed(['--timeout', '0.5', 'project', 'create', 'p1'], { HILT_TIMEOUT: '600' });
    expect(r.code, r.stderr).to.equal(3);
    expect(r.stderr).to.include('did not answer PUT /project/p1 within 0.5 s');
    expect(r.seconds).to.be.below(10);
  });

  it('bounds the wait for a stream\'s opening (events, a console\'s handshake)', async () => {
    const events = await timed(['events'], { HILT_TIMEOUT: '1' });
    expect(events.code, events.stderr).to.equal(3);
    expect(events.stderr).to.include('did not answer GET /events within 1 s');
    const attach = await timed(['node', 'console', 'attach', 'n1'], { HILT_TIMEOUT: '1' });
    expect(attach.code, attach.stderr).to.equal(3);
    expect(attach.stderr).to.include('did not answer GET /node/n1/console/stream within 1 s');
  });

  it('refuses a timeout that is not a number of seconds (exit code 2); waits 180 s by default', async () => {
    for (const v of ['soon', '-1', '1e3']) {
      const r = await timed(['node', 'list', 'all'], { HILT_TIMEOUT: v });
      expect(r.code, v).to.equal(2);
      expect(r.stderr).to.include(`the timeout must be a number of seconds (0: no limit), got "${v}"`);
    }
    expect(DEFAULT_TIMEOUT_S).to.equal(180);
    expect(new Client(url, async () => null).timeoutS).to.equal(180);
  });
});

describe('hilt\'s timeout on an open stream', function () {
  this.timeout(60_000);
  let ts: TestServer;
  // No heartbeat for a minute: the stream stays silent far longer than the timeout.
  before(async () => { ts = await startTestServer({ eventsHeartbeatMs: 60_000 }); });
  after(() => stopTestServer(ts));

  it('events --follow stays connected through a silence longer than the timeout', async () => {
    addCredentials(ADMIN.user, ADMIN.password);
    const child = spawn(process.execPath, [CLI, 'events', '--follow', '--json', '--kind', 'project'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, HIL_ENDPOINT: ts.url, HIL_USERNAME: ADMIN.user, HIL_PASSWORD: ADMIN.password, HILT_TIMEOUT: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out = { stdout: '', stderr: '' };
    child.stdout.on('data', (d) => (out.stdout += d));
    child.stderr.on('data', (d) => (out.stderr += d));
    const exited = new Promise<number | null>((r) => child.on('close', r));
    try {
      await until('the stream open', () => ts.app.hilt.events.size === 1);
      await new Promise((r) => setTimeout(r, 3000));
      await must(ts.api.put('/project/late'));
      await until('the event printed', () => out.stdout.includes('"late"'));
      expect(out.stderr, 'no reconnect: the stream was never cut').to.equal('');
    } finally {
      child.kill('SIGINT');
      expect(await exited).to.equal(0);
      record(out.stdout, 'hilt events stdout');
      record(out.stderr, 'hilt events stderr');
    }
  });
});
