/**
 * A port that may differ from its record (hardware/port-hardware.ts): a change that failed after
 * it may have reached the switch leaves the port in doubt, durably, before its nic's outcome is
 * recorded; a start sets every port in doubt back before resuming operations, the live process
 * tries again with backoff, and neither its network nor its node can be given away meanwhile.
 */
import { expect } from 'chai';
import { World } from '../../actors/world';
import { recoverWorld } from '../../actors/recovery';
import { HiltError } from '../../actors/errors';
import { portId } from '../../actors/ids';
import type { MemoryPersistenceEngine } from '../../actors/persistence/memory';
import type { SwitchSession } from '../../drivers/switch/types';
import { FAKE_SWITCH, RecordingSwitch, testWorld, wiredNode, settled, type TestWorld } from '../helpers/world';
import { sleep, until } from '../helpers/wait';

const by = 'admin';
const PORT = portId('s1', 'gi1/0/1');

/** The switch after a crash of the service: what the old process's driver had, in a driver of the new process. */
function switchAfterCrash(old: RecordingSwitch): RecordingSwitch {
  const again = new RecordingSwitch();
  for (const [k, v] of old.ports) again.ports.set(k, { native: v.native, tagged: [...v.tagged] });
  return again;
}

/** Resolves once an event of `type` is committed to `key` (listen before what commits it). */
function committed(engine: MemoryPersistenceEngine, key: string, type: string): Promise<void> {
  return new Promise((resolve) => {
    const stop = engine.onCommit((events) => {
      if (events.some((e) => e.key === key && (e.data as { type?: string }).type === type)) {
        stop();
        resolve();
      }
    });
  });
}

/** The switch applies a native VLAN, then never answers (a CLI that hangs after the line). */
function hangAfterSetNative(t: TestWorld): void {
  const open = t.driver.open.bind(t.driver);
  t.driver.open = async (info) => {
    const s = await open(info);
    return { ...s, setNative: async (p: string, v: number) => { await s.setNative(p, v); await new Promise(() => undefined); } } as SwitchSession;
  };
}

/**
 * n1's eth0 connected to w1 (VLAN 100) on a switch that applies it and hangs: the operation ends
 * ERROR while its set-back still waits behind the hung call; the service then stops.
 */
async function connectThatHangs(): Promise<{ t: TestWorld; sw: RecordingSwitch }> {
  const t = testWorld({ switchTimeoutMs: 200 });
  const world = t.world;
  await wiredNode(world);
  hangAfterSetNative(t);
  await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
  await settled(world, 'n1', 2000);
  const op = world.rm.nic('n1', 'eth0')!.actions.at(-1)!;
  expect(op.status).to.equal('ERROR');
  expect(op.error).to.match(/being set back/);
  expect(t.driver.port('s1', 'gi1/0/1').native).to.equal(100);
  // Recorded before the outcome: the port may carry VLAN 100 beyond its record.
  expect(world.rm.ports.get(PORT)!.doubt!.vlans).to.deep.equal([100]);
  await world.close();
  return { t, sw: switchAfterCrash(t.driver) };
}

const restart = (t: TestWorld, sw: RecordingSwitch, opts: { switchTimeoutMs?: number; settleRetryMs?: number } = {}) =>
  new World(t.engine, { vlanPool: [[100, 199]], switchDriverFor: (ty) => (ty === FAKE_SWITCH ? sw : undefined), switchTimeoutMs: opts.switchTimeoutMs ?? 200, settleRetryMs: opts.settleRetryMs });

const refused = async (p: Promise<unknown>, type: string, msg: RegExp) => {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err, 'refused').to.be.instanceOf(HiltError);
  expect((err as HiltError).type).to.equal(type);
  expect((err as HiltError).message).to.match(msg);
};

