/**
 * Headnode driver running each headnode as a real QEMU VM whose hnics are tap devices on an
 * Open vSwitch bridge (VLAN per network via the port's `tag`).
 *
 * Design notes (see /work/shared/drivers/headnodes.md and ovs.md for the measurements):
 * - Disk: one qcow2 overlay per headnode on top of IMAGES/<base>.qcow2 (QEMU refuses to share one).
 * - QEMU is a DIRECT child (`detached` process group, never `-daemonize`: PID 1 on these machines
 *   does not reap orphans). It is unref'd, so the service may exit and a later instance can adopt
 *   the VM through the state file (`recover`).
 * - QEMU starts paused (`-S`); it creates its (non-persistent) taps itself, we bring them up and add
 *   them to OVS, then `cont`. A guest therefore never runs before its hnics are on their VLANs, and
 *   taps vanish with the QEMU process whatever kills it.
 * - Linux bridges cannot carry VLANs on these kernels (no 8021q); OVS with the netdev datapath can.
 * - An hnic with no network (vlan null) still gets a NIC and a tap, but the tap is NOT added to the
 *   bridge and stays down: the guest sees a NIC with nothing behind it. (An untagged OVS port would be
 *   a trunk carrying every VLAN, so "no tag" is never an option.)
 * - Attached taps are `vlan_mode=access`: frames the guest tags itself are dropped by OVS.
 * - Tap names: "hn" + 13 hex digits of sha256(stateDir, headnode, hnic) = 15 chars (IFNAMSIZ-1),
 *   deterministic for a deployment, distinct between deployments sharing a host. MACs are
 *   52:54:xx:xx:xx:xx from the same hash, so a guest keeps its MACs across restarts.
 * - VNC: `-vnc 127.0.0.1:<from>,to=<to>` makes QEMU bind the first free display itself (no race
 *   between probing a port and QEMU binding it); the real port is read back with QMP `query-vnc`.
 * - QMP: one short-lived connection per operation (QEMU serves one QMP client at a time).
 * - State: STATE/<key>.json records pid, process start time (guards against PID reuse), QMP socket,
 *   VNC port and taps, so status/stop/recover work from a fresh driver instance after a restart.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import { HeadnodeError, IMAGE_NAME, type HeadnodeDriver, type HeadnodeStatus, type HnicSpec } from './types';

export interface QemuHeadnodeOptions {
  /** Folder of base images: image NAME is the file NAME.qcow2. */
  imagesDir: string;
  /** Folder for overlays, QMP sockets, state files and QEMU logs (created if missing). */
  stateDir: string;
  /** OVS bridge the hnics join (must exist; datapath_type=netdev on kernels without the OVS module). */
  bridge: string;
  /** OVS database socket path (ovs-vsctl --db=unix:PATH); default: ovs-vsctl's default socket. */
  ovsDbSock?: string;
  /** Extra environment for ovs-vsctl (e.g. OVS_RUNDIR). */
  ovsEnv?: NodeJS.ProcessEnv;
  /** QEMU accelerator; default 'tcg' (KVM here is nested and optional). */
  accel?: 'tcg' | 'kvm';
  /** Guest memory; default 64 MiB. */
  memoryMb?: number;
  qemuPath?: string;
  qemuImgPath?: string;
  ovsVsctlPath?: string;
  /** iproute2's `ip`, used to bring taps up (OVS does not). */
  ipPath?: string;
  /** Bound for each external command, each QMP exchange, VM boot and VM exit. Default 10000 ms. */
  timeoutMs?: number;
  /** VNC display range searched by QEMU (port = 5900 + display). Default 0..99. */
  vncDisplays?: { from: number; to: number };
}

interface TapState {
  hnic: string;
  vlan: number | null;
  tap: string;
  mac: string;
}

interface VmState {
  version: 1;
  name: string;
  pid: number;
  /** /proc/PID/stat field 22: with the pid, identifies the process even if the pid is reused. */
  procStart: string;
  qmp: string;
  vncport: number | null;
  bridge: string;
  overlay: string;
  hnics: TapState[];
  startedAt: string;
}

type QmpCommand = { execute: string; arguments?: Record<string, unknown> };

