import { expect } from 'chai';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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

/** Make an LMDB folder look as releases before the one commit order (and the time index) left it. */
async function asEarlierRelease(dir: string, keepTimeIndex = false): Promise<void> {
  const raw = open({ path: dir, maxDbs: 16 });
  const events = raw.openDB<{ p?: number }, [string, number]>({ name: 'events' });
  for (const { key, value } of events.getRange()) {
    const { p: _p, ...old } = value;
    events.put(key, old);
  }
  for (const name of ['order', 'orderByKind', ...(keepTimeIndex ? [] : ['history'])]) await raw.openDB({ name }).drop();
  const meta = raw.openDB({ name: 'meta' });
  for (const k of ['ordered', 'legacyEvents', 'legacyOrder', ...(keepTimeIndex ? [] : ['historyIndexed'])]) await meta.remove(k);
  await raw.close();
}

const FIXTURE_V2 = join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'upgrade-v2');

describe('LMDB engine: beyond the contract', () => {
  const ev = (key: string, seq: number, createdAt: number): PersistedEvent => ({ key, sequenceNumber: seq, data: { seq }, tags: [], createdAt });
  /** A backup of a store holding two events (positions 1 and 2). */
  async function backupOfTwo(): Promise<string> {
    const engine = new LmdbPersistenceEngine(tempDir(), { mapSizeGb: 1 });
    const backup = join(tempDir(), 'backup');
    try {
      await engine.persist([ev('a:1', 1, 1), ev('a:2', 1, 2)]);
      await engine.backup(backup);
    } finally {
      await engine.close();
    }
    return backup;
  }
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
    // As an earlier release left it: no time index, no positions, no marker.
    await asEarlierRelease(dir);
    engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    try {
      await engine.persist([ev('node:new', 1, 50_000)]);
      const got = await all(engine.history({}));
      expect(got).to.have.length(12_001);
      expect(got[0].key).to.equal('node:new');
      expect(got[0].position).to.equal(12_001);
      expect(got[1].createdAt).to.equal(10_000 + 11_999);
      expect(got[got.length - 1].createdAt).to.equal(10_000);
      // The older events took positions 1..n in the order of their time, below the new one.
      expect(got.map((e) => e.position)).to.deep.equal(Array.from({ length: 12_001 }, (_, i) => 12_001 - i));
      const recent = await all(engine.history({ prefix: 'node:', since: 10_000 + 11_990 }));
      expect(recent.map((e) => e.createdAt)).to.deep.equal([50_000, 10_000 + 11_999, 10_000 + 11_998, 10_000 + 11_997, 10_000 + 11_996, 10_000 + 11_995, 10_000 + 11_994, 10_000 + 11_993, 10_000 + 11_992, 10_000 + 11_991, 10_000 + 11_990]);
    } finally {
      await engine.close();
    }
  });

  it('orders a data folder written by the release before the one commit order: as its audit log listed it, then new events', async () => {
    // test/fixtures/upgrade-v2: written by that release; history.json is its audit order, oldest first.
    const dir = tempDir();
    execFileSync('tar', ['-xzf', join(FIXTURE_V2, 'data.tar.gz'), '-C', dir]);
    const legacy = JSON.parse(readFileSync(join(FIXTURE_V2, 'history.json'), 'utf8')) as [string, number, number][];
    let engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    try {
      expect((await engine.bounds()).last, 'positions 1..n are taken by the older events').to.equal(legacy.length);
      await engine.persist([ev('node:new', 1, 1)]);
      const fed = await all(engine.feed(0));
      expect(fed.map((e) => [e.key, e.sequenceNumber, e.createdAt])).to.deep.equal([...legacy, ['node:new', 1, 1]]);
      expect(fed.map((e) => e.position)).to.deep.equal(Array.from({ length: legacy.length + 1 }, (_, i) => i + 1));
      expect((await all(engine.history({ prefix: 'node:' })))[0].key).to.equal('node:new');
      engine = await reopenLmdb(engine, dir);
      expect((await all(engine.feed(legacy.length))).map((e) => e.key)).to.deep.equal(['node:new']);
      await engine.persist([ev('node:new', 2, 2)]);
      expect((await engine.bounds()).last).to.equal(legacy.length + 2);
    } finally {
      await engine.close();
    }
  });

  it('goes on ordering an older store where a close interrupted it, and positions written meanwhile stay above', async () => {
    const dir = tempDir();
    let engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    await engine.persist(Array.from({ length: 11_000 }, (_, i) => ev(`k:${i % 3}`, Math.floor(i / 3) + 1, 1_000 + i)));
    await engine.close();
    await asEarlierRelease(dir, true);
    engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    const newer = engine.persist([ev('k:new', 1, 99_999)]);
    // Closed at once: at most a chunk or two ordered.
    await engine.close();
    await newer;
    engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    try {
      await engine.persist([ev('k:new', 2, 100_000)]);
      const fed = await all(engine.feed(0));
      expect(fed).to.have.length(11_002);
      expect(fed.map((e) => e.position)).to.deep.equal(Array.from({ length: 11_002 }, (_, i) => i + 1));
      expect(fed.slice(0, 11_000).map((e) => e.createdAt)).to.deep.equal(Array.from({ length: 11_000 }, (_, i) => 1_000 + i));
      expect(fed.slice(11_000).map((e) => `${e.key} ${e.sequenceNumber}`)).to.deep.equal(['k:new 1', 'k:new 2']);
    } finally {
      await engine.close();
    }
  });

  it('a backup is durable once answered: the folder\'s entry in its parent and the file\'s entry in the folder fsynced', async () => {
    // eslint-disable-next-line @typescript-eslint/no-var-requires
    const fs = require('node:fs') as typeof import('node:fs');
    const { openSync, fsyncSync } = fs;
    const opened = new Map<number, string>();
    const synced: string[] = [];
    const engine = new LmdbPersistenceEngine(tempDir(), { mapSizeGb: 1 });
    const parent = tempDir();
    const backup = join(parent, 'backup');
    try {
      await engine.persist([ev('a:1', 1, 1)]);
      fs.openSync = ((path: string, ...rest: unknown[]) => {
        const fd = (openSync as (...a: unknown[]) => number)(path, ...rest);
        opened.set(fd, String(path));
        return fd;
      }) as typeof fs.openSync;
      fs.fsyncSync = ((fd: number) => {
        synced.push(opened.get(fd) ?? '?');
        return fsyncSync(fd);
      }) as typeof fs.fsyncSync;
      await engine.backup(backup);
    } finally {
      fs.openSync = openSync;
      fs.fsyncSync = fsyncSync;
      await engine.close();
    }
    expect(synced).to.include(parent);
    // data.mdb's own entry: without it a power loss may leave the answered backup an empty folder.
    expect(synced.some((p) => p === backup || p === `${backup}.partial`), synced.join(', ')).to.equal(true);
  });

  it('moves positions on past a gap in a backup, so a stream id of the live store is never one of the restored store\'s', async () => {
    const dir = tempDir();
    const engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    const copyPath = join(tempDir(), 'copy');
    try {
      await engine.persist([ev('a:1', 1, 1), ev('a:2', 1, 2)]);
      await engine.backup(copyPath);
      await engine.persist([ev('a:3', 1, 3)]);
      expect((await engine.bounds())).to.deep.equal({ first: 1, last: 3 });
    } finally {
      await engine.close();
    }
    const restored = new LmdbPersistenceEngine(copyPath, { mapSizeGb: 1 });
    try {
      const b = await restored.bounds();
      expect(b.first).to.be.above(3);
      expect(b.last).to.equal(b.first - 1);
      // The positions no event took: the copy's 3 on (a webhook's backlog does not count them).
      expect(b.gap).to.deep.equal([3, b.first - 1]);
      await restored.persist([ev('b:1', 1, 4)]);
      const fed = await all(restored.feed(0));
      expect(fed.map((e) => [e.key, e.position])).to.deep.equal([['a:1', 1], ['a:2', 2], ['b:1', b.first]]);
      expect((await all(restored.history({}))).map((e) => e.key)).to.deep.equal(['b:1', 'a:2', 'a:1']);
    } finally {
      await restored.close();
    }
  });

  it('restoring the same backup twice never gives an id again: the second restore goes on above every id of the first', async () => {
    const backup = await backupOfTwo();
    // Each restore starts on a copy of the backup, which stays untouched (docs/operations.md).
    const restore = (path: string) => {
      cpSync(backup, path, { recursive: true });
      return new LmdbPersistenceEngine(path, { mapSizeGb: 1 });
    };
    const firstPath = join(tempDir(), 'first');
    const first = restore(firstPath);
    let given: number[];
    try {
      await first.persist([ev('b:1', 1, 3)]);
      await first.persist([ev('b:2', 1, 4), ev('b:3', 1, 5)]);
      given = (await all(first.feed(2))).map((e) => e.position!);
    } finally {
      await first.close();
    }
    // The first restored store reopened is no new restore: its ids go on from its own.
    const reopened = new LmdbPersistenceEngine(firstPath, { mapSizeGb: 1 });
    try {
      await reopened.persist([ev('b:4', 1, 6)]);
      const [e] = await all(reopened.feed(given[2]));
      expect(e.position).to.equal(given[2] + 1);
      given.push(e.position!);
    } finally {
      await reopened.close();
    }
    await new Promise((r) => setTimeout(r, 5));
    const second = restore(join(tempDir(), 'second'));
    try {
      const b = await second.bounds();
      // Every id the first restore gave is before the second's first: a cursor of it is answered 410.
      expect(b.first).to.be.above(Math.max(...given));
      expect(b.gap).to.deep.equal([3, b.first - 1]);
      // Retention removed nothing: `first` is past the gap alone (the checkpoint's start reads it).
      expect(b.removed).to.equal(0);
      await second.persist([ev('c:1', 1, 7)]);
      const fed = await all(second.feed(2));
      expect(fed.map((e) => e.key)).to.deep.equal(['c:1']);
      expect(fed[0].position).to.be.above(Math.max(...given));
    } finally {
      await second.close();
    }
  });

  it('a backup an earlier release made (its floor fixed in the backup) restored twice never gives an id again either', async () => {
    const backup = await backupOfTwo();
    // As releases before restoreFrom wrote a backup: the floor (its last position + 2^32) in it.
    const raw = open({ path: backup, maxDbs: 16 });
    const meta = raw.openDB({ name: 'meta' });
    await meta.put('restoreFloor', (meta.get('restoreFrom') as number) + 2 ** 32);
    await meta.remove('restoreFrom');
    await raw.close();
    const restore = (name: string) => {
      const path = join(tempDir(), name);
      cpSync(backup, path, { recursive: true });
      return path;
    };
    const ids: number[] = [];
    for (const name of ['first', 'second']) {
      const path = restore(name);
      const copy = new LmdbPersistenceEngine(path, { mapSizeGb: 1 });
      try {
        await copy.persist([ev(`${name}:1`, 1, 3)]);
        const [e] = await all(copy.feed(2));
        ids.push(e.position!);
      } finally {
        await copy.close();
      }
      // Reopened, the copy is no new restore: its ids go on from its own.
      const again = new LmdbPersistenceEngine(path, { mapSizeGb: 1 });
      try {
        await again.persist([ev(`${name}:2`, 1, 4)]);
        const fed = await all(again.feed(ids[ids.length - 1]));
        expect(fed.map((e) => e.position)).to.deep.equal([ids[ids.length - 1] + 1]);
        ids.push(fed[0].position!);
      } finally {
        await again.close();
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    // The second copy's ids are above every id of the first.
    expect(ids[2]).to.be.above(ids[1]);
  });

  it('backs up only the pages in use: a value rewrite() replaced is in no backup', async () => {
    const dir = tempDir();
    const engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    // A credential sealed under a key since rotated away, say: replaced in place, its page freed.
    const OLD = 'SEALED-UNDER-THE-OLD-KEY-'.repeat(40);
    try {
      await engine.persist([{ key: 'node:n1', sequenceNumber: 1, tags: [], createdAt: 1, data: { type: 'NodeRegistered', pw: OLD } }]);
      for (let i = 0; i < 50; i++) await engine.persist([ev(`node:x${i}`, 1, 2 + i)]);
      await engine.rewrite({ events: [{ key: 'node:n1', sequenceNumber: 1, data: { type: 'NodeRegistered', pw: 'NEW' } }], snapshots: [] });
      expect(readFileSync(join(dir, 'data.mdb')).includes(Buffer.from(OLD)), 'the live file still holds the freed page').to.equal(true);
      const copy = join(tempDir(), 'copy');
      await engine.backup(copy);
      expect(readFileSync(join(copy, 'data.mdb')).includes(Buffer.from(OLD)), 'the replaced value is in the backup').to.equal(false);
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

async function reopenLmdb(old: LmdbPersistenceEngine, dir: string): Promise<LmdbPersistenceEngine> {
  await old.close();
  return new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
}

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
