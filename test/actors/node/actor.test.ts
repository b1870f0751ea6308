import { expect } from 'chai';
import { HiltError } from '../../../actors/errors';
import { World } from '../../../actors/world';
import { testWorld, wiredNode, settled, TestWorld } from '../../helpers/world';

const by = 'admin';
const refusal = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a refusal'); }, (e: HiltError) => e);

describe('NodeActor (project → node → nic, without HTTP)', () => {
  let t: TestWorld;
  let world: World;
  beforeEach(async () => {
    t = testWorld();
    world = t.world;
    await wiredNode(world);
  });
  afterEach(() => t.close());

  it('leaves its project only with no network attached and nothing pending on any nic', async () => {
    t.driver.hold();
    await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth1', network: 'w1', channel: 'vlan/native' });
    expect((await refusal(world.projects.ask('p', { type: 'project.detachNode', by, node: 'n1' }))).message).to.match(/pending network operations \(nics eth1\)/);
    t.driver.release();
    await settled(world);
    expect((await refusal(world.projects.ask('p', { type: 'project.detachNode', by, node: 'n1' }))).message).to.match(/node n1 is attached to network w1$/);
    await world.nodes.ask('n1', { type: 'node.detachNetwork', by, project: 'p', nic: 'eth1', network: 'w1' });
    await settled(world);
    await world.projects.ask('p', { type: 'project.detachNode', by, node: 'n1' });
    expect(world.rm.nodes.get('n1')!.project).to.equal(null);
    expect(world.rm.freeNodes.has('n1')).to.equal(true);
  });

  it('numbers its operations in acceptance order, above every operation its nics hold', async () => {
    const seqs: number[] = [];
    for (const nic of ['eth0', 'eth1']) {
      seqs.push((await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic, network: nic === 'eth0' ? 'w1' : 'w2', channel: 'vlan/native' })).seq);
    }
    await settled(world);
    seqs.push((await world.nodes.ask('n1', { type: 'node.revertPort', by, nic: 'eth0' })).seq);
    expect(seqs).to.deep.equal([1, 2, 3]);
  });

  it('refuses a caller authorized through a project the node has left (401), and any operation on a free node (409)', async () => {
    await world.projects.ask('p', { type: 'project.detachNode', by, node: 'n1' });
    expect((await refusal(world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: null, nic: 'eth0', network: 'w1', channel: 'vlan/native' }))).type)
      .to.equal('ProjectMismatchError');
    await world.projects.ask('q', { type: 'project.create', by });
    await world.projects.ask('q', { type: 'project.connectNode', by, node: 'n1' });
    expect((await refusal(world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' }))).type)
      .to.equal('AuthorizationError');
  });

  it('cannot be deleted while it has nics or a project; deleting a wired nic frees its port', async () => {
    expect((await refusal(world.nodes.ask('n1', { type: 'node.delete', by }))).type).to.equal('BlockedError');
    await world.projects.ask('p', { type: 'project.detachNode', by, node: 'n1' });
    expect((await refusal(world.nodes.ask('n1', { type: 'node.delete', by }))).message).to.match(/^node n1 still has 2 nics \(eth0, eth1\)$/);
    for (const nic of ['eth0', 'eth1']) await world.nodes.ask('n1', { type: 'node.deleteNic', by, nic });
    expect(world.rm.port('s1', 'gi1/0/1')!.wire).to.equal(null);
    await world.nodes.ask('n1', { type: 'node.delete', by });
    expect(world.rm.nodes.has('n1')).to.equal(false);
    expect((await refusal(world.nodes.ask('n1', { type: 'node.registerNic', by, nic: 'x', macaddr: 'm' }))).type).to.equal('NotFoundError');
  });

  it('serializes the wiring of its nics: a nic wired once, unwired only when the node is free', async () => {
    expect((await refusal(world.nodes.ask('n1', { type: 'node.wireNic', by, nic: 'eth0', switch: 's1', port: 'gi1/0/2' }))).type).to.equal('DuplicateError');
    await world.projects.ask('p', { type: 'project.detachNode', by, node: 'n1' });
    await world.nodes.ask('n1', { type: 'node.unwireNic', by, nic: 'eth0', switch: 's1', port: 'gi1/0/1' });
    expect(world.rm.port('s1', 'gi1/0/1')!.wire).to.equal(null);
    expect((await refusal(world.nodes.ask('n1', { type: 'node.wireNic', by, nic: 'eth0', switch: 's1', port: 'gi1/0/2' }))).type).to.equal('DuplicateError');
    await world.nodes.ask('n1', { type: 'node.wireNic', by, nic: 'eth0', switch: 's1', port: 'gi1/0/1' });
    expect(world.rm.wiring.get('n1', 'eth0')).to.deep.equal({ switch: 's1', port: 'gi1/0/1' });
  });
  it('sets and deletes one metadata label per event; apply leaves the earlier state untouched', async () => {
    await world.nodes.ask('n1', { type: 'node.setMetadata', by, label: 'rack', value: 'r1' });
    const before = world.rm.nodes.get('n1')!;
    await world.nodes.ask('n1', { type: 'node.setMetadata', by, label: 'unit', value: 7 });
    expect(before.metadata).to.deep.equal({ rack: 'r1' });
    expect(world.rm.nodes.get('n1')!.metadata).to.deep.equal({ rack: 'r1', unit: 7 });
    await world.nodes.ask('n1', { type: 'node.deleteMetadata', by, label: 'rack' });
    expect(world.rm.nodes.get('n1')!.metadata).to.deep.equal({ unit: 7 });
    expect((await refusal(world.nodes.ask('n1', { type: 'node.deleteMetadata', by, label: 'rack' }))).type).to.equal('NotFoundError');
    const next = world.nodes.behavior.apply(before, { type: 'NodeMetadataDeleted', label: 'rack' }, 'n1');
    expect(next!.metadata).to.deep.equal({});
    expect(before.metadata).to.deep.equal({ rack: 'r1' });
  });
});
