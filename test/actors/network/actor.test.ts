/**
 * The network actor (actors/network/actor.ts) with its VLAN pool (pool.ts) and the reservations
 * of its users (uses.ts), through the actor world, without HTTP.
 */
import { expect } from 'chai';
import { HiltError } from '../../../actors/errors';
import { World } from '../../../actors/world';
import type { NetworkCreate } from '../../../actors/network/protocol';
import { testWorld, wiredNode, settled, TestWorld } from '../../helpers/world';
import { until } from '../../helpers/wait';

const by = 'admin';
const refusal = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a refusal'); }, (e: HiltError) => e);
const spec = (vlan: number | null, owner = 'admin', access: string[] = []): NetworkCreate => ({ owner, access, vlan });

describe('NetworkActor (VLAN pool, access, reservations; without HTTP)', () => {
  let t: TestWorld;
  let world: World;
  const create = (name: string, s: NetworkCreate) => world.networks.ask(name, { type: 'network.create', by, spec: s });
  const remove = (name: string) => world.networks.ask(name, { type: 'network.delete', by });
  const grant = (name: string, project: string) => world.networks.ask(name, { type: 'network.grant', by, project });
  const revoke = (name: string, project: string) => world.networks.ask(name, { type: 'network.revoke', by, project });
  const connect = (nic: string, network: string) =>
    world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic, network, channel: 'vlan/native' });
  const detach = (nic: string, network: string) => world.nodes.ask('n1', { type: 'node.detachNetwork', by, project: 'p', nic, network });
  const start = (opts: Parameters<typeof testWorld>[0] = {}) => {
    t = testWorld(opts);
    world = t.world;
  };
  afterEach(() => t.close());

  it('takes the lowest free pool id, a chosen pool id once, and an id outside the pool as often as asked', async () => {
    start();
    await wiredNode(world); // w1 = 100, w2 = 101
    await create('a', spec(null));
    expect(world.rm.networks.get('a')).to.include({ vlan: 102, dynamic: true, pooled: true });
    await create('chosen', spec(150));
    expect(world.rm.networks.get('chosen')).to.include({ vlan: 150, dynamic: false, pooled: true });
    const taken = await refusal(create('again', spec(150)));
    expect([taken.type, taken.message]).to.deep.equal(['BlockedError', 'network id 150 is in use by another network']);
    await create('out1', spec(5));
    await create('out2', spec(5));
    expect([world.rm.networks.get('out1')!.pooled, world.rm.networks.get('out2')!.pooled]).to.deep.equal([false, false]);
    expect(world.rm.pooledVlans.has(5)).to.equal(false);
    expect((await refusal(create('a', spec(null)))).type).to.equal('DuplicateError');
    // A deleted network's pool id is free again; the lowest free one is handed out first.
    await remove('chosen');
    await create('again', spec(150));
    await remove('w1');
    await create('b', spec(null));
    expect(world.rm.networks.get('b')!.vlan).to.equal(100);
    expect(world.rm.pooledVlans.get(100)).to.equal('b');
  });

  it('refuses an allocation from an exhausted pool (AllocationError) and records nothing', async () => {
    start({ vlanPool: [[10, 11]] });
    await create('a', spec(null));
    await create('b', spec(null));
    const err = await refusal(create('c', spec(null)));
    expect([err.type, err.message]).to.deep.equal(['AllocationError', 'no free network id is left in the pool']);
    expect(world.rm.networks.has('c')).to.equal(false);
    expect(await world.networks.inspect('c')).to.equal(null);
    await create('c', spec(12)); // outside the pool: still possible
    await remove('a');
    await create('d', spec(null));
    expect(world.rm.networks.get('d')!.vlan).to.equal(10);
  });

  it('releases the pool id of a creation that storage refused', async () => {
    start({ vlanPool: [[10, 11]] });
    const persist = t.engine.persist.bind(t.engine);
    t.engine.persist = async (events) => {
      if (events.some((e) => e.key === 'network:broken')) throw new Error('disk full');
      return persist(events);
    };
    expect((await refusal(create('broken', spec(null)))).type).to.equal('ServiceUnavailableError');
    expect(world.rm.networks.has('broken')).to.equal(false);
    await create('ok', spec(null));
    expect(world.rm.networks.get('ok')!.vlan).to.equal(10);
    await create('ok2', spec(null));
    expect(world.rm.networks.get('ok2')!.vlan).to.equal(11);
  });

  it('hands the last pool id to exactly one of two creations racing for it', async () => {
    start({ vlanPool: [[10, 11]] });
    await create('first', spec(null));
    // Commits held until both decided: the second decides while the first's id is not yet committed.
    const gate = t.hold('network:');
    let refused = 0;
    const race = ['x', 'y'].map((n) => create(n, spec(null)).then(() => null, (e: HiltError) => {
      refused++;
      return e;
    }));
    await until('both creations decided', () => gate.held() + refused === 2);
    gate.release();
    const outcomes = await Promise.all(race);
    expect(outcomes.filter((e) => e === null)).to.have.length(1);
    expect(outcomes.find((e) => e !== null)!.type).to.equal('AllocationError');
    const winner = world.rm.networks.get('x') ?? world.rm.networks.get('y');
    expect(winner!.vlan).to.equal(11);
    expect(world.rm.networks.size).to.equal(2);
  });

  it('cannot be deleted while a connect is being accepted, pending, or attached, nor while a headnode holds it', async () => {
    start();
    await wiredNode(world);
    t.driver.hold();
    const gate = t.hold('nic:');
    const accepted = connect('eth0', 'w1');
    await gate.waiting;
    // Decided but not committed: only the reservation (uses.ts) shows it.
    expect(world.rm.pendingConnectsTo('w1')).to.deep.equal([]);
    expect((await refusal(remove('w1'))).message).to.equal('pending network operations involve network w1');
    gate.release();
    await accepted;
    expect((await refusal(remove('w1'))).message).to.equal('pending network operations involve network w1');
    t.driver.release();
    await settled(world);
    expect((await refusal(remove('w1'))).message, 'naming the nodes (issue 26)').to.equal('network w1 is attached to 1 node (n1)');
    await detach('eth0', 'w1');
    await settled(world);
    await world.projects.ask('p', { type: 'project.createHeadnode', by, headnode: 'h', baseImg: 'img' });
    await world.headnodes.ask('h', { type: 'headnode.createHnic', by, hnic: 'e0' });
    await world.headnodes.ask('h', { type: 'headnode.connectNetwork', by, hnic: 'e0', network: 'w1' });
    expect((await refusal(remove('w1'))).message, 'naming the headnodes').to.equal('network w1 is attached to 1 headnode (h)');
    await world.headnodes.ask('h', { type: 'headnode.detachNetwork', by, hnic: 'e0' });
    await remove('w1');
    expect(world.rm.networks.has('w1')).to.equal(false);
    expect([...world.rm.networksByOwner.get('p')]).to.deep.equal(['w2']);
    expect((await refusal(remove('w1'))).type).to.equal('NotFoundError');
  });

  it('refuses a connect while it commits a change of its own (the lock), and accepts it afterwards', async () => {
    start();
    await wiredNode(world);
    await world.projects.ask('q', { type: 'project.create', by });
    const gate = t.hold('network:w1');
    const granted = grant('w1', 'q');
    await gate.waiting;
    const err = await refusal(connect('eth0', 'w1'));
    expect([err.type, err.message]).to.deep.equal(['IllegalStateError', 'network w1 is being changed; try again']);
    gate.release();
    await granted;
    expect(world.rm.networks.get('w1')!.access).to.deep.equal(['p', 'q']);
    await connect('eth0', 'w1');
    await settled(world);
    expect(world.rm.attachmentsOf('w1')).to.have.length(1);
  });

  it('is granted to one project only while no other project uses it when public; once per project', async () => {
    start();
    await wiredNode(world);
    await world.projects.ask('q', { type: 'project.create', by });
    await create('pub', spec(null));
    await grant('w1', 'q');
    expect((await refusal(grant('w1', 'q'))).type).to.equal('DuplicateError');
    expect((await refusal(grant('nope', 'q'))).type).to.equal('NotFoundError');
    t.driver.hold();
    await connect('eth0', 'pub'); // p connecting: q may not make it private
    expect((await refusal(grant('pub', 'q'))).message).to.equal('nodes or headnodes of other projects use public network pub');
    t.driver.release();
    await settled(world);
    expect((await refusal(grant('pub', 'q'))).type).to.equal('BlockedError'); // p attached
    await grant('pub', 'p'); // p is its only user
    expect(world.rm.networks.get('pub')!.access).to.deep.equal(['p']);
    expect(world.rm.networksByAccess.get('p').has('pub')).to.equal(true);
  });

  it('keeps the owner\'s access, and the access of a project attached or connecting', async () => {
    start();
    await wiredNode(world);
    await world.projects.ask('q', { type: 'project.create', by });
    await create('shared', spec(null, 'admin', ['p', 'q']));
    expect((await refusal(revoke('w1', 'p'))).type).to.equal('BlockedError'); // p owns w1
    expect((await refusal(revoke('shared', 'x'))).type).to.equal('NotFoundError');
    t.driver.hold();
    await connect('eth0', 'shared');
    expect((await refusal(revoke('shared', 'p'))).message).to.equal('a node of project p has a pending connect to network shared');
    t.driver.release();
    await settled(world);
    expect((await refusal(revoke('shared', 'p'))).message).to.equal('a node of project p is attached to network shared');
    await revoke('shared', 'q');
    expect(world.rm.networks.get('shared')!.access).to.deep.equal(['p']);
    await detach('eth0', 'shared');
    await settled(world);
    await revoke('shared', 'p');
    expect(world.rm.networks.get('shared')!.access).to.deep.equal([]);
    expect(world.rm.networksByAccess.get('p').has('shared')).to.equal(false);
  });
});
