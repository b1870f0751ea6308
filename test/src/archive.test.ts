/**
 * Journal retention's archive (src/archive.ts): appends that survive a crash in the middle (a
 * torn append is cut off before the next one, so the file reads to its end) and a crash between
 * an append and the removal (lines written twice are read once).
 */
import { expect } from 'chai';
import { appendFileSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { MemoryPersistenceEngine } from '../../actors/persistence/memory';
import { ArchiveWriter, ArchivedEntry, archiveFileOf, archivePage, readArchive } from '../../src/archive';

const entry = (position: number, at = '2026-11-02T10:00:00.000Z', name = `n${position}`): ArchivedEntry => ({
  position, at, by: 'admin', kind: 'node', name, sequenceNumber: 1, call: 'node_register', event: { type: 'NodeRegistered' },
});

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
