import { expect } from 'chai';
import { HiltError } from '../../../actors/errors';
import { portId } from '../../../actors/ids';
import { configAfter, configFor } from '../../../actors/port/config';
import type { PortChange } from '../../../actors/port/protocol';
import { World } from '../../../actors/world';
import { testWorld, wiredNode, TestWorld } from '../../helpers/world';

const by = 'admin';
const P = portId('s1', 'gi1/0/1');
const refusal = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a refusal'); }, (e: HiltError) => e);

describe('PortActor (switch → port, nic → port, and the hardware path)', () => {
  let t: TestWorld;
  let world: World;
  beforeEach(async () => {
    t = testWorld();
    world = t.world;
    await wiredNode(world);
  });
  afterEach(() => t.close());

  const apply = (change: Parameters<World['ports']['ask']>[1] extends never ? never : any, nic = 'eth0') =>
    world.ports.ask(P, { type: 'port.apply', by, node: 'n1', nic, change }, { hardware: true });

  it('owns its registration and wiring: duplicates 409, a wired port cannot be deleted, unwiring names its nic', async () => {
    expect((await refusal(world.switches.ask('s1', { type: 'switch.registerPort', by, port: 'gi1/0/1' }))).type).to.equal('DuplicateError');
    expect((await refusal(world.switches.ask('s1', { type: 'switch.deletePort', by, port: 'gi1/0/1' }))).type).to.equal('BlockedError');
    expect((await refusal(world.ports.ask(P, { type: 'port.wire', by, node: 'n1', nic: 'eth1' }))).type).to.equal('DuplicateError');
    expect((await refusal(world.ports.ask(P, { type: 'port.unwire', by, node: 'n1', nic: 'eth1' }))).type).to.equal('NotFoundError');
    expect((await refusal(world.switches.ask('s1', { type: 'switch.delete', by }))).type).to.equal('BlockedError');
    expect((await refusal(world.ports.ask(portId('s1', 'nope'), { type: 'port.wire', by, node: 'n1', nic: 'eth0' }))).type).to.equal('NotFoundError');
  });

  it('checks itself against the switch (drift audit): read back, repaired in the same switch call, never while a change is under way', async () => {
    const check = (repair: boolean) => world.ports.ask(P, { type: 'port.check', by, repair }, { hardware: true });
    expect(await apply({ kind: 'attach', native: true, vlan: 100 })).to.equal(null);
    expect(await check(false)).to.deep.equal({ status: 'in_sync', expected: { native: 100, tagged: [] }, actual: { native: 100, tagged: [] } });
    t.driver.ports.set('s1/gi1/0/1', { native: null, tagged: [7] });
    expect(await check(false)).to.deep.include({ status: 'drifted', actual: { native: null, tagged: [7] } });
    // A change under way (its outcome not known yet): not read, whatever the nic's bookkeeping says.
    t.driver.hold();
    const change = apply({ kind: 'attach', native: false, vlan: 101 });
    await new Promise((r) => setTimeout(r, 20));
    expect(await check(true)).to.deep.equal({ status: 'pending', expected: { native: 100, tagged: [], enabled: true }, actual: null });
    t.driver.release();
    expect(await change).to.equal(null);
    t.driver.log.length = 0;
    expect(await check(true)).to.deep.equal({ status: 'repaired', expected: { native: 100, tagged: [101] }, actual: { native: null, tagged: [7, 101] } });
    // The fewest changes: VLAN 101 was right and stayed up.
    expect(t.driver.log).to.deep.equal(['s1 gi1/0/1 -tag 7', 's1 gi1/0/1 native 100']);
    expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: 100, tagged: [101] });
    expect(await check(true)).to.deep.include({ status: 'in_sync' });
  });

  it('answers a change once the switch applied it, its mailbox free meanwhile, and records the new configuration', async () => {
    t.driver.hold();
    let answered = false;
    const pending = apply({ kind: 'attach', native: false, vlan: 100 }).then((r) => { answered = true; return r; });
    await new Promise((r) => setTimeout(r, 20));
    expect(answered).to.equal(false);
    // Another message is handled while the switch is busy.
    expect((await refusal(world.ports.ask(P, { type: 'port.wire', by, node: 'n1', nic: 'eth1' }))).type).to.equal('DuplicateError');
    expect(world.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: null, tagged: [] });
    t.driver.release();
    expect(await pending).to.equal(null);
    for (const deadline = Date.now() + 2000; world.rm.port('s1', 'gi1/0/1')!.config.tagged.length === 0 && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 5));
    }
    expect((await world.ports.inspect(P))!.state!.config).to.deep.equal({ native: null, tagged: [100] });
  });

  it('starts the next change from the last one while the record of the last is still being written', async () => {
    const engine = t.engine;
    const persist = engine.persist.bind(engine);
    // Storage refuses the port's records for now: they are retried, and the mailbox is free meanwhile.
    engine.persist = async (events) => {
      if (events.some((e) => e.key === `port:${P}`)) throw new Error('disk busy');
      return persist(events);
    };
    expect(await apply({ kind: 'attach', native: true, vlan: 100 })).to.equal(null);
    expect(await apply({ kind: 'attach', native: false, vlan: 101 })).to.equal(null);
    expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: 100, tagged: [101] });
    expect(world.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: null, tagged: [] });
    t.driver.failNext = 1;
    // A failure sets the port back to what it had, the unwritten changes included.
    expect(await apply({ kind: 'revert' })).to.match(/set back/);
    expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: 100, tagged: [101] });
    engine.persist = persist;
    for (const deadline = Date.now() + 3000; world.rm.port('s1', 'gi1/0/1')!.config.tagged.length === 0 && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(world.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: 100, tagged: [101] });
  });

  it('after a failed change, answers the reason and sets the switch back to the configuration it holds', async () => {
    expect(await apply({ kind: 'attach', native: true, vlan: 100 })).to.equal(null);
    t.driver.failNext = 1;
    const reason = await apply({ kind: 'attach', native: false, vlan: 101 });
    expect(reason).to.match(/port gi1\/0\/1 refused; the port was set back to the configuration the service holds/);
    expect(world.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: 100, tagged: [] });
    expect(t.driver.log.slice(-3)).to.deep.equal(['s1 gi1/0/1 tag 101', 's1 gi1/0/1 reset', 's1 gi1/0/1 native 100']);
    expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: 100, tagged: [] });
  });

  it('after a change that ran out of time, answers at the deadline and sets the port back afterwards, pending for the audit until then', async () => {
    const short = testWorld({ switchTimeoutMs: 1000 });
    try {
      await wiredNode(short.world);
      const change = (c: PortChange) => short.world.ports.ask(P, { type: 'port.apply', by, node: 'n1', nic: 'eth0', change: c }, { hardware: true });
      const check = (repair: boolean) => short.world.ports.ask(P, { type: 'port.check', by, repair }, { hardware: true });
      expect(await change({ kind: 'attach', native: true, vlan: 100 })).to.equal(null);
      short.driver.hold();
      const t0 = Date.now();
      const reason = await change({ kind: 'attach', native: false, vlan: 101 });
      expect(Date.now() - t0, 'one timeout, not two').to.be.below(1000 + 800);
      expect(reason).to.match(/did not finish within 1000 ms \(the switch stopped answering\); the port is being set back to the configuration the service holds/);
      // The set-back waits its turn behind the held call: the port is not read meanwhile.
      expect(await check(true)).to.deep.equal({ status: 'pending', expected: { native: 100, tagged: [], enabled: true }, actual: null });
      // The held call lands after all; the set-back then takes its VLAN off again.
      short.driver.release();
      let found = await check(false);
      for (const deadline = Date.now() + 3000; found.status === 'pending' && Date.now() < deadline; found = await check(false)) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(found).to.deep.equal({ status: 'in_sync', expected: { native: 100, tagged: [] }, actual: { native: 100, tagged: [] } });
      expect(short.driver.log.slice(-3)).to.deep.equal(['s1 gi1/0/1 tag 101', 's1 gi1/0/1 reset', 's1 gi1/0/1 native 100']);
    } finally {
      await short.close();
    }
  });

  it('after a failure that sent the switch nothing, answers the reason alone and does not touch the port', async () => {
    expect(await apply({ kind: 'attach', native: true, vlan: 100 })).to.equal(null);
    t.driver.failLogin = 1;
    const before = t.driver.log.length;
    expect(await apply({ kind: 'attach', native: false, vlan: 101 })).to.equal('login refused');
    expect(t.driver.log.length).to.equal(before);
    expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: 100, tagged: [] });
  });

  it('re-applies exactly its configuration (repairs a switch that lost it)', async () => {
    expect(await apply({ kind: 'attach', native: false, vlan: 100 })).to.equal(null);
    t.driver.ports.set('s1/gi1/0/1', { native: 55, tagged: [7] }); // drift
    expect(await apply({ kind: 'reapply' })).to.equal(null);
    expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [100] });
  });

  it('touches nothing for a nic it is not wired to, and says so', async () => {
    expect(await apply({ kind: 'revert' }, 'eth1')).to.match(/no longer wired to nic eth1 of node n1/);
    expect(t.driver.log).to.deep.equal([]);
  });

  it('computes the configuration a nic\'s networks put on its port', () => {
    const vlans: Record<string, number> = { a: 7, b: 3, c: 12 };
    expect(configFor({ 'vlan/native': 'a', 'vlan/3': 'b', 'vlan/12': 'c' }, (n) => vlans[n])).to.deep.equal({ native: 7, tagged: [3, 12] });
    expect(configFor({}, () => 1)).to.deep.equal({ native: null, tagged: [] });
  });

  it('computes configurations: attach, detach, revert, re-apply', () => {
    const c = { native: 5, tagged: [10] };
    expect(configAfter(c, { kind: 'attach', native: false, vlan: 3 })).to.deep.equal({ native: 5, tagged: [3, 10] });
    expect(configAfter(c, { kind: 'attach', native: false, vlan: 10 })).to.deep.equal({ native: 5, tagged: [10] });
    expect(configAfter(c, { kind: 'attach', native: true, vlan: 6 })).to.deep.equal({ native: 6, tagged: [10] });
    expect(configAfter(c, { kind: 'detach', native: false, vlan: 10 })).to.deep.equal({ native: 5, tagged: [] });
    expect(configAfter(c, { kind: 'detach', native: true, vlan: 5 })).to.deep.equal({ native: null, tagged: [10] });
    expect(configAfter(c, { kind: 'revert' })).to.deep.equal({ native: null, tagged: [] });
    expect(configAfter(c, { kind: 'reapply' })).to.equal(c);
  });
});
