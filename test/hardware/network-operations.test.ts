import { expect } from 'chai';
import { World } from '../../actors/world';
import { testWorld, wiredNode, settled, TestWorld, FAKE_SWITCH } from '../helpers/world';
import { rebuildReadModels, repairPortRecords } from '../../actors/recovery';

const by = 'admin';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('NetworkOperations (the runner of pending operations)', () => {
  let t: TestWorld;
  let world: World;
  beforeEach(async () => {
    t = testWorld();
    world = t.world;
    await wiredNode(world, ['eth0', 'eth1', 'eth2']);
  });
  afterEach(() => t.close());

  it('applies a node\'s operations in acceptance order across its nics, one at a time', async () => {
    t.driver.hold();
    for (const [nic, network, channel] of [['eth2', 'w1', 'vlan/native'], ['eth0', 'w2', 'vlan/101'], ['eth1', 'w1', 'vlan/100']]) {
      await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic, network, channel });
    }
    await sleep(30);
    // Only the first is at the switch; the others wait for its outcome to be committed.
    expect(t.driver.log).to.deep.equal([]);
    expect([...world.rm.pendingByNode.get('n1')].sort()).to.deep.equal(['eth0', 'eth1', 'eth2']);
    t.driver.release();
    await settled(world);
    expect(t.driver.log).to.deep.equal(['s1 gi1/0/3 native 100', 's1 gi1/0/1 tag 101', 's1 gi1/0/2 tag 100']);
  });

  it('runs different nodes in parallel', async () => {
    await world.switches.ask('s2', { type: 'switch.register', by, switchType: FAKE_SWITCH, fields: {} });
    await world.switches.ask('s2', { type: 'switch.registerPort', by, port: 'x' });
    await world.nodes.ask('n2', { type: 'node.register', by, obm: { type: 'mock', fields: {} } });
    await world.nodes.ask('n2', { type: 'node.registerNic', by, nic: 'e', macaddr: 'm' });
    await world.nodes.ask('n2', { type: 'node.wireNic', by, nic: 'e', switch: 's2', port: 'x' });
    await world.projects.ask('p', { type: 'project.connectNode', by, node: 'n2' });
    t.driver.hold();
    await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
    await world.nodes.ask('n2', { type: 'node.connectNetwork', by, project: 'p', nic: 'e', network: 'w1', channel: 'vlan/native' });
    await sleep(20);
    t.driver.release();
    await settled(world, 'n1');
    await settled(world, 'n2');
    expect(t.driver.log.sort()).to.deep.equal(['s1 gi1/0/1 native 100', 's2 x native 100']);
  });

  it('after a crash between the nic\'s DONE and the port\'s record of it, the start sets the port\'s record from its nic', async () => {
    const persist = t.engine.persist.bind(t.engine);
    // The port's record never makes it to storage (the crash), the nic's DONE does.
    t.engine.persist = async (events) => {
      if (events.some((e) => e.key.startsWith('port:'))) throw new Error('lost in the crash');
      return persist(events);
    };
    await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
    await settled(world);
    await world.close();
    t.engine.persist = persist;
    const again = new World(t.engine, { vlanPool: [[100, 199]], switchDriverFor: () => t.driver });
    try {
      await rebuildReadModels(again);
      expect(again.rm.nic('n1', 'eth0')!.networks).to.deep.equal({ 'vlan/native': 'w1' });
      expect(again.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: null, tagged: [] });
      expect(await repairPortRecords(again)).to.equal(1);
      expect(again.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: 100, tagged: [] });
      expect(await repairPortRecords(again)).to.equal(0);
    } finally {
      await again.close();
    }
  });

  it('leaves operations PENDING in storage when the service stops, and resumes them at the next start', async () => {
    t.driver.hold();
    await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
    await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth1', network: 'w2', channel: 'vlan/native' });
    await world.close();
    t.driver.release();
    await sleep(20);
    const again = new World(t.engine, { vlanPool: [[100, 199]], switchDriverFor: () => t.driver });
    try {
      await rebuildReadModels(again);
      expect(again.rm.nic('n1', 'eth0')!.pending?.status).to.equal('PENDING');
      again.operations.resumeAll();
      await settled(again);
      expect(again.rm.nic('n1', 'eth0')!.networks).to.deep.equal({ 'vlan/native': 'w1' });
      expect(again.rm.nic('n1', 'eth1')!.networks).to.deep.equal({ 'vlan/native': 'w2' });
      expect(t.driver.port('s1', 'gi1/0/2')).to.deep.equal({ native: 101, tagged: [] });
    } finally {
      await again.close();
    }
  });
});

