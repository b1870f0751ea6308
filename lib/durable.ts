/**
 * Making files and folders survive a power loss: a new file's data is on disk once it is
 * fsynced, and its name (an entry in its folder) once the folder is. A folder made, renamed or
 * removed is an entry in its parent: the parent is fsynced for it.
 * Below everything: every layer may import it, it imports nothing of the project.
 */
import { closeSync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/** fsyncs a file or a folder by its path (a read-only descriptor flushes the file as any). */
export function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** fsyncPath, on the thread pool: it never holds up the event loop. */
export async function fsyncPathAsync(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * mkdir -p `dir` (with `mode`), and each folder it made durable: the parent of each is fsynced,
 * from the first one made up to `dir`'s own parent. Nothing is synced when `dir` was there.
 * Returns whether anything was made. `sync` fsyncs a folder (tests record the calls).
 */
export function mkdirDurable(dir: string, mode: number, sync: (path: string) => void = fsyncPath): boolean {
  const made = mkdirSync(dir, { recursive: true, mode });
  if (made === undefined) return false;
  // The folders made are `first` and those below it down to `dir`: their parents, top first.
  const first = resolve(made);
  const parents: string[] = [];
  for (let d = resolve(dir); ; d = dirname(d)) {
    parents.unshift(dirname(d));
    if (d === first || dirname(d) === d) break;
  }
  for (const p of parents) sync(p);
  return true;
}
