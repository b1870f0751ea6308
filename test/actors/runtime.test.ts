import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { World } from '../../actors/world';
import { LmdbPersistenceEngine } from '../../actors/persistence/lmdb';
import { MemoryPersistenceEngine } from '../../actors/persistence/memory';
import { PersistenceEngine } from '../../actors/persistence/engine';
import { HiltError } from '../../src/errors';
import { rebuildReadModels } from '../../actors/recovery';

const obm = { type: 'mock', fields: { host: 'h', user: 'u', password: 'p' } };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('NodeActor and the actor runtime', () => {
  let dir: string;
  let engine: PersistenceEngine;
  let world: World;
  const open = (idleMs = 60_000) => {
    engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    world = new World(engine, { vlanPool: [[1000, 1009]], idleMs });
    return world;
  };

  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-rt-')); });
  afterEach(async () => {
    await world.close();
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('replays persisted events on startup (read models and woken actors agree)', async () => {
    open();
    await world.nodes.ask('n1', { type: 'node.register', by: 'admin', obm });
    await world.nodes.ask('n1', { type: 'node.registerNic', by: 'admin', nic: 'eth0', macaddr: 'm' });
    await world.projects.ask('p', { type: 'project.create', by: 'admin' });
    await world.projects.ask('p', { type: 'project.connectNode', by: 'admin', node: 'n1' });
    await world.close();
    await engine.close();

    open();
    await rebuildReadModels(world);
    expect(world.rm.nodes.get('n1')?.project).to.equal('p');
    expect(world.rm.nic('n1', 'eth0')?.macaddr).to.equal('m');
    expect([...world.rm.nodesByProject.get('p')]).to.deep.equal(['n1']);
    // A woken actor recovers the same state: a second assignment is refused.
    const err = await world.projects.ask('p', { type: 'project.connectNode', by: 'admin', node: 'n1' }).catch((e) => e);
    expect(err).to.be.instanceOf(HiltError);
    expect((err as HiltError).type).to.equal('BlockedError');
  });

  it('spawns actors on demand and stops them when idle; they wake again from LMDB', async () => {
    open(100);
    await world.nodes.ask('n1', { type: 'node.register', by: 'admin', obm });
    expect(world.nodes.isLive('n1')).to.equal(true);
    await sleep(400);
    expect(world.nodes.isLive('n1')).to.equal(false);
    await world.nodes.ask('n1', { type: 'node.registerNic', by: 'admin', nic: 'eth1', macaddr: 'x' });
    expect(world.nodes.isLive('n1')).to.equal(true);
    expect(world.rm.nicsOf('n1').map((n) => n.name)).to.deep.equal(['eth1']);
    expect(await engine.head('node:n1')).to.equal(1);
    expect(await engine.head('nic:n1/eth1')).to.equal(1);
  });

  it('serializes concurrent commands of one entity: exactly one of 20 assignments wins', async () => {
    open();
    await world.nodes.ask('n1', { type: 'node.register', by: 'admin', obm });
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => world.nodes.ask('n1', { type: 'node.assign', by: 'admin', project: `p${i}` })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(1);
    expect(world.rm.freeNodes.has('n1')).to.equal(false);
  });

  it('records the acting user and time of every event in the journal', async () => {
    open();
    const before = Date.now();
    await world.users.ask('u', { type: 'user.create', by: 'alice', passwordHash: 'h', isAdmin: false });
    const [entry] = await all(world.users.journal('u', 1));
    const data = entry.data as { type: string; by: string; at: number };
    expect(data.type).to.equal('UserCreated');
    expect(data.by).to.equal('alice');
    expect(data.at).to.be.at.least(before);
  });

  it('answers a storage failure with 503 and leaves the state unchanged', async () => {
    const mem = new MemoryPersistenceEngine();
    engine = mem;
    world = new World(mem, { vlanPool: [[1, 2]] });
    mem.persist = async () => { throw new Error('disk full'); };
    const err = await world.projects.ask('p', { type: 'project.create', by: 'a' }).catch((e) => e);
    expect((err as HiltError).type).to.equal('ServiceUnavailableError');
    expect(world.rm.projects.has('p')).to.equal(false);
  });

  it('answers every waiting ask at once when an entity cannot be read from storage, and reads it again on the next message', async () => {
    const mem = new MemoryPersistenceEngine();
    engine = mem;
    world = new World(mem, { vlanPool: [[1, 2]] });
    await world.projects.ask('p', { type: 'project.create', by: 'a' });
    await new Promise((r) => setImmediate(r)); // its mailbox has finished the turn
    await world.runtime.sweep(Date.now() + 1e9, 0);
    expect(world.projects.isLive('p')).to.equal(false);
    const read = mem.latestSnapshot.bind(mem);
    mem.latestSnapshot = async () => { throw new Error('disk read error'); };
    const t0 = Date.now();
    const answers = await Promise.allSettled([1, 2, 3].map(() => world.projects.ask('p', { type: 'project.create', by: 'a' })));
    expect(Date.now() - t0).to.be.below(1000);
    for (const a of answers) expect(((a as PromiseRejectedResult).reason as HiltError).type).to.equal('ServiceUnavailableError');
    mem.latestSnapshot = read;
    const again = await world.projects.ask('p', { type: 'project.create', by: 'a' }).catch((e) => e);
    expect((again as HiltError).type).to.equal('DuplicateError');
  });

  it('hands out distinct pool ids to concurrent network creations, and 409 when the pool is empty', async () => {
    open();
    const made = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => world.networks.ask(`w${i}`, { type: 'network.create', by: 'a', spec: { owner: 'admin', access: [], vlan: null } })),
    );
    expect(made.filter((r) => r.status === 'fulfilled')).to.have.length(10);
    const ids = [...world.rm.networks.values()].map((n) => n.vlan).sort();
    expect(new Set(ids).size).to.equal(10);
    const refused = made.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((refused.reason as HiltError).type).to.equal('AllocationError');
    await world.networks.ask('w0', { type: 'network.delete', by: 'a' });
    await world.networks.ask('again', { type: 'network.create', by: 'a', spec: { owner: 'admin', access: [], vlan: null } });
    expect(world.rm.networks.get('again')?.vlan).to.equal(1000);
  });
});