describe('NetworkOperations while the process may not act for a moment (a lease renewal that came late)', () => {
  let t: TestWorld;
  let may = true;
  beforeEach(async () => {
    may = true;
    t = testWorld({ mayAct: () => may });
    await wiredNode(t.world, ['eth0']);
  });
  afterEach(() => t.close());

  it('records no ERROR for the call the guard refused, and carries the operation out once the process may act again', async () => {
    const { world } = t;
    t.driver.hold();
    await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
    may = false;
    t.driver.release();
    await sleep(300);
    expect(world.rm.nic('n1', 'eth0')!.pending?.status, 'no outcome while it may not act').to.equal('PENDING');
    may = true;
    await settled(world);
    expect(world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({ 'vlan/native': 'w1' });
    expect(world.rm.nic('n1', 'eth0')!.actions.at(-1)?.status).to.equal('DONE');
    expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: 100, tagged: [] });
  });
});

describe('NetworkOperations after a restart', () => {
  it('resumes the operations still pending in the order they were accepted, not in the order the store lists their nics', async () => {
    const t = testWorld();
    const world = t.world;
    await world.switches.ask('s1', { type: 'switch.register', by, switchType: FAKE_SWITCH, fields: {} });
    await world.projects.ask('p', { type: 'project.create', by });
    await world.projects.ask('p', { type: 'project.createNetwork', by, network: 'w1', spec: { owner: 'p', access: ['p'], vlan: null } });
    // The store lists on1, on10, on2: accepted here in the order on2, on10, on1.
    const order = ['on2', 'on10', 'on1'];
    for (const node of [...order].sort()) {
      await world.nodes.ask(node, { type: 'node.register', by, obm: { type: 'mock', fields: {} } });
      await world.nodes.ask(node, { type: 'node.registerNic', by, nic: 'e', macaddr: 'm' });
      await world.switches.ask('s1', { type: 'switch.registerPort', by, port: `p-${node}` });
      await world.nodes.ask(node, { type: 'node.wireNic', by, nic: 'e', switch: 's1', port: `p-${node}` });
      await world.projects.ask('p', { type: 'project.connectNode', by, node });
    }
    t.driver.hold();
    for (const node of order) {
      await world.nodes.ask(node, { type: 'node.connectNetwork', by, project: 'p', nic: 'e', network: 'w1', channel: 'vlan/native' });
      await sleep(2); // distinct acceptance times
    }
    await world.close();
    t.driver.release();
    await sleep(20);
    t.driver.log.length = 0;
    const again = new World(t.engine, { vlanPool: [[100, 199]], switchDriverFor: () => t.driver });
    try {
      await rebuildReadModels(again);
      expect([...again.rm.pendingByNode.keys()], 'the store\'s order').to.deep.equal(['on1', 'on10', 'on2']);
      again.operations.resumeAll();
      for (const node of order) await settled(again, node);
      expect(t.driver.log).to.deep.equal(order.map((node) => `s1 p-${node} native 100`));
    } finally {
      await again.close();
    }
  });
});