/** NICs per PCI bridge (slots 1..30 of the bridge's 32). */
const NICS_PER_BRIDGE = 30;
/** Longest unix socket path (sun_path is 108 bytes including the NUL). */
const SUN_PATH_MAX = 107;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function sha256(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex');
}

function errMsg(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** QEMU option values escape ',' by doubling it. */
function qopt(v: string): string {
  return v.replace(/,/g, ',,');
}

async function exists(p: string): Promise<boolean> {
  try {
    await fsp.access(p);
    return true;
  } catch {
    return false;
  }
}

async function rmIfExists(p: string): Promise<void> {
  await fsp.rm(p, { force: true });
}

/** State and start time of a live (non-zombie) process, or null. */
async function procStat(pid: number): Promise<{ state: string; start: string } | null> {
  let text: string;
  try {
    text = await fsp.readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // comm (field 2) may contain spaces and ')': the fixed fields follow the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = rest[0] ?? '';
  const start = rest[19] ?? '';
  // QEMU is multithreaded: its leader shows Z while other threads are still exiting and still
  // hold the process's files, QEMU's image lock among them. Dead means every thread is.
  if (isDead(state) && !(await liveThreads(pid))) return null;
  return { state, start };
}

const isDead = (state: string) => state === 'Z' || state === 'X' || state === 'x';

async function liveThreads(pid: number): Promise<boolean> {
  let tids: string[];
  try {
    tids = await fsp.readdir(`/proc/${pid}/task`);
  } catch {
    return false;
  }
  for (const tid of tids) {
    try {
      const text = await fsp.readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      if (!isDead(text.slice(text.lastIndexOf(')') + 2).split(' ')[0] ?? '')) return true;
    } catch {
      /* that thread is gone */
    }
  }
  return false;
}

function run(
  cmd: string,
  args: string[],
  timeoutMs: number,
  env?: NodeJS.ProcessEnv,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { timeout: timeoutMs, killSignal: 'SIGKILL', env, maxBuffer: 4 << 20, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (!err) return resolve({ stdout, stderr });
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: unknown };
        let why: string;
        if (e.code === 'ENOENT') why = `${cmd} not found (is it installed and on PATH?)`;
        else if (e.killed) why = `timed out after ${timeoutMs} ms`;
        else why = (stderr || '').trim() || e.message;
        reject(new HeadnodeError(`${path.basename(cmd)} ${args.join(' ')}: ${why}`));
      },
    );
  });
}

/**
 * One QMP session: greeting, qmp_capabilities, then `cmds` in order. Resolves with each command's
 * `return`. With `quitting`, the connection closing after the last command was sent counts as success.
 */
function qmpSession(sock: string, cmds: QmpCommand[], timeoutMs: number, quitting = false): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const results: unknown[] = [];
    let buf = '';
    let stage = -2; // -2: greeting, -1: capabilities, i >= 0: waiting for cmds[i]
    let done = false;
    const s = net.createConnection(sock);
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      if (err) reject(err);
      else resolve(results);
    };
    const timer = setTimeout(() => finish(new HeadnodeError(`QMP ${sock}: no answer within ${timeoutMs} ms`)), timeoutMs);
    const send = (c: QmpCommand) => s.write(JSON.stringify(c) + '\n');
    const handle = (msg: Record<string, unknown>) => {
      if ('event' in msg) return;
      if (stage === -2) {
        if (!('QMP' in msg)) return finish(new HeadnodeError(`QMP ${sock}: unexpected greeting ${JSON.stringify(msg)}`));
        stage = -1;
        send({ execute: 'qmp_capabilities' });
        return;
      }
      if ('error' in msg) {
        const e = msg.error as { class?: string; desc?: string };
        const what = stage >= 0 ? cmds[stage]?.execute : 'qmp_capabilities';
        return finish(new HeadnodeError(`QMP ${what}: ${e.desc ?? JSON.stringify(e)}`));
      }
      if ('return' in msg) {
        if (stage >= 0) results.push(msg.return);
        stage++;
        if (stage >= cmds.length) return finish();
        send(cmds[stage]!);
      }
    };
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      buf += d;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!line) continue;
        let msg: unknown;
        try {
          msg = JSON.parse(line);
        } catch {
          return finish(new HeadnodeError(`QMP ${sock}: unparsable line ${line.slice(0, 200)}`));
        }
        if (msg && typeof msg === 'object') handle(msg as Record<string, unknown>);
        if (done) return;
      }
    });
    s.on('error', (e) => finish(Object.assign(new HeadnodeError(`QMP ${sock}: ${e.message}`), { cause: e })));
    s.on('close', () => {
      if (quitting && stage === cmds.length - 1) finish();
      else finish(new HeadnodeError(`QMP ${sock}: connection closed`));
    });
  });
}

