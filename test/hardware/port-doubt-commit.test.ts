/**
 * A port in doubt on a switch whose changes wait for a commit (Junos, NVUE), against their
 * simulators over real SSH: its set-back is only staged when the call's work ends, so its doubt
 * may be cleared only once the commit applied it; a refused commit leaves the port in doubt
 * (and set back again later), not recorded as settled while it still carries the VLAN.
 */
import { expect } from 'chai';
import { PortHardware } from '../../hardware/port-hardware';
import { SwitchSessions } from '../../hardware/switch-sessions';
import { CliSwitchDriver } from '../../drivers/switch/ssh/driver';
import { JUNOS_TABLE } from '../../drivers/switch/junos';
import { CUMULUS_NVUE_TABLE } from '../../drivers/switch/cumulus-nvue';
import type { SwitchInfo } from '../../drivers/switch/types';
import type { PortState } from '../../actors/port/protocol';
import { portId } from '../../actors/ids';
import { FABRIC_CASES, simFor } from '../helpers/switch-sims';

describe('ports in doubt on a switch with a candidate configuration', function () {
  this.timeout(30_000);

  for (const [vendor, table] of [['junos', JUNOS_TABLE], ['cumulus_nvue', CUMULUS_NVUE_TABLE]] as const) {
    describe(vendor, () => {
      const c = FABRIC_CASES.find((x) => x.vendor === vendor)!;
      const port = c.ports[0]!;
      const id = portId('sw', port);

      /** The port wired to n1/eth0, held empty, in doubt of VLAN 1001, which the switch does carry. */
      async function setUp() {
        const sim = await simFor(c);
        const sessions = new SwitchSessions(() => new CliSwitchDriver(table, { save: true, readyTimeoutMs: 5000 }), 5000);
        const info: SwitchInfo = { name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password } };
        await sessions.submit(info, (s) => s.addTagged(port, 1001));
        expect(sim.carried(port)).to.deep.equal({ native: null, tagged: [1001] });
        const doubts = new Set([id]);
        const state: PortState = { switch: 'sw', name: port, registeredAt: 0, wire: { node: 'n1', nic: 'eth0' }, config: { native: null, tagged: [] }, doubt: { vlans: [1001], since: 0 } };
        const hw = new PortHardware({
          sessions,
          operationPending: () => false,
          switchInfo: (name) => (name === 'sw' ? info : undefined),
          record: async () => undefined,
          stopping: () => false,
          doubt: async (p) => void doubts.add(p),
          settled: async (p) => void doubts.delete(p),
          settle: async () => null,
          owesSetBack: (p) => doubts.has(p),
          // no retry of its own within the test
          settleRetryMs: 600_000,
        });
        return { sim, hw, state, doubts };
      }

      it('a set-back whose commit the switch refuses leaves the port in doubt', async () => {
        const { sim, hw, state, doubts } = await setUp();
        sim.faults.failCommit = true;
        const why = await hw.settle(state);
        hw.close();
        expect(sim.carried(port), 'the set-back was not applied').to.deep.equal({ native: null, tagged: [1001] });
        expect(doubts.has(id), 'still in doubt').to.equal(true);
        expect(why, 'the set-back is said to have failed').to.be.a('string');
      });

      it('a set-back the commit applies clears the doubt', async () => {
        const { sim, hw, state, doubts } = await setUp();
        const why = await hw.settle(state);
        hw.close();
        expect(why).to.equal(null);
        expect(sim.carried(port)).to.deep.equal({ native: null, tagged: [] });
        expect(doubts.has(id)).to.equal(false);
      });
    });
  }
});
