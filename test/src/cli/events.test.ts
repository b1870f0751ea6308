/** hilt events (the event stream) and hilt admin webhook, as child processes against a test server. */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, stopTestServer, TestServer, must, makeUser, obm, ADMIN } from '../../helpers/server';
import { cliFor, hilt, rows, CLI } from '../../helpers/cli';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Receiver } from '../../helpers/receiver';
import { addCredentials, record } from '../../helpers/secrets';
import type { Stream } from '../../../src/events/hub';

describe('hilt events and hilt admin webhook', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let cli: ReturnType<typeof cliFor>;
  before(async () => {
    ts = await startTestServer();
    cli = cliFor(ts.url);
  });
  after(() => stopTestServer(ts));

  /** `hilt events --follow --json ARGS` as a child process: what it printed, and a way to wait for it. */
  const follow = (...args: string[]) => {
    addCredentials(ADMIN.user, ADMIN.password);
    const child = spawn(process.execPath, [CLI, 'events', '--follow', '--json', ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, HIL_ENDPOINT: ts.url, HIL_USERNAME: ADMIN.user, HIL_PASSWORD: ADMIN.password },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out = { stdout: '', stderr: '' };
    child.stdout.on('data', (d) => (out.stdout += d));
    child.stderr.on('data', (d) => (out.stderr += d));
    const exited = new Promise<number | null>((r) => child.on('close', r));
    const names = () => out.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l).name as string);
    const until = async (cond: () => boolean, what: string) => {
      const end = Date.now() + 15_000;
      while (!cond()) {
        if (Date.now() > end) throw new Error(`${what}: ${out.stdout} ${out.stderr}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    return { child, exited, names, until, out };
  };

  it('prints the events there are, one line each (or JSON), and ends; filters; a refused cursor is exit 1', async () => {
    const t0 = new Date().toISOString();
    await must(ts.api.put('/project/ce'));
    await must(ts.api.put('/node/cn1', { obm: obm() }));
    await must(ts.api.post('/project/ce/connect_node', { node: 'cn1' }));
    const text = await cli.ok('events', '--since', t0);
    const lines = text.trim().split('\n');
    expect(lines).to.have.length(3);
    expect(lines[0]).to.match(/^\d{4}-\d\d-\d\dT[\d:.]+Z\s+project\.created\s+project ce\s+ce\s+admin$/);
    expect(lines[2]).to.match(/project\.node_added\s+node cn1\s+ce\s+admin$/);
    const json = (await cli.ok('events', '--since', t0, '--type', 'node.registered', '--json')).trim().split('\n').map((l) => JSON.parse(l));
    expect(json.map((e) => [e.type, e.name])).to.deep.equal([['node.registered', 'cn1']]);
    const after = await cli.ok('events', '--after', json[0].id, '--json', '--kind', 'node');
    expect(after.trim().split('\n').map((l) => JSON.parse(l).type)).to.deep.equal(['project.node_added']);
    // The last hour by default.
    expect((await cli.ok('events', '--kind', 'project')).trim().split('\n').length).to.be.at.least(1);
    const gone = await cli.run('events', '--after', '99999999');
    expect(gone.code).to.equal(1);
    expect(gone.stderr).to.match(/GoneError/);
    expect((await cli.run('events', '--after', '1', '--since', t0)).code).to.equal(2);
  });

  it('--follow: prints changes as they are committed, resumes across dropped connections without loss or repeat, exits 0 on Ctrl-C', async () => {
    const { child, exited, names, until, out } = follow('--kind', 'node');
    try {
      await until(() => ts.app.hilt.events.size === 1, 'the CLI connected');
      for (let i = 0; i < 3; i++) await must(ts.api.put(`/node/cf${i}`, { obm: obm() }));
      await until(() => names().length === 3, 'three events');
      // The service drops the connection (as a restart or a proxy would); meanwhile changes go on.
      for (const s of (ts.app.hilt.events as unknown as { streams: Set<Stream> }).streams) s.drop('buffer');
      for (let i = 3; i < 6; i++) await must(ts.api.put(`/node/cf${i}`, { obm: obm() }));
      await until(() => names().length === 6, 'six events after the reconnect');
      expect(names()).to.deep.equal(['cf0', 'cf1', 'cf2', 'cf3', 'cf4', 'cf5']);
      expect(out.stderr).to.match(/reconnecting after \d+/);
      child.kill('SIGINT');
      expect(await exited).to.equal(0);
    } finally {
      child.kill('SIGKILL');
      record(out.stdout, 'hilt events stdout');
      record(out.stderr, 'hilt events stderr');
    }
  });

  it('--follow: a connection dropped before any event printed resumes from where the first began, not from the reconnect', async () => {
    const { child, exited, names, until, out } = follow('--kind', 'node', '--name', 'gap0', '--name', 'gap1');
    try {
      await until(() => ts.app.hilt.events.size === 1, 'the CLI connected');
      for (const s of (ts.app.hilt.events as unknown as { streams: Set<Stream> }).streams) s.drop('buffer');
      // Committed while the CLI waits to reconnect (its first pause is half a second).
      for (let i = 0; i < 2; i++) await must(ts.api.put(`/node/gap${i}`, { obm: obm() }));
      expect(ts.app.hilt.events.size, 'not reconnected yet').to.equal(0);
      await until(() => ts.app.hilt.events.size === 1, 'the CLI reconnected');
      await until(() => names().length === 2, 'the two events committed in the gap');
      expect(names()).to.deep.equal(['gap0', 'gap1']);
      child.kill('SIGINT');
      expect(await exited).to.equal(0);
    } finally {
      child.kill('SIGKILL');
      record(out.stdout, 'hilt events stdout');
      record(out.stderr, 'hilt events stderr');
    }
  });

  it('--follow into a reader that closes (as `| head -1`): ends quietly with 0 at the next event', async () => {
    const { child, exited, names, until, out } = follow('--kind', 'node', '--name', 'pipe0', '--name', 'pipe1');
    try {
      await until(() => ts.app.hilt.events.size === 1, 'the CLI connected');
      await must(ts.api.put('/node/pipe0', { obm: obm() }));
      await until(() => names().length === 1, 'the first event');
      // The reader goes away; the next event's line meets a closed pipe.
      child.stdout.destroy();
      await must(ts.api.put('/node/pipe1', { obm: obm() }));
      expect(await exited, out.stderr).to.equal(0);
      expect(out.stderr).to.not.match(/EPIPE|Error|at /);
    } finally {
      child.kill('SIGKILL');
      record(out.stdout, 'hilt events stdout');
      record(out.stderr, 'hilt events stderr');
    }
  });

  it('--follow: a reconnect answered 410 (retention removed events it had not got) ends it with 1, not resumed past the loss', async () => {
    const hub = ts.app.hilt.events;
    const { child, exited, names, until, out } = follow('--kind', 'node', '--name', 'rm0', '--name', 'rm1', '--name', 'rm2');
    try {
      await until(() => hub.size === 1, 'the CLI connected');
      await must(ts.api.put('/node/rm0', { obm: obm() }));
      await until(() => names().length === 1, 'the first event');
      for (const s of (hub as unknown as { streams: Set<Stream> }).streams) s.drop('buffer');
      // While it waits to reconnect: two more events, and a pass of journal retention removes up to them.
      for (let i = 1; i < 3; i++) await must(ts.api.put(`/node/rm${i}`, { obm: obm() }));
      hub.removing(hub.last);
      expect(await exited, out.stderr).to.equal(1);
      expect(out.stderr).to.match(/GoneError: .*since=1970-01-01T00:00:00Z reads from event \d+ on/);
      expect(names(), 'nothing after the loss').to.deep.equal(['rm0']);
    } finally {
      child.kill('SIGKILL');
      // Nothing was removed from the store: the other tests' streams start anywhere, as before.
      hub.removed = 0;
      record(out.stdout, 'hilt events stdout');
      record(out.stderr, 'hilt events stderr');
    }
  });

  it('an event of another shape ({}, not JSON), or a web page for the stream, ends the command with 3 and one line naming it, --follow too (not reconnecting to it for ever)', async () => {
    let data = '{}';
    const odd = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`id: 1\ndata: ${data}\n\n: live\n\n`);
      setTimeout(() => res.end(), 100);
    });
    await new Promise<void>((r) => odd.listen(0, '127.0.0.1', r));
    const page = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>welcome</title>\n\n<p>data: {}</p>\n\n');
    });
    await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(odd.address() as AddressInfo).port}`;
      for (const d of ['{}', 'not json', '[1]']) {
        data = d;
        for (const args of [['events'], ['events', '--follow'], ['events', '--follow', '--json']]) {
          const r = await hilt(url, args, { timeoutMs: 10_000 });
          expect(r.code, `${args.join(' ')} given ${d}: ${r.stderr}`).to.equal(3);
          expect(r.stderr).to.equal(`hilt: ${url} answered GET /events with JSON that is not what this command reads (an event ${JSON.stringify(d)}): is it the service's address, and a version of it this hilt reads?\n`);
          expect(r.stdout).to.equal('');
        }
      }
      // A web page where the stream is due: no reconnect makes it one.
      for (const args of [['events'], ['events', '--follow']]) {
        const r = await hilt(url.replace(/\d+$/, String((page.address() as AddressInfo).port)), args, { timeoutMs: 10_000 });
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(3);
        expect(r.stderr).to.match(/^hilt: http:\/\/127\.0\.0\.1:\d+ answered GET \/events with text\/html, not an event stream: is it the service's address/);
      }
    } finally {
      await new Promise<void>((r) => odd.close(() => r()));
      await new Promise<void>((r) => page.close(() => r()));
    }
  });

  it('admin webhook create, list, show, resume and delete', async () => {
    const rcv = await new Receiver().start();
    try {
      const created = await cli.ok('admin', 'webhook', 'create', rcv.url, '--type', 'project.created', '--description', 'cli test');
      const t = rows(created);
      const id = t.find((r) => r[0] === 'id')![1];
      const secret = t.find((r) => r[0].startsWith('secret'))![1];
      expect(secret.length).to.be.at.least(16);
      const list = rows(await cli.ok('admin', 'webhook', 'list'));
      expect(list[0]).to.deep.equal(['ID', 'URL', 'State', 'Types', 'Projects', 'Backlog', 'Last Success', 'Last Error']);
      expect(list.find((r) => r[0] === id)!.slice(1, 5)).to.deep.equal([rcv.url, 'delivering', 'project.created', 'all']);
      await must(ts.api.put('/project/cw'));
      await rcv.until(() => rcv.delivered().length === 1);
      const show = await cli.json('admin', 'webhook', 'show', id);
      expect(show).to.deep.include({ id, state: 'delivering', description: 'cli test' });
      expect(JSON.stringify(show)).to.not.include(secret);
      expect((await cli.run('admin', 'webhook', 'resume', id)).code).to.equal(0);
      expect((await cli.run('admin', 'webhook', 'delete', id)).code).to.equal(0);
      const missing = await cli.run('admin', 'webhook', 'show', id);
      expect(missing.code).to.equal(1);
      expect(missing.stderr).to.match(/NotFoundError/);
      const member = await makeUser(ts.api, 'cw-user', 'cw-pw');
      const refused = await cli.as({ as: member })('admin', 'webhook', 'list');
      expect(refused.code).to.equal(1);
    } finally {
      await rcv.close();
    }
  });

  it('admin webhook create: an empty secret file is refused; an empty HILT_WEBHOOK_SECRET is one not set', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hilt-cli-secret-'));
    try {
      const empty = join(dir, 'secret');
      writeFileSync(empty, '\n');
      const refused = await cli.run('admin', 'webhook', 'create', 'http://127.0.0.1:9/hook', '--secret-file', empty);
      expect(refused.code).to.equal(2);
      expect(refused.stderr).to.include(`${empty} holds no secret`);
      const made = await cli.as({ env: { HILT_WEBHOOK_SECRET: '' } })('admin', 'webhook', 'create', 'http://127.0.0.1:9/hook', '--type', 'project.created');
      expect(made.code, made.stderr).to.equal(0);
      const t = rows(made.stdout);
      const secret = t.find((r) => r[0].startsWith('secret'))![1];
      expect(secret.length).to.be.at.least(16);
      await must(ts.api.del(`/admin/webhooks/${t.find((r) => r[0] === 'id')![1]}`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
