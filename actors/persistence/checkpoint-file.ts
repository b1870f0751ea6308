/**
 * The read model's checkpoint as a file beside an embedded store (CheckpointSlot of engine.ts):
 * written to a temporary file, flushed, then renamed over the old one and the folder flushed,
 * so a crash leaves the old checkpoint or the new one, never a part of either. The rename is
 * made in the same turn as the check that nothing dropped the slot meanwhile.
 */
import { closeSync, fstatSync, fsyncSync, openSync, readSync, renameSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { CheckpointSlot, CheckpointSource } from './engine';

export const CHECKPOINT_FILE = 'readmodel.checkpoint';

export class FileCheckpointSlot implements CheckpointSlot {
  epoch = 0;
  private readonly file: string;
  /** a file may be there (unknown at open): a drop when none is costs no flush (a key rotation drops once per object) */
  private present = true;

  constructor(private readonly dir: string) {
    this.file = join(dir, CHECKPOINT_FILE);
  }

  /** The file as it is now: a write renames a new one over it, so what is open stays whole. */
  async read(): Promise<CheckpointSource | undefined> {
    let fd: number;
    try {
      fd = openSync(this.file, 'r');
    } catch {
      return undefined;
    }
    return {
      size: fstatSync(fd).size,
      readAt: (into, position) => {
        let n = 0;
        while (n < into.length) {
          const got = readSync(fd, into, n, into.length - n, position + n);
          if (!got) break;
          n += got;
        }
        return n;
      },
      close: () => closeSync(fd),
    };
  }

  async write(chunks: AsyncIterable<Uint8Array>, epoch: number): Promise<boolean> {
    const tmp = `${this.file}.tmp`;
    const fh = await open(tmp, 'w', 0o600);
    let kept = false;
    try {
      for await (const c of chunks) {
        if (this.epoch !== epoch) return false;
        await fh.write(c);
      }
      await fh.sync();
      await fh.close();
      if (this.epoch !== epoch) return false;
      // Checked and renamed in one turn: a drop() cannot come between.
      renameSync(tmp, this.file);
      kept = true;
      this.present = true;
      // The rename made durable without blocking the event loop.
      const dir = await open(this.dir, 'r');
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
      return true;
    } finally {
      await fh.close().catch(() => undefined);
      if (!kept) rmSync(tmp, { force: true });
    }
  }

  drop(): void {
    this.epoch++;
    if (!this.present) return;
    rmSync(this.file, { force: true });
    this.syncDir();
    this.present = false;
  }

  /** A rename or removal is durable once the folder is flushed. */
  private syncDir(): void {
    const fd = openSync(this.dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
}
