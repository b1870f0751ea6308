/**
 * The REST switch sessions against their simulators, below the service: one keep-alive
 * connection per session, a timeout on every request, a session cut at once when the service
 * gives up on a call, the administrative state set and read back, the wiring tables read page by
 * page (a shut port learns nothing), and the password masked out of an error that echoes it.
 */
import { expect } from 'chai';
import { BROCADE_TABLE } from '../../../../drivers/switch/brocade';
import { DELL_OS9_TABLE } from '../../../../drivers/switch/dellnos9';
import { RestSwitchDriver, RestTable } from '../../../../drivers/switch/http/driver';
import { SwitchError, SwitchSession } from '../../../../drivers/switch/types';
import { startRestSim, AnyRestSim } from '../../../sim/rest-switch';
import type { BrocadeSim, RestVendorName } from '../../../sim/rest-switch';

const CASES: Array<{ vendor: RestVendorName; table: RestTable<any>; ports: [string, string, string] }> = [
  { vendor: 'brocade', table: BROCADE_TABLE, ports: ['101/0/1', '101/0/2', '101/0/3'] },
  { vendor: 'dellnos9', table: DELL_OS9_TABLE, ports: ['1/1', '1/2', '1/3'] },
];
const PASSWORD = 'Sw1tch-pa55word';

for (const c of CASES) {
  describe(`RestTableSession: ${c.vendor}`, function () {
    this.timeout(20_000);
    let sim: AnyRestSim;
    const open = (timeoutMs = 5000, signal = AbortSignal.timeout(10_000), password = PASSWORD): Promise<SwitchSession> =>
      new RestSwitchDriver(c.table, { requestTimeoutMs: timeoutMs, save: false }).open({
        name: 'sw', type: c.vendor, fields: { hostname: sim.url, username: 'hilt', password, interface_type: 'TenGigabitEthernet' },
      }, signal);

    beforeEach(async () => {
      sim = await startRestSim(c.vendor, { username: 'hilt', password: PASSWORD, pageSize: 2 });
    });
    afterEach(async () => {
      await sim.close();
    });

    it('carries every call of a session over one connection, and a new session over a new one', async () => {
      const s = await open();
      await s.setNative(c.ports[0], 1001);
      await s.addTagged(c.ports[0], 1002);
      await s.addTagged(c.ports[1], 1003);
      expect(await s.getPortVlans(c.ports[0])).to.deep.include({ native: 1001, tagged: [1002] });
      await s.close();
      expect(sim.connections).to.equal(1);
      expect(sim.requests.length).to.be.above(8);
      const again = await open();
      await again.getPortVlans(c.ports[1]);
      await again.close();
      expect(sim.connections).to.equal(2);
    });

    it('sets the administrative state and reads it back', async () => {
      const s = await open();
      await s.setEnabled!(c.ports[2], false);
      expect(sim.port(c.ports[2]).shutdown).to.equal(true);
      expect((await s.getPortVlans(c.ports[2])).enabled).to.equal(false);
      await s.setEnabled!(c.ports[2], true);
      expect(sim.port(c.ports[2]).shutdown).to.equal(false);
      expect((await s.getPortVlans(c.ports[2])).enabled).to.equal(true);
      const changes = sim.changes;
      await s.setEnabled!(c.ports[2], true);
      expect(sim.changes, 'a port already up is left alone').to.equal(changes);
      await s.close();
    });

    it('reads the wiring tables of every port in as few requests as the switch allows, all pages; a shut port learns nothing', async () => {
      const s = await open();
      // layer-2 ports that are up (an OS9 port starts routed and shut)
      for (const p of c.ports) {
        await s.resetPort(p);
        await s.setEnabled!(p, true);
      }
      sim.setWiring(c.ports[0], { macs: ['52:54:00:00:00:01', '52:54:00:00:00:02'], lldp: { chassisId: '52:54:00:00:00:01', portId: 'eth0', systemName: 'node-1' } });
      sim.setWiring(c.ports[1], { macs: ['52:54:00:00:00:03'], lldp: { chassisId: '52:54:00:00:00:03', portId: 'eth1' } });
      sim.setWiring(c.ports[2], { macs: ['52:54:00:00:00:04'] });
      const before = sim.requests.length;
      const w = await s.readWiring!([c.ports[0], c.ports[1]]);
      expect(Object.fromEntries(w)).to.deep.equal({
        [c.ports[0]]: { macs: ['52:54:00:00:00:01', '52:54:00:00:00:02'], lldp: [{ chassisId: '52:54:00:00:00:01', portId: 'eth0', systemName: 'node-1' }] },
        [c.ports[1]]: { macs: ['52:54:00:00:00:03'], lldp: [{ chassisId: '52:54:00:00:00:03', portId: 'eth1' }] },
        [c.ports[2]]: { macs: ['52:54:00:00:00:04'], lldp: [] },
      });
      // OS9: two show commands; NOS: pages of two rows (two of the four MACs, one of the two neighbours)
      expect(sim.requests.length - before).to.equal(c.vendor === 'dellnos9' ? 2 : 3);
      await s.setEnabled!(c.ports[0], false);
      expect((await s.readWiring!([c.ports[0]])).get(c.ports[0])).to.deep.equal({ macs: [], lldp: [] });
      await s.close();
    });

    it('reads the MAC table of a switch that refuses LLDP (not enabled): no neighbours, not a failure', async () => {
      const s = await open();
      await s.resetPort(c.ports[0]);
      await s.setEnabled!(c.ports[0], true);
      sim.setWiring(c.ports[0], { macs: ['52:54:00:00:00:01'], lldp: { chassisId: '52:54:00:00:00:01', portId: 'eth0' } });
      sim.vendor.lldpDisabled = true;
      expect((await s.readWiring!([c.ports[0]])).get(c.ports[0])).to.deep.equal({ macs: ['52:54:00:00:00:01'], lldp: [] });
      await s.close();
    });

    it('fails the wiring read of a switch whose LLDP request fails (503): its neighbours are not taken for none', async () => {
      const s = await open();
      await s.resetPort(c.ports[0]);
      await s.setEnabled!(c.ports[0], true);
      sim.setWiring(c.ports[0], { macs: ['52:54:00:00:00:01'], lldp: { chassisId: '52:54:00:00:00:09', portId: '52:54:00:00:00:09' } });
      sim.vendor.lldpFailing = true;
      const err = await s.readWiring!([c.ports[0]]).then(() => null, (e: Error) => e);
      expect(err, 'the wiring read').to.be.instanceOf(Error);
      expect(err!.message).to.match(/503/);
      await s.close().catch(() => undefined);
    });

    it('bounds every request by its timeout', async () => {
      const s = await open(300);
      sim.hang = 'all';
      const t0 = Date.now();
      const err = await s.getPortVlans(c.ports[0]).then(() => null, (e: Error) => e);
      expect(err).to.be.instanceOf(SwitchError);
      expect(err!.message).to.match(/no answer within 300 ms \(the switch stopped answering\)/);
      expect(Date.now() - t0).to.be.below(3000);
      await s.close();
    });

    it('gives up a login when its signal aborts, and a call when the session is closed under it', async () => {
      sim.hang = 'all';
      const t0 = Date.now();
      const err = await open(10_000, AbortSignal.timeout(200)).then(() => null, (e: Error) => e);
      expect(err!.message).to.match(/stopped, the call ran out of time/);
      sim.hang = false;
      const s = await open(10_000);
      sim.hang = 'all';
      const call = s.setNative(c.ports[0], 1001).then(() => null, (e: Error) => e);
      await new Promise((r) => setTimeout(r, 100));
      await s.close();
      expect((await call)!.message).to.match(/stopped, the call ran out of time/);
      expect(Date.now() - t0).to.be.below(3000);
    });

    it('masks the password (and the Basic token) out of the switch\'s words', async () => {
      const s = await open();
      const token = Buffer.from(`hilt:${PASSWORD}`).toString('base64');
      sim.failChanges = { status: 400, message: `%Error: bad login ${PASSWORD} / ${token}` };
      const err = await s.setNative(c.ports[0], 1001).then(() => null, (e: Error) => e);
      expect(err!.message).to.match(/%Error: bad login \*\*\* \/ \*\*\*/);
      expect(err!.message).not.to.include(PASSWORD);
      expect(s.changesSent, 'the refused change counts as sent').to.be.above(0);
      await s.close();
    });

    it('masks a password holding runs of spaces, which quoting the switch collapses', async () => {
      const spaced = 'pa55  word\u00a0 x';
      await sim.close();
      sim = await startRestSim(c.vendor, { username: 'hilt', password: spaced, pageSize: 2 });
      const s = await open(5000, AbortSignal.timeout(10_000), spaced);
      sim.failChanges = { status: 400, message: `%Error: bad login ${spaced}` };
      const err = await s.setNative(c.ports[0], 1001).then(() => null, (e: Error) => e);
      expect(err!.message).to.match(/%Error: bad login \*\*\*/);
      expect(err!.message).not.to.match(/pa55|word/);
      await s.close();
    });
  });
}

