/**
 * Where a start's time and memory go (issue 27): the LMDB store of a seeded folder read kind by
 * kind as a start reads it (the upgrade, the read model rebuild, the port repair), with the time
 * and process.memoryUsage() after each phase.
 *
 *   node --expose-gc dist/bench/start-profile.js DIR [--checkpoint] [--snapshot FILE]
 *
 * With --checkpoint the read models come from the folder's checkpoint (actors/checkpoint.ts,
 * written by a clean stop) and the events after it, as a start reads them when it can. With
 * --snapshot a heap snapshot is written once the read models are up (bench/heap-summary.ts
 * sums it by kind of object).
 */
import { performance } from 'node:perf_hooks';
import { writeHeapSnapshot } from 'node:v8';
import { LmdbPersistenceEngine } from '../actors/persistence/lmdb';
import { World } from '../actors/world';
import { upgrade, repairPortRecords, rebuildKind } from '../actors/recovery';
import { readModelKinds } from '../actors/readmodel-kinds';
import { loadCheckpoint } from '../actors/checkpoint';
import { readManifest } from './seed';

async function main(): Promise<void> {
  const dir = process.argv[2];
  const at = process.argv.indexOf('--snapshot');
  const snapshot = at > 0 ? process.argv[at + 1] : undefined;
  const done = () => {
    if (snapshot) writeHeapSnapshot(snapshot);
  };
  const m = readManifest(dir);
  const gc = (globalThis as { gc?: () => void }).gc;
  const mem = () => {
    gc?.();
    const u = process.memoryUsage();
    return `rss ${(u.rss / 2 ** 20).toFixed(0)} MiB, heap ${(u.heapUsed / 2 ** 20).toFixed(0)} MiB, external ${(u.external / 2 ** 20).toFixed(0)} MiB`;
  };
  let t = performance.now();
  const lap = (what: string) => {
    const now = performance.now();
    console.log(`${what.padEnd(28)} ${(now - t).toFixed(0).padStart(6)} ms   ${mem()}`);
    t = performance.now();
  };
  lap('process');
  const engine = new LmdbPersistenceEngine(dir);
  const world = new World(engine, { vlanPool: m?.vlanPool ?? [[1000, 1999]] });
  lap('open');
  await upgrade(world);
  lap('upgrade check');
  const rm = world.rm;
  if (process.argv.includes('--checkpoint')) {
    const r = await loadCheckpoint(world);
    lap(`checkpoint (${r.used ? `${r.replayed} events after it` : `not used: ${r.why}`})`);
    if (!r.used) throw new Error(`no usable checkpoint in ${dir}: ${r.why}`);
    await repairPortRecords(world);
    lap('repair ports');
    done();
    await world.close();
    await engine.close();
    return;
  }
  for (const k of readModelKinds(world)) {
    const n = await rebuildKind(k);
    lap(`${k.kind} (${n})`);
  }
  await repairPortRecords(world);
  lap('repair ports');
  done();
  await world.close();
  await engine.close();
}

void main();
