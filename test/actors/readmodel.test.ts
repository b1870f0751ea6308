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
import { nicId } from '../../actors/ids';
import { ReadModel, SetIndex } from '../../actors/readmodel';
import { rebuildReadModels } from '../../actors/recovery';
import { World } from '../../actors/world';
import type { PersistenceEngine } from '../../actors/persistence/engine';
import { MemoryPersistenceEngine } from '../../actors/persistence/memory';
import { LmdbPersistenceEngine } from '../../actors/persistence/lmdb';
import { RecordingSwitch } from '../helpers/world';
import { Op, opArb, perform, populatedWorld, holding, letGo } from '../helpers/world-ops';
import { until } from '../helpers/wait';

const sorted = <T>(xs: Iterable<T>) => [...xs].sort();
const byKey = <V>(entries: Iterable<[string | number, V]>) => Object.fromEntries([...entries].sort(([a], [b]) => String(a).localeCompare(String(b))));

/** The read model's indexes as plain data, as they are. */
function indexes(rm: ReadModel) {
  const set = (ix: SetIndex) => byKey([...ix.keys()].map((k) => [k, sorted(ix.get(k))]));
  const nested = <V>(m: Map<string, Map<string, V>>) => byKey([...m].map(([k, inner]) => [k, byKey(inner)]));
  return {
    freeNodes: sorted(rm.freeNodes), nodesByProject: set(rm.nodesByProject),
    leases: byKey(rm.leases), releasePowerOffs: byKey(rm.releasePowerOffs), maintenanceNotices: byKey(rm.maintenanceNotices),
    nicsByNode: set(rm.nicsByNode), attachmentsByNetwork: nested(rm.attachmentsByNetwork),
    pendingByNetwork: nested(rm.pendingByNetwork), pendingByNode: set(rm.pendingByNode),
    portsBySwitch: set(rm.portsBySwitch), wiring: byKey(rm.wiring),
    networksByAccess: set(rm.networksByAccess), networksByOwner: set(rm.networksByOwner), pooledVlans: byKey(rm.pooledVlans),
    membersByProject: set(rm.membersByProject), headnodesByProject: set(rm.headnodesByProject), hnicsByNetwork: nested(rm.hnicsByNetwork),
  };
}

