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

/**
 * One of the driver's JSON files in the format `check` accepts (it throws what is wrong), or null
 * when there is none; `what` names the file in the error of one that is not.
 */
async function readJson<T>(file: string, what: string, check: (v: T) => boolean): Promise<T | null> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  try {
    const v = JSON.parse(text) as T;
    if (!check(v)) throw new Error('unknown format');
    return v;
  } catch (e) {
    throw new HeadnodeError(`${what} ${file} is corrupt: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Replace a file atomically: a crash leaves the old one or the new one, never half of it. */
async function replaceFile(file: string, text: string): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await fsp.writeFile(tmp, text, { mode: 0o600 });
  await fsp.rename(tmp, file);
}

/** The recorded state, or null when there is none (no VM, or it was cleaned up). */
export const readState = (file: string): Promise<VmState | null> =>
  readJson<VmState>(file, 'state file', (st) => st.version === 1 && typeof st.pid === 'number');

/** Replace the state file atomically. */
export const writeState = (file: string, st: VmState): Promise<void> => replaceFile(file, JSON.stringify(st, null, 2) + '\n');

/**
 * The name file next to a headnode's disk: the headnode's name, so that files are never taken
 * for another headnode's (null when there is none).
 */
export async function readName(file: string): Promise<string | null> {
  const v = await readJson<{ version?: unknown; name?: unknown }>(file, 'name file', (x) => x.version === 1 && typeof x.name === 'string');
  return v ? (v.name as string) : null;
}

/** Write the name file atomically. */
export const writeName = (file: string, name: string): Promise<void> => replaceFile(file, JSON.stringify({ version: 1, name }) + '\n');
