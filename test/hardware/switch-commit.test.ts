/**
 * Switches with a candidate configuration (Junos, NVUE) under the service's switch sessions,
 * against their simulators over real SSH: operations queued meanwhile share one login and one
 * commit, each answered by the commit's verdict on its own port; a change the switch refuses
 * while staged is taken out of the candidate, and the changes staged before it are committed
 * without it; a refused commit fails every operation of its group as having changed nothing;
 * a VLAN the switch has under a name of its own is used by that name; a Junos port made a member
 * of a VLAN from the VLAN's side (`set vlans NAME interface P.0`) reads so and is taken off it.
 */
import { expect } from 'chai';
import { SwitchSessions } from '../../hardware/switch-sessions';
import { CliSwitchDriver } from '../../drivers/switch/ssh/driver';
import { JUNOS_TABLE } from '../../drivers/switch/junos';
import { CUMULUS_NVUE_TABLE } from '../../drivers/switch/cumulus-nvue';
import { SwitchError, SwitchInfo } from '../../drivers/switch/types';
import { FABRIC_CASES, simFor } from '../helpers/switch-sims';
import { junosDefineVlan, junosVlanInterface } from '../sim/switch/junos';
import { nvuePending } from '../sim/switch/nvue';
import type { SwitchSim } from '../sim/switch/sim';

const settle = <T>(p: Promise<T>) => p.then(() => null, (e: SwitchError) => e);

