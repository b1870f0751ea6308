/**
 * Dell OS10's default VLAN against its simulator over real SSH: the running configuration
 * leaves the default untagged VLAN 1 out, in trunk mode as in access mode, so a trunk an
 * operator made (`switchport mode trunk`, nothing else) is untagged in VLAN 1. The port's first
 * network must not leave it there beside the tenant's VLAN.
 */
import { expect } from 'chai';
import { PortHardware } from '../../hardware/port-hardware';
import { SwitchSessions } from '../../hardware/switch-sessions';
import { CliSwitchDriver } from '../../drivers/switch/ssh/driver';
import { DELL_OS10_TABLE } from '../../drivers/switch/dellos10';
import type { SwitchInfo } from '../../drivers/switch/types';
import type { PortState } from '../../actors/port/protocol';
import { FABRIC_CASES, simFor } from '../helpers/switch-sims';

describe('Dell OS10: a trunk in the default VLAN', function () {
  this.timeout(30_000);
  const c = FABRIC_CASES.find((x) => x.vendor === 'dellos10')!;
  const port = c.ports[0]!;

  it('reads a trunk without a "switchport access vlan" line as untagged in VLAN 1, and the first network takes it off', async () => {
    const sim = await simFor(c);
    // an operator's `switchport mode trunk` on a factory port: still untagged in VLAN 1
    Object.assign(sim.portState(port), { mode: 'trunk', access: 1, allowed: new Set<number>() });
    expect(sim.carried(port)).to.deep.equal({ native: 1, tagged: [] });
    const sessions = new SwitchSessions(() => new CliSwitchDriver(DELL_OS10_TABLE, { save: true, readyTimeoutMs: 5000 }), 5000);
    const info: SwitchInfo = { name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password } };
    let read: unknown;
    await sessions.submit(info, async (s) => { read = await s.getPortVlans(port); });
    expect(read).to.deep.include({ native: 1, tagged: [] });

    const state: PortState = { switch: 'sw', name: port, registeredAt: 0, wire: { node: 'n1', nic: 'eth0' }, config: { native: null, tagged: [] } };
    const hw = new PortHardware({
      sessions,
      operationPending: () => false,
      switchInfo: (name) => (name === 'sw' ? info : undefined),
      record: async () => undefined,
      stopping: () => false,
      doubt: async () => undefined,
      settled: async () => undefined,
      settle: async () => null,
      owesSetBack: () => false,
    });
    const failed = await hw.apply(state, { kind: 'attach', native: false, vlan: 1001 });
    hw.close();
    expect(failed).to.equal(null);
    expect(sim.carried(port), 'the tenant\'s VLAN only').to.deep.equal({ native: null, tagged: [1001] });
  });
});
