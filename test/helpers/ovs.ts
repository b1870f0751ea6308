/**
 * A private Open vSwitch for tests: ovsdb-server + ovs-vswitchd (userspace/netdev datapath, no
 * kernel module needed) in a temp folder, both DIRECT children of the test process (no --detach:
 * PID 1 on these machines does not reap orphans), with one bridge (datapath_type=netdev).
 *
 * Fails loudly (never skips) when Open vSwitch is not installed. stop() asks vswitchd to
 * `exit --cleanup` (else the netdev datapath leaves its bridge and "ovs-netdev" tap devices in the
 * host), then kills both daemons by PID if needed; an exit/signal hook does the same for anything
 * left, so nothing outlives the test process.
 *
 * Only one private OVS can run on a host at a time: the userspace datapath claims the host-wide
 * device "ovs-netdev". A lock file in the temp folder makes a concurrent test run wait its turn;
 * an OVS started outside this helper is detected and reported with a clear error.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

export interface PrivateOvs {
  dir: string;
  bridge: string;
  /** ovsdb-server's unix socket (ovs-vsctl --db=unix:<dbSock>). */
  dbSock: string;
  /** OVS_RUNDIR/OVS_LOGDIR/OVS_DBDIR pointing at dir. */
  env: NodeJS.ProcessEnv;
  /** Run ovs-vsctl against this OVS; resolves with trimmed stdout. */
  vsctl(args: string[]): Promise<string>;
  /** Run ovs-appctl against this OVS's ovs-vswitchd (e.g. `ofproto/trace`); resolves with trimmed stdout. */
  appctl(args: string[]): Promise<string>;
  /**
   * The ports of the bridge that ovs-vswitchd would send a broadcast frame received on `port`
   * to (`ofproto/trace` of its forwarding, the bridge's own port included), `vlan`: its 802.1Q tag.
   */
  floodsTo(port: string, vlan: number | null): Promise<string[]>;
  stop(): Promise<void>;
}

const SCHEMA = '/usr/share/openvswitch/vswitch.ovsschema';

interface Instance {
  dir: string;
  /** ovs-vswitchd's control socket, for `exit --cleanup`. */
  ctl: string;
  env: NodeJS.ProcessEnv;
  daemons: ChildProcess[];
}
const instances = new Set<Instance>();
let hooked = false;

/** Live (not zombie) process? */
function running(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Synchronous last-resort cleanup: the process is exiting (or was interrupted). */
function killAllSync(): void {
  const nap = new Int32Array(new SharedArrayBuffer(4));
  for (const inst of instances) {
    const vswitchd = inst.daemons[1];
    try {
      // Makes vswitchd delete its datapath devices (the bridge and ovs-netdev taps), which plain
      // SIGTERM/SIGKILL would leave behind in the host. It acknowledges first and cleans up after.
      execFileSync('ovs-appctl', ['-t', inst.ctl, 'exit', '--cleanup'], { env: inst.env, timeout: 2000, stdio: 'ignore' });
      for (let i = 0; i < 100 && vswitchd?.pid && running(vswitchd.pid); i++) Atomics.wait(nap, 0, 0, 20);
    } catch {
      /* not running or not answering */
    }
    for (const c of inst.daemons) {
      try {
        if (c.pid && c.exitCode === null && c.signalCode === null) process.kill(c.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    fs.rmSync(inst.dir, { recursive: true, force: true });
  }
  instances.clear();
  releaseHostLock();
}

/**
 * Host-wide lock (the netdev datapath's "ovs-netdev" device is host-wide): a second test run on
 * the same machine waits for the first one's private OVS instead of failing.
 */
const LOCK = path.join(os.tmpdir(), 'hilt-private-ovs.lock');
let lockHeld = false;

async function acquireHostLock(timeoutMs: number): Promise<void> {
  if (lockHeld) throw new Error('this process already runs a private OVS (one per host); stop() it first');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      fs.writeFileSync(LOCK, String(process.pid), { flag: 'wx' });
      lockHeld = true;
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const holder = Number(fs.readFileSync(LOCK, { encoding: 'utf8', flag: 'a+' }).trim());
    if (!holder || !running(holder)) {
      fs.rmSync(LOCK, { force: true }); // stale: its owner is gone
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(`another process (pid ${holder}) has run a private OVS on this host for over ${timeoutMs} ms (${LOCK})`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function releaseHostLock(): void {
  if (!lockHeld) return;
  lockHeld = false;
  try {
    if (fs.readFileSync(LOCK, 'utf8').trim() === String(process.pid)) fs.rmSync(LOCK, { force: true });
  } catch {
    /* already gone */
  }
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAllSync);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      killAllSync();
      process.exit(128 + (sig === 'SIGINT' ? 2 : 15));
    });
  }
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 15_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { env, timeout: timeoutMs, killSignal: 'SIGKILL', encoding: 'utf8' }, (err, stdout, stderr) => {
      if (!err) return resolve(stdout.trim());
      const code = (err as NodeJS.ErrnoException).code;
      const why =
        code === 'ENOENT'
          ? `${cmd} not found: Open vSwitch is not installed (apt-get install openvswitch-switch)`
          : (stderr || '').trim() || err.message;
      reject(new Error(`${cmd} ${args.join(' ')}: ${why}`));
    });
  });
}