describe('ports in doubt', () => {
  it('a change that timed out after the switch applied it, the service stopped before its set-back ran: the start sets the port back before the VLAN can go to another project', async () => {
    const { t, sw } = await connectThatHangs();
    const again = restart(t, sw);
    try {
      const cleared = committed(t.engine, `port:${PORT}`, 'PortDoubtCleared');
      await recoverWorld(again);
      await cleared;
      await until('the doubt cleared in the read model', () => !again.rm.portsInDoubt.size);
      expect(sw.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
      expect(again.rm.nic('n1', 'eth0')!.networks).to.deep.equal({});
      expect(again.rm.port('s1', 'gi1/0/1')!.config).to.deep.equal({ native: null, tagged: [] });
      // Only now may w1 go and its VLAN serve another project's network.
      await again.networks.ask('w1', { type: 'network.delete', by });
      await again.projects.ask('q', { type: 'project.create', by });
      await again.projects.ask('q', { type: 'project.createNetwork', by, network: 'other', spec: { owner: 'q', access: ['q'], vlan: null } });
      expect(again.rm.networks.get('other')!.vlan).to.equal(100);
      expect(sw.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
    } finally {
      await again.close();
      await t.close();
    }
  });

  it('the service stopped between the doubt of the port and the outcome of its nic: the start sets the port back first, then resumes the operation', async () => {
    const t = testWorld({ switchTimeoutMs: 200 });
    const world = t.world;
    await wiredNode(world);
    hangAfterSetNative(t);
    // The outcome is never written: the process dies with it.
    const persist = t.engine.persist.bind(t.engine);
    let died = () => undefined as void;
    const outcomeHeld = new Promise<void>((held) => {
      t.engine.persist = async (events) => {
        if (events.some((e) => e.key.startsWith('nic:') && (e.data as { type: string }).type === 'NetworkActionFailed')) {
          held();
          return new Promise((_, refuse) => { died = () => refuse(new Error('the process died')); });
        }
        return persist(events);
      };
    });
    await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
    await outcomeHeld;
    expect(world.rm.ports.get(PORT)!.doubt!.vlans).to.deep.equal([100]);
    expect(world.rm.nic('n1', 'eth0')!.pending).to.not.equal(null);
    void world.close();
    t.engine.persist = persist;
    const sw = switchAfterCrash(t.driver);
    const again = restart(t, sw);
    try {
      const cleared = committed(t.engine, `port:${PORT}`, 'PortDoubtCleared');
      await recoverWorld(again);
      await settled(again, 'n1', 2000);
      await cleared;
      expect(again.rm.nic('n1', 'eth0')!.actions.at(-1)!.status).to.equal('DONE');
      // The set-back went first on the switch's queue, the resumed connect after it.
      expect(sw.log).to.deep.equal(['s1 gi1/0/1 -native', 's1 gi1/0/1 native 100']);
      expect(sw.port('s1', 'gi1/0/1')).to.deep.equal({ native: 100, tagged: [] });
      await until('the doubt cleared in the read model', () => !again.rm.portsInDoubt.size);
    } finally {
      await again.close();
      died();
      await t.close().catch(() => undefined);
    }
  });

  it('a connect applied on the switch, the service stopped before its outcome; resumed at the start, its login refused: the port is set back all the same', async () => {
    const t = testWorld({ switchTimeoutMs: 500 });
    const world = t.world;
    await wiredNode(world);
    // The switch applies the change; the service dies before the outcome is recorded.
    const persist = t.engine.persist.bind(t.engine);
    let died = () => undefined as void;
    const outcomeHeld = new Promise<void>((held) => {
      t.engine.persist = async (events) => {
        if (events.some((e) => e.key.startsWith('nic:') && (e.data as { type: string }).type === 'NetworkActionDone')) {
          held();
          // Never written: the process died with it (refused at the end, so the old world closes).
          return new Promise((_, refuse) => { died = () => refuse(new Error('the process died')); });
        }
        return persist(events);
      };
    });
    await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
    await outcomeHeld;
    expect(t.driver.port('s1', 'gi1/0/1').native).to.equal(100);
    expect(world.rm.nic('n1', 'eth0')!.pending).to.not.equal(null);
    void world.close();
    t.engine.persist = persist;
    const sw = switchAfterCrash(t.driver);
    sw.failLogin = 1; // the switch is briefly unreachable as the service comes back
    const again = restart(t, sw, { switchTimeoutMs: 500 });
    try {
      await recoverWorld(again);
      await settled(again, 'n1', 2000);
      const op = again.rm.nic('n1', 'eth0')!.actions.at(-1)!;
      expect(op.status).to.equal('ERROR');
      expect(op.error).to.match(/^login refused; the port was set back/);
      expect(again.rm.nic('n1', 'eth0')!.networks).to.deep.equal({});
      expect(sw.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
      await until('the doubt cleared', () => !again.rm.portsInDoubt.size);
    } finally {
      await again.close();
      died();
      await t.close().catch(() => undefined);
    }
  });

  it('while its set-back fails, the network of a VLAN the port may carry cannot be deleted, nor its node released; once the switch is back, the retry clears it', async () => {
    const { t, sw } = await connectThatHangs();
    sw.failLogin = 3; // the start's set-back and the first retries are refused
    const again = restart(t, sw, { settleRetryMs: 50 });
    try {
      const cleared = committed(t.engine, `port:${PORT}`, 'PortDoubtCleared');
      await recoverWorld(again);
      expect(again.rm.portsInDoubt.has(PORT)).to.equal(true);
      await refused(again.networks.ask('w1', { type: 'network.delete', by }), 'BlockedError', /port gi1\/0\/1 of switch s1 may still carry VLAN 100/);
      await refused(again.projects.ask('p', { type: 'project.detachNode', by, node: 'n1' }), 'BlockedError', /port gi1\/0\/1 of switch s1 .*in doubt/);
      // Retried with backoff (50, 100, 200 ms …) until the switch takes it.
      await cleared;
      await until('the doubt cleared in the read model', () => !again.rm.portsInDoubt.size);
      expect(sw.failLogin).to.equal(0);
      expect(sw.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
      await again.networks.ask('w1', { type: 'network.delete', by });
      await again.projects.ask('p', { type: 'project.detachNode', by, node: 'n1' });
    } finally {
      await again.close();
      await t.close();
    }
  });

  it('a port in doubt whose nic is deleted (the node free) keeps its doubt, cannot be deleted, and is still set back', async () => {
    const t = testWorld({ settleRetryMs: 50 });
    const world = t.world;
    try {
      await wiredNode(world);
      // A node in a project keeps a nic whose port is in doubt (test/src/routes/port-doubt.test.ts).
      await world.projects.ask('p', { type: 'project.detachNode', by, node: 'n1' });
      t.driver.ports.set('s1/gi1/0/1', { native: 100, tagged: [] });
      await world.ports.ask(PORT, { type: 'port.doubt', by: 'switch', vlans: [100] });
      await world.nodes.ask('n1', { type: 'node.deleteNic', by, nic: 'eth0' });
      expect(world.rm.ports.get(PORT)!.wire).to.equal(null);
      expect(world.rm.portsInDoubt.has(PORT)).to.equal(true);
      await refused(world.switches.ask('s1', { type: 'switch.deletePort', by, port: 'gi1/0/1' }), 'BlockedError', /gi1\/0\/1 of switch s1 is in doubt/);
      await refused(world.networks.ask('w1', { type: 'network.delete', by }), 'BlockedError', /may still carry VLAN 100/);
      const cleared = committed(t.engine, `port:${PORT}`, 'PortDoubtCleared');
      expect(await world.ports.ask(PORT, { type: 'port.settle', by: 'switch' }, { hardware: true })).to.equal(null);
      await cleared;
      expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
      await world.switches.ask('s1', { type: 'switch.deletePort', by, port: 'gi1/0/1' });
      await world.networks.ask('w1', { type: 'network.delete', by });
    } finally {
      await t.close();
    }
  });

  it('in the live process, a set-back that fails is tried again with backoff until the switch confirms it', async () => {
    const t = testWorld({ switchTimeoutMs: 200, settleRetryMs: 50 });
    const world = t.world;
    try {
      await wiredNode(world);
      hangAfterSetNative(t);
      const doubted = committed(t.engine, `port:${PORT}`, 'PortInDoubt');
      const cleared = committed(t.engine, `port:${PORT}`, 'PortDoubtCleared');
      await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
      await doubted;
      // The set-back, once the hung call is given up, and the first retry are refused.
      t.driver.failLogin = 2;
      await settled(world, 'n1', 2000);
      expect(world.rm.nic('n1', 'eth0')!.actions.at(-1)!.status).to.equal('ERROR');
      await cleared;
      await until('the doubt cleared in the read model', () => !world.rm.portsInDoubt.size);
      expect(t.driver.failLogin).to.equal(0);
      expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
    } finally {
      await t.close();
    }
  });

  it('a doubt an admin cleared by hand while the switch was unreachable: the port still owes its set-back, which the next start queues', async () => {
    const t = testWorld({ settleRetryMs: 60_000 });
    const world = t.world;
    await wiredNode(world);
    await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
    await settled(world);
    expect(t.driver.port('s1', 'gi1/0/1').native).to.equal(100);
    // The switch is unreachable: the force-detach's set-back fails (the next retry is a minute away).
    t.driver.failLogin = 1_000;
    await world.nodes.ask('n1', { type: 'node.forceDetach', by, nic: 'eth0', network: 'w1' });
    await until('the set-back tried', () => t.driver.failLogin < 1_000, 2000);
    await world.switches.ask('s1', { type: 'switch.clearPortDoubt', by, port: 'gi1/0/1' });
    expect(world.rm.ports.get(PORT)!.doubt).to.equal(undefined);
    expect(world.rm.ports.get(PORT)!.setBackOwed!.vlans).to.deep.equal([100]);
    // It holds nothing: the network goes, and its VLAN to another project.
    await world.networks.ask('w1', { type: 'network.delete', by });
    await world.close();
    // The switch comes back with the port as it was, VLAN 100 on it.
    const sw = switchAfterCrash(t.driver);
    expect(sw.port('s1', 'gi1/0/1').native).to.equal(100);
    const again = restart(t, sw);
    try {
      await recoverWorld(again);
      await until('the port set back', () => sw.port('s1', 'gi1/0/1').native === null, 5000);
      expect(sw.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
      await until('the set-back no longer owed', () => !again.rm.ports.get(PORT)!.setBackOwed, 2000);
    } finally {
      await again.close();
      await t.close();
    }
  });

  it('a re-apply, a drift audit that reads the port back as held, and a drift repair each clear it', async () => {
    const t = testWorld();
    const world = t.world;
    try {
      await wiredNode(world);
      /** The port put in doubt; resolves to its clear. */
      const doubt = async () => {
        await world.ports.ask(PORT, { type: 'port.doubt', by: 'switch', vlans: [100] });
        expect(world.rm.portsInDoubt.has(PORT)).to.equal(true);
        return { cleared: committed(t.engine, `port:${PORT}`, 'PortDoubtCleared') };
      };
      let { cleared } = await doubt();
      await world.nodes.ask('n1', { type: 'node.reapplyPort', by, nic: 'eth0' });
      await cleared;
      await settled(world);
      expect(world.rm.nic('n1', 'eth0')!.actions.at(-1)!.status).to.equal('DONE');

      ({ cleared } = await doubt());
      const audit = await world.audit.run('s1', { repair: false, by });
      expect(audit.ports.find((p) => p.port === 'gi1/0/1')!.status).to.equal('in_sync');
      await cleared;

      // The switch carries VLAN 100 on it, which the service does not hold: a repair removes it.
      t.driver.ports.set('s1/gi1/0/1', { native: 100, tagged: [] });
      ({ cleared } = await doubt());
      const drifted = await world.audit.run('s1', { repair: false, by });
      expect(drifted.ports.find((p) => p.port === 'gi1/0/1')!.status).to.equal('drifted');
      expect(world.rm.portsInDoubt.has(PORT)).to.equal(true);
      const repaired = await world.audit.run('s1', { repair: true, by });
      expect(repaired.ports.find((p) => p.port === 'gi1/0/1')!.status).to.equal('repaired');
      await cleared;
      expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
      await until('the doubt cleared in the read model', () => !world.rm.portsInDoubt.size);
    } finally {
      await t.close();
    }
  });
  it('a drift audit\'s read-back that ends after a later change failed on the port does not clear the doubt that change left', async () => {
    const t = testWorld({ switchTimeoutMs: 100, settleRetryMs: 60_000 });
    const world = t.world;
    try {
      await wiredNode(world);
      await world.ports.ask(PORT, { type: 'port.doubt', by: 'switch', vlans: [150] });
      // The audit's read of the port answers late, with what the port had when it was asked
      // (nothing, its record); the connect's change is applied, then the switch hangs, and its
      // set-back's login is refused.
      let answer: () => void = () => undefined;
      const answered = new Promise<void>((r) => (answer = r));
      let reads = 0;
      const open = t.driver.open.bind(t.driver);
      t.driver.open = async (info) => {
        const s = await open(info);
        return {
          ...s,
          getPortVlans: async (p: string) => {
            const v = await s.getPortVlans(p);
            if (p === 'gi1/0/1' && reads++ === 0) await answered;
            return v;
          },
          setNative: async (p: string, v: number) => {
            await s.setNative(p, v);
            t.driver.failLogin = 10;
            await new Promise(() => undefined);
          },
        } as SwitchSession;
      };
      const audit = await world.audit.run('s1', { repair: false, by });
      expect(audit.ports.find((p) => p.port === 'gi1/0/1')!.status).to.equal('unreadable');
      // Started after the read: its failure leaves the port in doubt of VLAN 100 too.
      const doubted = committed(t.engine, `port:${PORT}`, 'PortInDoubt');
      await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
      await doubted;
      expect(t.driver.port('s1', 'gi1/0/1').native).to.equal(100);
      const cleared = committed(t.engine, `port:${PORT}`, 'PortDoubtCleared').then(() => true);
      answer();
      expect(await Promise.race([cleared, sleep(300).then(() => false)]), 'the doubt cleared by the stale read').to.equal(false);
      expect(world.rm.ports.get(PORT)!.doubt!.vlans).to.deep.equal([100, 150]);
    } finally {
      await t.close();
    }
  });
});
