/**
 * The recorded console output of each node: files in `<data folder>/consoles/` (0700, files
 * 0600; never /var/run, which a reboot empties), bounded per node. A node's log is two files:
 * the current one, and the one before it (`.1`): when the current one reaches the bound it
 * becomes the older one, so a node's log never takes more than twice the bound on disk, and a
 * read always has the last `limit` bytes. A third file (`.recording`) names the recording the log
 * belongs to: a log another process left in the folder (a standby pair's machine that was
 * active before) is never taken for the recording of the node's next holder.
 *
 * Each node's operations (appends, reads, removal) run one after another, so a removal never
 * races an append that would bring a deleted log back. Output is not flushed to disk per write:
 * a console log is a record of what a machine printed, not an acknowledged change. The name of
 * a recording is, once per recording (file and folder fsynced): after a power loss, a log kept
 * at start is never one whose removal was lost while its successor's name survived.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { open, readFile, rename, rm, stat, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncPathAsync, mkdirDurable } from '../lib/durable';

/**
 * A node's file name: its name, escaped so that no name can leave the folder; a digest when too
 * long for a file name. An escaped name never starts with the digest's prefix (its `s` is escaped
 * too, which the escaping never does otherwise): a node named as another's digest file gets its own.
 */
export function logFileName(node: string): string {
  const escaped = encodeURIComponent(node).replace(/[.*!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/^sha256-/, '%73ha256-');
  return `${escaped.length <= 200 ? escaped : `sha256-${createHash('sha256').update(node).digest('hex')}`}.log`;
}

interface Writer {
  handle: FileHandle;
  size: number;
}

export class ConsoleLogs {
  private readonly writers = new Map<string, Writer>();
  /** per node: the end of its chain of operations */
  private readonly chains = new Map<string, Promise<unknown>>();
  /** per node: the recording whose log may still hold another's output (its deletion failed) */
  private readonly unclaimed = new Map<string, string>();

  /** `sync` fsyncs a file or a folder (tests record the calls). */
  constructor(readonly dir: string, readonly limit: number, private readonly sync: (path: string) => Promise<void> = fsyncPathAsync) {
    mkdirDurable(dir, 0o700);
  }

  private path(node: string, older = false): string {
    return join(this.dir, logFileName(node) + (older ? '.1' : ''));
  }

  /** The file naming the recording that the node's log belongs to. */
  private recordingPath(node: string): string {
    return join(this.dir, `${logFileName(node)}.recording`);
  }

  /** Runs `op` after every earlier operation on the node's log. */
  private then<T>(node: string, op: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(node) ?? Promise.resolve();
    const next = prev.then(op, op);
    const tail = next.catch(() => undefined);
    this.chains.set(node, tail);
    void tail.then(() => {
      if (this.chains.get(node) === tail) this.chains.delete(node);
    });
    return next;
  }

  /** Appends output to the node's log (creating it). */
  append(node: string, chunk: Buffer): Promise<void> {
    return this.then(node, async () => {
      await this.claimed(node);
      let w = this.writers.get(node);
      if (!w) {
        const handle = await open(this.path(node), 'a', 0o600);
        w = { handle, size: (await handle.stat()).size };
        this.writers.set(node, w);
      }
      if (w.size > 0 && w.size + chunk.length > this.limit) {
        // The current file is full: it becomes the older one.
        await w.handle.close();
        this.writers.delete(node);
        await rename(this.path(node), this.path(node, true));
        const handle = await open(this.path(node), 'a', 0o600);
        w = { handle, size: 0 };
        this.writers.set(node, w);
      }
      // A chunk larger than the bound keeps only its end.
      const part = chunk.length > this.limit ? chunk.subarray(chunk.length - this.limit) : chunk;
      await w.handle.write(part);
      w.size += part.length;
    });
  }

  /**
   * Creates the node's log, empty, unless it exists (recording has started: GET …/console
   * answers 200), for `recording` (an id of the recording, as `sweep` is given it). A log of
   * another recording still there (its deletion failed) is deleted first: never continued. When
   * that fails too, the node's log is refused (appends and reads reject) until a later append or
   * read manages it: a recording records and shows only a log it has claimed.
   */
  create(node: string, recording: string): Promise<void> {
    const named = this.then(node, async () => {
      this.unclaimed.set(node, recording);
      await this.claim(node, recording);
      this.unclaimed.delete(node);
    });
    return Promise.all([named, this.append(node, Buffer.alloc(0))]).then(() => undefined);
  }

  /** Makes the node's log `recording`'s: another recording's files deleted, its name written, durably. */
  private async claim(node: string, recording: string): Promise<void> {
    const path = this.recordingPath(node);
    const of = await readFile(path, 'utf8').catch(() => undefined);
    if (of !== recording) {
      const w = this.writers.get(node);
      this.writers.delete(node);
      await w?.handle.close().catch(() => undefined);
      await rm(this.path(node), { force: true });
      await rm(this.path(node, true), { force: true });
    }
    await writeFile(path, recording, { mode: 0o600 });
    // Durable before any output is appended: the folder's fsync also makes the removal of the
    // previous recording's files durable (sweep keeps a log by the name this file holds).
    await this.sync(path);
    await this.sync(this.dir);
  }

  /** In the node's chain, before an append or a read: a recording whose claim failed tries it again, and is refused while it fails. */
  private async claimed(node: string): Promise<void> {
    const recording = this.unclaimed.get(node);
    if (recording === undefined) return;
    try {
      await this.claim(node, recording);
    } catch (err) {
      throw new Error(`the log of the node's earlier recording could not be deleted: ${(err as Error).message}`);
    }
    this.unclaimed.delete(node);
  }

  /** The last `limit` bytes of the node's log, cut to start on a whole UTF-8 character; null when there is none. */
  read(node: string): Promise<Buffer | null> {
    return this.then(node, async () => {
      await this.claimed(node);
      const parts: Buffer[] = [];
      let found = false;
      for (const older of [true, false]) {
        const file = this.path(node, older);
        let size: number;
        try {
          size = (await stat(file)).size;
        } catch {
          continue;
        }
        found = true;
        const h = await open(file, 'r');
        try {
          const buf = Buffer.alloc(Math.min(size, this.limit));
          const { bytesRead } = await h.read(buf, 0, buf.length, size - buf.length);
          parts.push(buf.subarray(0, bytesRead));
        } finally {
          await h.close();
        }
      }
      if (!found) return null;
      let all = Buffer.concat(parts);
      if (all.length > this.limit) all = all.subarray(all.length - this.limit);
      let start = 0;
      // UTF-8 continuation bytes (10xxxxxx) at the cut belong to a character cut in two.
      while (start < Math.min(3, all.length) && (all[start]! & 0xc0) === 0x80) start++;
      return all.subarray(start);
    });
  }

  /** Deletes the node's log (both files); nothing when there is none. */
  remove(node: string): Promise<void> {
    return this.then(node, async () => {
      // The recording whose claim failed has ended: nothing is to be claimed for it any more.
      this.unclaimed.delete(node);
      const w = this.writers.get(node);
      this.writers.delete(node);
      await w?.handle.close().catch(() => undefined);
      await rm(this.path(node), { force: true });
      await rm(this.path(node, true), { force: true });
      await rm(this.recordingPath(node), { force: true });
    });
  }

  /**
   * At start: deletes every log but those of the recordings now (`keep`: each recording node, and
   * the id of its recording): a node's recording ended while the service was down or between a
   * commit and the deletion, or the log is of an earlier recording (another process's folder).
   */
  sweep(keep: Map<string, string>): string[] {
    const wanted = new Set<string>();
    for (const [node, recording] of keep) {
      let of: string | undefined;
      try {
        of = readFileSync(this.recordingPath(node), 'utf8');
      } catch {
        // none: the log is of no known recording
      }
      if (of === recording) wanted.add(logFileName(node)).add(`${logFileName(node)}.1`).add(`${logFileName(node)}.recording`);
    }
    const removed: string[] = [];
    for (const f of readdirSync(this.dir)) {
      if (wanted.has(f)) continue;
      rmSync(join(this.dir, f), { force: true, recursive: true });
      removed.push(f);
    }
    return removed;
  }

  /** Closes every open file (the service stops); the logs stay. */
  async close(): Promise<void> {
    await Promise.all([...this.chains.values()]);
    await Promise.all([...this.writers.values()].map((w) => w.handle.close().catch(() => undefined)));
    this.writers.clear();
  }
}