/** The same indexes worked out from the entities alone: what they must be. */
function derived(rm: ReadModel) {
  const group = (pairs: [string, string][]) => {
    const m = new Map<string, Set<string>>();
    for (const [k, v] of pairs) m.set(k, (m.get(k) ?? new Set()).add(v));
    return byKey([...m].map(([k, s]) => [k, sorted(s)]));
  };
  const nestedOf = <V>(triples: [string, string, V][]) => {
    const m = new Map<string, [string, V][]>();
    for (const [k, inner, v] of triples) m.set(k, [...(m.get(k) ?? []), [inner, v]]);
    return byKey([...m].map(([k, entries]) => [k, byKey(entries)]));
  };
  const nodes = [...rm.nodes.values()];
  const nics = [...rm.nics.values()];
  const projectOf = (node: string) => rm.nodes.get(node)!.project ?? '';
  const field = <K extends 'lease' | 'releasePowerOff' | 'maintenance'>(k: K) => byKey(nodes.filter((n) => n[k]).map((n) => [n.name, n[k]!]));
  return {
    freeNodes: sorted(nodes.filter((n) => !n.project).map((n) => n.name)),
    nodesByProject: group(nodes.filter((n) => n.project).map((n) => [n.project!, n.name])),
    leases: field('lease'), releasePowerOffs: field('releasePowerOff'), maintenanceNotices: field('maintenance'),
    nicsByNode: group(nics.map((n) => [n.node, n.name])),
    attachmentsByNetwork: nestedOf(nics.flatMap((n) => Object.entries(n.networks).map(([channel, network]) =>
      [network, nicId(n.node, n.name), { node: n.node, nic: n.name, channel, project: projectOf(n.node) }] as [string, string, object]))),
    pendingByNetwork: nestedOf(nics.filter((n) => n.pending?.newNetwork).map((n) =>
      [n.pending!.newNetwork!, nicId(n.node, n.name), { node: n.node, nic: n.name, channel: n.pending!.channel, project: projectOf(n.node) }])),
    pendingByNode: group(nics.filter((n) => n.pending).map((n) => [n.node, n.name])),
    portsBySwitch: group([...rm.ports.values()].map((p) => [p.switch, p.name])),
    wiring: byKey([...rm.ports.values()].filter((p) => p.wire).map((p) => [nicId(p.wire!.node, p.wire!.nic), { switch: p.switch, port: p.name }])),
    networksByAccess: group([...rm.networks.values()].flatMap((w) => w.access.map((p) => [p, w.name] as [string, string]))),
    networksByOwner: group([...rm.networks.values()].filter((w) => w.owner !== 'admin').map((w) => [w.owner, w.name])),
    pooledVlans: byKey([...rm.networks.values()].filter((w) => w.pooled).map((w) => [w.vlan, w.name])),
    membersByProject: group([...rm.users.values()].flatMap((u) => u.projects.map((p) => [p, u.name] as [string, string]))),
    headnodesByProject: group([...rm.headnodes.values()].map((h) => [h.project, h.name])),
    hnicsByNetwork: nestedOf([...rm.headnodes.values()].flatMap((h) => h.hnics.filter((x) => x.network).map((x) =>
      [x.network!, nicId(h.name, x.name), h.project] as [string, string, string]))),
  };
}

/** Everything a reader sees: the entities, the indexes, the listing orders, the recent outcomes of the nics that exist. */
function everything(rm: ReadModel) {
  const live = new Set([...rm.nics.values()].flatMap((n) => n.actions.map((a) => `${n.node}/${n.name}#${a.seq}@${a.acceptedAt}`)));
  return {
    entities: Object.fromEntries((['projects', 'nodes', 'nics', 'switches', 'ports', 'networks', 'users', 'headnodes'] as const)
      .map((k) => [k, byKey(rm[k] as Map<string, unknown>)])),
    indexes: indexes(rm),
    nicOrder: byKey([...rm.nodes.keys()].map((n) => [n, rm.nicsOf(n).map((x) => x.name)])),
    portOrder: byKey([...rm.switches.keys()].map((s) => [s, rm.portsOf(s).map((x) => x.name)])),
    recent: sorted(new Set(rm.recentOperations.newest().map((o) => `${o.node}/${o.nic}#${o.seq}@${o.acceptedAt}`).filter((k) => live.has(k)))),
  };
}


/** Nothing pending: every accepted operation reached its port and its outcome is committed. */
const quiet = (world: World) => until('no operation pending', () => world.rm.pendingByNode.keys().next().done === true, 5000, 2);

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
      if (!holding(driver)) await quiet(world);
      const now = indexes(world.rm);
      expect(now, `after ${JSON.stringify(o)}`).to.deep.equal(derived(world.rm));
      if (refused) expect(everything(world.rm), `${JSON.stringify(o)} refused (${refused.message}) yet changed something`).to.deep.equal(before);
      for (const [k, v] of Object.entries(now)) if (Object.keys(v).length) reached.add(k);
    }
    // A fresh world on the same engine, operations still pending included, rebuilt from storage.
    const state = everything(world.rm);
    const again = new World(engine, { vlanPool: [[100, 103]] });
    closing.unshift(() => again.close());
    await rebuildReadModels(again);
    expect(everything(again.rm)).to.deep.equal(state);
    expect(indexes(again.rm)).to.deep.equal(derived(again.rm));
    if (!reopen) return;
    // The engine closed and opened again from disk, once the operations are done.
    letGo(driver);
    await quiet(world);
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
