import { expect } from 'chai';
import { HiltError } from '../../../actors/errors';
import { nicId } from '../../../actors/ids';
import { testWorld, wiredNode, settled, TestWorld } from '../../helpers/world';
import { World } from '../../../actors/world';
import { findStatus, listStatuses } from '../../../actors/nic/history';
import { rebuildReadModels } from '../../../actors/recovery';

const by = 'admin';
const refusal = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a refusal'); }, (e: HiltError) => e);

describe('NicActor (node → nic → port, without HTTP)', () => {
  let t: TestWorld;
  let world: World;
  beforeEach(async () => {
    t = testWorld();
    world = t.world;
    await wiredNode(world);
  });
  afterEach(() => t.close());

  const connect = (nic: string, network: string, channel = 'vlan/native') =>
    world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic, network, channel });

  it('records a connect as PENDING before answering, and the network only once its port applied it', async () => {
    t.driver.hold();
    const ref = await connect('eth0', 'w1');
    const nic = world.rm.nic('n1', 'eth0')!;
    expect(ref).to.deep.equal({ nic: 'eth0', incarnation: nic.incarnation, seq: 1 });
    expect(nic.pending).to.include({ seq: 1, status: 'PENDING', newNetwork: 'w1', switch: 's1', port: 'gi1/0/1' });
    expect(nic.networks).to.deep.equal({});
    expect(world.rm.pendingConnectsTo('w1')).to.have.length(1);
    t.driver.release();
    await settled(world);
    const done = world.rm.nic('n1', 'eth0')!;
    expect(done.networks).to.deep.equal({ 'vlan/native': 'w1' });
    expect(done.actions[0]).to.include({ seq: 1, status: 'DONE' });
    expect(world.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: 100, tagged: [] });
    expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: 100, tagged: [] });
    expect(world.rm.attachmentsOf('w1')).to.deep.equal([{ node: 'n1', nic: 'eth0', channel: 'vlan/native', project: 'p' }]);
  });

  it('holds one pending operation per nic; another nic of the node is not blocked', async () => {
    t.driver.hold();
    await connect('eth0', 'w1');
    const err = await refusal(connect('eth0', 'w2', 'vlan/101'));
    expect(err.type).to.equal('BlockedError');
    expect(err.message).to.match(/already has a pending network operation/);
    const other = await connect('eth1', 'w2', 'vlan/101');
    expect(other.seq).to.equal(2);
    t.driver.release();
    await settled(world);
    expect(world.rm.nic('n1', 'eth1')!.networks).to.deep.equal({ 'vlan/101': 'w2' });
    expect(t.driver.port('s1', 'gi1/0/2')).to.deep.equal({ native: null, tagged: [101] });
  });

  it('refuses in the documented order: not wired 404 → pending 409 → access, attached, channel 409', async () => {
    await world.nodes.ask('n1', { type: 'node.registerNic', by, nic: 'eth9', macaddr: 'm9' });
    expect((await refusal(connect('eth9', 'w1'))).type).to.equal('NotFoundError');
    await world.networks.ask('other', { type: 'network.create', by, spec: { owner: 'admin', access: ['nobody'], vlan: null } });
    expect((await refusal(connect('eth0', 'other'))).message).to.match(/has no access/);
    await connect('eth0', 'w1');
    await settled(world);
    expect((await refusal(connect('eth0', 'w1', 'vlan/100'))).message).to.match(/already attached/);
    expect((await refusal(connect('eth0', 'w2'))).message).to.match(/channel vlan\/native .* already in use/);
    expect((await refusal(connect('eth0', 'w2', 'vlan/7'))).message).to.match(/not legal/);
    expect((await refusal(connect('eth0', 'w2', 'vlan/7'))).type).to.equal('IllegalStateError');
  });

  it('ends ERROR with the switch\'s reason when the port refuses, keeping its networks', async () => {
    t.driver.failing.add('gi1/0/1');
    await connect('eth0', 'w1');
    await settled(world);
    const nic = world.rm.nic('n1', 'eth0')!;
    expect(nic.actions[0].status).to.equal('ERROR');
    expect(nic.actions[0].error).to.match(/port gi1\/0\/1 refused/);
    expect(nic.networks).to.deep.equal({});
    expect(world.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: null, tagged: [] });
  });

  it('detaches and reverts: the networks change at DONE, the port follows', async () => {
    await connect('eth0', 'w1');
    await settled(world);
    await world.nodes.ask('n1', { type: 'node.detachNetwork', by, project: 'p', nic: 'eth0', network: 'w1' });
    await settled(world);
    expect(world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({});
    expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
    await connect('eth0', 'w2', 'vlan/101');
    await settled(world);
    await world.nodes.ask('n1', { type: 'node.revertPort', by, nic: 'eth0' });
    await settled(world);
    expect(world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({});
    expect(world.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: null, tagged: [] });
    expect(t.driver.log.slice(-1)).to.deep.equal(['s1 gi1/0/1 reset']);
  });

  it('force-detach forgets the network in the nic and its VLAN in the port, without a word to the switch', async () => {
    await connect('eth0', 'w1');
    await settled(world);
    const calls = t.driver.log.length;
    await world.nodes.ask('n1', { type: 'node.forceDetach', by, nic: 'eth0', network: 'w1' });
    expect(world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({});
    expect(world.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: null, tagged: [] });
    expect(t.driver.log).to.have.length(calls);
  });

  it('a nic deleted and registered again under its name is a new nic: new registration, no statuses, its port freed', async () => {
    await connect('eth0', 'w1');
    await settled(world);
    await world.nodes.ask('n1', { type: 'node.detachNetwork', by, project: 'p', nic: 'eth0', network: 'w1' });
    await settled(world);
    const before = world.rm.nic('n1', 'eth0')!;
    expect((await refusal(world.nodes.ask('n1', { type: 'node.unwireNic', by, nic: 'eth0', switch: 's1', port: 'gi1/0/1' }))).type)
      .to.equal('BlockedError'); // n1 is in project p
    await world.nodes.ask('n1', { type: 'node.deleteNic', by, nic: 'eth0' });
    expect(world.rm.port('s1', 'gi1/0/1')!.wire).to.equal(null);
    await world.nodes.ask('n1', { type: 'node.registerNic', by, nic: 'eth0', macaddr: 'again' });
    const after = world.rm.nic('n1', 'eth0')!;
    expect(after.incarnation).to.not.equal(before.incarnation);
    expect(after).to.include({ macaddr: 'again', lastSeq: 0, pending: null });
    expect(after.actions).to.deep.equal([]);
  });

  it('comes back from storage with the same state (its actor asleep, or a new world on the same engine)', async () => {
    await connect('eth0', 'w1');
    await settled(world);
    const before = world.rm.nic('n1', 'eth0');
    await world.runtime.sweep(Date.now() + 1e9, 0);
    expect(world.nics.isLive(nicId('n1', 'eth0'))).to.equal(false);
    expect((await world.nics.inspect(nicId('n1', 'eth0')))!.state).to.deep.equal(before);
    await world.close();
    const again = new World(t.engine, { vlanPool: [[100, 199]] });
    await rebuildReadModels(again);
    expect(again.rm.nic('n1', 'eth0')).to.deep.equal(before);
    expect(again.rm.wiring.get('n1', 'eth0')).to.deep.equal({ switch: 's1', port: 'gi1/0/1' });
    await again.close();
  });
});

