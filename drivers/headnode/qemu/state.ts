/**
 * The state file of a headnode's VM: what a fresh driver instance (after a restart of the
 * service) needs to find, check, adopt or kill the QEMU an earlier instance started.
 */
import * as fsp from 'node:fs/promises';

import { HeadnodeError } from '../types';

export interface TapState {
  hnic: string;
  vlan: number | null;
  tap: string;
  mac: string;
}

export interface VmState {
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

/** The recorded state, or null when there is none (no VM, or it was cleaned up). */
export async function readState(file: string): Promise<VmState | null> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  try {
    const st = JSON.parse(text) as VmState;
    if (st.version !== 1 || typeof st.pid !== 'number') throw new Error('unknown format');
    return st;
  } catch (e) {
    throw new HeadnodeError(`state file ${file} is corrupt: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Replace the file atomically: a crash leaves the old state or the new one, never half of it. */
export async function writeState(file: string, st: VmState): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await fsp.writeFile(tmp, JSON.stringify(st, null, 2) + '\n', { mode: 0o600 });
  await fsp.rename(tmp, file);
}

/**
 * The name file next to a headnode's disk: the headnode's name, so that files are never taken
 * for another headnode's (null when there is none).
 */
export async function readName(file: string): Promise<string | null> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  try {
    const v = JSON.parse(text) as { version?: unknown; name?: unknown };
    if (v.version !== 1 || typeof v.name !== 'string') throw new Error('unknown format');
    return v.name;
  } catch (e) {
    throw new HeadnodeError(`name file ${file} is corrupt: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Write the name file atomically (see writeState). */
export async function writeName(file: string, name: string): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await fsp.writeFile(tmp, JSON.stringify({ version: 1, name }) + '\n', { mode: 0o600 });
  await fsp.rename(tmp, file);
}
