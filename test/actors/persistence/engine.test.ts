import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { engineConformance } from './conformance';
import { MemoryPersistenceEngine } from '../../../actors/persistence/memory';
import { LmdbPersistenceEngine } from '../../../actors/persistence/lmdb';

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
