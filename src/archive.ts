/**
 * Journal retention's archive (docs/operations.md, Journal retention): the audit entries of the
 * events retention removes, appended before they leave the store, one gzip file of JSON lines
 * per month of the events' time (`2026-11.jsonl.gz`), each line an audit entry as
 * GET /admin/audit shows it (secrets redacted) with its position in the store's commit order.
 *
 * Each append is one gzip member (a gzip file may hold several, read as one), written and
 * fsynced before the caller removes anything. The file's length is kept as a mark in the store,
 * set before each append (the length it starts from) and after it (the length it ends at): an
 * append torn by a crash (the file longer than the mark) is cut off before the next one, also the
 * first one of a month's file. The mark names the machine and folder that wrote it, and the file's
 * last bytes at that length: another process (a standby pair's other machine) cuts only a file
 * whose bytes there are those, its own copy of the shared folder's file, never a file of its own
 * folder. What no mark can cut (a torn first append seen by the other machine of a pair, a mark
 * lost with a restored store) the reader steps over: it goes on at the next member it can read,
 * and says how much it skipped. A crash after the append and before the removal writes those
 * lines again on the next pass (so do the entries of a torn append: they were never removed):
 * readers drop repeats by position.
 */
import { mkdir, open, readFile, stat, truncate } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { crc32, gzip, inflateRawSync } from 'node:zlib';
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

/** The mark that records how long an archive file is, where it was written, and its last bytes at that length. */
interface LengthMark { bytes: number; where: string; tail?: string }

/** Bytes of a file's end a mark keeps (a gzip member's last: its CRC and length, and deflated data). */
const TAIL = 16;

export class ArchiveWriter {
  /** this machine and folder: a mark written for another one's file (a standby pair) does not cut ours */
  private readonly where: string;

  /** `syncDir` fsyncs a folder (tests record the calls). */
  constructor(readonly dir: string, private readonly engine: PersistenceEngine, private readonly syncDir: (dir: string) => Promise<void> = fsyncDir) {
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
    if (fresh) {
      // A folder's entry lives in its parent: each one made here (and the archive folder, which
      // an earlier pass may have made and died before syncing) is fsynced there, before a file
      // in it is written, so a power loss cannot take the folder away with the file.
      const made = await mkdir(this.dir, { recursive: true, mode: 0o700 });
      const top = made === undefined ? resolve(this.dir) : resolve(made);
      const chain = [resolve(this.dir)];
      while (chain[0] !== top && dirname(chain[0]) !== chain[0]) chain.unshift(dirname(chain[0]));
      for (const d of chain) await this.syncDir(dirname(d));
    }
    const mark = (await this.engine.mark(markName)) as LengthMark | undefined;
    let size = size0 ?? 0;
    // A torn or unrecorded append to this file: cut it (what it held is still in the store).
    // Another machine's mark cuts only when this file's bytes at its length are the ones it saw.
    if (mark && size > mark.bytes && (mark.where === this.where || (mark.bytes > 0 && mark.tail !== undefined && (await tailOf(path, mark.bytes)) === mark.tail))) {
      await truncate(path, mark.bytes);
      size = mark.bytes;
    }
    // The length this append starts from, before a byte of it is written: a crash in its middle
    // (the first append of a month too) leaves the file longer than the mark.
    if (!mark || mark.bytes !== size || mark.where !== this.where) {
      await this.engine.setMark(markName, { bytes: size, where: this.where, tail: size ? await tailOf(path, size) : undefined } satisfies LengthMark);
    }
    // Asynchronous file calls (the thread pool): an fsync never holds up a request.
    const fh = await open(path, 'a', 0o600);
    let end: number;
    try {
      await fh.write(member);
      await fh.sync();
      // The file's length now, not the one computed: another process appending to the shared
      // file meanwhile (a deposed one, resumed) put its member before or after this one, and a
      // mark short of the end would have the next append cut into this one, whose events go.
      end = (await fh.stat()).size;
    } finally {
      await fh.close();
    }
    // A new file's entry, also of one an earlier pass made and died before writing (or whose
    // torn first append was cut off above): nothing of it was durable, its entry maybe neither.
    if (fresh || size === 0) await this.syncDir(this.dir);
    const tail = end === size + member.length ? member.subarray(member.length - TAIL).toString('hex') : await tailOf(path, end);
    await this.engine.setMark(markName, { bytes: end, where: this.where, tail } satisfies LengthMark);
  }
}