describe('statuses of a nic with a long history', function () {
  this.timeout(120_000);
  it('lists the newest 1,000 and finds an old one, although the journal is longer than one scan', async () => {
    const t = testWorld();
    const { world } = t;
    try {
      await wiredNode(world);
      let old: { incarnation: string; seq: number } | undefined;
      for (let i = 0; i < 1300; i++) {
        const r = await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
        if (i === 1200) old = r;
        await settled(world);
        await world.nodes.ask('n1', { type: 'node.detachNetwork', by, project: 'p', nic: 'eth0', network: 'w1' });
        await settled(world);
      }
      const journals = { rm: world.rm, nics: world.nics };
      const list = await listStatuses(journals, world.rm.nodes.get('n1')!);
      expect(list).to.have.length(1000);
      expect(list[0].action.seq).to.equal(2600);
      expect(list.every((s) => s.action.status === 'DONE')).to.equal(true);
      const found = await findStatus(journals, 'n1', 'eth0', old!.incarnation, old!.seq);
      expect(found).to.include({ seq: old!.seq, status: 'DONE', newNetwork: 'w1' });
    } finally {
      await t.close();
    }
  });
});

describe('NicActor on a switch that carries a tagged VLAN only beside a native one (nativeFirst: Brocade, OS9)', () => {
  let t: TestWorld;
  let world: World;
  beforeEach(async () => {
    t = testWorld({ nativeFirst: true });
    world = t.world;
    await wiredNode(world);
  });
  afterEach(() => t.close());

  const connect = (network: string, channel = 'vlan/native') =>
    world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network, channel });
  const detach = (network: string) => world.nodes.ask('n1', { type: 'node.detachNetwork', by, project: 'p', nic: 'eth0', network });

  it('refuses a tagged network before a native one with 409 BlockedError, queuing and sending nothing', async () => {
    const err = await refusal(connect('w2', 'vlan/101'));
    expect(err.type).to.equal('BlockedError');
    expect(err.message).to.equal('switch s1 carries a tagged network on a port only beside a native one: attach a native network to nic eth0 first');
    // A member is not told the switch (wiring is for operators).
    expect(err.forMembers).to.equal('the switch of nic eth0 carries a tagged network on a port only beside a native one: attach a native network to nic eth0 first');
    expect(world.rm.nic('n1', 'eth0')!.pending).to.equal(null);
    expect(t.driver.log).to.deep.equal([]);
  });

  it('refuses the native detach while a tagged network remains; in the right order both go through', async () => {
    await connect('w1');
    await settled(world);
    await connect('w2', 'vlan/101');
    await settled(world);
    const err = await refusal(detach('w1'));
    expect(err.type).to.equal('BlockedError');
    expect(err.message).to.match(/detach the tagged networks of nic eth0 before its native one/);
    expect(err.forMembers).to.equal('the switch of nic eth0 carries a tagged network on a port only beside a native one: detach the tagged networks of nic eth0 before its native one');
    expect(world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({ 'vlan/native': 'w1', 'vlan/101': 'w2' });
    await detach('w2');
    await settled(world);
    await detach('w1');
    await settled(world);
    expect(world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({});
    expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
  });

  it('refuses a force-detach of the native network while a tagged one remains: the port would be left tagged-only, untagged in the switch\'s default VLAN', async () => {
    await connect('w1');
    await settled(world);
    await connect('w2', 'vlan/101');
    await settled(world);
    const err = await refusal(world.nodes.ask('n1', { type: 'node.forceDetach', by, nic: 'eth0', network: 'w1' }));
    expect(err.type).to.equal('BlockedError');
    expect(err.message).to.match(/force-detach the tagged networks of nic eth0 before its native one/);
    expect(world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({ 'vlan/native': 'w1', 'vlan/101': 'w2' });
    // The port neither forgot the VLAN nor went in doubt.
    expect(world.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: 100, tagged: [101] });
    expect(world.rm.port('s1', 'gi1/0/1')!.doubt).to.equal(undefined);
    // In the right order both go.
    await world.nodes.ask('n1', { type: 'node.forceDetach', by, nic: 'eth0', network: 'w2' });
    await world.nodes.ask('n1', { type: 'node.forceDetach', by, nic: 'eth0', network: 'w1' });
    expect(world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({});
  });

  it('judges against committed networks only: a tagged connect while the native one is still pending is refused as pending', async () => {
    t.driver.hold();
    await connect('w1');
    const err = await refusal(connect('w2', 'vlan/101'));
    expect(err.type).to.equal('BlockedError');
    expect(err.message).to.match(/already has a pending network operation/);
    t.driver.release();
    await settled(world);
    await connect('w2', 'vlan/101');
    await settled(world);
    expect(world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({ 'vlan/native': 'w1', 'vlan/101': 'w2' });
  });

  it('leaves a switch without the rule alone: a tagged network first is accepted', async () => {
    const plain = testWorld();
    try {
      await wiredNode(plain.world);
      await plain.world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w2', channel: 'vlan/101' });
      await settled(plain.world);
      expect(plain.world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({ 'vlan/101': 'w2' });
    } finally {
      await plain.close();
    }
  });
});
