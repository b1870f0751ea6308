/**
 * What the checkpoint tests of both engines share (test/actors/checkpoint.test.ts for LMDB,
 * checkpoint-postgres.test.ts for PostgreSQL): the checkpointer's options, a re-encoding of stored
 * data, the two worlds a start can give, and the randomized property that a start from a
 * checkpoint equals a rebuild from the journal.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { HiltError } from '../../actors/errors';
import { Checkpointer, loadCheckpoint } from '../../actors/checkpoint';
import { rebuildReadModels } from '../../actors/recovery';
import { World } from '../../actors/world';
import type { PersistenceEngine } from '../../actors/persistence/engine';
import type { Reencode } from '../../actors/runtime';
import { RecordingSwitch } from './world';
import { holding, NAMES, opArbOver, perform, populatedWorld, letGo, type Op } from './world-ops';
import { derived, everything, indexes } from './readmodel-view';

/** Chunks of two states: operations commit between the slices of a capture. */
export const OPTS = { everyEvents: 1e9, checkMs: 3_600_000, chunk: 2 };

/** Re-encodes the nodes' stored OBM fields (as a key rotation re-seals credentials): `k` becomes `tag`. */
export const retag = (tag: string): Reencode => {
  const obm = (o: { type: string; fields: Record<string, unknown> }) => ({ ...o, fields: { ...o.fields, k: tag } });
  const map = (d: unknown) => {
    const x = d as { obm?: { type: string; fields: Record<string, unknown> } } | null;
    return x && typeof x === 'object' && x.obm ? { ...x, obm: obm(x.obm) } : d;
  };
  return { event: map, state: map };
};

/** A fresh world on the engine, from the checkpoint; and another rebuilt from the journal. */
export async function both(engine: PersistenceEngine) {
  const fromCheckpoint = new World(engine, { vlanPool: [[100, 103]] });
  const report = await loadCheckpoint(fromCheckpoint);
  const rebuilt = new World(engine, { vlanPool: [[100, 103]] });
  await rebuildReadModels(rebuilt);
  await fromCheckpoint.close();
  await rebuilt.close();
  return { report, fromCheckpoint, rebuilt };
}

/** An engine for one run, and whether a checkpoint is kept in its store right now. */
export interface Store { engine: PersistenceEngine; kept(): Promise<boolean> }

/**
 * Random worlds (deletions, attachments, operations held pending by the switch, re-encodings of
 * stored data), checkpoints written while operations go on: a start from the last one kept and
 * the events after it gives the read model a rebuild gives, and the live world's.
 */
export async function checkpointEqualsRebuild(store: () => Promise<Store>, runs: number, atLeastUsed: number, ops: fc.Arbitrary<Op> = opArbOver(NAMES, { doubts: true })): Promise<void> {
  let used = 0;
  const step = fc.oneof(
    // `background`: not waited for, so that actors commit concurrently.
    { weight: 10, arbitrary: fc.record({ op: ops, background: fc.boolean() }) },
    // `during`: operations started first, not waited for; `after`: ms then, in which they go on.
    { weight: 2, arbitrary: fc.record({ checkpoint: fc.constant(true as const), during: fc.array(ops, { maxLength: 4 }), after: fc.nat(10) }) },
    { weight: 1, arbitrary: fc.constantFrom('n1', 'n2', 'n3').map((n) => ({ rotate: n })) },
  );
  // ms between a commit and its actor's apply, commit by commit (cycled):
  // the read models then lag the store, some actors apply ahead of others committed before them,
  // and a checkpoint is captured in between.
  const lags = fc.array(fc.nat(10), { minLength: 1, maxLength: 16 });
  await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40, size: 'max' }), lags, async (steps, lag) => {
    const { engine, kept } = await store();
    const driver = new RecordingSwitch();
    const world = await populatedWorld(engine, driver);
    const persist = engine.persist.bind(engine);
    let commits = 0;
    engine.persist = async (events) => {
      const ms = lag[commits++ % lag.length];
      await persist(events);
      if (ms) await new Promise((r) => setTimeout(r, ms));
    };
    const cp = (await Checkpointer.start(world, OPTS, Infinity))!;
    /** is the checkpoint stored as of the last write, with no rewrite after it? */
    let current = false;
    const writes: Promise<unknown>[] = [];
    const inflight: Promise<unknown>[] = [];
    const refusal = (err: unknown) => {
      if (!(err instanceof HiltError) || err.type === 'ServerError' || err.type === 'ServiceUnavailableError') throw err;
    };
    try {
      for (const s of steps) {
        if ('checkpoint' in s) {
          for (const op of s.during) inflight.push(perform(world, driver, op).catch(refusal));
          if (s.after) await new Promise((r) => setTimeout(r, s.after));
          // Not waited for: operations go on (and stay pending) while it is captured and written.
          writes.push(cp.write().then((ok) => (current = ok)));
        } else if ('rotate' in s) {
          await Promise.all([...writes.splice(0), ...inflight.splice(0)]);
          if (world.rm.nodes.has(s.rotate)) {
            await world.nodes.rewrite(s.rotate, retag(`${Math.random()}`));
            current = false;
          }
        } else if (s.background) {
          inflight.push(perform(world, driver, s.op).catch(refusal));
        } else {
          await perform(world, driver, s.op).catch(refusal);
        }
      }
      await Promise.all([...writes, ...inflight]);
      // What the operations do after their answer (the switch's changes, their outcomes, each
      // commit's apply late): done before the store and the live world are compared.
      for (let last = -1; ;) {
        const now = (await engine.bounds()).last;
        if (now === last && (holding(driver) || world.rm.pendingByNode.keys().next().done)) break;
        last = now;
        // Longer than any lag between a commit and its apply.
        await new Promise((r) => setTimeout(r, 20));
      }
      engine.persist = persist;
      await cp.close(false);
      const { report, fromCheckpoint, rebuilt } = await both(engine);
      expect(report.used, JSON.stringify(report)).to.equal(current);
      expect(await kept()).to.equal(current);
      if (report.used) {
        used++;
        expect(everything(fromCheckpoint.rm)).to.deep.equal(everything(rebuilt.rm));
        expect(indexes(fromCheckpoint.rm)).to.deep.equal(derived(fromCheckpoint.rm));
      }
      // The live world (operations still pending included) is what both say.
      expect(everything(rebuilt.rm)).to.deep.equal(everything(world.rm));
    } finally {
      letGo(driver);
      await cp.close(false);
      await world.close();
      await engine.close();
    }
  }), { numRuns: runs });
  expect(used, 'runs that loaded a checkpoint').to.be.greaterThan(atLeastUsed);
}

