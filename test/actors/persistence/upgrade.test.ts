import { expect } from 'chai';
import { World } from '../../../actors/world';
import { MemoryPersistenceEngine } from '../../../actors/persistence/memory';
import { CURRENT_FORMAT } from '../../../actors/persistence/upgrade';
import type { PersistedEvent } from '../../../actors/persistence/engine';
import { rebuildReadModels, upgrade } from '../../../actors/recovery';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbPersistenceEngine } from '../../../actors/persistence/lmdb';
import { Checkpointer, loadCheckpoint } from '../../../actors/checkpoint';
import { OPTS } from '../../helpers/checkpoint-property';
import { derived, indexes } from '../../helpers/readmodel-view';

const at = 1_700_000_000_000;
const ev = (key: string, seq: number, data: object): PersistedEvent => ({ key, sequenceNumber: seq, data: { by: 'admin', at: at + seq, ...data }, tags: [], createdAt: at + seq });
const action = { seq: 1, nic: 'eth0', type: 'modify_port', channel: 'vlan/native', newNetwork: 'w', vlan: 100, switch: 's', port: 'gi1/0/1', status: 'PENDING', acceptedAt: at };

/** What the first data format wrote for: network w (VLAN 100); node n1 with nic eth0 attached to w; switch s with port gi1/0/1 wired to it. */
async function firstFormat(engine: MemoryPersistenceEngine): Promise<void> {
  await engine.persist([
    ev('network:w', 1, { type: 'NetworkCreated', owner: 'admin', access: [], vlan: 100, dynamic: true }),
    ev('node:n1', 1, { type: 'NodeRegistered', obm: { type: 'mock', host: 'h', user: 'u', password: 'p' }, incarnation: 'i1' }),
    ev('node:n1', 2, { type: 'NicRegistered', nic: 'eth0', macaddr: 'mac' }),
    ev('node:n1', 3, { type: 'NetworkActionQueued', action }),
    ev('node:n1', 4, { type: 'NetworkActionDone', seq: 1 }),
    ev('switch:s', 1, { type: 'SwitchRegistered', switchType: 'mock', fields: { hostname: 'h' } }),
    ev('switch:s', 2, { type: 'PortRegistered', port: 'gi1/0/1' }),
    ev('switch:s', 3, { type: 'PortWired', port: 'gi1/0/1', node: 'n1', nic: 'eth0' }),
  ]);
}

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('upgrade of stored data to the current format', () => {
  it('moves nics and ports into actors of their own, keeping time, user and statuses; once', async () => {
    const engine = new MemoryPersistenceEngine();
    await firstFormat(engine);
    const world = new World(engine, { vlanPool: [[100, 199]] });
    const summary = await upgrade(world);
    expect(summary).to.include({ from: 1, to: CURRENT_FORMAT, nodes: 1, nics: 1, switches: 1, ports: 1 });
    expect(await upgrade(world)).to.equal(null);
    await rebuildReadModels(world);
    const nic = world.rm.nic('n1', 'eth0')!;
    expect(nic).to.include({ macaddr: 'mac', nodeIncarnation: 'i1', lastSeq: 1, pending: null });
    expect(nic.networks).to.deep.equal({ 'vlan/native': 'w' });
    expect(nic.actions[0]).to.include({ seq: 1, status: 'DONE', firstFormat: true, finishedAt: at + 4 });
    expect(world.rm.nodes.get('n1')).to.deep.equal({ name: 'n1', incarnation: 'i1', project: null, obm: { type: 'mock', fields: { host: 'h', user: 'u', password: 'p' } } });
    expect(world.rm.switches.get('s')).to.deep.equal({ name: 's', type: 'mock', fields: { hostname: 'h' } });
    expect(world.rm.port('s', 'gi1/0/1')).to.deep.equal({ switch: 's', name: 'gi1/0/1', registeredAt: at + 2, wire: { node: 'n1', nic: 'eth0' }, config: { native: 100, tagged: [] } });
    const journal = (await all(world.nics.journal('n1/eth0', 10))).map((e) => e.data as { type: string; by: string; at: number });
    expect(journal.map((e) => e.type)).to.deep.equal(['NetworkActionDone', 'NetworkActionQueued', 'NicRegistered']);
    expect(journal.map((e) => e.at)).to.deep.equal([at + 4, at + 3, at + 2]);
    await world.close();
  });

  it('goes on where it stopped when it was interrupted, copying nothing twice', async () => {
    const engine = new MemoryPersistenceEngine();
    await firstFormat(engine);
    const world = new World(engine, { vlanPool: [[100, 199]] });
    const persist = engine.persist.bind(engine);
    engine.persist = async (events) => {
      if (events.some((e) => e.key.startsWith('switch:'))) throw new Error('power lost');
      return persist(events);
    };
    const err = await upgrade(world).catch((e: Error) => e);
    expect((err as Error).message).to.equal('power lost');
    expect(await engine.head('nic:n1/eth0')).to.equal(3); // the node was done, in one write
    expect(await engine.head('port:s/gi1%2F0%2F1')).to.equal(0);
    engine.persist = persist;
    expect(await upgrade(world)).to.include({ nodes: 0, switches: 1, ports: 1 });
    expect(await engine.head('nic:n1/eth0')).to.equal(3);
    expect(await engine.head('port:s/gi1%2F0%2F1')).to.equal(3);
    await world.close();
  });

  it('records the format in a new, empty store without reporting an upgrade', async () => {
    const engine = new MemoryPersistenceEngine();
    const world = new World(engine, { vlanPool: [[100, 199]] });
    expect(await upgrade(world)).to.equal(null);
    expect(await engine.head('meta:format')).to.equal(1);
    expect(await upgrade(world)).to.equal(null);
    expect(await engine.head('meta:format')).to.equal(1);
    await world.close();
  });
});

