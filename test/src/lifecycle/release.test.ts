/**
 * Release (issue 20 item 2): project_detach_node powers the node off, through its BMC's device
 * queue, after answering; a BMC that does not answer does not hold up the release and flags the
 * node until a later power-off succeeds; release hooks (where serial consoles stop and delete the
 * node's console log) run once per release. With a mock BMC and with real ipmitool against
 * ipmi_sim; never skipped. A power-off the lease guard refused (the process could not act for a
 * moment: nothing reached the BMC) is tried again while the node is where the release put it and
 * nothing else acted on its power, else recorded as failed; an operator's power-off clears only
 * the failed one it saw.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, obm, IPMI_OBM, ADMIN } from '../../helpers/server';
import { SseStream } from '../../helpers/sse';
import { RELEASE_POWER_OFF_MEMBERS_ERROR } from '../../../src/events/types';
import { startIpmiSim, stopAllIpmiSims, requireIpmiTools, freeUdpPort, IpmiSim } from '../../helpers/ipmisim';
import { until, sleep } from '../../helpers/wait';
import { ReleaseRunner } from '../../../src/lifecycle/release';
import { NO_LIFECYCLE_TELEMETRY, NO_LOG } from '../../../src/lifecycle/common';
import { notActive } from '../../../src/lease-guard';
import type { ReadModel } from '../../../actors/readmodel';
import type { NodeCommand, NodeState } from '../../../actors/node/protocol';
import type { Asker, PowerControl, PowerSeen } from '../../../hardware/power';
import { Lifecycle } from '../../../src/lifecycle';
import { testWorld } from '../../helpers/world';

const BMC_USER = 'admin';
const BMC_PASSWORD = 'bmc-Rel3ase-pw';

async function counter(api: Client, name: string, labels = ''): Promise<number> {
  const text = (await must(api.get('/metrics'))).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('release: power-off and release hooks', function () {
  this.timeout(60_000);

  describe('with mock BMCs', () => {
    let ts: TestServer;
    let api: Client;
    before(async () => {
      ts = await startTestServer();
      api = ts.api;
      await must(api.put('/project/p1'));
      await must(api.put('/node/m1', { obm: obm('bmc-m1') }));
    });
    after(() => stopTestServer(ts));

    it('a released node ends powered off, the audit log says so, the metrics count it', async () => {
      await must(api.post('/project/p1/connect_node', { node: 'm1' }));
      await must(api.post('/node/m1/power_on'));
      expect(ts.mockObm.state('bmc-m1').power).to.equal('on');
      const hooked: string[] = [];
      ts.lifecycle.release.hooks.push((n) => { hooked.push(`${n.name} ${n.project}`); });
      const before = await counter(api, 'hilt_release_power_offs_total', 'outcome="ok"');
      await must(api.post('/project/p1/detach_node', { node: 'm1' }));
      await until('the node is off', () => ts.mockObm.state('bmc-m1').power === 'off');
      await until('the outcome is recorded', () => !ts.world.rm.releasePowerOffs.has('m1'));
      expect(hooked).to.deep.equal(['m1 null']);
      expect(await counter(api, 'hilt_release_power_offs_total', 'outcome="ok"')).to.equal(before + 1);
      const journal = (await must(api.get('/admin/actors/node/m1/journal'))).body as { by: string; event: { type: string; powerOff?: boolean } }[];
      expect(journal[0]).to.deep.include({ by: 'hilt' });
      expect(journal[0].event.type).to.equal('ReleasePowerOffSucceeded');
      expect(journal[1].event).to.deep.include({ type: 'NodeReleased', powerOff: true });
      expect((await must(api.get('/admin/nodes/attention'))).body).to.deep.equal([]);
      ts.lifecycle.release.hooks.length = 0;
    });

    it('HILT_RELEASE_POWER_OFF=false leaves the node as it was', async () => {
      const other = await startTestServer({ releasePowerOff: false });
      try {
        await must(other.api.put('/project/p1'));
        await must(other.api.put('/node/k1', { obm: obm('bmc-k1') }));
        await must(other.api.post('/project/p1/connect_node', { node: 'k1' }));
        await must(other.api.post('/node/k1/power_on'));
        await must(other.api.post('/project/p1/detach_node', { node: 'k1' }));
        await new Promise((r) => setTimeout(r, 200));
        expect(other.mockObm.state('bmc-k1').power).to.equal('on');
        expect(other.world.rm.nodes.get('k1')!.releasePowerOff).to.equal(undefined);
      } finally {
        await stopTestServer(other);
      }
    });
  });

  describe('with ipmitool against ipmi_sim', () => {
    let ts: TestServer;
    let api: Client;
    let sim: IpmiSim;
    let paused: IpmiSim;
    const TIMEOUT_MS = 3000;

    before(async () => {
      requireIpmiTools();
      ts = await startTestServer({ ipmiCipherSuite: '3', obmTimeoutMs: TIMEOUT_MS });
      api = ts.api;
      await must(api.put('/project/pi'));
      await makeUser(api, 'pi-member', 'pi-member-pw', ['pi']);
      sim = await startIpmiSim({ user: BMC_USER, password: BMC_PASSWORD, power: 'on' });
      await must(api.put('/node/i1', { obm: { type: IPMI_OBM, host: sim.host, user: BMC_USER, password: BMC_PASSWORD } }));
      // A BMC that stops answering for a while.
      paused = await startIpmiSim({ user: BMC_USER, password: BMC_PASSWORD, power: 'on' });
      await must(api.put('/node/i2', { obm: { type: IPMI_OBM, host: paused.host, user: BMC_USER, password: BMC_PASSWORD } }));
      // A BMC nobody answers at: a UDP port no simulator listens on.
      await must(api.put('/node/i3', { obm: { type: IPMI_OBM, host: `127.0.0.1:${await freeUdpPort()}`, user: BMC_USER, password: BMC_PASSWORD } }));
    });
    after(async () => {
      await stopTestServer(ts);
      await stopAllIpmiSims();
    });

    it('a member\'s release answers at once and the BMC powers the node off', async () => {
      await must(api.post('/project/pi/connect_node', { node: 'i1' }));
      expect(sim.powerState()).to.equal('on');
      sim.clearLog();
      await must(api.post('/project/pi/detach_node', { node: 'i1' }, { as: { user: 'pi-member', password: 'pi-member-pw' } }));
      await until('ipmi_sim is off', () => sim.powerState() === 'off', 15_000);
      expect(sim.log()).to.include('set power 0');
      await until('the outcome is recorded', () => !ts.world.rm.releasePowerOffs.has('i1'));
    });

    it('a BMC that does not answer does not hold up the release; the node is flagged, and not reserved, until a power-off succeeds', async () => {
      await must(api.post('/project/pi/connect_node', { node: 'i2' }));
      paused.pause();
      const t0 = Date.now();
      await must(api.post('/project/pi/detach_node', { node: 'i2' }));
      expect(Date.now() - t0, 'the release does not wait for the BMC').to.be.below(TIMEOUT_MS);
      expect((await must(api.get('/nodes/free'))).body).to.include('i2');
      await until('the node is flagged', async () => (await must(api.get('/admin/nodes/attention'))).body.length === 1, 15_000);
      const [flag] = (await must(api.get('/admin/nodes/attention'))).body;
      expect(flag).to.deep.include({ node: 'i2', problem: 'release_power_off' });
      expect(flag.detail).to.match(/did not answer/);
      expect(await counter(api, 'hilt_release_power_offs_total', 'outcome="error"')).to.equal(1);
      // The last tenant's system may still run on it: not reserved meanwhile.
      const refused = await api.post('/project/pi/connect_node', { node: 'i2' });
      expect(refused.status, refused.text).to.equal(409);
      expect(refused.body.type).to.equal('BlockedError');
      expect(refused.body.msg).to.match(/^node i2 may still be running since its release: its power-off failed \(.*did not answer/);
      // A member is not told the BMC's reason (nor which project held the node, when that is it).
      const toMember = await api.post('/project/pi/connect_node', { node: 'i2' }, { as: { user: 'pi-member', password: 'pi-member-pw' } });
      expect(toMember.status, toMember.text).to.equal(409);
      expect(toMember.body.msg).to.equal('node i2 may still be running since its release: its power-off failed; an admin\'s power_off must succeed before it is reserved again');
      expect((await must(api.get('/project/pi/nodes'))).body).to.not.include('i2');
      // Still dead: a failed power_off leaves the flag.
      expect((await api.post('/node/i2/power_off')).status).to.equal(502);
      expect((await must(api.get('/admin/nodes/attention'))).body).to.have.length(1);
      // Back: a power_off that succeeds clears it.
      paused.resume();
      await must(api.post('/node/i2/power_off'));
      expect(paused.powerState()).to.equal('off');
      expect((await must(api.get('/admin/nodes/attention'))).body).to.deep.equal([]);
      expect(ts.world.rm.nodes.get('i2')!.releasePowerOff).to.equal(undefined);
      await must(api.post('/project/pi/connect_node', { node: 'i2' }));
      await must(api.post('/project/pi/detach_node', { node: 'i2' }));
    });

    it('a BMC nobody answers at: the release and a new reservation go on, the node stays flagged', async () => {
      await must(api.post('/project/pi/connect_node', { node: 'i3' }));
      await must(api.post('/project/pi/detach_node', { node: 'i3' }));
      await must(api.post('/project/pi/connect_node', { node: 'i3' }));
      await until('the node is flagged', async () => (await must(api.get('/admin/nodes/attention'))).body.some((a: { node: string }) => a.node === 'i3'), 15_000);
      expect((await must(api.get('/project/pi/nodes'))).body).to.include('i3');
    });

    it('the event stream tells the node\'s project that the power-off failed, not the BMC\'s words (its address): an admin reads them', async () => {
      const failure = async (as: { user: string; password: string }) => {
        const s = new SseStream(`${ts.url}/events?since=1970-01-01T00:00:00Z&name=i3`, { as });
        try {
          await s.until(() => s.events.some((e) => e.event === 'node.release_power_off_failed'));
          return s.events.find((e) => e.event === 'node.release_power_off_failed')!.data;
        } finally {
          s.close();
        }
      };
      const bmc = ts.world.rm.nodes.get('i3')!.obm.fields.host as string;
      const toMember = await failure({ user: 'pi-member', password: 'pi-member-pw' });
      expect(toMember.project).to.equal('pi');
      expect(toMember.data.error).to.equal(RELEASE_POWER_OFF_MEMBERS_ERROR);
      expect(JSON.stringify(toMember)).to.not.include(bmc);
      const toAdmin = await failure(ADMIN);
      expect(toAdmin.data.error).to.include(`BMC ${bmc} did not answer`);
    });
  });

  describe('a power-off the lease guard refused (the process could not act for a moment)', () => {
    const SINCE = 2000;
    let node: NodeState;
    let nodes: Map<string, NodeState>;
    /** power.off calls; `reached`: those the guard let through to the BMC */
    let calls: number;
    let reached: number;
    /** the guard refuses while set */
    let lapse: boolean;
    let seen: PowerSeen | undefined;
    /** PowerControl.ended: the power calls ended so far */
    let ended: number;
    let outcomes: { since?: number; error: string | null }[];
    let runner: ReleaseRunner;

    beforeEach(() => {
      node = { name: 'z1', incarnation: 'i1', project: null, obm: { type: 'mock', fields: {} }, releasePowerOff: { status: 'pending', since: SINCE } };
      nodes = new Map([['z1', node]]);
      calls = 0;
      reached = 0;
      lapse = true;
      seen = undefined;
      ended = 0;
      outcomes = [];
      const rm = { nodes, releasePowerOffs: new Map([['z1', node.releasePowerOff!]]) } as unknown as ReadModel;
      // As PowerControl: the caller's recheck at the BMC's turn, then the guard, then the BMC.
      const power = {
        off: async (_obm: unknown, who: Asker) => {
          calls++;
          who.recheck?.();
          if (lapse) throw notActive(1);
          reached++;
        },
        seen: () => seen,
        get ended() { return ended; },
      } as unknown as PowerControl;
      const asker = { ask: async (_id: string, cmd: NodeCommand) => { if (cmd.type === 'node.powerOffEnded') outcomes.push({ since: cmd.since, error: cmd.error }); } };
      runner = new ReleaseRunner({ rm, nodes: asker as never, power, telemetry: NO_LIFECYCLE_TELEMETRY, log: NO_LOG });
    });
    afterEach(() => runner.close());

    const release = () => runner.watch('z1', { ...node, project: 'p1', releasePowerOff: undefined }, node);

    it('stays pending and is carried out once the process may act again', async () => {
      release();
      await until('the guard refused it', () => calls === 1);
      expect(outcomes, 'recorded at a refusal that sent nothing').to.deep.equal([]);
      lapse = false;
      await until('the outcome is recorded', () => outcomes.length === 1, 5000);
      expect(outcomes).to.deep.equal([{ since: SINCE, error: null }]);
      expect([calls, reached]).to.deep.equal([2, 1]);
    });

    it('is recorded as failed, and not sent, once the node changed hands', async () => {
      release();
      await until('the guard refused it', () => calls === 1);
      // A new tenant reserved the node (it may power it on): the release's power-off must not follow.
      nodes.set('z1', { ...node, project: 'p2' });
      lapse = false;
      await until('the outcome is recorded', () => outcomes.length === 1, 5000);
      expect(outcomes[0]).to.include({ since: SINCE });
      expect(outcomes[0].error).to.match(/^refused while this process could not act \(this hilt process no longer holds the lease.*\), and not tried again: the node changed hands or its power was acted on since its release$/);
      expect(reached, 'power-offs that reached the BMC').to.equal(0);
    });

    it('is recorded as failed, and not sent, once another power call reached the BMC', async () => {
      release();
      await until('the guard refused it', () => calls === 1);
      // Still in the same hands (free, or in the maintenance pool), but powered on meanwhile.
      seen = { state: 'on', at: SINCE + 1, incarnation: 'i1', call: ++ended };
      lapse = false;
      await until('the outcome is recorded', () => outcomes.length === 1, 5000);
      expect(outcomes[0].error).to.match(/not tried again/);
      expect(reached, 'power-offs that reached the BMC').to.equal(0);
    });

    it('is recorded as failed, and not sent, once another power call reached the BMC, though the clock stepped back meanwhile', async () => {
      ended = 7;
      seen = { state: 'off', at: SINCE - 5000, incarnation: 'i1', call: ended };
      release();
      await until('the guard refused it', () => calls === 1);
      // A power-on after the refusal, seen at a wall-clock time before the release's (an NTP
      // step back, or the release committed by another machine whose clock runs ahead).
      seen = { state: 'on', at: SINCE - 60_000, incarnation: 'i1', call: ++ended };
      lapse = false;
      await until('the outcome is recorded', () => outcomes.length === 1, 5000);
      expect(outcomes[0].error).to.match(/not tried again/);
      expect(reached, 'power-offs that reached the BMC').to.equal(0);
    });

    it('is carried out when the power calls seen ended before its first try, whatever their wall-clock times', async () => {
      ended = 3;
      seen = { state: 'on', at: SINCE + 60_000, incarnation: 'i1', call: ended };
      release();
      await until('the guard refused it', () => calls === 1);
      lapse = false;
      await until('the outcome is recorded', () => outcomes.length === 1, 5000);
      expect(outcomes).to.deep.equal([{ since: SINCE, error: null }]);
      expect(reached).to.equal(1);
    });

    it('is tried no more after close(): left pending for the next active process', async () => {
      release();
      await until('the guard refused it', () => calls === 1);
      runner.close();
      lapse = false;
      // Nothing to wait for: no try comes after the retry's pause.
      await sleep(1300);
      expect([calls, outcomes.length]).to.deep.equal([1, 0]);
    });
  });

  describe('a power-off still pending at a start', () => {
    const SINCE = 2000;
    let reached: string[];
    let hooked: string[];
    let outcomes: { node: string; since?: number; error: string | null }[];

    /** Resumes the pending power-offs of `states` as a start does. */
    function resume(...states: NodeState[]): ReleaseRunner {
      reached = [];
      hooked = [];
      outcomes = [];
      const nodes = new Map(states.map((n) => [n.name, n]));
      const rm = { nodes, releasePowerOffs: new Map(states.map((n) => [n.name, n.releasePowerOff!])) } as unknown as ReadModel;
      const power = {
        off: async (_obm: unknown, who: Asker) => {
          who.recheck?.();
          reached.push(who.node!.name);
        },
        seen: () => undefined,
      } as unknown as PowerControl;
      const asker = { ask: async (id: string, cmd: NodeCommand) => { if (cmd.type === 'node.powerOffEnded') outcomes.push({ node: id, since: cmd.since, error: cmd.error }); } };
      const runner = new ReleaseRunner({ rm, nodes: asker as never, power, telemetry: NO_LIFECYCLE_TELEMETRY, log: NO_LOG });
      runner.hooks.push((n) => void hooked.push(n.name));
      runner.resumeAll();
      return runner;
    }
    const pending = { status: 'pending', since: SINCE } as const;
    const base = { incarnation: 'i1', obm: { type: 'mock', fields: {} }, releasePowerOff: pending };

    it('is carried out where the release left the node (free, or in the maintenance pool); not, and recorded as failed, once a new tenant holds it', async () => {
      const runner = resume(
        { ...base, name: 'free', project: null },
        { ...base, name: 'pool', project: 'maint', maintenance: { from: 'p1', since: SINCE, attempts: 0 } },
        // Released, then reserved by p2 before the outcome was recorded: p2 may have powered it on.
        { ...base, name: 'taken', project: 'p2' },
      );
      try {
        await until('every outcome is recorded', () => outcomes.length === 3, 5000);
        expect(reached.sort(), 'power-offs that reached the BMC').to.deep.equal(['free', 'pool']);
        expect(hooked.sort(), 'release hooks').to.deep.equal(['free', 'pool']);
        const taken = outcomes.find((o) => o.node === 'taken')!;
        expect(taken.since).to.equal(SINCE);
        expect(taken.error).to.match(/changed hands/);
      } finally {
        runner.close();
      }
    });
  });

  describe('an operator\'s power-off', () => {
    it('ends the failed release power-off it saw, not a newer one a release left pending meanwhile', async () => {
      const t = testWorld();
      try {
        const { world } = t;
        const by = 'admin';
        const release = () => world.nodes.ask('z1', { type: 'node.release', by, project: 'p', into: null, powerOff: true });
        await world.nodes.ask('z1', { type: 'node.register', by, obm: { type: 'mock', fields: {} } });
        await world.nodes.ask('z1', { type: 'node.assign', by, project: 'p' });
        await release();
        const first = world.rm.nodes.get('z1')!.releasePowerOff!.since;
        // Reserved again while its power-off was pending (a flagged node is not reserved), which then failed.
        await world.nodes.ask('z1', { type: 'node.assign', by, project: 'p' });
        await world.nodes.ask('z1', { type: 'node.powerOffEnded', by: 'hilt', since: first, error: 'BMC down' });
        expect(world.rm.nodes.get('z1')!.releasePowerOff).to.deep.include({ status: 'failed', since: first });
        await until('the clock moved on', () => Date.now() > first, 1000, 1);
        const lifecycle = new Lifecycle(world, { config: { maintenanceTimeoutMs: 1000 }, power: {} as PowerControl });
        // A release is in the node's mailbox ahead of the record of the operator's power-off,
        // which saw the failed one only.
        const second = release();
        await lifecycle.poweredOff('z1', by);
        await second;
        const due = world.rm.nodes.get('z1')!.releasePowerOff;
        expect(due, 'the new release\'s power-off').to.deep.include({ status: 'pending' });
        expect(due!.since).to.be.above(first);
      } finally {
        await t.close();
      }
    });
  });
});
