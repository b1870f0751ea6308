import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { engineConformance } from './conformance';
import { MemoryPersistenceEngine } from '../../../actors/persistence/memory';
import { LmdbPersistenceEngine } from '../../../actors/persistence/lmdb';
import { migrateDatabase, PostgresPersistenceEngine } from '../../../actors/persistence/postgres';
import { freshDatabase } from '../../helpers/postgres';

engineConformance('memory', () => new MemoryPersistenceEngine());

const dirs: string[] = [];
const paths = new WeakMap<object, string>();
engineConformance(
  'lmdb',
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'hilt-engine-'));
    dirs.push(dir);
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
);

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
