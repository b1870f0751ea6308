/**
 * The idle sweep (issue 10): tens of thousands of actors going idle together. Measures the
 * longest event-loop stall while they are put to sleep, in slices (what the runtime does) and
 * in one synchronous loop (what it did before, measured in the same run as the baseline).
 *
 *   npm run bench:sweep        (BENCH_ACTORS, default 60000)
 */
import { sleep } from '../lib/time';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { World } from '../actors/world';
import { openEngine } from '../actors/persistence';

const ACTORS = Number(process.env.BENCH_ACTORS ?? 60_000);

/** Wake ACTORS project actors (an ask each that changes nothing: a delete of a project that does not exist). */
async function wake(world: World): Promise<void> {
  const batch = 2000;
  for (let i = 0; i < ACTORS; i += batch) {
    await Promise.all(Array.from({ length: Math.min(batch, ACTORS - i) }, (_, j) =>
      world.projects.ask(`p${i + j}`, { type: 'project.delete', by: 'bench' }).catch(() => undefined)));
  }
  await new Promise((r) => setImmediate(r));
}

/**
 * The longest event-loop stall (ms) while `work` runs: the largest gap between two turns of a
 * 1 ms ticker, as a client's request waiting for the loop would see it.
 */
async function longestStall(work: () => Promise<void>): Promise<{ stallMs: number; tookMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 1);
  await sleep(20);
  stallMs = 0;
  last = performance.now();
  const t0 = performance.now();
  await work();
  const tookMs = performance.now() - t0;
  await sleep(20);
  clearInterval(ticker);
  return { stallMs, tookMs };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'hilt-bench-sweep-'));
  const engine = openEngine({ storage: 'lmdb', dataDir: dir });
  const world = new World(engine, { vlanPool: [[1000, 1999]], idleMs: 3_600_000 });
  try {
    await wake(world);
    const sliced = await longestStall(() => world.runtime.sweep(Date.now() + 1e9, 0));
    if (world.projects.liveActors().length) throw new Error('the sweep left actors awake');
    await wake(world);
    const ids = world.projects.liveActors().map((a) => a.id);
    const oneLoop = await longestStall(async () => world.projects.sleep(ids));
    console.log(`\nidle sweep: ${ACTORS} actors going to sleep together (longest event-loop stall meanwhile)\n`);
    console.log('sweep                         took ms  longest stall ms  ratio to one loop');
    console.log(`one synchronous loop (before) ${oneLoop.tookMs.toFixed(0).padStart(7)} ${oneLoop.stallMs.toFixed(1).padStart(17)}               1.00`);
    console.log(`slices of 500 (now)           ${sliced.tookMs.toFixed(0).padStart(7)} ${sliced.stallMs.toFixed(1).padStart(17)} ${(sliced.stallMs / oneLoop.stallMs).toFixed(2).padStart(18)}`);
  } finally {
    await world.close();
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