describe('NetworkOperations after a restart, on a store that answers reads in any order', () => {
  it('queues the resumed operations on their switch in acceptance order, ahead of one accepted right after the start', async () => {
    const t = testWorld();
    const world = t.world;
    await world.switches.ask('s1', { type: 'switch.register', by, switchType: FAKE_SWITCH, fields: {} });
    await world.projects.ask('p', { type: 'project.create', by });
    await world.projects.ask('p', { type: 'project.createNetwork', by, network: 'w1', spec: { owner: 'p', access: ['p'], vlan: null } });
    const order = ['on2', 'on10', 'on1'];
    for (const node of [...order, 'late']) {
      await world.nodes.ask(node, { type: 'node.register', by, obm: { type: 'mock', fields: {} } });
      await world.nodes.ask(node, { type: 'node.registerNic', by, nic: 'e', macaddr: 'm' });
      await world.switches.ask('s1', { type: 'switch.registerPort', by, port: `p-${node}` });
      await world.nodes.ask(node, { type: 'node.wireNic', by, nic: 'e', switch: 's1', port: `p-${node}` });
      await world.projects.ask('p', { type: 'project.connectNode', by, node });
    }
    t.driver.hold();
    for (const node of order) {
      await world.nodes.ask(node, { type: 'node.connectNetwork', by, project: 'p', nic: 'e', network: 'w1', channel: 'vlan/native' });
      await sleep(2); // distinct acceptance times
    }
    await world.close();
    t.driver.release();
    await sleep(20);
    t.driver.log.length = 0;
    // The store reads the oldest operation's port last (as a pool of connections may).
    const slow: [string, number][] = [['p-on2', 60], ['p-on10', 30]];
    const engine = new Proxy(t.engine, {
      get(target, prop) {
        if (prop === 'recover') {
          return async (key: string) => {
            const ms = slow.find(([port]) => key.endsWith(port))?.[1];
            if (ms) await sleep(ms);
            return target.recover(key);
          };
        }
        const v = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const again = new World(engine, { vlanPool: [[100, 199]], switchDriverFor: () => t.driver });
    try {
      await rebuildReadModels(again);
      await again.operations.resumeAll();
      // Accepted as soon as the start is done.
      await again.nodes.ask('late', { type: 'node.connectNetwork', by, project: 'p', nic: 'e', network: 'w1', channel: 'vlan/native' });
      for (const node of [...order, 'late']) await settled(again, node);
      expect(t.driver.log).to.deep.equal([...order, 'late'].map((node) => `s1 p-${node} native 100`));
    } finally {
      await again.close();
    }
  });
});

describe('a node waits for its nic however long the nic\'s commit takes', () => {
  it('so a node never leaves its project while a connect it accepted is still being recorded', async () => {
    const t = testWorld();
    const world = new World(t.engine, { vlanPool: [[100, 199]], askTimeoutMs: 300, switchDriverFor: () => t.driver });
    try {
      await wiredNode(world);
      const persist = t.engine.persist.bind(t.engine);
      let slow = true;
      t.engine.persist = async (events) => {
        if (slow && events.some((e) => (e.data as { type: string }).type === 'NetworkActionQueued')) {
          slow = false;
          await sleep(600);
        }
        return persist(events);
      };
      // The route's wait ends (503) before the nic has committed...
      const err = await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' }).catch((e) => e);
      expect(err.type).to.equal('ServiceUnavailableError');
      // ...but the node's mailbox is still on it: the detach waits, then sees the operation.
      const detach = await world.projects.ask('p', { type: 'project.detachNode', by, node: 'n1' }).catch((e) => e);
      await settled(world);
      if (detach === undefined) {
        expect(world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({});
      } else {
        expect(detach.type).to.be.oneOf(['BlockedError', 'ServiceUnavailableError']);
        expect(world.rm.nodes.get('n1')!.project).to.equal('p');
      }
      const attached = Object.keys(world.rm.nic('n1', 'eth0')!.networks).length > 0;
      expect(attached && world.rm.nodes.get('n1')!.project === null, 'a free node with an attachment').to.equal(false);
    } finally {
      await world.close();
    }
  });
});