/**
 * Journal retention after a checkpoint: `ghost` lives when it is written, is deleted after it,
 * and its journal removed (prune). A start does not use that checkpoint (its replay would not see
 * the deletion: ghost would come back); the one the checkpointer writes when told (due) is used.
 */
export async function checkpointAfterRetention(engine: PersistenceEngine, world: World, cp: Checkpointer): Promise<void> {
  const register = { type: 'node.register', by: 'admin', obm: { type: 'mock', fields: {} } } as const;
  await world.nodes.ask('ghost', register);
  // The checkpoint's own event (the newest) stays: only what came after it goes.
  await world.nodes.ask('keep', register);
  expect(await cp.write()).to.equal(true);
  await world.nodes.ask('ghost', { type: 'node.delete', by: 'admin' });
  await world.nodes.ask('later', register);
  expect(await engine.prune([{ key: 'node:ghost', upTo: await engine.head('node:ghost') }])).to.include({ keys: 1 });
  const stale = await both(engine);
  expect(stale.report.used, JSON.stringify(stale.report)).to.equal(false);
  expect(stale.report.why).to.match(/journal retention removed events after it/);
  expect(everything(stale.rebuilt.rm)).to.deep.equal(everything(world.rm));
  cp.due();
  expect(await cp.write(), 'written when due').to.equal(true);
  const fresh = await both(engine);
  expect(fresh.report).to.include({ used: true, replayed: 0 });
  expect(fresh.fromCheckpoint.rm.nodes.has('ghost')).to.equal(false);
  expect(everything(fresh.fromCheckpoint.rm)).to.deep.equal(everything(world.rm));
}

/**
 * Journal retention removed the store's newest events (`ghost`'s whole life, its deletion the
 * watermark's event) and nothing committed since: the checkpoint written when due names the newest
 * event left and is used, and so is the one a start then writes. Returns the checkpointer of that start.
 */
export async function checkpointAfterRetentionOfNewest(engine: PersistenceEngine, world: World, cp: Checkpointer, between?: () => Promise<void>): Promise<Checkpointer> {
  const register = { type: 'node.register', by: 'admin', obm: { type: 'mock', fields: {} } } as const;
  await world.nodes.ask('ghost', register);
  await between?.();
  await world.nodes.ask('ghost', { type: 'node.delete', by: 'admin' });
  expect(await engine.prune([{ key: 'node:ghost', upTo: await engine.head('node:ghost') }])).to.include({ keys: 1 });
  cp.due();
  expect(await cp.write(), 'written when due').to.equal(true);
  const fresh = await both(engine);
  expect(fresh.report, JSON.stringify(fresh.report)).to.include({ used: true, replayed: 0 });
  expect(everything(fresh.fromCheckpoint.rm)).to.deep.equal(everything(world.rm));
  await cp.close(false);
  const next = (await Checkpointer.start(world, OPTS, Infinity))!;
  expect(await next.write()).to.equal(true);
  const again = await both(engine);
  expect(again.report, JSON.stringify(again.report)).to.include({ used: true, replayed: 0 });
  expect(everything(again.fromCheckpoint.rm)).to.deep.equal(everything(world.rm));
  return next;
}
