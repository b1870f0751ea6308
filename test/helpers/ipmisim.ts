/**
 * A real BMC for tests: OpenIPMI's `ipmi_sim` (Debian package openipmi) serving IPMI v2 / RMCP+ on a
 * loopback UDP port, with the chassis simulated by test/sim/ipmi/chassis_control.sh, whose state and
 * call log are plain files in a per-instance temp dir.
 *
 * ipmi_sim runs as a direct child (`-n`, never daemonized): this machine's PID 1 does not reap
 * orphans, so every instance is killed by PID in stop(), stopAllIpmiSims() or at process exit.
 */
import { ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface IpmiSimOptions {
  user: string;
  password: string;
  /** Initial chassis power (default off). */
  power?: 'on' | 'off';
  /** Loopback address to listen on (default 127.0.0.1). */
  address?: '127.0.0.1' | '::1';
  /** How long to wait for the sim to answer `chassis power status` (default 5000 ms). */
  readyTimeoutMs?: number;
  /**
   * Serial-over-LAN: the BMC connects its SOL serial line to this TCP port on 127.0.0.1 (a
   * test's serial line, test/helpers/serial-line.ts), retrying until it listens.
   */
  solPort?: number;
}

export interface IpmiSimEvent { /** seconds since the epoch, from the hook */ t: number; /** e.g. "set power 1" */ cmd: string }

export interface IpmiSim {
  /** `127.0.0.1:PORT` or `[::1]:PORT`, as the ipmi driver's `host` field */
  host: string;
  port: number;
  /** The chassis hook's directory: files power (0|1), boot, reset, log. */
  stateDir: string;
  powerState(): 'on' | 'off';
  /** Next boot device as the BMC passed it to the hook: pxe, default (disk), bios, none... */
  bootDevice(): string;
  /** Hook calls since start (or clearLog), without timestamps and the 0x20 device: "get power", "set boot pxe". */
  log(): string[];
  events(): IpmiSimEvent[];
  clearLog(): void;
  /** Change the power state from outside, as a person pressing the button would. */
  setPower(on: boolean): void;
  /** The BMC refuses to set the boot device (the hook fails, ipmi_sim answers an error completion code). */
  refuseBoot(refuse: boolean): void;
  /** ipmi_sim's own output (banner, config errors). */
  output(): string;
  /** A BMC that stops answering (SIGSTOP), and comes back (SIGCONT). */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

/** Live simulators by PID, so none outlives the tests (see stopAllIpmiSims and the exit hook). */
const running = new Map<number, { child: ChildProcess; dir: string; stop(): Promise<void> }>();

/** Ports handed out by this process, never reused: ipmi_sim binds with SO_REUSEADDR, so a second
 * instance on a busy port starts silently and shares (steals) the first one's traffic. */
const usedPorts = new Set<number>();

function findFixtures(): string {
  // Compiled to dist/test/helpers; the fixtures are not copied by tsc, so walk up to the repo's copy.
  for (let d = __dirname; d !== dirname(d); d = dirname(d)) {
    const f = join(d, 'test', 'sim', 'ipmi');
    if (existsSync(join(f, 'bmc.emu'))) return f;
  }
  throw new Error(`test/sim/ipmi fixtures not found above ${__dirname}`);
}

function onPath(cmd: string): boolean {
  return spawnSync('sh', ['-c', 'command -v "$1"', 'sh', cmd], { stdio: 'ignore' }).status === 0;
}

/** Throws (so the test fails, never skips) when the Debian packages are missing. */
export function requireIpmiTools(): void {
  const missing: string[] = [];
  if (!onPath('ipmitool')) missing.push('ipmitool (Debian package ipmitool)');
  if (!onPath('ipmi_sim')) missing.push('ipmi_sim (Debian package openipmi)');
  if (missing.length) {
    throw new Error(`IPMI tests need ${missing.join(' and ')} on PATH; .ci/apt-packages lists them: ` +
      'apt-get install -y ipmitool openipmi');
  }
}

/** Number of UDP sockets (v4 and v6) bound to this local port, from /proc/net/udp*. */
export function udpSocketsOnPort(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  let n = 0;
  for (const f of ['/proc/net/udp', '/proc/net/udp6']) {
    let text = '';
    try { text = readFileSync(f, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const local = line.trim().split(/\s+/)[1];
      if (local?.endsWith(`:${hex}`)) n++;
    }
  }
  return n;
}

/** A UDP port nobody listens on: the kernel picks it, we release it, and never hand it out twice. */
export async function freeUdpPort(address = '127.0.0.1'): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const port = await new Promise<number>((resolve, reject) => {
      const s = createSocket(address.includes(':') ? 'udp6' : 'udp4');
      s.once('error', reject);
      s.bind(0, address, () => {
        const p = s.address().port;
        s.close(() => resolve(p));
      });
    });
    if (!usedPorts.has(port) && udpSocketsOnPort(port) === 0) {
      usedPorts.add(port);
      return port;
    }
  }
  throw new Error('no free UDP port found');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function ipmitoolStatus(address: string, port: number, user: string, password: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile('ipmitool', ['-I', 'lanplus', '-C', '3', '-R', '1', '-N', '1', '-H', address, '-p', String(port), '-U', user, '-E',
      'chassis', 'power', 'status'], { env: { PATH: process.env.PATH, IPMI_PASSWORD: password }, timeout: 3000 },
    (err, stdout) => resolve(!err && /Chassis Power is (on|off)/.test(stdout)));
  });
}

