/**
 * VLANs exist before a port uses them: Arista EOS lists a VLAN it lacks on a trunk and forwards
 * nothing on it (its simulator does the same), so the driver makes each VLAN first, once per
 * session, and never deletes one; so do the other SSH families, on switches that have VLAN 1
 * only (the Dell simulators refuse a VLAN that does not exist).
 */
import { expect } from 'chai';
import { SwitchSessions } from '../../../../hardware/switch-sessions';
import { CliSwitchDriver } from '../../../../drivers/switch/ssh/driver';
import { ARISTA_EOS_TABLE } from '../../../../drivers/switch/arista-eos';
import { simFor, VENDOR_CASES } from '../../../helpers/switch-sims';
import { SWITCH_DRIVERS } from '../../../../drivers/switch';

describe('Arista EOS: VLANs made before a port carries them', function () {
  this.timeout(20_000);
  const c = VENDOR_CASES.find((x) => x.vendor === 'arista_eos')!;

  it('the simulator, as the switch, forwards nothing on a VLAN that is not configured', async () => {
    const sim = await simFor(c);
    Object.assign(sim.portState('Ethernet1'), { mode: 'trunk', native: 1001, allowed: new Set([1001, 1002]) });
    expect(sim.carried('Ethernet1')).to.deep.equal({ native: null, tagged: [] });
    sim.vlans.add(1002);
    expect(sim.carried('Ethernet1')).to.deep.equal({ native: null, tagged: [1002] });
  });

  it('makes each VLAN once per session before the port that uses it, and deletes none', async () => {
    const sim = await simFor(c);
    const sessions = new SwitchSessions(() => new CliSwitchDriver(ARISTA_EOS_TABLE, { save: true, readyTimeoutMs: 5000 }), 5000);
    const info = { name: 'eos', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password } };
    await Promise.all([
      sessions.submit(info, (s) => s.setNative('Ethernet1', 1001)),
      sessions.submit(info, (s) => s.addTagged('Ethernet2', 1001)),
    ]);
    expect(sim.logins).to.equal(1);
    expect(sim.carried('Ethernet1')).to.deep.equal({ native: 1001, tagged: [] });
    expect(sim.carried('Ethernet2')).to.deep.equal({ native: null, tagged: [1001] });
    expect(sim.received.filter((l) => l === 'vlan 1001')).to.have.length(1);
    expect(sim.received.indexOf('vlan 1001')).to.be.below(sim.received.indexOf('interface Ethernet1'));
    await sessions.submit(info, (s) => s.removeNative('Ethernet1'));
    expect(sim.vlans.has(1001)).to.equal(true);
    expect(sim.received.some((l) => /^no vlan/.test(l))).to.equal(false);
  });
});

describe('Every SSH family makes the VLANs a port uses', function () {
  this.timeout(20_000);
  for (const c of VENDOR_CASES) {
    it(`${c.vendor}: on a switch with VLAN 1 only`, async () => {
      const sim = await simFor(c, { vlans: '1' });
      const entry = SWITCH_DRIVERS.find((e) => e.type === c.type)!;
      const table = (entry.create({ settings: {} as never }) as CliSwitchDriver).table;
      const sessions = new SwitchSessions(() => new CliSwitchDriver(table, { save: true, readyTimeoutMs: 5000 }), 5000);
      // the dummy VLAN of a Nexus carries nothing and need not exist; the N3000's is made at each login
      const info = { name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password, ...c.extra } };
      const [p1] = c.ports as [string];
      await sessions.submit(info, (s) => s.setNative(p1, 1001));
      await sessions.submit(info, (s) => s.addTagged(p1, 1002));
      expect(sim.vlans.has(1001) && sim.vlans.has(1002), 'both VLANs made').to.equal(true);
      expect(sim.carried(p1)).to.deep.equal({ native: 1001, tagged: [1002] });
    });
  }
});
