/**
 * Journal retention's archive (src/archive.ts): appends that survive a crash in the middle (a
 * torn append is cut off before the next one, so the file reads to its end: also the first of a
 * month's file, and one of the other process of a standby pair sharing the folder), a reader
 * that steps over what no mark could cut, and a crash between an append and the removal (lines
 * written twice are read once).
 */
import { expect } from 'chai';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { MemoryPersistenceEngine } from '../../actors/persistence/memory';
import { ArchiveWriter, ArchivedEntry, archiveFileOf, archivePage, readArchive } from '../../src/archive';
import { hilt } from '../helpers/cli';

const entry = (position: number, at = '2026-11-02T10:00:00.000Z', name = `n${position}`): ArchivedEntry => ({
  position, at, by: 'admin', kind: 'node', name, sequenceNumber: 1, call: 'node_register', event: { type: 'NodeRegistered' },
});

const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => entry(a + i));
const positions = (a: number, b: number) => range(a, b).map((e) => e.position);
/** Half of the gzip member an append of these entries writes: what a crash in its middle leaves. */
const tornMember = (entries: ArchivedEntry[]) => {
  const m = gzipSync(Buffer.from(entries.map((e) => JSON.stringify(e)).join('\n') + '\n'));
  return m.subarray(0, m.length >> 1);
};

/** A store whose process dies (the call throws) when an append records the length it ended at. */
class DyingEngine extends MemoryPersistenceEngine {
  dies = false;
  override async setMark(name: string, value: unknown): Promise<void> {
    if (this.dies && (value as { bytes: number }).bytes > 0) throw new Error('the process died here');
    return super.setMark(name, value);
  }
}

