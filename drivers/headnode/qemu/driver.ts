/**
 * Headnode driver running each headnode as a real QEMU VM whose hnics are tap devices on an
 * Open vSwitch bridge (VLAN per network via the port's `tag`). It composes the QMP client
 * (qmp.ts), QEMU as a process (process.ts), the OVS plumbing (ovs.ts) and the state file of
 * each VM (state.ts, at the places layout.ts names).
 *
 * - Disk: one qcow2 overlay per headnode on top of IMAGES/<base>.qcow2 (QEMU refuses to share one).
 * - Tap names and MACs derive from a hash of the state folder, headnode and hnic (layout.ts).
 * - State: a file per VM records pid, process start time (guards against PID reuse), QMP socket,
 *   VNC port and taps, so status/stop/recover work from a fresh driver instance after a restart.
 * - Calls take as long as QEMU and OVS need: the caller's signal bounds them. A start whose signal
 *   aborts SIGKILLs the QEMU it was booting and leaves the rest (OVS rows, state file) to the
 *   next stop, start or destroy of that headnode, which clean up whatever a VM left.
 *
 * Longer than our other modules on purpose: each VM operation is a sequence over those parts
 * with its own clean-up on failure, and the five operations read best side by side.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as net from 'node:net';
import * as path from 'node:path';

import { pause } from '../../../lib/time';
import { HeadnodeError, IMAGE_NAME, type HeadnodeDriver, type HeadnodeStatus, type HnicSpec } from '../types';
import { run } from './exec';
import { QemuLayout } from './layout';
import { OvsBridge } from './ovs';
import { alive, killQemu, killStrays, logTail, processStart, qemuArgs, spawnQemu, waitDead } from './process';
import { qmpRunning, qmpSession } from './qmp';
import { readName, readState, writeName, writeState, type TapState, type VmState } from './state';

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
  /** VNC display range searched by QEMU (port = 5900 + display). Default 0..99. */
  vncDisplays?: { from: number; to: number };
}