describe('a nic the first format wired to two ports (the current code refuses a second wire)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'hilt-two-wires-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('unwiring and deleting either port leaves the nic wired to the others, live and from a checkpoint', async () => {
    const engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    // As the first format wrote it: nic eth0 of n1 on three ports of switch s.
    const ports = ['gi1/0/1', 'gi1/0/2', 'gi1/0/3'];
    await engine.persist([
      ev('node:n1', 1, { type: 'NodeRegistered', obm: { type: 'mock', host: 'h', user: 'u', password: 'p' }, incarnation: 'i1' }),
      ev('node:n1', 2, { type: 'NicRegistered', nic: 'eth0', macaddr: 'mac' }),
      ev('switch:s', 1, { type: 'SwitchRegistered', switchType: 'mock', fields: { hostname: 'h' } }),
      ...ports.map((port, i) => ev('switch:s', 2 + i, { type: 'PortRegistered', port })),
      ...ports.map((port, i) => ev('switch:s', 5 + i, { type: 'PortWired', port, node: 'n1', nic: 'eth0' })),
    ]);
    const world = new World(engine, { vlanPool: [[100, 199]] });
    await upgrade(world);
    await rebuildReadModels(world);
    const rm = world.rm;
    expect(rm.wiredPorts).to.equal(3);
    const cp = (await Checkpointer.start(world, OPTS, Infinity))!;
    expect(await cp.write()).to.equal(true);
    const by = 'admin';
    const remove = async (port: string) => {
      await world.nodes.ask('n1', { type: 'node.unwireNic', by, nic: 'eth0', switch: 's', port });
      await world.switches.ask('s', { type: 'switch.deletePort', by, port });
    };
    const indexed = () => rm.wiring.port('n1', 'eth0')?.name;
    // The port the index holds goes: another port still wired to the nic takes its place.
    const first = indexed()!;
    await remove(first);
    const left = ports.filter((p) => p !== first);
    expect(left, 'the nic is still wired').to.include(indexed());
    expect(rm.wiredPorts).to.equal(2);
    // A port the index does not hold goes: the index keeps the one it holds.
    const last = indexed()!;
    await remove(left.find((p) => p !== last)!);
    expect(indexed()).to.equal(last);
    expect(rm.wiredPorts).to.equal(rm.wiring.size);
    expect(indexes(rm), 'the read model as its entities say').to.deep.equal(derived(rm));

    // The checkpoint of three wires and the removals replayed after it; then one written after them.
    const check = async () => {
      const started = new World(engine, { vlanPool: [[100, 199]] });
      expect(await loadCheckpoint(started)).to.include({ used: true });
      expect(started.rm.wiring.port('n1', 'eth0')?.name).to.equal(last);
      expect(indexes(started.rm)).to.deep.equal(derived(started.rm));
      await started.close();
    };
    await check();
    expect(await cp.write()).to.equal(true);
    await check();

    // The nic's deletion frees the port it is still wired to.
    await world.nodes.ask('n1', { type: 'node.deleteNic', by, nic: 'eth0' });
    expect(rm.port('s', last)!.wire).to.equal(null);
    expect(rm.wiredPorts).to.equal(0);
    await cp.close(false);
    await world.close();
    await engine.close();
  });
});