describe('the archive of journal retention', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'hilt-archive-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('one file per month of the events\' time', async () => {
    const w = new ArchiveWriter(dir, new MemoryPersistenceEngine());
    await w.append([entry(1, '2026-10-31T23:59:59.000Z'), entry(2, '2026-11-01T00:00:00.000Z')]);
    expect(readdirSync(dir).sort()).to.deep.equal(['2026-10.jsonl.gz', '2026-11.jsonl.gz']);
    expect(archiveFileOf(Date.parse('2026-11-30T12:00:00Z'))).to.equal('2026-11.jsonl.gz');
    expect(statSync(join(dir, '2026-11.jsonl.gz')).mode & 0o777).to.equal(0o600);
  });

  it('makes every folder it creates and every new file durable: each one\'s entry fsynced in its parent', async () => {
    const synced: string[] = [];
    const archive = join(dir, 'deep', 'archive');
    const w = new ArchiveWriter(archive, new MemoryPersistenceEngine(), async (d) => {
      synced.push(relative(dir, resolve(d)) || '.');
    });
    // `deep` and `archive` made: their entries in the temporary folder and in `deep`, then the file's in `archive`.
    await w.append([entry(1)]);
    expect(synced).to.deep.equal(['.', 'deep', 'deep/archive']);
    // The same month's file again: no new entry anywhere.
    synced.length = 0;
    await w.append([entry(2)]);
    expect(synced).to.deep.equal([]);
    // A new month's file in the folder there is: the file's entry, and the folder's own again
    // (an earlier pass may have made it and died before its parent was synced).
    await w.append([entry(3, '2026-12-01T00:00:00.000Z')]);
    expect(synced).to.deep.equal(['deep', 'deep/archive']);
    expect(readdirSync(archive).sort()).to.deep.equal(['2026-11.jsonl.gz', '2026-12.jsonl.gz']);
    // A month's file an earlier pass made and died in before its first append was durable (empty,
    // or torn and cut back to nothing): its entry in the folder was never synced either.
    synced.length = 0;
    writeFileSync(join(archive, '2027-01.jsonl.gz'), '');
    await w.append([entry(4, '2027-01-01T00:00:00.000Z')]);
    expect(synced).to.deep.equal(['deep/archive']);
  });

  it('cuts a torn append off before the next one, and reads lines written twice once', async () => {
    const engine = new MemoryPersistenceEngine();
    const w = new ArchiveWriter(dir, engine);
    await w.append([entry(1), entry(2)]);
    const file = join(dir, '2026-11.jsonl.gz');
    // A crash in the middle of an append: half a gzip member at the end.
    const member = gzipSync(Buffer.from(`${JSON.stringify(entry(3))}\n`));
    appendFileSync(file, member.subarray(0, member.length >> 1));
    const torn = await readArchive(file);
    expect(torn.torn).to.equal(true);
    expect(torn.entries.map((e) => e.position)).to.deep.equal([1, 2]);
    // The next append cuts it first; then a crash before the removal: the same lines again.
    await w.append([entry(3)]);
    await w.append([entry(3), entry(4)]);
    const read = await readArchive(file);
    expect(read.torn).to.equal(false);
    expect(read.entries.map((e) => e.position)).to.deep.equal([1, 2, 3, 4]);
  });

  it('cuts a torn first append of a month (the length it started from is recorded before it) before the next one', async () => {
    const engine = new DyingEngine();
    const file = join(dir, '2026-11.jsonl.gz');
    engine.dies = true;
    await new ArchiveWriter(dir, engine).append(range(1, 50)).then(() => expect.fail('appended'), (err: Error) => expect(err.message).to.equal('the process died here'));
    // The write was torn: half of it reached the disk.
    truncateSync(file, statSync(file).size >> 1);
    engine.dies = false;
    // The next start's pass archives the same events again (they are still in the store).
    await new ArchiveWriter(dir, engine).append(range(1, 50));
    const read = await readArchive(file);
    expect(read.skipped, 'nothing left to step over').to.deep.equal({ bytes: 0, members: 0 });
    expect(read.torn).to.equal(false);
    expect(read.entries.map((e) => e.position)).to.deep.equal(positions(1, 50));
  });

  it('cuts a torn append of the other process of a standby pair (the shared folder, another path to it) before the next one', async () => {
    const engine = new MemoryPersistenceEngine(); // the one database of the pair
    const shared = join(dir, 'shared');
    await new ArchiveWriter(shared, engine).append(range(1, 10));
    // The active process dies in the middle of its next append; the other one, on another machine, takes over.
    appendFileSync(join(shared, '2026-11.jsonl.gz'), tornMember(range(11, 60)));
    symlinkSync(shared, join(dir, 'mount-on-b'));
    await new ArchiveWriter(join(dir, 'mount-on-b'), engine).append(range(11, 60));
    const read = await readArchive(join(shared, '2026-11.jsonl.gz'));
    expect(read.skipped).to.deep.equal({ bytes: 0, members: 0 });
    expect(read.entries.map((e) => e.position)).to.deep.equal(positions(1, 60));
  });

  it('never cuts its own append for a member another process appended to the shared file while it wrote (a deposed one, resumed)', async () => {
    const engine = new MemoryPersistenceEngine();
    const shared = join(dir, 'shared');
    const file = join(shared, '2026-11.jsonl.gz');
    // The deposed process appends its whole member (its removal is then refused: the events stay
    // in the store) between this process's look at the file and its own write.
    let other = true;
    const w = new ArchiveWriter(shared, engine, async () => {
      if (other && existsSync(shared)) {
        other = false;
        appendFileSync(file, gzipSync(Buffer.from(range(900, 910).map((e) => JSON.stringify(e)).join('\n') + '\n')));
      }
    });
    await w.append(range(1, 10));
    // This process removed 1..10 from the store; its next append must keep them.
    await w.append(range(11, 20));
    const read = await readArchive(file);
    expect(read.skipped).to.deep.equal({ bytes: 0, members: 0 });
    expect(read.entries.map((e) => e.position)).to.include.members([...positions(1, 20), ...positions(900, 910)]);
  });

  it('never cuts a file of another folder by the other process\'s mark (a pair that does not share the folder)', async () => {
    const engine = new MemoryPersistenceEngine();
    const [a, b] = [join(dir, 'a'), join(dir, 'b')];
    await new ArchiveWriter(b, engine).append(range(100, 300));
    await new ArchiveWriter(a, engine).append(range(1, 10));
    await new ArchiveWriter(b, engine).append(range(11, 20));
    expect((await readArchive(join(b, '2026-11.jsonl.gz'))).entries.map((e) => e.position)).to.deep.equal([...positions(100, 300), ...positions(11, 20)]);
    expect((await readArchive(join(a, '2026-11.jsonl.gz'))).entries.map((e) => e.position)).to.deep.equal(positions(1, 10));
  });

  it('reads on past a torn or damaged member no mark could cut, and says how much it stepped over', async () => {
    // A torn first append nothing recorded (a store restored from before it), then the same entries again.
    mkdirSync(join(dir, 'm'));
    const file = join(dir, 'm', '2026-11.jsonl.gz');
    const torn = tornMember(range(1, 50));
    writeFileSync(file, torn, { mode: 0o600 });
    await new ArchiveWriter(join(dir, 'm'), new MemoryPersistenceEngine()).append(range(1, 50));
    let read = await readArchive(file);
    expect(read.torn).to.equal(true);
    expect(read.skipped).to.deep.equal({ bytes: torn.length, members: 1 });
    expect(read.entries.map((e) => e.position)).to.deep.equal(positions(1, 50));
    // A member damaged in its middle, between two good ones.
    const good = (a: number, b: number) => gzipSync(Buffer.from(range(a, b).map((e) => JSON.stringify(e)).join('\n') + '\n'));
    const bad = Buffer.from(good(11, 20));
    bad.fill(0xa5, 20, bad.length - 20);
    writeFileSync(file, Buffer.concat([good(1, 10), bad, good(21, 30)]));
    read = await readArchive(file);
    expect(read.skipped).to.deep.equal({ bytes: bad.length, members: 1 });
    expect(read.entries.map((e) => e.position)).to.deep.equal([...positions(1, 10), ...positions(21, 30)]);
  });

  it('refuses a file of another format (not gzip, or gzip of lines that are no archive entries) rather than reading it as an empty archive', async () => {
    const plain = join(dir, 'audit.jsonl');
    writeFileSync(plain, range(1, 3).map((e) => JSON.stringify(e)).join('\n') + '\n');
    await readArchive(plain).then(() => expect.fail('read'), (err: Error) => expect(err.message).to.match(/not gzip/));
    const log = join(dir, 'syslog.gz');
    writeFileSync(log, gzipSync(Buffer.from('Nov  2 10:00:00 host sshd[1]: hello\n')));
    await readArchive(log).then(() => expect.fail('read'), (err: Error) => expect(err.message).to.match(/line 1 .*is not an entry/));
    const other = join(dir, 'other.jsonl.gz');
    writeFileSync(other, gzipSync(Buffer.from('{"foo":1}\n')));
    await readArchive(other).then(() => expect.fail('read'), (err: Error) => expect(err.message).to.match(/line 1 .*is not an entry/));
    // JSON with a position, a time and a kind, but no event to print.
    const partial = join(dir, 'partial.jsonl.gz');
    writeFileSync(partial, gzipSync(Buffer.from('{"position":1,"at":"2026-11-01T00:00:00.000Z","kind":"node"}\n')));
    await readArchive(partial).then(() => expect.fail('read'), (err: Error) => expect(err.message).to.match(/line 1 .*is not an entry/));
    // The command line: a clear error and exit 2, nothing on stdout; a missing file the same.
    for (const f of [plain, log, other, partial, join(dir, 'none.jsonl.gz')]) {
      const r = await hilt('http://127.0.0.1:9', ['admin', 'audit', '--archive', f]);
      expect(r.code, f).to.equal(2);
      expect(r.stdout, f).to.equal('');
      expect(r.stderr, f).to.match(/cannot read .* as an archive of journal retention/);
    }
    // An empty file (an append not begun) and a torn first append (one under way) read as an archive with nothing yet.
    const empty = join(dir, 'empty.jsonl.gz');
    writeFileSync(empty, '');
    expect((await readArchive(empty)).entries).to.deep.equal([]);
    const writing = join(dir, 'writing.jsonl.gz');
    writeFileSync(writing, tornMember(range(1, 50)));
    const read = await readArchive(writing);
    expect(read.entries).to.deep.equal([]);
    expect(read.skipped.members).to.equal(1);
    const r = await hilt('http://127.0.0.1:9', ['admin', 'audit', '--archive', writing]);
    expect(r.code).to.equal(0);
    expect(r.stderr).to.match(/an append under way/);
  });

  it('pages through a month of a busy site (--all) in time that grows with its size, not with its square', function () {
    this.timeout(60_000);
    const all = range(1, 200_000);
    const started = performance.now();
    let pages = 0;
    let last = Infinity;
    for (let cursor: string | undefined; ;) {
      const page = archivePage(all, { limit: 100, cursor });
      pages++;
      expect(page.entries[0].name).to.equal(`n${last === Infinity ? 200_000 : last - 1}`);
      last = Number(page.entries[page.entries.length - 1].name.slice(1));
      if (!page.next) break;
      cursor = page.next;
    }
    expect(pages).to.equal(2000);
    expect(last).to.equal(1);
    // Each page sorting and filtering the whole file took over ten seconds here; once, under one.
    expect(performance.now() - started, 'ms').to.be.below(4000);
  });

  it('pages newest first with the audit\'s filters and cursor', () => {
    const all = [entry(1, '2026-11-01T00:00:00.000Z', 'a'), entry(2, '2026-11-02T00:00:00.000Z', 'b'), entry(3, '2026-11-03T00:00:00.000Z', 'a')];
    const first = archivePage(all, { limit: 2 });
    expect(first.entries.map((e) => e.name)).to.deep.equal(['a', 'b']);
    expect(first.entries[0]).not.to.have.property('position');
    expect(archivePage(all, { limit: 2, cursor: first.next! }).entries.map((e) => e.at)).to.deep.equal(['2026-11-01T00:00:00.000Z']);
    expect(archivePage(all, { limit: 10, kind: 'node', name: 'a' }).entries).to.have.length(2);
    expect(archivePage(all, { limit: 10, since: Date.parse('2026-11-02'), until: Date.parse('2026-11-03') }).entries.map((e) => e.name)).to.deep.equal(['b']);
    expect(archivePage(all, { limit: 10, user: 'someone' }).entries).to.deep.equal([]);
  });
});