function errMsg(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
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

/**
 * A live QEMU answers QMP at once, even with its guest paused; one silent this long is wedged:
 * status() reports it not running and start/recover kill it and boot it again.
 */
const WEDGED_MS = 10_000;
/** Likewise for its VNC server accepting a connection. */
const VNC_PROBE_MS = 3000;
/** How often QEMU's QMP socket is tried while it boots. */
const BOOT_POLL_MS = 20;

/** True when a TCP connection to 127.0.0.1:port succeeds within VNC_PROBE_MS. */
function vncAnswers(port: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const s = net.createConnection({ host: '127.0.0.1', port });
    const done = (ok: boolean | Error) => {
      clearTimeout(t);
      signal.removeEventListener('abort', onAbort);
      s.destroy();
      if (ok instanceof Error) reject(ok);
      else resolve(ok);
    };
    const onAbort = () => done(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const t = setTimeout(() => done(false), VNC_PROBE_MS);
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

export class QemuHeadnodeDriver implements HeadnodeDriver {
  readonly imagesDir: string;
  readonly stateDir: string;
  readonly bridge: string;
  private readonly layout: QemuLayout;
  private readonly ovs: OvsBridge;
  private readonly accel: 'tcg' | 'kvm';
  private readonly memoryMb: number;
  private readonly qemu: string;
  private readonly qemuImg: string;
  private readonly vnc: { from: number; to: number };
  /** Headnodes this instance started or adopted: close() stops them. */
  private readonly owned = new Set<string>();

  constructor(opts: QemuHeadnodeOptions) {
    this.imagesDir = path.resolve(opts.imagesDir);
    this.stateDir = path.resolve(opts.stateDir);
    this.bridge = opts.bridge;
    this.accel = opts.accel ?? 'tcg';
    this.memoryMb = opts.memoryMb ?? 64;
    this.qemu = opts.qemuPath ?? 'qemu-system-x86_64';
    this.qemuImg = opts.qemuImgPath ?? 'qemu-img';
    this.vnc = opts.vncDisplays ?? { from: 0, to: 99 };
    if (!this.bridge) throw new HeadnodeError('QemuHeadnodeDriver: bridge is required');
    if (this.accel !== 'tcg' && this.accel !== 'kvm') throw new HeadnodeError(`QemuHeadnodeDriver: unknown accel ${String(this.accel)}`);
    if (!Number.isInteger(this.memoryMb) || this.memoryMb < 16) throw new HeadnodeError('QemuHeadnodeDriver: memoryMb must be an integer >= 16');
    const { from, to } = this.vnc;
    if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to < from || 5900 + to > 65535) {
      throw new HeadnodeError('QemuHeadnodeDriver: bad vncDisplays range');
    }
    this.layout = new QemuLayout(this.stateDir);
    this.ovs = new OvsBridge({
      bridge: this.bridge, dbSock: opts.ovsDbSock, env: opts.ovsEnv, vsctlPath: opts.ovsVsctlPath, ipPath: opts.ipPath,
    });
  }

  overlayPath(name: string): string {
    return this.layout.overlay(name);
  }

  qmpSocketPath(name: string): string {
    return this.layout.qmpSocket(name);
  }

  tapName(name: string, hnic: string): string {
    return this.layout.tapName(name, hnic);
  }

  /** Failures become HeadnodeErrors naming `what`; once the signal has aborted, its reason. */
  private async guard<T>(what: string, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
    try {
      signal.throwIfAborted();
      return await fn();
    } catch (e) {
      if (signal.aborted) throw signal.reason;
      if (e instanceof HeadnodeError) throw e;
      throw Object.assign(new HeadnodeError(`${what}: ${errMsg(e)}`), { cause: e });
    }
  }

  /**
   * The headnode's files are its own: the name recorded with them (the name file, and the state
   * file of a running VM) must be `name`; files an earlier release kept under its shorter key
   * are moved to this release's names first. A headnode never boots, adopts or deletes the disk
   * or VM of another one.
   */
  private async own(name: string): Promise<void> {
    const recorded = await readName(this.layout.nameFile(name));
    if (recorded !== null && recorded !== name) throw this.notOurs(name, this.layout.nameFile(name));
    if (recorded === null) await this.moveLegacy(name);
  }

  private notOurs(name: string, file: string): HeadnodeError {
    return new HeadnodeError(`headnode ${name}: ${file} belongs to another headnode: refusing to use it`);
  }

  /**
   * Files of `name` made by a release that named them with 40 bits of hash: renamed once to
   * this release's names, and the name recorded. Files whose state file records another name
   * are that headnode's and stay where they are (that headnode moves them when it is next used).
   * Files without a state file (a stopped headnode) record no name: the first headnode to ask
   * for them takes them, which after an upgrade is their own as soon as it is started, stopped
   * or deleted.
   */
  private async moveLegacy(name: string): Promise<void> {
    const old = this.layout.legacy(name);
    const [disk, log, st] = await Promise.all([exists(old.overlay), exists(old.log), readState(old.stateFile)]);
    const stateOk = st !== null && st.name === name;
    if (!disk && !stateOk) return;
    if (st !== null && st.name !== name) return;
    if (await exists(this.layout.overlay(name))) return; // this release's disk is the one
    await writeName(this.layout.nameFile(name), name);
    if (disk) await fsp.rename(old.overlay, this.layout.overlay(name)); // a running QEMU keeps its open file
    if (log) await fsp.rename(old.log, this.layout.log(name));
    if (st) {
      await writeState(this.layout.stateFile(name), { ...st, overlay: this.layout.overlay(name) });
      await rmIfExists(old.stateFile);
    }
  }

  /** The state file of `name`'s VM, refused when it records another headnode. */
  private async state(name: string): Promise<VmState | null> {
    const file = this.layout.stateFile(name);
    const st = await readState(file);
    if (st && st.name !== name) throw this.notOurs(name, file);
    return st;
  }

  /** Remove the VM's OVS ports, QMP socket and state file (the process must be gone). */
  private async cleanup(st: VmState, signal: AbortSignal): Promise<void> {
    await this.ovs.removePorts(st.hnics.map((h) => h.tap), signal);
    await rmIfExists(st.qmp);
    await rmIfExists(this.layout.stateFile(st.name));
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

  private async boot(name: string, hnics: HnicSpec[], signal: AbortSignal): Promise<HeadnodeStatus> {
    const overlay = this.layout.overlay(name);
    if (!(await exists(overlay))) throw new HeadnodeError(`headnode ${name} has no disk: create it first`);
    const qmp = this.layout.qmpSocket(name);
    const taps: TapState[] = hnics.map((h) => ({
      hnic: h.name,
      vlan: h.vlan,
      tap: this.layout.tapName(name, h.name),
      mac: this.layout.mac(name, h.name),
    }));
    // A QEMU of this headnode that no state file records (the service was killed between
    // spawning it and writing its state) would hold the overlay and the taps: it goes first.
    await killStrays(qmp, signal);
    // Rows left behind by a VM that died unseen would keep stale settings: start from scratch.
    await this.ovs.removePorts(taps.map((t) => t.tap), signal);
    await rmIfExists(qmp);

    const args = qemuArgs({
      label: `hilt-${this.layout.key(name)}`, accel: this.accel, memoryMb: this.memoryMb, vnc: this.vnc, qmp, overlay, taps,
    });
    // QMP sockets: whoever reaches them controls the VMs.
    for (const dir of new Set([this.stateDir, this.layout.socketDir])) await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
    if (this.layout.socketDir !== this.stateDir) {
      // In a shared temp dir: it must be ours and closed to others (nobody may plant it for us).
      const st = await fsp.lstat(this.layout.socketDir);
      if (!st.isDirectory() || st.uid !== process.getuid?.() || (st.mode & 0o077) !== 0) {
        throw new HeadnodeError(`socket folder ${this.layout.socketDir} is not a private folder of this user`);
      }
    }
    const child = spawnQemu(this.qemu, args, this.layout.log(name));
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
        await pause(0, signal); // spawn reports its error on the next turn
        throw new HeadnodeError(`headnode ${name}: cannot start ${this.qemu}: ${child.exit() ?? 'spawn failed'}`);
      }
      st.procStart = await processStart(child.pid);
      await writeState(this.layout.stateFile(name), st); // from here on, stop()/recover() can find the process

      // Wait for QMP (the socket appears once QEMU has set up devices, taps included), for as
      // long as QEMU runs and the signal allows.
      let vncport: number | null = null;
      for (;;) {
        const exit = child.exit();
        if (exit) throw new HeadnodeError(`headnode ${name}: ${exit}: ${await logTail(this.layout.log(name))}`);
        try {
          vncport = (await qmpRunning(qmp, signal)).vncport;
          break;
        } catch {
          await pause(BOOT_POLL_MS, signal);
        }
      }
      if (vncport === null) throw new HeadnodeError(`headnode ${name}: QEMU reports no VNC server`);
      st.vncport = vncport;
      await writeState(this.layout.stateFile(name), st);

      await this.ovs.plug(taps, true, signal);
      await this.release(name, qmp, signal);
      return { running: true, vncport };
    } catch (e) {
      // Leave nothing half-started behind. SIGKILL needs no waiting, so it happens even when the
      // signal has aborted; the rest then waits for the next stop, start or destroy.
      try {
        if (child.pid !== undefined && !child.exit()) {
          try {
            process.kill(child.pid, 'SIGKILL');
          } catch {
            /* gone */
          }
          if (st.procStart) await waitDead(st, signal);
        }
        await this.cleanup(st, signal);
      } catch {
        /* report the original failure */
      }
      this.owned.delete(name);
      throw e;
    }
  }

  /** Let the guest of a VM started paused (-S) run, once its hnics are on their VLANs. */
  private async release(name: string, qmp: string, signal: AbortSignal): Promise<void> {
    const [, status] = (await qmpSession(qmp, [{ execute: 'cont' }, { execute: 'query-status' }], signal)) as [
      unknown,
      { running?: boolean; status?: string },
    ];
    if (status?.running !== true) throw new HeadnodeError(`headnode ${name}: QEMU status is ${status?.status} after cont`);
  }

  /**
   * Bring the headnode to "running with these hnics": adopt a healthy running VM (re-applying its
   * OVS ports), otherwise kill whatever is left and boot it.
   */
  private async ensureRunning(name: string, hnics: HnicSpec[], signal: AbortSignal): Promise<HeadnodeStatus> {
    this.validateHnics(name, hnics);
    const st = await this.state(name);
    if (st) {
      if (await alive(st)) {
        const sameNics =
          st.hnics.length === hnics.length && st.hnics.every((t, i) => t.hnic === hnics[i]!.name);
        let q: Awaited<ReturnType<typeof qmpRunning>> | null = null;
        try {
          q = await qmpRunning(st.qmp, signal, WEDGED_MS);
        } catch {
          signal.throwIfAborted();
          q = null;
        }
        const vncOk = q?.vncport != null && (await vncAnswers(q.vncport, signal));
        // A guest that is paused (by an operator, or by QEMU on a full disk) is adopted as it
        // is: only a VM whose QMP or VNC does not answer is killed and booted again. One still
        // in `prelaunch` never ran: its start was cut (the service died) before its hnics were
        // all on their VLANs, so it is let run only after they are, as a boot does.
        if (q && vncOk && sameNics && st.bridge === this.bridge) {
          const taps = st.hnics.map((t, i) => ({ ...t, vlan: hnics[i]!.vlan }));
          await this.ovs.plug(taps, false, signal);
          st.hnics = taps;
          st.vncport = q.vncport;
          await writeState(this.layout.stateFile(name), st);
          if (q.status === 'prelaunch') await this.release(name, st.qmp, signal);
          this.owned.add(name);
          return { running: true, vncport: q.vncport };
        }
        await killQemu(st, signal);
      }
      await this.cleanup(st, signal);
    }
    return this.boot(name, hnics, signal);
  }

  private async powerOff(name: string, signal: AbortSignal): Promise<void> {
    const st = await this.state(name);
    if (st) {
      await killQemu(st, signal);
      await this.cleanup(st, signal);
    } else {
      // No state: a crash may have come between spawning a QEMU and recording it.
      await killStrays(this.layout.qmpSocket(name), signal);
    }
    this.owned.delete(name);
  }

  /** PID of the headnode's QEMU while it exists (diagnostics, tests), else null. */
  async processId(name: string): Promise<number | null> {
    await this.own(name);
    const st = await this.state(name);
    return st && (await alive(st)) ? st.pid : null;
  }

  // ---- HeadnodeDriver -----------------------------------------------------------------------

  listImages(signal: AbortSignal): Promise<string[]> {
    return this.guard('listing base images', signal, async () => {
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

  create(name: string, baseImage: string, signal: AbortSignal): Promise<void> {
    return this.guard(`creating headnode ${name}`, signal, async () => {
      if (typeof baseImage !== 'string' || !IMAGE_NAME.test(baseImage)) {
        throw new HeadnodeError(`invalid base image name ${JSON.stringify(baseImage)}`);
      }
      const base = path.join(this.imagesDir, `${baseImage}.qcow2`);
      const overlay = this.layout.overlay(name);
      await this.own(name);
      // An existing disk is checked first: its VM may run on although the base file was
      // since removed (QEMU keeps it open), and must not be refused for that.
      if (await exists(overlay)) {
        // -U: the VM may be running and holding the image lock.
        const { stdout } = await run(this.qemuImg, ['info', '-U', '--output=json', overlay], signal);
        const info = JSON.parse(stdout) as { 'backing-filename'?: string; 'full-backing-filename'?: string };
        const backing = info['full-backing-filename'] ?? info['backing-filename'];
        if (backing !== base) {
          throw new HeadnodeError(`headnode ${name} already has a disk, based on ${backing ?? 'nothing'}, not ${base}`);
        }
        return;
      }
      if (!(await exists(base))) throw new HeadnodeError(`no base image ${baseImage} (${base})`);
      await fsp.mkdir(this.stateDir, { recursive: true, mode: 0o700 }); // state files, overlays, logs
      await writeName(this.layout.nameFile(name), name); // before the disk: no disk without its owner's name
      const tmp = `${overlay}.${process.pid}.tmp`;
      try {
        await run(this.qemuImg, ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', base, tmp], signal);
        await fsp.rename(tmp, overlay);
      } finally {
        await rmIfExists(tmp);
      }
    });
  }

  start(name: string, hnics: HnicSpec[], signal: AbortSignal): Promise<HeadnodeStatus> {
    return this.guard(`starting headnode ${name}`, signal, async () => {
      await this.own(name);
      return this.ensureRunning(name, hnics, signal);
    });
  }

  stop(name: string, signal: AbortSignal): Promise<void> {
    return this.guard(`stopping headnode ${name}`, signal, async () => {
      await this.own(name);
      await this.powerOff(name, signal);
    });
  }

  status(name: string, signal: AbortSignal): Promise<HeadnodeStatus> {
    return this.guard(`status of headnode ${name}`, signal, async () => {
      await this.own(name);
      const st = await this.state(name);
      if (!st || !(await alive(st))) return { running: false, vncport: null };
      try {
        const q = await qmpRunning(st.qmp, signal, WEDGED_MS);
        // A live process whose guest is paused, or whose QMP does not answer, is not a usable VM.
        return q.running ? { running: true, vncport: q.vncport } : { running: false, vncport: null };
      } catch {
        signal.throwIfAborted();
        return { running: false, vncport: null };
      }
    });
  }

  isAlive(name: string, signal: AbortSignal): Promise<boolean> {
    return this.guard(`checking headnode ${name}`, signal, async () => (await this.processId(name)) !== null);
  }

  recover(name: string, hnics: HnicSpec[], signal: AbortSignal): Promise<HeadnodeStatus> {
    return this.guard(`recovering headnode ${name}`, signal, async () => {
      await this.own(name);
      return this.ensureRunning(name, hnics, signal);
    });
  }

  destroy(name: string, signal: AbortSignal): Promise<void> {
    return this.guard(`destroying headnode ${name}`, signal, async () => {
      await this.own(name);
      await this.powerOff(name, signal);
      await rmIfExists(this.layout.overlay(name));
      await rmIfExists(this.layout.log(name));
      await rmIfExists(this.layout.qmpSocket(name));
      await rmIfExists(this.layout.nameFile(name)); // last: the files above were checked against it
    });
  }

  async close(signal: AbortSignal): Promise<void> {
    const names = [...this.owned];
    const results = await Promise.allSettled(names.map((n) => this.stop(n, signal)));
    signal.throwIfAborted();
    const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [`${names[i]}: ${errMsg(r.reason)}`] : []));
    if (failed.length) throw new HeadnodeError(`closing headnode driver: ${failed.join('; ')}`);
  }
}