/**
 * Keep the host's own IPv6 (link-local address, DAD, MLD, router solicitations) off a tap: OVS reads
 * netdev ports with a packet socket that also sees what the host transmits, so the host's chatter
 * on the tap would otherwise be switched into the project's VLAN.
 */
async function quietIpv6(dev: string): Promise<void> {
  try {
    await fsp.writeFile(`/proc/sys/net/ipv6/conf/${dev}/disable_ipv6`, '1');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // ENOENT: kernel without IPv6
  }
}

/** True when a TCP connection to 127.0.0.1:port succeeds. */
function tcpProbe(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createConnection({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      clearTimeout(t);
      s.destroy();
      resolve(ok);
    };
    const t = setTimeout(() => done(false), timeoutMs);
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

export class QemuHeadnodeDriver implements HeadnodeDriver {
  readonly imagesDir: string;
  readonly stateDir: string;
  /** folder of the QMP sockets (sun_path limits their paths to 107 bytes) */
  private readonly socketDir: string;
  readonly bridge: string;
  private readonly accel: 'tcg' | 'kvm';
  private readonly memoryMb: number;
  private readonly qemu: string;
  private readonly qemuImg: string;
  private readonly vsctl: string;
  private readonly ip: string;
  private readonly timeoutMs: number;
  private readonly vnc: { from: number; to: number };
  private readonly ovsArgs: string[];
  private readonly ovsEnv: NodeJS.ProcessEnv | undefined;
  /** Headnodes this instance started or adopted: close() stops them. */
  private readonly owned = new Set<string>();
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(opts: QemuHeadnodeOptions) {
    this.imagesDir = path.resolve(opts.imagesDir);
    this.stateDir = path.resolve(opts.stateDir);
    this.bridge = opts.bridge;
    this.accel = opts.accel ?? 'tcg';
    this.memoryMb = opts.memoryMb ?? 64;
    this.qemu = opts.qemuPath ?? 'qemu-system-x86_64';
    this.qemuImg = opts.qemuImgPath ?? 'qemu-img';
    this.vsctl = opts.ovsVsctlPath ?? 'ovs-vsctl';
    this.ip = opts.ipPath ?? 'ip';
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.vnc = opts.vncDisplays ?? { from: 0, to: 99 };
    this.ovsArgs = [`--timeout=${Math.max(1, Math.ceil(this.timeoutMs / 1000))}`];
    if (opts.ovsDbSock) this.ovsArgs.unshift(`--db=unix:${path.resolve(opts.ovsDbSock)}`);
    this.ovsEnv = opts.ovsEnv ? { ...process.env, ...opts.ovsEnv } : undefined;
    if (!this.bridge) throw new HeadnodeError('QemuHeadnodeDriver: bridge is required');
    if (this.accel !== 'tcg' && this.accel !== 'kvm') throw new HeadnodeError(`QemuHeadnodeDriver: unknown accel ${String(this.accel)}`);
    if (!Number.isInteger(this.memoryMb) || this.memoryMb < 16) throw new HeadnodeError('QemuHeadnodeDriver: memoryMb must be an integer >= 16');
    const { from, to } = this.vnc;
    if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to < from || 5900 + to > 65535) {
      throw new HeadnodeError('QemuHeadnodeDriver: bad vncDisplays range');
    }
    // QMP sockets live with the state unless that path is too long for a unix socket; then in
    // a private folder of the system's temp dir, named after the state dir (stable across restarts).
    const sock = (dir: string) => path.join(dir, `${'x'.repeat(12)}.qmp`).length <= SUN_PATH_MAX;
    this.socketDir = sock(this.stateDir) ? this.stateDir : path.join(os.tmpdir(), `hilt-qmp-${sha256(this.stateDir).slice(0, 12)}`);
    if (!sock(this.socketDir)) throw new HeadnodeError(`QemuHeadnodeDriver: no folder short enough for unix sockets (${this.socketDir})`);
  }

  // ---- naming -------------------------------------------------------------------------------

  /** File name stem for a headnode: readable prefix plus a hash (names are arbitrary strings). */
  private key(name: string): string {
    const safe = name.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_').slice(0, 40);
    return `${safe}-${sha256(name).slice(0, 10)}`;
  }
  overlayPath(name: string): string {
    return path.join(this.stateDir, `${this.key(name)}.qcow2`);
  }
  private statePath(name: string): string {
    return path.join(this.stateDir, `${this.key(name)}.json`);
  }
  private logPath(name: string): string {
    return path.join(this.stateDir, `${this.key(name)}.log`);
  }
  /** QMP socket of the headnode's QEMU (short: sun_path limits unix socket paths to 107 bytes). */
  qmpSocketPath(name: string): string {
    return path.join(this.socketDir, `${sha256(name).slice(0, 12)}.qmp`);
  }
  /** Deterministic tap name (15 chars, the IFNAMSIZ limit) for an hnic. */
  tapName(name: string, hnic: string): string {
    return 'hn' + sha256(this.stateDir, name, hnic).slice(0, 13);
  }
  private mac(name: string, hnic: string): string {
    const h = sha256('mac', this.stateDir, name, hnic);
    return ['52', '54', h.slice(0, 2), h.slice(2, 4), h.slice(4, 6), h.slice(6, 8)].join(':');
  }

  // ---- plumbing -----------------------------------------------------------------------------

  private withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(name) ?? Promise.resolve();
    const result = prev.then(fn, fn);
    const tail = result.catch(() => undefined);
    this.locks.set(name, tail);
    void tail.then(() => {
      if (this.locks.get(name) === tail) this.locks.delete(name);
    });
    return result;
  }

  private async guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof HeadnodeError) throw e;
      throw Object.assign(new HeadnodeError(`${what}: ${errMsg(e)}`), { cause: e });
    }
  }

  private ovs(args: string[]) {
    return run(this.vsctl, [...this.ovsArgs, ...args], this.timeoutMs + 2000, this.ovsEnv);
  }

  private async readState(name: string): Promise<VmState | null> {
    let text: string;
    try {
      text = await fsp.readFile(this.statePath(name), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    try {
      const st = JSON.parse(text) as VmState;
      if (st.version !== 1 || typeof st.pid !== 'number') throw new Error('unknown format');
      return st;
    } catch (e) {
      throw new HeadnodeError(`state file ${this.statePath(name)} is corrupt: ${errMsg(e)}`);
    }
  }

  private async writeState(st: VmState): Promise<void> {
    const file = this.statePath(st.name);
    const tmp = `${file}.${process.pid}.tmp`;
    await fsp.writeFile(tmp, JSON.stringify(st, null, 2) + '\n', { mode: 0o600 });
    await fsp.rename(tmp, file);
  }

  /** The recorded QEMU process still exists (not a zombie, same start time, our QMP socket). */
  private async alive(st: VmState): Promise<boolean> {
    const ps = await procStat(st.pid);
    if (!ps || ps.start !== st.procStart) return false;
    try {
      const cmdline = await fsp.readFile(`/proc/${st.pid}/cmdline`, 'utf8');
      return cmdline.includes(st.qmp);
    } catch {
      return false;
    }
  }

  private async waitDead(st: VmState, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (await this.alive(st)) {
      if (Date.now() >= deadline) return false;
      await sleep(25);
    }
    return true;
  }

  /** QMP says the guest runs; returns the VNC port QEMU actually listens on. */
  private async qmpRunning(st: VmState): Promise<{ running: boolean; vncport: number | null }> {
    const [status, vnc] = (await qmpSession(
      st.qmp,
      [{ execute: 'query-status' }, { execute: 'query-vnc' }],
      this.timeoutMs,
    )) as [{ running?: boolean; status?: string }, { enabled?: boolean; service?: string }];
    const port = vnc?.enabled && vnc.service ? Number.parseInt(vnc.service, 10) : NaN;
    return { running: status?.running === true, vncport: Number.isFinite(port) ? port : null };
  }

  /** Force the process off: QMP quit, then SIGKILL. Throws if it survives. */
  private async kill(st: VmState): Promise<void> {
    if (!(await this.alive(st))) return;
    let asked = true;
    try {
      await qmpSession(st.qmp, [{ execute: 'quit' }], Math.min(this.timeoutMs, 3000), true);
    } catch {
      asked = false; // wedged or already gone: straight to SIGKILL
    }
    if (await this.waitDead(st, asked ? this.timeoutMs : 0)) return;
    try {
      process.kill(st.pid, 'SIGKILL');
    } catch {
      /* exited meanwhile */
    }
    if (!(await this.waitDead(st, this.timeoutMs))) {
      throw new HeadnodeError(`headnode ${st.name}: QEMU pid ${st.pid} survived SIGKILL for ${this.timeoutMs} ms`);
    }
  }

  /** Kill every live QEMU whose command line names this QMP socket (unique per headnode). */
  private async killStrays(qmp: string): Promise<void> {
    const marker = `path=${qopt(qmp)},`;
    const pids: number[] = [];
    for (const d of await fsp.readdir('/proc')) {
      if (!/^\d+$/.test(d)) continue;
      const cmdline = await fsp.readFile(`/proc/${d}/cmdline`, 'utf8').catch(() => '');
      if (cmdline.includes(marker) && (await procStat(Number(d)))) pids.push(Number(d));
    }
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    const deadline = Date.now() + this.timeoutMs;
    for (const pid of pids) {
      while (await procStat(pid)) {
        if (Date.now() > deadline) throw new HeadnodeError(`a stray QEMU (pid ${pid}) survived SIGKILL for ${this.timeoutMs} ms`);
        await sleep(25);
      }
    }
  }

  /** Remove the VM's OVS ports, QMP socket and state file (the process must be gone). */
  private async cleanup(st: VmState): Promise<void> {
    const dels = st.hnics.flatMap((h) => ['--', '--if-exists', 'del-port', h.tap]);
    if (dels.length) await this.ovs(dels.slice(1));
    await rmIfExists(st.qmp);
    await rmIfExists(this.statePath(st.name));
  }

  /** Put attached taps on the bridge with their VLAN (access ports); detach the unattached ones. */
  private async plug(taps: TapState[], fresh: boolean): Promise<void> {
    const attached = taps.filter((t) => t.vlan !== null);
    await Promise.all(
      attached.map(async (t) => {
        await quietIpv6(t.tap);
        await run(this.ip, ['link', 'set', 'dev', t.tap, 'up'], this.timeoutMs);
      }),
    );
    const cmds: string[][] = [];
    for (const t of taps) {
      if (t.vlan === null) {
        if (!fresh) cmds.push(['--if-exists', 'del-port', t.tap]);
        continue;
      }
      cmds.push(['--may-exist', 'add-port', this.bridge, t.tap]);
      cmds.push(['set', 'port', t.tap, `tag=${t.vlan}`, 'vlan_mode=access', 'trunks=[]']);
    }
    if (!cmds.length) return;
    const { stderr } = await this.ovs(cmds.flatMap((c, i) => (i ? ['--', ...c] : c)));
    // ovs-vsctl exits 0 but warns when vswitchd could not open a device.
    if (/error detected|could not open/i.test(stderr)) {
      throw new HeadnodeError(`adding hnics to OVS bridge ${this.bridge}: ${stderr.trim()}`);
    }
  }

  private async logTail(name: string): Promise<string> {
    try {
      const text = await fsp.readFile(this.logPath(name), 'utf8');
      return text.trim().slice(-1500);
    } catch {
      return '';
    }
  }

  private validateHnics(name: string, hnics: HnicSpec[]): void {
    if (!Array.isArray(hnics)) throw new HeadnodeError(`headnode ${name}: hnics must be a list`);
    const seen = new Set<string>();
    for (const h of hnics) {
      if (typeof h?.name !== 'string' || !h.name) throw new HeadnodeError(`headnode ${name}: hnic without a name`);
      if (seen.has(h.name)) throw new HeadnodeError(`headnode ${name}: duplicate hnic ${h.name}`);
      seen.add(h.name);
      if (h.vlan !== null && !(Number.isInteger(h.vlan) && h.vlan >= 1 && h.vlan <= 4094)) {
        throw new HeadnodeError(`headnode ${name}: hnic ${h.name} has invalid VLAN ${String(h.vlan)} (1-4094 or null)`);
      }
    }
  }

  // ---- boot ---------------------------------------------------------------------------------

  private async boot(name: string, hnics: HnicSpec[]): Promise<HeadnodeStatus> {
    const overlay = this.overlayPath(name);
    if (!(await exists(overlay))) throw new HeadnodeError(`headnode ${name} has no disk: create it first`);
    const qmp = this.qmpSocketPath(name);
    const taps: TapState[] = hnics.map((h) => ({
      hnic: h.name,
      vlan: h.vlan,
      tap: this.tapName(name, h.name),
      mac: this.mac(name, h.name),
    }));
    // A QEMU of this headnode that no state file records (the service was killed between
    // spawning it and writing its state) would hold the overlay and the taps: it goes first.
    await this.killStrays(qmp);
    // Rows left behind by a VM that died unseen would keep stale settings: start from scratch.
    if (taps.length) await this.ovs(taps.flatMap((t, i) => [...(i ? ['--'] : []), '--if-exists', 'del-port', t.tap]));
    await rmIfExists(qmp);

    const args = [
      '-name', qopt(`hilt-${this.key(name)}`),
      '-machine', `accel=${this.accel}`,
      '-m', String(this.memoryMb),
      '-S',
      '-no-user-config',
      '-display', 'none',
      '-vnc', `127.0.0.1:${this.vnc.from},to=${this.vnc.to}`,
      '-chardev', `socket,id=qmp,path=${qopt(qmp)},server=on,wait=off`,
      '-mon', 'chardev=qmp,mode=control',
      '-monitor', 'none',
      '-serial', 'none',
      '-parallel', 'none',
      '-drive', `file=${qopt(overlay)},if=virtio,format=qcow2`,
    ];
    // The root PCI bus has about 28 free slots; the NICs sit on PCI bridges of NICS_PER_BRIDGE
    // each, so a headnode may have any number of hnics (the spec's word).
    for (let b = 0; b * NICS_PER_BRIDGE < taps.length; b++) args.push('-device', `pci-bridge,id=pb${b},chassis_nr=${b + 1}`);
    taps.forEach((t, i) => {
      const bus = `pb${Math.floor(i / NICS_PER_BRIDGE)},addr=0x${((i % NICS_PER_BRIDGE) + 1).toString(16)}`;
      args.push('-netdev', `tap,id=n${i},ifname=${t.tap},script=no,downscript=no`);
      args.push('-device', `virtio-net-pci,netdev=n${i},mac=${t.mac},bus=${bus}`);
    });

    // QMP sockets: whoever reaches them controls the VMs.
    for (const dir of new Set([this.stateDir, this.socketDir])) await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
    if (this.socketDir !== this.stateDir) {
      // In a shared temp dir: it must be ours and closed to others (nobody may plant it for us).
      const st = await fsp.lstat(this.socketDir);
      if (!st.isDirectory() || st.uid !== process.getuid?.() || (st.mode & 0o077) !== 0) {
        throw new HeadnodeError(`socket folder ${this.socketDir} is not a private folder of this user`);
      }
    }
    const logFd = fs.openSync(this.logPath(name), 'w', 0o600);
    let child;
    try {
      // Own process group: a ^C to the service does not power VMs off; recover() adopts them.
      child = spawn(this.qemu, args, { detached: true, stdio: ['ignore', logFd, logFd] });
    } finally {
      fs.closeSync(logFd);
    }
    let exit: string | null = null;
    child.once('error', (e) => (exit = (e as NodeJS.ErrnoException).code === 'ENOENT' ? `${this.qemu} not found (is qemu-system-x86 installed?)` : e.message));
    child.once('exit', (code, sig) => (exit = `QEMU exited (${sig ?? `code ${code}`})`));
    child.unref();
    this.owned.add(name);

    const st: VmState = {
      version: 1,
      name,
      pid: child.pid ?? -1,
      procStart: '',
      qmp,
      vncport: null,
      bridge: this.bridge,
      overlay,
      hnics: taps,
      startedAt: new Date().toISOString(),
    };
    try {
      if (child.pid === undefined) {
        await sleep(0);
        throw new HeadnodeError(`headnode ${name}: cannot start ${this.qemu}: ${exit ?? 'spawn failed'}`);
      }
      const ps = await procStat(child.pid);
      st.procStart = ps?.start ?? '';
      await this.writeState(st); // from here on, stop()/recover() can find the process

      // Wait for QMP (the socket appears once QEMU has set up devices, taps included).
      const deadline = Date.now() + this.timeoutMs;
      let vncport: number | null = null;
      for (;;) {
        if (exit) throw new HeadnodeError(`headnode ${name}: ${exit}: ${await this.logTail(name)}`);
        try {
          vncport = (await this.qmpRunning(st)).vncport;
          break;
        } catch (e) {
          if (Date.now() >= deadline) throw new HeadnodeError(`headnode ${name}: QMP did not come up within ${this.timeoutMs} ms: ${errMsg(e)}`);
          await sleep(20);
        }
      }
      if (vncport === null) throw new HeadnodeError(`headnode ${name}: QEMU reports no VNC server`);
      st.vncport = vncport;
      await this.writeState(st);

      await this.plug(taps, true);

      const [, status] = (await qmpSession(qmp, [{ execute: 'cont' }, { execute: 'query-status' }], this.timeoutMs)) as [
        unknown,
        { running?: boolean; status?: string },
      ];
      if (status?.running !== true) throw new HeadnodeError(`headnode ${name}: QEMU status is ${status?.status} after cont`);
      return { running: true, vncport };
    } catch (e) {
      // Leave nothing half-started behind.
      try {
        if (child.pid !== undefined && !exit) {
          try {
            process.kill(child.pid, 'SIGKILL');
          } catch {
            /* gone */
          }
          if (st.procStart) await this.waitDead(st, this.timeoutMs);
        }
        await this.cleanup(st);
      } catch {
        /* report the original failure */
      }
      this.owned.delete(name);
      throw e;
    }
  }

  /**
   * Bring the headnode to "running with these hnics": adopt a healthy running VM (re-applying its
   * OVS ports), otherwise kill whatever is left and boot it.
   */
  private async ensureRunning(name: string, hnics: HnicSpec[]): Promise<HeadnodeStatus> {
    this.validateHnics(name, hnics);
    const st = await this.readState(name);
    if (st) {
      if (await this.alive(st)) {
        const sameNics =
          st.hnics.length === hnics.length && st.hnics.every((t, i) => t.hnic === hnics[i]!.name);
        let q: { running: boolean; vncport: number | null } | null = null;
        try {
          q = await this.qmpRunning(st);
        } catch {
          q = null;
        }
        const vncOk = q?.vncport != null && (await tcpProbe(q.vncport, Math.min(this.timeoutMs, 3000)));
        // A guest that is paused (by an operator, or by QEMU on a full disk) is adopted as it
        // is: only a VM whose QMP or VNC does not answer is killed and booted again.
        if (q && vncOk && sameNics && st.bridge === this.bridge) {
          const taps = st.hnics.map((t, i) => ({ ...t, vlan: hnics[i]!.vlan }));
          await this.plug(taps, false);
          st.hnics = taps;
          st.vncport = q.vncport;
          await this.writeState(st);
          this.owned.add(name);
          return { running: true, vncport: q.vncport };
        }
        await this.kill(st);
      }
      await this.cleanup(st);
    }
    return this.boot(name, hnics);
  }

  private async stopLocked(name: string): Promise<void> {
    const st = await this.readState(name);
    if (st) {
      await this.kill(st);
      await this.cleanup(st);
    } else {
      // No state: a crash may have come between spawning a QEMU and recording it.
      await this.killStrays(this.qmpSocketPath(name));
    }
    this.owned.delete(name);
  }

  /** PID of the headnode's QEMU while it exists (diagnostics, tests), else null. */
  processId(name: string): Promise<number | null> {
    return this.withLock(name, () =>
      this.guard(`pid of headnode ${name}`, async () => {
        const st = await this.readState(name);
        return st && (await this.alive(st)) ? st.pid : null;
      }),
    );
  }

  // ---- HeadnodeDriver -----------------------------------------------------------------------

  async listImages(): Promise<string[]> {
    return this.guard('listing base images', async () => {
      let entries: fs.Dirent[];
      try {
        entries = await fsp.readdir(this.imagesDir, { withFileTypes: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return []; // no folder, no images installed
        throw new HeadnodeError(`cannot read images folder ${this.imagesDir}: ${errMsg(e)}`);
      }
      return entries
        .filter((e) => (e.isFile() || e.isSymbolicLink()) && e.name.endsWith('.qcow2'))
        .map((e) => e.name.slice(0, -'.qcow2'.length))
        .filter((n) => IMAGE_NAME.test(n))
        .sort();
    });
  }

  create(name: string, baseImage: string): Promise<void> {
    return this.withLock(name, () =>
      this.guard(`creating headnode ${name}`, async () => {
        if (typeof baseImage !== 'string' || !IMAGE_NAME.test(baseImage)) {
          throw new HeadnodeError(`invalid base image name ${JSON.stringify(baseImage)}`);
        }
        const base = path.join(this.imagesDir, `${baseImage}.qcow2`);
        const overlay = this.overlayPath(name);
        // An existing disk is checked first: its VM may run on although the base file was
        // since removed (QEMU keeps it open), and must not be refused for that.
        if (await exists(overlay)) {
          // -U: the VM may be running and holding the image lock.
          const { stdout } = await run(this.qemuImg, ['info', '-U', '--output=json', overlay], this.timeoutMs);
          const info = JSON.parse(stdout) as { 'backing-filename'?: string; 'full-backing-filename'?: string };
          const backing = info['full-backing-filename'] ?? info['backing-filename'];
          if (backing !== base) {
            throw new HeadnodeError(`headnode ${name} already has a disk, based on ${backing ?? 'nothing'}, not ${base}`);
          }
          return;
        }
        if (!(await exists(base))) throw new HeadnodeError(`no base image ${baseImage} (${base})`);
        await fsp.mkdir(this.stateDir, { recursive: true, mode: 0o700 }); // state files, overlays, logs
        const tmp = `${overlay}.${process.pid}.tmp`;
        try {
          await run(this.qemuImg, ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', base, tmp], this.timeoutMs);
          await fsp.rename(tmp, overlay);
        } finally {
          await rmIfExists(tmp);
        }
      }),
    );
  }

  start(name: string, hnics: HnicSpec[]): Promise<HeadnodeStatus> {
    return this.withLock(name, () => this.guard(`starting headnode ${name}`, () => this.ensureRunning(name, hnics)));
  }

  stop(name: string): Promise<void> {
    return this.withLock(name, () => this.guard(`stopping headnode ${name}`, () => this.stopLocked(name)));
  }

  status(name: string): Promise<HeadnodeStatus> {
    return this.withLock(name, () =>
      this.guard(`status of headnode ${name}`, async () => {
        const st = await this.readState(name);
        if (!st || !(await this.alive(st))) return { running: false, vncport: null };
        try {
          const q = await this.qmpRunning(st);
          // A live process whose guest is paused, or whose QMP does not answer, is not a usable VM.
          return q.running ? { running: true, vncport: q.vncport } : { running: false, vncport: null };
        } catch {
          return { running: false, vncport: null };
        }
      }),
    );
  }

  async isAlive(name: string): Promise<boolean> {
    return (await this.processId(name)) !== null;
  }

  recover(name: string, hnics: HnicSpec[]): Promise<HeadnodeStatus> {
    return this.withLock(name, () => this.guard(`recovering headnode ${name}`, () => this.ensureRunning(name, hnics)));
  }

  destroy(name: string): Promise<void> {
    return this.withLock(name, () =>
      this.guard(`destroying headnode ${name}`, async () => {
        await this.stopLocked(name);
        await rmIfExists(this.overlayPath(name));
        await rmIfExists(this.logPath(name));
        await rmIfExists(this.qmpSocketPath(name));
      }),
    );
  }

  async close(): Promise<void> {
    const names = [...this.owned];
    const results = await Promise.allSettled(names.map((n) => this.stop(n)));
    const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [`${names[i]}: ${errMsg(r.reason)}`] : []));
    if (failed.length) throw new HeadnodeError(`closing headnode driver: ${failed.join('; ')}`);
  }
}
