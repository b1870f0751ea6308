/**
 * QEMU as a process: its command line, spawning it, finding it in /proc, and killing it.
 *
 * QEMU is a DIRECT child (`detached` process group, never `-daemonize`: PID 1 on these machines
 * does not reap orphans). It is unref'd, so the service may exit and a later instance can adopt
 * the VM through its state file.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';

import { pause } from '../../../lib/time';
import { qmpSession } from './qmp';
import type { TapState, VmState } from './state';

/** NICs per PCI bridge (slots 1..30 of the bridge's 32). */
const NICS_PER_BRIDGE = 30;
/** QEMU answers `quit` at once; one silent this long is wedged and gets SIGKILL straight away. */
const QUIT_ANSWER_MS = 3000;
/**
 * After answering `quit`, QEMU closes its disk (flushing the qcow2 overlay's metadata) and exits;
 * one still there after this gets SIGKILL.
 */
const QUIT_GRACE_MS = 10_000;
/** How often /proc is looked at while waiting for a process to end. */
const POLL_MS = 25;

/** QEMU option values escape ',' by doubling it. */
export function qopt(v: string): string {
  return v.replace(/,/g, ',,');
}

const isDead = (state: string) => state === 'Z' || state === 'X' || state === 'x';

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

/** Start time of a live process (recorded beside its pid), or '' when it is gone. */
export async function processStart(pid: number): Promise<string> {
  return (await procStat(pid))?.start ?? '';
}

/** The recorded QEMU process still exists (not a zombie, same start time, our QMP socket). */
export async function alive(st: VmState): Promise<boolean> {
  const ps = await procStat(st.pid);
  if (!ps || ps.start !== st.procStart) return false;
  const cmdline = await fsp.readFile(`/proc/${st.pid}/cmdline`, 'utf8').catch(() => null);
  if (cmdline === null) return false;
  // A process whose threads are still exiting has no command line left: its start time, checked
  // above, still names it, and it is not gone until every thread is.
  return cmdline === '' || cmdline.includes(st.qmp);
}

/**
 * Wait until the recorded process is gone: true once it is, false when `withinMs` passed first.
 * An aborted signal ends the wait with its reason.
 */
export async function waitDead(st: VmState, signal: AbortSignal, withinMs = Infinity): Promise<boolean> {
  const until = Date.now() + withinMs;
  while (await alive(st)) {
    if (Date.now() >= until) return false;
    await pause(POLL_MS, signal);
  }
  return true;
}

/** Force the process off: QMP quit, then SIGKILL; resolves once it is gone. */
export async function killQemu(st: VmState, signal: AbortSignal): Promise<void> {
  if (!(await alive(st))) return;
  let asked = true;
  try {
    await qmpSession(st.qmp, [{ execute: 'quit' }], signal, { quitting: true, answerMs: QUIT_ANSWER_MS });
  } catch {
    signal.throwIfAborted();
    asked = false; // wedged or already gone: straight to SIGKILL
  }
  if (asked && (await waitDead(st, signal, QUIT_GRACE_MS))) return;
  try {
    process.kill(st.pid, 'SIGKILL');
  } catch {
    /* exited meanwhile */
  }
  await waitDead(st, signal);
}

/** Kill every live QEMU whose command line names this QMP socket (unique per headnode). */
export async function killStrays(qmp: string, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
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
  for (const pid of pids) while (await procStat(pid)) await pause(POLL_MS, signal);
}

export interface QemuVm {
  /** the `-name`, for `ps` */
  label: string;
  accel: 'tcg' | 'kvm';
  memoryMb: number;
  vnc: { from: number; to: number };
  qmp: string;
  overlay: string;
  taps: TapState[];
}

/**
 * QEMU's command line. It starts paused (`-S`): it creates its (non-persistent) taps itself, the
 * driver brings them up and puts them on OVS, then lets the guest run, so a guest never runs
 * before its hnics are on their VLANs, and the taps vanish with QEMU whatever kills it.
 */
export function qemuArgs(vm: QemuVm): string[] {
  const args = [
    '-name', qopt(vm.label),
    '-machine', `accel=${vm.accel}`,
    '-m', String(vm.memoryMb),
    '-S',
    '-no-user-config',
    // seccomp: a guest that breaks out of QEMU gets no exec, no setuid, no scheduler or obsolete
    // syscalls. The driver brings the taps up and puts them on OVS itself (script=no: QEMU runs
    // no helper), so spawn=deny costs nothing.
    '-sandbox', 'on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny',
    '-display', 'none',
    // Without any -netdev (a headnode with no hnics) QEMU would add a NIC with user-mode
    // networking: NAT to the host's loopback services and beyond, outside every VLAN.
    '-nic', 'none',
    // QEMU binds the first free display itself (no race between probing a port and binding it);
    // the real port is read back with QMP query-vnc.
    '-vnc', `127.0.0.1:${vm.vnc.from},to=${vm.vnc.to}`,
    '-chardev', `socket,id=qmp,path=${qopt(vm.qmp)},server=on,wait=off`,
    '-mon', 'chardev=qmp,mode=control',
    '-monitor', 'none',
    '-serial', 'none',
    '-parallel', 'none',
    '-drive', `file=${qopt(vm.overlay)},if=virtio,format=qcow2`,
  ];
  // The root PCI bus has about 28 free slots; the NICs sit on PCI bridges of NICS_PER_BRIDGE
  // each, so a headnode may have any number of hnics (the spec's word).
  for (let b = 0; b * NICS_PER_BRIDGE < vm.taps.length; b++) args.push('-device', `pci-bridge,id=pb${b},chassis_nr=${b + 1}`);
  vm.taps.forEach((t, i) => {
    const bus = `pb${Math.floor(i / NICS_PER_BRIDGE)},addr=0x${((i % NICS_PER_BRIDGE) + 1).toString(16)}`;
    args.push('-netdev', `tap,id=n${i},ifname=${t.tap},script=no,downscript=no`);
    args.push('-device', `virtio-net-pci,netdev=n${i},mac=${t.mac},bus=${bus}`);
  });
  return args;
}

export interface Spawned {
  /** undefined when the spawn failed */
  pid: number | undefined;
  /** why QEMU is gone (exited, or could not be run), or null while it runs */
  exit(): string | null;
}

/** Spawn QEMU with its output in `logFile`. */
export function spawnQemu(qemu: string, args: string[], logFile: string): Spawned {
  const logFd = fs.openSync(logFile, 'w', 0o600);
  let child;
  try {
    // Own process group: a ^C to the service does not power VMs off; recovery adopts them.
    child = spawn(qemu, args, { detached: true, stdio: ['ignore', logFd, logFd] });
  } finally {
    fs.closeSync(logFd);
  }
  let exit: string | null = null;
  child.once('error', (e) => (exit = (e as NodeJS.ErrnoException).code === 'ENOENT' ? `${qemu} not found (is qemu-system-x86 installed?)` : e.message));
  child.once('exit', (code, sig) => (exit = `QEMU exited (${sig ?? `code ${code}`})`));
  child.unref();
  return { pid: child.pid, exit: () => exit };
}

/** The end of QEMU's log, to say why it failed. */
export async function logTail(logFile: string): Promise<string> {
  try {
    const text = await fsp.readFile(logFile, 'utf8');
    return text.trim().slice(-1500);
  } catch {
    return '';
  }
}