describe('RestTableSession: a port with settings the service never sets (Brocade, its native VLAN tagged by hand)', function () {
  this.timeout(20_000);
  it('refuses a change of one VLAN, sending nothing, rather than reset the port and drop the VLANs the service holds on it', async () => {
    const sim = (await startRestSim('brocade', { username: 'hilt', password: PASSWORD })) as BrocadeSim;
    try {
      const open = () => new RestSwitchDriver(BROCADE_TABLE, { requestTimeoutMs: 5000, save: false }).open({
        name: 'sw', type: 'brocade', fields: { hostname: sim.url, username: 'hilt', password: PASSWORD, interface_type: 'TenGigabitEthernet' },
      }, AbortSignal.timeout(10_000));
      const s = await open();
      await s.setNative('101/0/1', 1001);
      await s.addTagged('101/0/1', 1002);
      await s.close();
      // behind the service's back: `switchport trunk tag native-vlan`
      sim.vendor.ports.get('101/0/1')!.tagNative = true;
      const again = await open();
      const changes = sim.changes;
      const err = await again.removeTagged('101/0/1', 1002).then(() => null, (e: Error) => e);
      expect(err, 'a removal that also took native VLAN 1001 off would leave the service holding it').to.be.instanceOf(SwitchError);
      expect(err!.message).to.match(/native VLAN 1001 sent tagged/);
      expect(sim.changes, 'nothing sent').to.equal(changes);
      expect(sim.vendor.carried('101/0/1').tagged).to.include(1002);
      // a reset (port_revert, a drift repair) still takes it back
      await again.resetPort('101/0/1');
      await again.setNative('101/0/1', 1001);
      expect(await again.getPortVlans('101/0/1')).to.deep.include({ native: 1001, tagged: [] });
      await again.close();
    } finally {
      await sim.close();
    }
  });
});