describe('Switch sessions with a candidate configuration (Junos, NVUE)', function () {
  this.timeout(30_000);

  for (const [vendor, table] of [['junos', JUNOS_TABLE], ['cumulus_nvue', CUMULUS_NVUE_TABLE]] as const) {
    describe(vendor, () => {
      const c = FABRIC_CASES.find((x) => x.vendor === vendor)!;
      const [p1, p2, p3] = c.ports as [string, string, string];
      let sim: SwitchSim;
      let sessions: SwitchSessions;
      let info: SwitchInfo;

      beforeEach(async () => {
        sim = await simFor(c);
        sessions = new SwitchSessions(() => new CliSwitchDriver(table, { save: true, readyTimeoutMs: 5000 }), 5000);
        info = { name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password } };
      });

      it('commits the changes of queued operations once, in one login, and answers each', async () => {
        const out = await Promise.all([
          settle(sessions.submit(info, (s) => s.setNative(p1, 1001))),
          settle(sessions.submit(info, (s) => s.addTagged(p2, 1002))),
          settle(sessions.submit(info, (s) => s.addTagged(p3, 1003))),
        ]);
        expect(out).to.deep.equal([null, null, null]);
        expect(sim.logins).to.equal(1);
        expect(sim.commits).to.equal(1);
        expect(sim.carried(p1)).to.deep.equal({ native: 1001, tagged: [] });
        expect(sim.carried(p2)).to.deep.equal({ native: null, tagged: [1002] });
        expect(sim.carried(p3)).to.deep.equal({ native: null, tagged: [1003] });
      });

      it('takes a refused change out of the candidate: the changes staged before it are committed without it, the one after it too', async () => {
        // VLAN 4095 is no VLAN: the switch refuses the line that makes it
        const out = await Promise.all([
          settle(sessions.submit(info, (s) => s.addTagged(p1, 1001))),
          settle(sessions.submit(info, (s) => s.addTagged(p2, 4095))),
          settle(sessions.submit(info, (s) => s.addTagged(p3, 1003))),
        ]);
        expect(out[0]).to.equal(null);
        expect(out[1]).to.be.instanceOf(SwitchError);
        expect(out[1]!.message).to.match(/refused "[^"]*4095[^"]*"/);
        // Junos says so under a caret, without `error:`: `Value 4095 is not within range (1..4094) at '4095'`
        if (vendor === 'junos') expect(out[1]!.message).to.match(/Value 4095 is not within range/);
        expect(out[1]!.nothingSent, 'the refused change reached nothing').to.equal(true);
        expect(out[2]).to.equal(null);
        expect(sim.carried(p1)).to.deep.equal({ native: null, tagged: [1001] });
        expect(sim.portState(p2), 'untouched').to.deep.equal(sim.vendor.newPort());
        expect(sim.carried(p3)).to.deep.equal({ native: null, tagged: [1003] });
        expect(sim.received, 'the candidate thrown away after the refusal').to.include(vendor === 'junos' ? 'rollback 0' : 'nv config detach; echo $?');
        if (vendor === 'cumulus_nvue') expect(nvuePending(sim)).to.equal(false);
      });

      it('an operation refused at its second change, whose first one the group\'s commit applies, is not said to have changed nothing', async () => {
        // The driver takes out only the refused change; the operation's first change stays
        // staged and is committed with the operation queued before it.
        const out = await Promise.all([
          settle(sessions.submit(info, (s) => s.addTagged(p1, 1001))),
          settle(sessions.submit(info, async (s) => {
            await s.addTagged(p2, 1002);
            await s.addTagged(p2, 4095);
          })),
        ]);
        expect(out[0]).to.equal(null);
        expect(out[1]).to.be.instanceOf(SwitchError);
        expect(sim.carried(p2), 'its first change went out with the commit').to.deep.equal({ native: null, tagged: [1002] });
        expect(out[1]!.nothingSent, 'so the service sets its port back').to.equal(false);
      });

      it('a change whose line fails otherwise than by a refusal (no exit status, a sudo question) is taken out too: the group\'s commit does not carry its first lines', async () => {
        // The port's last line fails without the switch's refusal (the tool printed no exit
        // status): the lines before it, already in the candidate, must not ride on the commit
        // of the call staged before it.
        const last = vendor === 'junos' ? `set interfaces ${p2} native-vlan-id 1002` : `nv set interface ${p2} bridge domain br_default untagged 1002`;
        const patched = new CliSwitchDriver(table, { save: true, readyTimeoutMs: 5000 });
        const open = patched.open.bind(patched);
        patched.open = async (...a) => {
          const s = await open(...a) as unknown as { cli: { run(c: string, o?: object): Promise<string> } };
          const run = s.cli.run.bind(s.cli);
          s.cli.run = (c, o) => (c === last ? Promise.reject(new SwitchError(`"${c}" printed no exit status`)) : run(c, o));
          return s as never;
        };
        sessions = new SwitchSessions(() => patched, 5000);
        const out = await Promise.all([
          settle(sessions.submit(info, (s) => s.addTagged(p1, 1001))),
          settle(sessions.submit(info, (s) => s.setNative(p2, 1002))),
        ]);
        expect(out[0]).to.equal(null);
        expect(out[1]).to.be.instanceOf(SwitchError);
        expect(sim.carried(p1)).to.deep.equal({ native: null, tagged: [1001] });
        expect(sim.portState(p2), 'none of the failed change reached the port').to.deep.equal(sim.vendor.newPort());
        if (vendor === 'cumulus_nvue') expect(nvuePending(sim)).to.equal(false);
      });

      it('a refused commit fails every operation of its group, as having changed nothing', async () => {
        sim.faults.failCommit = true;
        const out = await Promise.all([
          settle(sessions.submit(info, (s) => s.addTagged(p1, 1001))),
          settle(sessions.submit(info, (s) => s.addTagged(p2, 1002))),
        ]);
        for (const e of out) {
          expect(e).to.be.instanceOf(SwitchError);
          expect(e!.message).to.match(/simulated fault.*nothing was applied/);
          expect(e!.nothingSent).to.equal(true);
        }
        expect(sim.commits).to.equal(0);
        expect(sim.carried(p1)).to.deep.equal(c.fresh);
        expect(sim.carried(p2)).to.deep.equal(c.fresh);
      });
    });
  }

  it('NVUE: an apply that fails after its checks (the revision written in part) is not said to have changed nothing', async () => {
    const c = FABRIC_CASES.find((x) => x.vendor === 'cumulus_nvue')!;
    const sim = await simFor(c);
    sim.faults.failApply = true;
    const sessions = new SwitchSessions(() => new CliSwitchDriver(CUMULUS_NVUE_TABLE, { save: true, readyTimeoutMs: 5000 }), 5000);
    const info = { name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password } };
    const err = await settle(sessions.submit(info, (s) => s.addTagged(c.ports[0]!, 1001)));
    expect(err).to.be.instanceOf(SwitchError);
    expect(err!.message).to.match(/Failure during apply/);
    expect(sim.carried(c.ports[0]!), 'the failed apply reached the port').to.deep.equal({ native: null, tagged: [1001] });
    expect(err!.nothingSent, 'so the service sets the port back').to.equal(false);
    expect(nvuePending(sim), 'nothing left pending').to.equal(false);
  });

  it('Junos: a VLAN the switch has under a name of its own is used by that name, none defined beside it', async () => {
    const c = FABRIC_CASES.find((x) => x.vendor === 'junos')!;
    const sim = await simFor(c);
    junosDefineVlan(sim, 'tenant-blue', 1002);
    const sessions = new SwitchSessions(() => new CliSwitchDriver(JUNOS_TABLE, { save: true, readyTimeoutMs: 5000 }), 5000);
    const info = { name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password } };
    await sessions.submit(info, (s) => s.addTagged(c.ports[0]!, 1002));
    expect(sim.carried(c.ports[0]!)).to.deep.equal({ native: null, tagged: [1002] });
    expect(sim.received.filter((l) => l.startsWith('set vlans'))).to.deep.equal([]);
    expect(sim.received).to.include(`set interfaces ${c.ports[0]} unit 0 family ethernet-switching vlan members tenant-blue`);
  });

  it('Junos: a VLAN added tagged on a port whose native-vlan-id names it without a member is tagged, not untagged', async () => {
    const c = FABRIC_CASES.find((x) => x.vendor === 'junos')!;
    const sim = await simFor(c);
    const port = c.ports[0]!;
    junosDefineVlan(sim, 'tenant-red', 1001);
    junosDefineVlan(sim, 'tenant-blue', 1002);
    // an operator deleted the native VLAN's member: its native-vlan-id stays, carrying nothing
    Object.assign(sim.portState(port), { mode: 'trunk', native: 1001, allowed: new Set([1002]) });
    expect(sim.carried(port)).to.deep.equal({ native: null, tagged: [1002] });
    const sessions = new SwitchSessions(() => new CliSwitchDriver(JUNOS_TABLE, { save: true, readyTimeoutMs: 5000 }), 5000);
    const info = { name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password } };
    await sessions.submit(info, (s) => s.addTagged(port, 1001));
    expect(sim.carried(port)).to.deep.equal({ native: null, tagged: [1001, 1002] });
  });

  describe('Junos: a port made a member of a VLAN from the VLAN\'s side (set vlans NAME interface P.0)', () => {
    const c = FABRIC_CASES.find((x) => x.vendor === 'junos')!;
    const port = c.ports[0]!;
    let sim: SwitchSim;
    let sessions: SwitchSessions;
    let info: SwitchInfo;
    beforeEach(async () => {
      sim = await simFor(c);
      junosDefineVlan(sim, 'tenant-red', 1001);
      junosDefineVlan(sim, 'tenant-blue', 1002);
      // the service's trunk with 1002 tagged, and an operator's membership of 1001 from the VLAN's side
      Object.assign(sim.portState(port), { mode: 'trunk', native: 'none', allowed: new Set([1002]) });
      junosVlanInterface(sim, 'tenant-red', `${port}.0`);
      expect(sim.carried(port)).to.deep.equal({ native: null, tagged: [1001, 1002] });
      sessions = new SwitchSessions(() => new CliSwitchDriver(JUNOS_TABLE, { save: true, readyTimeoutMs: 5000 }), 5000);
      info = { name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password } };
    });

    const read = async () => {
      let v: unknown;
      await sessions.submit(info, async (s) => {
        v = await s.getPortVlans(port);
      });
      return v;
    };

    it('reads as carrying that VLAN', async () => {
      expect(await read()).to.deep.include({ native: null, tagged: [1001, 1002] });
    });

    it('a reset takes it off (the vlans statement deleted), and the read-back confirms the port empty', async () => {
      await sessions.submit(info, (s) => s.resetPort(port));
      expect(sim.received).to.include(`delete vlans tenant-red interface ${port}.0`);
      expect(sim.carried(port)).to.deep.equal({ native: null, tagged: [] });
      expect(await read()).to.deep.include({ native: null, tagged: [] });
    });

    it('removing that VLAN tagged, or untagging it, deletes the vlans statement', async () => {
      await sessions.submit(info, (s) => s.removeTagged(port, 1001));
      expect(sim.carried(port)).to.deep.equal({ native: null, tagged: [1002] });
      junosVlanInterface(sim, 'tenant-red', `${port}.0`);
      await sessions.submit(info, (s) => s.setNative(port, 1001));
      expect(sim.carried(port)).to.deep.equal({ native: 1001, tagged: [1002] });
      await sessions.submit(info, (s) => s.removeNative(port));
      expect(sim.carried(port)).to.deep.equal({ native: null, tagged: [1002] });
    });

    it('in one session: removed, then untagged again, the VLAN is made a member of the port\'s own', async () => {
      await sessions.submit(info, async (s) => {
        await s.removeTagged(port, 1001);
        await s.setNative(port, 1001);
      });
      expect(sim.carried(port)).to.deep.equal({ native: 1001, tagged: [1002] });
    });

    it('an access port in a VLAN from the VLAN\'s side is reset before its first change: it ends with exactly the service\'s VLAN', async () => {
      Object.assign(sim.portState(port), { mode: 'access', access: 1, native: 'none', allowed: new Set() });
      expect(sim.carried(port)).to.deep.equal({ native: 1001, tagged: [] });
      await sessions.submit(info, (s) => s.setNative(port, 1003));
      expect(sim.carried(port)).to.deep.equal({ native: 1003, tagged: [] });
    });

    it('one the session never read stays on the port: the read-back after the commit fails the change', async () => {
      const err = await settle(sessions.submit(info, async (s) => {
        await s.getPortVlans(port);
        // an operator adds another between the session's reading and its change
        junosVlanInterface(sim, 'tenant-blue', `${port}.0`);
        await s.resetPort(port);
      }));
      expect(err).to.be.instanceOf(SwitchError);
      expect(err!.message).to.match(/does not read back as asked after the commit: expected trunk, native none, allowed none, the switch shows trunk, native none, allowed 1002/);
    });
  });
});
