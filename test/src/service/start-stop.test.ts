/** The process's start and stop as an operator meets them: a real dist/src/server.js on real folders. */
import { expect } from 'chai';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import { AddressInfo, createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startServerProcess } from '../../helpers/process';
import { Client, REDFISH_OBM, TEST_STORAGE } from '../../helpers/server';
import { recordProcessOutput } from '../../helpers/secrets';
import { sleep } from '../../../lib/time';

const SERVER = join(__dirname, '..', '..', '..', 'src', 'server.js');

describe('the process: start and stop', function () {
  this.timeout(60_000);
  let dir: string;
  const servers: Server[] = [];
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-start-')); });
  afterEach(() => {
    for (const s of servers.splice(0)) s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows the generated admin password even when the first start then fails (its port taken)', async () => {
    const port = await freePort();
    const taken = createServer();
    servers.push(taken);
    await new Promise<void>((r) => taken.listen(port, '127.0.0.1', r));
    const first = await startServerProcess({ HILT_DATA_DIR: dir, HILT_HEADNODE_DRIVER: 'mock', HILT_PORT: String(port) }, {}, /failed to start/);
    expect(await first.exited).to.equal(1);
    expect(first.output()).to.include('EADDRINUSE');
    const m = /created the bootstrap admin "admin" with password: (\S+)/.exec(first.output());
    expect(m, first.output()).to.not.equal(null);

    // The admin exists in the store from the failed start: the password shown then is its password.
    const second = await startServerProcess({ HILT_DATA_DIR: dir, HILT_HEADNODE_DRIVER: 'mock' });
    expect(second.output()).to.not.include('created the bootstrap admin');
    const api = new Client(second.url, { user: 'admin', password: m![1] });
    expect((await api.get('/projects')).status).to.equal(200);
    second.child.kill('SIGTERM');
    expect(await second.exited).to.equal(0);
  });

  it('refuses a first start whose bootstrap admin (HILT_ADMIN_USER) would bear a name of the service\'s own work, creating no user', async () => {
    const data = join(dir, 'data');
    const why = 'HILT_ADMIN_USER names \\W+hilt\\W+ a name the service records its own work under';
    const refused = await startServerProcess({ HILT_DATA_DIR: data, HILT_HEADNODE_DRIVER: 'mock', HILT_ADMIN_USER: 'hilt' }, {}, /failed to start|could not activate|hilt is ready/);
    expect(refused.output()).to.not.include('hilt is ready');
    if (TEST_STORAGE === 'postgres') {
      // A standby of a pair: it stands by, saying why, as for any activation it cannot finish.
      expect(refused.output()).to.match(new RegExp(`"err":"${why}.*"msg":"could not activate; standing by"`));
      refused.child.kill('SIGTERM');
      expect(await refused.exited).to.equal(0);
    } else {
      expect(await refused.exited).to.equal(1);
      expect(refused.output()).to.match(new RegExp(`^hilt: failed to start: ${why}`, 'm'));
    }
    expect(refused.output()).to.not.include('created the bootstrap admin');
    // Nothing was created: the next first start, with another name, makes its admin.
    const admin = { user: 'site-admin', password: 'site-admin-pw-1' };
    const next = await startServerProcess({ HILT_DATA_DIR: data, HILT_HEADNODE_DRIVER: 'mock', HILT_ADMIN_USER: admin.user, HILT_ADMIN_PASSWORD: admin.password });
    const api = new Client(next.url, admin);
    expect((await api.get('/projects')).status).to.equal(200);
    expect((await api.get('/auth/basic/user/hilt')).status).to.equal(404);
    next.child.kill('SIGTERM');
    expect(await next.exited).to.equal(0);
  });

  it('refuses a second process on the data folder of a running one, and starts once that one is gone (kill -9 too)', async () => {
    const env = { HILT_DATA_DIR: dir, HILT_HEADNODE_DRIVER: 'mock', HILT_ADMIN_PASSWORD: 'lock-admin-pw' };
    const first = await startServerProcess(env);
    const api = new Client(first.url, { user: 'admin', password: 'lock-admin-pw' });
    // The same folder under another path is the same folder.
    const second = await startServerProcess({ ...env, HILT_DATA_DIR: `${dir}/.` }, {}, /failed to start|hilt is ready/);
    expect(second.output()).to.not.include('hilt is ready');
    expect(await second.exited).to.equal(1);
    expect(second.output()).to.match(/hilt: failed to start: the data folder .* is in use by another hilt process/);
    // The first one serves on, alone.
    expect((await api.put('/project/p1')).status).to.equal(200);
    first.child.kill('SIGKILL');
    await first.exited;
    // Its socket file is left behind; nobody answers on it.
    expect(existsSync(join(dir, '.hilt.sock'))).to.equal(true);
    const third = await startServerProcess(env);
    const api3 = new Client(third.url, { user: 'admin', password: 'lock-admin-pw' });
    expect((await api3.get('/projects')).body).to.deep.equal(['p1']);
    third.child.kill('SIGTERM');
    expect(await third.exited).to.equal(0);
  });

  it('refuses a second process on the folder from another network namespace (a container sharing the folder)', async function () {
    // A network namespace of its own, its loopback up: root only, else skipped.
    const probe = spawnSync('unshare', ['-n', 'ip', 'link', 'set', 'lo', 'up']);
    if (probe.status !== 0) this.skip();
    const env = { HILT_DATA_DIR: dir, HILT_HEADNODE_DRIVER: 'mock', HILT_ADMIN_PASSWORD: 'lock-admin-pw' };
    const first = await startServerProcess(env);
    const port = await freePort();
    const second = spawn('unshare', ['-n', 'sh', '-c', 'ip link set lo up && exec "$0" "$1"', process.execPath, SERVER], {
      env: { ...process.env, ...env, HILT_HOST: '127.0.0.1', HILT_PORT: String(port), HILT_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const take = (d: Buffer) => {
      recordProcessOutput(d.toString(), 'a server process\'s output');
      out += d.toString();
    };
    second.stdout!.on('data', take);
    second.stderr!.on('data', take);
    const exited = new Promise<number | null>((r) => second.once('close', (code) => r(code)));
    for (const deadline = Date.now() + 15_000; !/hilt is ready/.test(out) && second.exitCode === null && Date.now() < deadline;) await sleep(20);
    if (second.exitCode === null) second.kill('SIGKILL');
    expect(out).to.not.include('hilt is ready');
    expect(out).to.match(/the data folder .* is in use by another hilt process/);
    expect(await exited).to.equal(1);
    // The first one serves on, alone.
    const api = new Client(first.url, { user: 'admin', password: 'lock-admin-pw' });
    expect((await api.put('/project/p1')).status).to.equal(200);
    first.child.kill('SIGTERM');
    expect(await first.exited).to.equal(0);
    // A stop removes its socket file.
    expect(existsSync(join(dir, '.hilt.sock'))).to.equal(false);
  });

  it('answers a call in flight at SIGTERM (a power call waiting on its BMC) before it exits, not with a reset connection', async () => {
    // A BMC that takes 2 s over each answer.
    const bmc = createHttpServer((_req, res) => void setTimeout(() => res.writeHead(404).end('{}'), 2000));
    await new Promise<void>((r) => bmc.listen(0, '127.0.0.1', r));
    const host = `http://127.0.0.1:${(bmc.address() as AddressInfo).port}`;
    try {
      const proc = await startServerProcess({ HILT_DATA_DIR: dir, HILT_HEADNODE_DRIVER: 'mock', HILT_ADMIN_PASSWORD: 'stop-admin-pw' });
      const api = new Client(proc.url, { user: 'admin', password: 'stop-admin-pw' });
      expect((await api.put('/node/n1', { obm: { type: REDFISH_OBM, host, user: 'u', password: 'stop-bmc-pw' } })).status).to.equal(200);
      const call = api.get('/node/n1/power_status').then((r) => r.status, (e: NodeJS.ErrnoException) => `${e.message} ${e.code ?? ''}`);
      await sleep(500);
      proc.child.kill('SIGTERM');
      // The BMC's 404 is the call's answer: a 502 that says so.
      expect(await call).to.equal(502);
      expect(await proc.exited).to.equal(0);
    } finally {
      bmc.closeAllConnections();
      bmc.close();
    }
  });

  it('stops a start whose settings file or environment holds a malformed value, naming the setting, before it touches anything', async () => {
    const file = join(dir, 'hilt.json');
    const cases: [Record<string, unknown> | undefined, Record<string, string>, RegExp][] = [
      // A port that is no number would have listened on a Unix socket named after it.
      [{ port: 'abc' }, {}, /setting "port" in .*hilt\.json must be a number, 0 or more, got "abc"/],
      [{ obmTimeoutMs: 'ten' }, {}, /setting "obmTimeoutMs" .* must be a number/],
      [{ askTimeoutMs: null }, {}, /setting "askTimeoutMs" .* must be a number/],
      [{ releasePowerOff: 'no' }, {}, /setting "releasePowerOff" .* must be true or false/],
      [undefined, { HILT_PORT: '70000' }, /HILT_PORT \(port\) must be a port number, 0 to 65535, got 70000/],
      [undefined, { HILT_LOG_LEVEL: 'verbose' }, /HILT_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, got "verbose"/],
      [undefined, { HILT_TRUST_PROXY: '127.0.0.1, yes' }, /HILT_TRUST_PROXY \(trustProxy\) must be true, a hop count, or the proxies' addresses or ranges .*; "yes" is none of them/],
      [undefined, { HILT_TRUST_PROXY: '127.0.0.0/40' }, /HILT_TRUST_PROXY .*"127\.0\.0\.0\/40" is none of them/],
    ];
    for (const [settings, env, message] of cases) {
      if (settings) writeFileSync(file, JSON.stringify(settings));
      const data = join(dir, 'data');
      const proc = await startServerProcess({ HILT_DATA_DIR: data, HILT_HEADNODE_DRIVER: 'mock', ...(settings ? { HILT_CONFIG: file } : {}), ...env }, {}, /failed to start|hilt is ready/);
      expect(proc.output(), JSON.stringify(settings ?? env)).to.not.include('hilt is ready');
      // EX_CONFIG: the unit does not restart it (deploy/hilt.service).
      expect(await proc.exited).to.equal(78);
      expect(proc.output()).to.match(new RegExp(`^hilt: failed to start: ${message.source}`, 'm'));
      // Refused before the data folder was made.
      expect(existsSync(data)).to.equal(false);
    }
  });

  it('says which folder holds a store it cannot open, and what to check', async () => {
    // A data file that is no file, as a data file another user owns is to the service.
    mkdirSync(join(dir, 'data.mdb'));
    const proc = await startServerProcess({ HILT_DATA_DIR: dir, HILT_HEADNODE_DRIVER: 'mock' }, {}, /failed to start|hilt is ready/);
    expect(proc.output()).to.not.include('hilt is ready');
    expect(await proc.exited).to.equal(1);
    expect(proc.output()).to.match(new RegExp(`^hilt: failed to start: cannot open the LMDB store in ${dir} \\(HILT_DATA_DIR\\): .*; its data.mdb and lock.mdb must be files this process's user may read and write`, 'm'));
    // The mock switches' store, which every start opens, likewise.
    rmSync(join(dir, 'data.mdb'), { recursive: true });
    rmSync(join(dir, 'mock-switches'), { recursive: true });
    mkdirSync(join(dir, 'mock-switches', 'data.mdb'), { recursive: true });
    const again = await startServerProcess({ HILT_DATA_DIR: dir, HILT_HEADNODE_DRIVER: 'mock' }, {}, /failed to start|hilt is ready/);
    expect(again.output()).to.not.include('hilt is ready');
    expect(await again.exited).to.equal(1);
    expect(again.output()).to.match(new RegExp(`^hilt: failed to start: cannot open the mock switches' store in ${dir}/mock-switches: .*; its data.mdb and lock.mdb must be files`, 'm'));
  });

  it('logs the database URL without its password, in the URL\'s query too', async () => {
    // libpq's URLs, and node-postgres's, also take the password as a parameter. Nothing listens on
    // port 1: the process stands by, waiting for the database, and says so with the URL.
    const url = 'postgres://hilt:userinfo-pw-4471@127.0.0.1:1/hilt?sslmode=disable&password=query-pw-8812';
    const proc = await startServerProcess({ HILT_DATA_DIR: dir, HILT_HEADNODE_DRIVER: 'mock', HILT_STORAGE: 'postgres', HILT_DATABASE_URL: url }, {}, /hilt is a standby/);
    const line = proc.output().split('\n').find((l) => l.includes('hilt is a standby'))!;
    expect(JSON.parse(line).database).to.equal('postgres://hilt:[redacted]@127.0.0.1:1/hilt?sslmode=disable&password=[redacted]');
    expect(proc.output()).to.not.include('userinfo-pw-4471').and.to.not.include('query-pw-8812');
    proc.child.kill('SIGTERM');
    expect(await proc.exited).to.equal(0);
  });
});
