/**
 * The read model (actors/readmodel.ts): its indexes are derived from the committed entities, so
 * after any sequence of commits each must equal what the entities alone say, and a rebuild from
 * storage (actors/recovery.ts) must give the same entities and indexes as the commits did.
 * Random sequences of operations (fast-check, test/helpers/world-ops.ts) through the actor world,
 * on the memory engine and on LMDB on disk.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HiltError } from '../../actors/errors';
import { splitId } from '../../actors/ids';
import { ReadModel, SetIndex } from '../../actors/readmodel';
import { rebuildReadModels } from '../../actors/recovery';
import { World } from '../../actors/world';
import type { PersistenceEngine } from '../../actors/persistence/engine';
import { MemoryPersistenceEngine } from '../../actors/persistence/memory';
import { LmdbPersistenceEngine } from '../../actors/persistence/lmdb';
import { RecordingSwitch } from '../helpers/world';
import { Op, opArb, perform, populatedWorld, holding, letGo } from '../helpers/world-ops';
import { until } from '../helpers/wait';
import { derived, everything, indexes, sorted } from '../helpers/readmodel-view';

/**
 * Nothing pending: every accepted operation reached its port and its outcome is committed, and
 * every port in doubt (or owing a set-back) that its switch would set back (a force-detach's) has
 * been: only a port whose changes fail stays so, its set-back retried in the background.
 */
const quiet = (world: World, driver: RecordingSwitch) => until('no operation pending, no doubt the switch would clear', () =>
  world.rm.pendingByNode.keys().next().done === true
  && [...world.rm.ports].every(([id, p]) => (!p.doubt && !p.setBackOwed) || driver.failing.has(splitId(id)[1]) || driver.unreadable.has(splitId(id)[1])), 5000, 2);

/** Which indexes some run has seen non-empty: the runs must reach every one of them. */
const reached = new Set<string>();

/**
 * Runs the operations, comparing the indexes with what the entities say after each; then
 * rebuilds a fresh world on the same engine and, given `reopen`, on the engine opened again.
 */
async function check(engine: PersistenceEngine, reopen: (() => PersistenceEngine) | null, ops: Op[]) {
  const driver = new RecordingSwitch();
  const closing: (() => Promise<void>)[] = [() => engine.close()];
  const world = await populatedWorld(engine, driver);
  closing.unshift(() => world.close());
  try {
    for (const o of ops) {
      const before = everything(world.rm);
      const refused = await perform(world, driver, o).then(() => null, (err: unknown) => {
        if (!(err instanceof HiltError) || err.type === 'ServerError' || err.type === 'ServiceUnavailableError') throw err;
        return err;
      });
      if (!holding(driver)) await quiet(world, driver);
      const now = indexes(world.rm);
      expect(now, `after ${JSON.stringify(o)}`).to.deep.equal(derived(world.rm));
      if (refused) expect(everything(world.rm), `${JSON.stringify(o)} refused (${refused.message}) yet changed something`).to.deep.equal(before);
      for (const [k, v] of Object.entries(now)) if (Object.keys(v).length) reached.add(k);
    }
    // A fresh world on the same engine, operations still pending included, rebuilt from storage.
    // A set-back retried in the background (a port held or failing) may commit while the
    // rebuild reads: the comparison counts only a rebuild during which the live state held still.
    for (let tries = 0; ; tries++) {
      const state = everything(world.rm);
      const again = new World(engine, { vlanPool: [[100, 103]] });
      closing.unshift(() => again.close());
      await rebuildReadModels(again);
      const moved = tries < 20 && JSON.stringify(everything(world.rm)) !== JSON.stringify(state);
      if (moved) continue;
      expect(everything(again.rm)).to.deep.equal(state);
      expect(indexes(again.rm)).to.deep.equal(derived(again.rm));
      break;
    }
    if (!reopen) return;
    // The engine closed and opened again from disk, once the operations are done.
    letGo(driver);
    await quiet(world, driver);
    const done = everything(world.rm);
    for (const c of closing.splice(0)) await c();
    const stored = reopen();
    const reopened = new World(stored, { vlanPool: [[100, 103]] });
    closing.push(() => reopened.close(), () => stored.close());
    await rebuildReadModels(reopened);
    expect(everything(reopened.rm)).to.deep.equal(done);
  } finally {
    letGo(driver);
    for (const c of closing) await c();
  }
}

describe('ReadModel (derived indexes; the same after a rebuild from storage)', function () {
  this.timeout(180_000);

  it('keeps every index equal to what the entities say, and a rebuild gives the same (memory engine)', async () => {
    await fc.assert(fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 60, size: 'max' }), async (ops) => {
      await check(new MemoryPersistenceEngine(), null, ops);
    }), { numRuns: 100 });
    expect(sorted(reached)).to.deep.equal(sorted(Object.keys(derived(new ReadModel()))));
  });

  it('the same on LMDB on disk, also after the engine is closed and opened again', async () => {
    const dirs: string[] = [];
    try {
      await fc.assert(fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40, size: 'max' }), async (ops) => {
        const dir = mkdtempSync(join(tmpdir(), 'hilt-rm-'));
        dirs.push(dir);
        const open = () => new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
        await check(open(), open, ops);
      }), { numRuns: 10 });
    } finally {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  });
});
