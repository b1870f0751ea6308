/**
 * The port's record of a change is written beside its nic's record of the outcome
 * (hardware/port-hardware.ts). These are the ways that could go wrong, each shown not to.
 */
import { expect } from 'chai';
import { portId } from '../../../actors/ids';
import { World } from '../../../actors/world';
import { FAKE_SWITCH, testWorld, wiredNode, settled, TestWorld } from '../../helpers/world';
import { rebuildReadModels, repairPortRecords } from '../../../actors/recovery';

const by = 'admin';
const P = portId('s1', 'gi1/0/1');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('port records written beside the nic\'s outcome', () => {
  let t: TestWorld;
  let world: World;
  let refuse: boolean;
  /** refuse the port's configuration records only (a force-detach's doubt is written) */
  let recordsOnly: boolean;
  beforeEach(async () => {
    t = testWorld();
    world = t.world;
    await wiredNode(world);
    refuse = false;
    recordsOnly = false;
    const persist = t.engine.persist.bind(t.engine);
    // A storage hiccup on the port's records only: they are retried with backoff meanwhile.
    t.engine.persist = async (events) => {
      if (refuse && events.some((e) => e.key === `port:${P}` && (!recordsOnly || (e.data as { type: string }).type === 'PortConfigured'))) throw new Error('disk busy');
      return persist(events);
    };
  });
  afterEach(() => t.close());

  const connect = (network: string, channel = 'vlan/native') =>
    world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network, channel });

  it('a nic deleted while its port\'s release was lost, then registered again under its name: the new nic does not inherit the port', async () => {
    refuse = true;
    await world.nodes.ask('n1', { type: 'node.deleteNic', by, nic: 'eth0' }).catch(() => undefined);
    refuse = false;
    expect(world.rm.nic('n1', 'eth0')).to.equal(undefined);
    expect(world.rm.port('s1', 'gi1/0/1')!.wire).to.deep.equal({ node: 'n1', nic: 'eth0' });
    await world.nodes.ask('n1', { type: 'node.registerNic', by, nic: 'eth0', macaddr: 'aa:bb:cc:00:00:02' });
    expect(world.rm.nic('n1', 'eth0')!.macaddr).to.equal('aa:bb:cc:00:00:02');
    expect(world.rm.port('s1', 'gi1/0/1')!.wire).to.equal(null);
    expect(world.rm.wiring.has('n1', 'eth0')).to.equal(false);
    expect([...world.rm.wiredWithoutNic]).to.deep.equal([]);
    // The port can be wired to it again, as to any nic.
    await world.nodes.ask('n1', { type: 'node.wireNic', by, nic: 'eth0', switch: 's1', port: 'gi1/0/1' });
    expect(world.rm.wiring.port('n1', 'eth0')!.name).to.equal('gi1/0/1');
  });

  it('a nic of an earlier release wired to two ports, deleted while their release was lost, then registered again: neither port stays wired to it', async () => {
    // Earlier releases could wire one nic to two ports: the second wire is made on the port alone.
    await world.switches.ask('s1', { type: 'switch.registerPort', by, port: 'gi1/0/9' });
    await world.ports.ask(portId('s1', 'gi1/0/9'), { type: 'port.wire', by, node: 'n1', nic: 'eth0' });
    expect(world.rm.wiredPorts).to.equal(world.rm.wiring.size + 1);
    refuse = true;
    const persist = t.engine.persist.bind(t.engine);
    // Both ports' releases are lost.
    t.engine.persist = async (events) => {
      if (events.some((e) => e.key.startsWith('port:'))) throw new Error('lost in the crash');
      return persist(events);
    };
    await world.nodes.ask('n1', { type: 'node.deleteNic', by, nic: 'eth0' }).catch(() => undefined);
    t.engine.persist = persist;
    refuse = false;
    await world.nodes.ask('n1', { type: 'node.registerNic', by, nic: 'eth0', macaddr: 'aa:bb:cc:00:00:03' });
    expect(world.rm.port('s1', 'gi1/0/1')!.wire).to.equal(null);
    expect(world.rm.port('s1', 'gi1/0/9')!.wire).to.equal(null);
    expect(world.rm.wiring.has('n1', 'eth0')).to.equal(false);
    expect(world.rm.wiredPorts).to.equal(world.rm.wiring.size);
  });

  it('a force-detach while the record of the attach is still unwritten: the VLAN stays forgotten, a re-apply leaves the switch empty', async () => {
    refuse = true;
    recordsOnly = true;
    await connect('w1');
    await settled(world);
    await world.nodes.ask('n1', { type: 'node.forceDetach', by, nic: 'eth0', network: 'w1' });
    refuse = false;
    await sleep(400); // the retried record lands meanwhile
    expect(world.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: null, tagged: [] });
    await world.nodes.ask('n1', { type: 'node.reapplyPort', by, nic: 'eth0' });
    await settled(world);
    expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
  });

  it('after a crash that lost the port\'s record of a DONE operation, with the nic\'s next one pending: the start repairs the record before resuming', async () => {
    refuse = true;
    await connect('w1');
    await settled(world);
    t.driver.hold();
    await connect('w2', 'vlan/101');
    await sleep(30);
    await world.close(); // the crash: nothing more is written
    refuse = false;
    t.driver.release();
    await sleep(30);
    const again = new World(t.engine, { vlanPool: [[100, 199]], switchDriverFor: (ty) => (ty === FAKE_SWITCH ? t.driver : undefined) });
    try {
      await rebuildReadModels(again);
      expect(await repairPortRecords(again)).to.equal(1);
      expect(again.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: 100, tagged: [] });
      // The resumed operation fails: the port is set back to what the nic holds, native 100 included.
      t.driver.failNext = 1;
      again.operations.resumeAll();
      await settled(again);
      expect(again.rm.nic('n1', 'eth0')!.networks).to.deep.equal({ 'vlan/native': 'w1' });
      expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: 100, tagged: [] });
    } finally {
      await again.close();
    }
  });

  it('a start frees a port wired to a nic deleted before the crash, clears a VLAN its nic no longer carries, and leaves the other ports alone', async () => {
    await world.nodes.ask('n1', { type: 'node.registerNic', by, nic: 'eth2', macaddr: 'm2' });
    await world.switches.ask('s1', { type: 'switch.registerPort', by, port: 'gi1/0/3' });
    await world.nodes.ask('n1', { type: 'node.wireNic', by, nic: 'eth2', switch: 's1', port: 'gi1/0/3' });
    await connect('w1');
    await settled(world);
    await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth2', network: 'w2', channel: 'vlan/native' });
    await settled(world);
    // From here the ports' records are lost in the crash; the nics' outcomes are not.
    const persist = t.engine.persist.bind(t.engine);
    t.engine.persist = async (events) => {
      if (events.some((e) => e.key.startsWith('port:'))) throw new Error('lost in the crash');
      return persist(events);
    };
    await world.nodes.ask('n1', { type: 'node.detachNetwork', by, project: 'p', nic: 'eth0', network: 'w1' });
    await settled(world);
    await world.nodes.ask('n1', { type: 'node.deleteNic', by, nic: 'eth1' }).catch(() => undefined);
    await world.close();
    t.engine.persist = persist;
    const again = new World(t.engine, { vlanPool: [[100, 199]], switchDriverFor: (ty) => (ty === FAKE_SWITCH ? t.driver : undefined) });
    try {
      await rebuildReadModels(again);
      expect(again.rm.nic('n1', 'eth0')!.networks).to.deep.equal({});
      expect(again.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: 100, tagged: [] });
      expect(again.rm.nic('n1', 'eth1')).to.equal(undefined);
      expect(again.rm.port('s1', 'gi1/0/2')!.wire).to.deep.equal({ node: 'n1', nic: 'eth1' });
      const untouched = again.rm.port('s1', 'gi1/0/3');
      expect(untouched!.config).to.deep.equal({ native: 101, tagged: [] });
      expect(await repairPortRecords(again)).to.equal(2);
      expect(again.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: null, tagged: [] });
      expect(again.rm.port('s1', 'gi1/0/2')!.wire).to.equal(null);
      expect(again.rm.port('s1', 'gi1/0/3')).to.equal(untouched);
      expect(await repairPortRecords(again)).to.equal(0);
    } finally {
      await again.close();
    }
  });
});

