import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { engineConformance } from './conformance';
import { MemoryPersistenceEngine } from '../../../actors/persistence/memory';
import { LmdbPersistenceEngine } from '../../../actors/persistence/lmdb';
import { migrateDatabase, PostgresPersistenceEngine } from '../../../actors/persistence/postgres';
import { freshDatabase } from '../../helpers/postgres';
import type { PersistedEvent } from '../../../actors/persistence/engine';

engineConformance('memory', () => new MemoryPersistenceEngine());

const dirs: string[] = [];
const paths = new WeakMap<object, string>();
const tempDir = (name = 'hilt-engine-') => {
  const dir = mkdtempSync(join(tmpdir(), name));
  dirs.push(dir);
  return dir;
};
engineConformance(
  'lmdb',
  () => {
    const dir = tempDir();
    const e = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    paths.set(e, dir);
    return e;
  },
  async (old) => {
    const dir = paths.get(old)!;
    await old.close();
    const e = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    paths.set(e, dir);
    return e;
  },
  { freshPath: () => join(tempDir(), 'copy'), openCopy: (path) => new LmdbPersistenceEngine(path, { mapSizeGb: 1 }) },
);

describe('LMDB engine: beyond the contract', () => {
  const ev = (key: string, seq: number, createdAt: number): PersistedEvent => ({ key, sequenceNumber: seq, data: { seq }, tags: [], createdAt });
  const all = async <T>(it: AsyncIterable<T>) => {
    const out: T[] = [];
    for await (const x of it) out.push(x);
    return out;
  };

  it('indexes the history of a store written before the index existed, once, when it is opened', async () => {
    const dir = tempDir();
    let engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    // More than one chunk of the background indexing.
    const events = Array.from({ length: 12_000 }, (_, i) => ev(`node:n${i % 7}`, Math.floor(i / 7) + 1, 10_000 + i));
    await engine.persist(events);
    await engine.close();
    // As an earlier release left it: no time index, no marker.
    const raw = open({ path: dir, maxDbs: 8 });
    await raw.openDB({ name: 'history' }).drop();
    await raw.openDB({ name: 'historyByKind' }).drop();
    await raw.openDB({ name: 'meta' }).drop();
    await raw.close();
    engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    try {
      await engine.persist([ev('node:new', 1, 50_000)]);
      const got = await all(engine.history({}));
      expect(got).to.have.length(12_001);
      expect(got[0].key).to.equal('node:new');
      expect(got[1].createdAt).to.equal(10_000 + 11_999);
      expect(got[got.length - 1].createdAt).to.equal(10_000);
      const recent = await all(engine.history({ prefix: 'node:', since: 10_000 + 11_990 }));
      expect(recent.map((e) => e.createdAt)).to.deep.equal([50_000, 10_000 + 11_999, 10_000 + 11_998, 10_000 + 11_997, 10_000 + 11_996, 10_000 + 11_995, 10_000 + 11_994, 10_000 + 11_993, 10_000 + 11_992, 10_000 + 11_991, 10_000 + 11_990]);
    } finally {
      await engine.close();
    }
  });

  it('tells its size, and opens a data folder whose name has a dot as a folder', async () => {
    const dir = join(tempDir(), 'hilt.data');
    const engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    try {
      await engine.persist([ev('node:a', 1, 1)]);
      const stats = await engine.stats();
      expect(stats.sizeBytes).to.be.greaterThan(0);
      expect(stats.usedBytes).to.be.greaterThan(0).and.at.most(stats.sizeBytes);
    } finally {
      await engine.close();
    }
  });
});

after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

// A real PostgreSQL started by the tests (test/helpers/postgres.ts), a fresh database per test.
const urls = new WeakMap<object, string>();
const openPg = (url: string) => {
  const e = new PostgresPersistenceEngine({ url, poolSize: 2 });
  urls.set(e, url);
  return e;
};
engineConformance(
  'postgres',
  async () => {
    const url = await freshDatabase();
    await migrateDatabase({ url });
    return openPg(url);
  },
  async (old) => {
    await old.close();
    return openPg(urls.get(old)!);
  },
);