function daemon(inst: Instance, cmd: string, args: string[], log: string): ChildProcess {
  const fd = fs.openSync(log, 'a');
  try {
    const c = spawn(cmd, args, { env: inst.env, stdio: ['ignore', fd, fd] });
    c.once('error', () => undefined); // reported by waitFor via exitCode
    inst.daemons.push(c);
    return c;
  } finally {
    fs.closeSync(fd);
  }
}

async function waitFor(what: string, c: ChildProcess, log: string, ms: number, probe: () => Promise<unknown>): Promise<void> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    if (c.exitCode !== null || c.signalCode !== null) {
      const tail = await fsp.readFile(log, 'utf8').catch(() => '');
      throw new Error(`${what} exited (${c.signalCode ?? c.exitCode}): ${tail.slice(-1500)}`);
    }
    try {
      await probe();
      return;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`${what} not ready after ${ms} ms: ${String(last)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const exited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null || !c.pid;

/** Wait up to `ms` for the child to exit (after `ask`), then SIGKILL it and wait for that. */
function stopChild(c: ChildProcess, ask: () => void, ms = 5000): Promise<void> {
  if (exited(c)) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      try {
        process.kill(c.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    }, ms);
    c.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    try {
      ask();
    } catch {
      /* SIGKILL after the timeout */
    }
  });
}

/** Start a private OVS with one netdev bridge (name random, as the bridge is also a host tap). */
export async function startPrivateOvs(opts: { bridge?: string; lockTimeoutMs?: number } = {}): Promise<PrivateOvs> {
  if (!fs.existsSync(SCHEMA)) {
    throw new Error(`Open vSwitch is not installed (${SCHEMA} missing): apt-get install openvswitch-switch`);
  }
  hookExit();
  await acquireHostLock(opts.lockTimeoutMs ?? 180_000);
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'hilt-ovs-'));
  const env: NodeJS.ProcessEnv = { ...process.env, OVS_RUNDIR: dir, OVS_LOGDIR: dir, OVS_DBDIR: dir };
  const inst: Instance = { dir, ctl: path.join(dir, 'ovs-vswitchd.ctl'), env, daemons: [] };
  instances.add(inst);
  const dbSock = path.join(dir, 'db.sock');
  const db = path.join(dir, 'conf.db');
  const bridge = opts.bridge ?? `hbr${randomBytes(4).toString('hex')}`;
  const vsctl = (args: string[]) => run('ovs-vsctl', [`--db=unix:${dbSock}`, '--timeout=10', ...args], env);
  const appctl = (args: string[]) => run('ovs-appctl', ['-t', inst.ctl, ...args], env);
  const floodsTo = async (port: string, vlan: number | null) => {
    // dpif/show lines: `    <name> <ofport>/<datapath port>: (<type>)`; the trace ends with the datapath actions.
    const byDp = new Map<string, string>();
    for (const m of (await appctl(['dpif/show'])).matchAll(/^\s+(\S+) \d+\/(\d+):/gm)) byDp.set(m[2]!, m[1]!);
    const flow = `in_port=${port},dl_src=02:00:00:00:00:01,dl_dst=ff:ff:ff:ff:ff:ff${vlan === null ? '' : `,dl_vlan=${vlan}`}`;
    const actions = /^Datapath actions: (.*)$/m.exec(await appctl(['ofproto/trace', bridge, flow]))?.[1] ?? '';
    return actions.split(',').filter((a) => /^\d+$/.test(a.trim())).map((a) => byDp.get(a.trim()) ?? `datapath port ${a.trim()}`).sort();
  };

  let server: ChildProcess | undefined;
  let vswitchd: ChildProcess | undefined;
  const stop = async () => {
    if (vswitchd) {
      const c = vswitchd;
      // `exit --cleanup` removes the datapath's host devices (bridge, ovs-netdev); SIGTERM would not.
      await stopChild(c, () => {
        execFile('ovs-appctl', ['-t', inst.ctl, 'exit', '--cleanup'], { env, timeout: 5000 }, (err) => {
          if (err && !exited(c)) process.kill(c.pid!, 'SIGTERM');
        });
      });
    }
    if (server) {
      const c = server;
      await stopChild(c, () => process.kill(c.pid!, 'SIGTERM'));
    }
    await fsp.rm(dir, { recursive: true, force: true });
    instances.delete(inst);
    releaseHostLock();
  };
  try {
    await run('ovsdb-tool', ['create', db, SCHEMA], env);
    const serverLog = path.join(dir, 'ovsdb-server.log');
    server = daemon(
      inst,
      'ovsdb-server',
      [db, `--remote=punix:${dbSock}`, '--remote=db:Open_vSwitch,Open_vSwitch,manager_options',
        `--pidfile=${path.join(dir, 'ovsdb-server.pid')}`, `--unixctl=${path.join(dir, 'ovsdb-server.ctl')}`, '--no-chdir'],
      serverLog,
    );
    await waitFor('ovsdb-server', server, serverLog, 10_000, () =>
      run('ovs-vsctl', [`--db=unix:${dbSock}`, '--timeout=2', '--no-wait', 'init'], env, 3000),
    );
    const vsLog = path.join(dir, 'ovs-vswitchd.log');
    vswitchd = daemon(
      inst,
      'ovs-vswitchd',
      [`unix:${dbSock}`, `--pidfile=${path.join(dir, 'ovs-vswitchd.pid')}`, `--unixctl=${inst.ctl}`, '--no-chdir'],
      vsLog,
    );
    // add-br without --no-wait returns once vswitchd has configured the bridge.
    await waitFor('ovs-vswitchd', vswitchd, vsLog, 15_000, () =>
      vsctl(['--may-exist', 'add-br', bridge, '--', 'set', 'bridge', bridge, 'datapath_type=netdev']),
    );
    // The userspace datapath needs the host-wide device "ovs-netdev": a second vswitchd on the same
    // host starts, but its bridges get no ports. Say so instead of failing obscurely later.
    const ofport = await vsctl(['get', 'interface', bridge, 'ofport']);
    if (ofport !== '65534') {
      const log = await fsp.readFile(vsLog, 'utf8').catch(() => '');
      const why = log.split('\n').filter((l) => /ERR|WARN/.test(l)).slice(-3).join(' | ');
      throw new Error(
        `private OVS bridge ${bridge} has no datapath port (ofport ${ofport}); is another ovs-vswitchd ` +
          `with the netdev datapath running on this host? (only one can own "ovs-netdev") ${why}`,
      );
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return { dir, bridge, dbSock, env, vsctl, appctl, floodsTo, stop };
}