describe('a force-detach while a set-back or a repair of the port waits for the switch', () => {
  it('the set-back, run late, does not put the forgotten VLAN back on the switch', async () => {
    const t = testWorld({ switchTimeoutMs: 200 });
    const world = t.world;
    try {
      await wiredNode(world);
      await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
      await settled(world);
      expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: 100, tagged: [] });
      // The switch stops answering: the tagged connect runs out of time, its set-back waits behind it.
      t.driver.hold();
      await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w2', channel: 'vlan/101' });
      await settled(world);
      expect(world.rm.nic('n1', 'eth0')!.actions.at(-1)!.status).to.equal('ERROR');
      // The operator gives the switch up for dead and forgets w1 on the nic.
      await world.nodes.ask('n1', { type: 'node.forceDetach', by, nic: 'eth0', network: 'w1' });
      expect(world.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: null, tagged: [] });
      // The switch comes back: the held call lands, then the set-back runs.
      t.driver.release();
      for (const deadline = Date.now() + 3000; world.rm.port('s1', 'gi1/0/1')!.doubt && Date.now() < deadline;) await sleep(10);
      expect(world.rm.port('s1', 'gi1/0/1')!.doubt).to.equal(undefined);
      await sleep(100);
      // The port carries what the service holds for it: not w1's VLAN, which the node's next holder would get.
      expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal(world.rm.port('s1', 'gi1/0/1')!.config);
      await world.projects.ask('p', { type: 'project.detachNode', by, node: 'n1' });
      expect(t.driver.port('s1', 'gi1/0/1').native).to.equal(null);
    } finally {
      await t.close();
    }
  });

  it('a drift repair queued before it sets the port to what the service holds when its turn comes', async () => {
    const t = testWorld();
    const world = t.world;
    try {
      await wiredNode(world);
      await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
      await settled(world);
      // The port drifted; its repair waits on the switch behind another port's change.
      t.driver.ports.set('s1/gi1/0/1', { native: null, tagged: [7] });
      t.driver.hold();
      await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth1', network: 'w2', channel: 'vlan/native' });
      await sleep(20);
      const repair = world.ports.ask(P, { type: 'port.check', by, repair: true }, { hardware: true });
      await sleep(20);
      await world.nodes.ask('n1', { type: 'node.forceDetach', by, nic: 'eth0', network: 'w1' });
      t.driver.release();
      expect(await repair).to.deep.include({ status: 'repaired', expected: { native: null, tagged: [] } });
      expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
    } finally {
      await t.close();
    }
  });
});

