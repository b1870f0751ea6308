/**
 * Journal retention's archive (docs/operations.md, Journal retention): the audit entries of the
 * events retention removes, appended before they leave the store, one gzip file of JSON lines
 * per month of the events' time (`2026-11.jsonl.gz`), each line an audit entry as
 * GET /admin/audit shows it (secrets redacted) with its position in the store's commit order.
 *
 * Each append is one gzip member (a gzip file may hold several, read as one), written and
 * fsynced before the caller removes anything. The file's length after each append is kept as a
 * mark in the store: an append torn by a crash (longer than the mark) is cut off before the next
 * one, so the file always reads to its end. A crash after the append and before the removal
 * writes those lines again on the next pass: readers drop repeats by position.
 */
import { createReadStream } from 'node:fs';
import { mkdir, open, stat, truncate } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { createGunzip, gzip } from 'node:zlib';
import { promisify } from 'node:util';
import type { PersistenceEngine } from '../actors/persistence/engine';
import { AuditEntry, AuditPage, decodeCursor, encodeCursor } from './audit';

const gzipAsync = promisify(gzip);

/** One archived event: its audit entry and its place in the store's commit order. */
export interface ArchivedEntry extends AuditEntry {
  position: number;
}

/** The archive file of an instant: its month, in UTC. */
export const archiveFileOf = (at: number): string => `${new Date(at).toISOString().slice(0, 7)}.jsonl.gz`;

/** The mark that records how long an archive file is, and where it was written. */
interface LengthMark { bytes: number; where: string }

export class ArchiveWriter {
  /** this machine and folder: a mark written for another one's file (a standby pair) does not cut ours */
  private readonly where: string;

  constructor(readonly dir: string, private readonly engine: PersistenceEngine) {
    this.where = `${hostname()}:${resolve(dir)}`;
  }

  /** Append entries to their months' files, durably (file and folder fsynced). */
  async append(entries: readonly ArchivedEntry[]): Promise<void> {
    const byFile = new Map<string, string[]>();
    for (const e of entries) {
      const file = archiveFileOf(Date.parse(e.at));
      let lines = byFile.get(file);
      if (!lines) byFile.set(file, (lines = []));
      lines.push(JSON.stringify(e));
    }
    for (const [file, lines] of byFile) await this.appendTo(file, lines);
  }

  private async appendTo(file: string, lines: string[]): Promise<void> {
    const member = await gzipAsync(Buffer.from(lines.join('\n') + '\n', 'utf8'));
    const markName = `archive:${file}`;
    const path = join(this.dir, file);
    const size0 = await stat(path).then((st) => st.size, () => undefined);
    const fresh = size0 === undefined;
    if (fresh) await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const mark = (await this.engine.mark(markName)) as LengthMark | undefined;
    let size = size0 ?? 0;
    // A torn or unrecorded append of ours: cut it (what it held is still in the store).
    if (mark && mark.where === this.where && size > mark.bytes) {
      await truncate(path, mark.bytes);
      size = mark.bytes;
    }
    // Asynchronous file calls (the thread pool): an fsync never holds up a request.
    const fh = await open(path, 'a', 0o600);
    try {
      await fh.write(member);
      await fh.sync();
    } finally {
      await fh.close();
    }
    if (fresh) await fsyncDir(this.dir);
    await this.engine.setMark(markName, { bytes: size + member.length, where: this.where } satisfies LengthMark);
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * The entries of an archive file, in the order they were written, each once (by position). A
 * torn last member (a crash while it was written) ends the reading: `torn` says so.
 */
export async function readArchive(file: string): Promise<{ entries: ArchivedEntry[]; torn: boolean }> {
  const seen = new Set<number>();
  const entries: ArchivedEntry[] = [];
  const gunzip = createGunzip();
  let torn = false;
  const source = createReadStream(file);
  source.on('error', (err) => gunzip.destroy(err));
  const lines = createInterface({ input: source.pipe(gunzip), crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      if (!line) continue;
      let e: ArchivedEntry;
      try {
        e = JSON.parse(line) as ArchivedEntry;
      } catch {
        torn = true;
        continue;
      }
      if (seen.has(e.position)) continue;
      seen.add(e.position);
      entries.push(e);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'Z_BUF_ERROR' && !/unexpected end of file/.test((err as Error).message)) throw err;
    torn = true;
  }
  return { entries, torn };
}

export interface ArchiveQuery {
  kind?: string;
  /** the entity's id, as the audit log's `name` */
  name?: string;
  user?: string;
  /** ms since the epoch, inclusive */
  since?: number;
  /** ms since the epoch, exclusive */
  until?: number;
  limit: number;
  cursor?: string;
}

/** A page of an archive file's entries, newest first, filtered and continued as GET /admin/audit's pages are. */
export function archivePage(all: readonly ArchivedEntry[], q: ArchiveQuery): AuditPage {
  const before = q.cursor !== undefined ? decodeCursor(q.cursor) : Infinity;
  const matching = all.filter((e) => e.position < before && (q.kind === undefined || e.kind === q.kind) && (q.name === undefined || e.name === q.name)
    && (q.user === undefined || e.by === q.user) && (q.since === undefined || Date.parse(e.at) >= q.since) && (q.until === undefined || Date.parse(e.at) < q.until));
  matching.sort((a, b) => b.position - a.position);
  const page = matching.slice(0, q.limit);
  const more = matching.length > q.limit;
  return { entries: page.map(({ position: _p, ...entry }) => entry), next: more ? encodeCursor(page[page.length - 1].position) : null };
}