/** The TAIL bytes of a file before `length` (fewer when it is shorter), in hex. */
async function tailOf(path: string, length: number): Promise<string> {
  const from = Math.max(0, length - TAIL);
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(length - from);
    const { bytesRead } = await fh.read(buf, 0, buf.length, from);
    return buf.subarray(0, bytesRead).toString('hex');
  } finally {
    await fh.close();
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

/** What readArchive gives: the entries, and what it could not read. */
export interface ArchiveRead {
  entries: ArchivedEntry[];
  /** something could not be read (a torn or damaged member): `skipped` says how much */
  torn: boolean;
  /** the bytes and the stretches of them (a torn member each, mostly) stepped over */
  skipped: { bytes: number; members: number };
}

/**
 * The entries of an archive file, in the order they were written, each once (by position). A
 * file of another format (not gzip, or lines that are no entries) is refused (thrown). A
 * member that does not read to its end (a crash while it was written, damage) is stepped over:
 * the reading goes on at the next gzip member header after it, and `skipped` counts what was
 * left out. A torn member's entries were never removed from the store: a later member holds them.
 */
export async function readArchive(file: string): Promise<ArchiveRead> {
  const buf = await readFile(file);
  const seen = new Set<number>();
  const entries: ArchivedEntry[] = [];
  const skipped = { bytes: 0, members: 0 };
  let torn = false;
  let members = 0;
  for (let at = 0; at < buf.length;) {
    const member = memberAt(buf, at);
    if (!member) {
      // The next member header (or the end), and what lay between.
      let next = at + 1;
      while ((next = buf.indexOf(MAGIC, next)) >= 0 && !memberAt(buf, next)) next++;
      if (next < 0) next = buf.length;
      skipped.bytes += next - at;
      skipped.members++;
      torn = true;
      at = next;
      continue;
    }
    const start = at;
    at = member.end;
    members++;
    const lines = member.text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (!lines[i]) continue;
      // A member that reads whole (its CRC checked) holds what was written: a line that is no
      // entry is no damage, the file is of another format.
      const e = entryOf(lines[i]);
      if (!e) throw new Error(`line ${i + 1} of the gzip member at byte ${start} is not an entry of the archive (a JSON audit entry with its position)`);
      if (seen.has(e.position)) continue;
      seen.add(e.position);
      entries.push(e);
    }
  }
  // Nothing read, and not even the start of a gzip member (a torn first append's): another format.
  if (!members && buf.length && !(buf[0] === MAGIC[0] && (buf.length < 2 || buf[1] === MAGIC[1]))) {
    throw new Error('it is not gzip data (an archive file is gzip: YYYY-MM.jsonl.gz)');
  }
  return { entries, torn, skipped };
}

/** A line as an archived entry, or undefined when it is none. */
function entryOf(line: string): ArchivedEntry | undefined {
  let e: unknown;
  try {
    e = JSON.parse(line);
  } catch {
    return undefined;
  }
  const x = e as Partial<ArchivedEntry> | null;
  // Every field a page prints: a line without its event (of another program's JSON) would stop the reader midway.
  return x && typeof x === 'object' && Number.isSafeInteger(x.position) && typeof x.at === 'string' && typeof x.kind === 'string' && typeof x.name === 'string'
    && (x.by === null || typeof x.by === 'string') && (x.call === null || typeof x.call === 'string') && !!x.event && typeof x.event === 'object' && typeof x.event.type === 'string'
    ? (x as ArchivedEntry) : undefined;
}

/** A gzip member's first bytes: its magic and the deflate method. */
const MAGIC = Buffer.from([0x1f, 0x8b, 0x08]);

/** The gzip member that starts at `at`, read whole and checked (its CRC and length), or undefined. */
function memberAt(buf: Buffer, at: number): { text: string; end: number } | undefined {
  if (buf.length - at < 18 || buf.compare(MAGIC, 0, 3, at, at + 3) !== 0) return undefined;
  const flags = buf[at + 3];
  if (flags & 0xe0) return undefined;
  let p = at + 10;
  if (flags & 4) p = p + 2 <= buf.length ? p + 2 + buf.readUInt16LE(p) : buf.length + 1;
  for (const bit of [8, 16]) {
    if (!(flags & bit)) continue;
    const nul = buf.indexOf(0, p);
    p = nul < 0 ? buf.length + 1 : nul + 1;
  }
  if (flags & 2) p += 2;
  if (p > buf.length) return undefined;
  try {
    const { buffer, engine } = inflateRawSync(buf.subarray(p), { info: true }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
    const trailer = p + engine.bytesWritten;
    if (trailer + 8 > buf.length) return undefined;
    if (buf.readUInt32LE(trailer) !== crc32(buffer) || buf.readUInt32LE(trailer + 4) !== (buffer.length >>> 0)) return undefined;
    return { text: buffer.toString('utf8'), end: trailer + 8 };
  } catch {
    // Z_DATA_ERROR, or a member cut short (unexpected end of file).
    return undefined;
  }
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
  const newest = newestFirst(all);
  // The first entry below the cursor, then on until a page and one more match: each page reads
  // from where the last one stopped (--all through a month of a busy site, page after page).
  let lo = 0;
  for (let hi = newest.length; lo < hi;) {
    const mid = (lo + hi) >>> 1;
    if (newest[mid].position >= before) lo = mid + 1;
    else hi = mid;
  }
  const page: ArchivedEntry[] = [];
  let more = false;
  for (let i = lo; i < newest.length; i++) {
    const e = newest[i];
    if ((q.kind !== undefined && e.kind !== q.kind) || (q.name !== undefined && e.name !== q.name) || (q.user !== undefined && e.by !== q.user)
      || (q.since !== undefined && !(Date.parse(e.at) >= q.since)) || (q.until !== undefined && !(Date.parse(e.at) < q.until))) continue;
    if (page.length === q.limit) {
      more = true;
      break;
    }
    page.push(e);
  }
  return { entries: page.map(({ position: _p, ...entry }) => entry), next: more ? encodeCursor(page[page.length - 1].position) : null };
}

/** The entries sorted newest first, once per array read (a reader pages through the same one). */
const sorted = new WeakMap<readonly ArchivedEntry[], readonly ArchivedEntry[]>();
function newestFirst(all: readonly ArchivedEntry[]): readonly ArchivedEntry[] {
  let s = sorted.get(all);
  if (!s) sorted.set(all, (s = [...all].sort((a, b) => b.position - a.position)));
  return s;
}