export async function startIpmiSim(opts: IpmiSimOptions): Promise<IpmiSim> {
  requireIpmiTools();
  // ipmi_sim's config parser has no escapes: a space or quote would end or break the token.
  for (const [k, v, max] of [['user', opts.user, 16], ['password', opts.password, 20]] as const) {
    if (!/^[!#-~]+$/.test(v) || v.length > max) {
      throw new Error(`ipmi_sim ${k} must be 1-${max} printable ASCII characters without space or '"'`);
    }
  }
  const address = opts.address ?? '127.0.0.1';
  const fixtures = findFixtures();
  const dir = mkdtempSync(join(tmpdir(), 'hilt-ipmisim-'));
  const stateDir = join(dir, 'chassis');
  mkdirSync(stateDir);
  mkdirSync(join(dir, 'sim'));
  // A private copy of the hook: no spaces in its path (the config splits on them) and its mode is ours.
  const hook = join(dir, 'chassis_control.sh');
  copyFileSync(join(fixtures, 'chassis_control.sh'), hook);
  chmodSync(hook, 0o755);
  writeFileSync(join(stateDir, 'power'), opts.power === 'on' ? '1\n' : '0\n');

  const port = await freeUdpPort(address);
  const template = readFileSync(join(fixtures, 'lan.conf.template'), 'utf8');
  const conf = template
    .replace(/@ADDR@/g, address)
    .replace(/@PORT@/g, String(port))
    .replace(/@CHASSIS_CONTROL@/g, hook)
    .replace(/@USER@/g, opts.user)
    .replace(/@PASSWORD@/g, () => opts.password);
  // sol <device> <baud>: the MC's serial line, here a TCP connection the sim makes (man 5 ipmi_lan).
  const sol = opts.solPort !== undefined ? `\n  sol "tcp:127.0.0.1:${opts.solPort}" 115200\n` : '';
  writeFileSync(join(dir, 'lan.conf'), conf + sol, { mode: 0o600 });

  const child = spawn('ipmi_sim', ['-c', join(dir, 'lan.conf'), '-f', join(fixtures, 'bmc.emu'), '-s', join(dir, 'sim'), '-n'], {
    cwd: dir,
    env: { PATH: process.env.PATH, IPMISIM_STATE: stateDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  const cleanupDir = () => rmSync(dir, { recursive: true, force: true });
  try {
    await spawned;
  } catch (e) {
    cleanupDir();
    throw new Error(`could not start ipmi_sim: ${(e as Error).message}`);
  }

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited;
    }
    running.delete(child.pid!);
    cleanupDir();
  };
  running.set(child.pid!, { child, dir, stop });

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 5000);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`ipmi_sim exited during startup (${child.exitCode ?? child.signalCode}):\n${out}`);
    }
    if (await ipmitoolStatus(address, port, opts.user, opts.password)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`ipmi_sim on ${address}:${port} did not answer "chassis power status" within ` +
        `${opts.readyTimeoutMs ?? 5000} ms:\n${out}`);
    }
    await sleep(25);
  }
  if (udpSocketsOnPort(port) !== 1) {
    await stop();
    throw new Error(`UDP port ${port} is shared with another process; ipmi_sim does not detect that`);
  }

  const logFile = join(stateDir, 'log');
  const events = (): IpmiSimEvent[] => {
    let text = '';
    try { text = readFileSync(logFile, 'utf8'); } catch { return []; }
    return text.split('\n').filter(Boolean).map((line) => {
      const [t, , ...rest] = line.split(' '); // "<time> 0x20 get power"
      return { t: Number(t), cmd: rest.join(' ') };
    });
  };
  const readState = (name: string): string | undefined => {
    try { return readFileSync(join(stateDir, name), 'utf8').trim(); } catch { return undefined; }
  };
  const sim: IpmiSim = {
    host: address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`,
    port,
    stateDir,
    powerState: () => (readState('power') === '1' ? 'on' : 'off'),
    bootDevice: () => readState('boot') ?? 'default',
    events,
    log: () => events().map((e) => e.cmd),
    clearLog: () => rmSync(logFile, { force: true }),
    setPower: (on) => {
      writeFileSync(join(stateDir, 'power.tmp'), on ? '1\n' : '0\n');
      renameSync(join(stateDir, 'power.tmp'), join(stateDir, 'power'));
    },
    refuseBoot: (refuse) => (refuse ? writeFileSync(join(stateDir, 'refuse-boot'), '') : rmSync(join(stateDir, 'refuse-boot'), { force: true })),
    output: () => out,
    pause: () => void child.kill('SIGSTOP'),
    resume: () => void child.kill('SIGCONT'),
    stop,
  };
  sim.clearLog(); // forget the readiness probes: tests see only their own calls
  return sim;
}

/** Kills every simulator this process started; use in an after() hook. */
export async function stopAllIpmiSims(): Promise<void> {
  await Promise.all([...running.values()].map((r) => r.stop()));
}

// Last resort if a test run dies without its after() hook: no ipmi_sim outlives the test process.
process.on('exit', () => {
  for (const { child, dir } of running.values()) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
    rmSync(dir, { recursive: true, force: true });
  }
});