describe('a start\'s check of the port records, over every port as it changes them', () => {
  it('repairs each drifted port of every switch once, whatever their names, and ends', async () => {
    const t = testWorld();
    const world = t.world;
    try {
      await wiredNode(world, ['eth0', 'eth1', 'eth2']);
      const drifted: string[] = [];
      for (const sw of ['s1', 'a/b', '__proto__', 'a']) {
        if (sw !== 's1') await world.switches.ask(sw, { type: 'switch.register', by, switchType: FAKE_SWITCH, fields: {} });
        for (const port of ['x', 'x/1', '50%', '__proto__', 'constructor']) {
          await world.switches.ask(sw, { type: 'switch.registerPort', by, port });
          // An unwired port holding a configuration (a record its nic's networks do not make).
          if (port !== 'x') {
            await world.ports.ask(portId(sw, port), { type: 'port.configured', by: 'switch', config: { native: 150, tagged: [7] }, wire: null });
            drifted.push(portId(sw, port));
          }
        }
      }
      // Wired to a nic without networks, holding one of them anyway.
      await world.ports.ask(portId('s1', 'gi1/0/2'), { type: 'port.configured', by: 'switch', config: { native: 120, tagged: [] }, wire: { node: 'n1', nic: 'eth1' } });
      drifted.push(portId('s1', 'gi1/0/2'));
      const asked: string[] = [];
      const ask = world.ports.ask.bind(world.ports);
      world.ports.ask = ((id: string, ...rest: unknown[]) => {
        asked.push(id);
        return (ask as (...a: unknown[]) => unknown)(id, ...rest);
      }) as typeof world.ports.ask;
      expect(await repairPortRecords(world)).to.equal(drifted.length);
      expect(asked.sort()).to.deep.equal(drifted.sort());
      for (const p of world.rm.ports.values()) expect(p.config, `${p.switch} ${p.name}`).to.deep.equal({ native: null, tagged: [] });
      expect(await repairPortRecords(world)).to.equal(0);
    } finally {
      await t.close();
    }
  });
});
