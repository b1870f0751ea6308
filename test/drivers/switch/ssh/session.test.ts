/**
 * The SSH session class and the table machinery against each vendor's simulator over real
 * SSH, without the service: login dialogues, retries on transport errors only, the signal
 * ending a hung login, host keys, read-back checks, saving once per session, masking.
 */
import { expect } from 'chai';
import { createServer } from 'node:net';
import { CliSwitchDriver } from '../../../../drivers/switch/ssh/driver';
import { CliSession } from '../../../../drivers/switch/ssh/cli';
import { SwitchError, SwitchLog } from '../../../../drivers/switch/types';
import { SWITCH_DRIVERS } from '../../../../drivers/switch';
import { FABRIC_CASES, simFor, VENDOR_CASES } from '../../../helpers/switch-sims';
import type { SwitchSim } from '../../../sim/switch/sim';
import { nvuePending } from '../../../sim/switch/nvue';
import { CUMULUS_NVUE_TABLE } from '../../../../drivers/switch/cumulus-nvue';

const live = () => new AbortController().signal;
const rejected = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a rejection'); }, (e: Error) => e);

/** A log that keeps its lines. */
function recordingLog(): SwitchLog & { lines: string[] } {
  const lines: string[] = [];
  const rec = (_o: object, m: string) => void lines.push(m);
  return { lines, debug: rec, info: rec, warn: rec };
}

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('SSH switch sessions against the simulators', function () {
  this.timeout(20_000);

  for (const c of VENDOR_CASES) {
    describe(c.vendor, () => {
      const entry = SWITCH_DRIVERS.find((e) => e.type === c.type)!;
      const driver = (save = true) => new CliSwitchDriver((entry.create({ settings: {} as never }) as CliSwitchDriver).table, { save, readyTimeoutMs: 5000, retryDelayMs: 20 });
      const info = (sim: SwitchSim, over: Record<string, unknown> = {}, hostKey?: string) => ({
        name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password, ...c.extra, ...over }, ...(hostKey ? { hostKey } : {}),
      });
      let sim: SwitchSim;
      before(async () => {
        sim = await simFor(c);
      });

      it('logs in as the switch expects, reports its host key, and turns paging off', async () => {
        const s = await driver().open(info(sim), live());
        expect(s.hostKey).to.equal(sim.hostKey);
        const paging = c.vendor === 'powerconnect55xx' ? 'terminal datadump' : 'terminal length 0';
        // DNOS6 and EOS accounts land at `>`: enable first
        expect(sim.received).to.deep.equal(c.vendor === 'arista_eos' || c.vendor === 'delln3000' ? ['enable', paging] : [paging]);
        expect(await s.getPortVlans(c.ports[0]!)).to.deep.equal({ native: 1, tagged: [], enabled: true });
        await s.close();
        // nothing changed: nothing saved
        expect(sim.saves).to.equal(0);
      });

      it('checks every change by reading the port back: a change the switch did not make fails', async () => {
        const s = await driver().open(info(sim), live());
        await s.addTagged(c.ports[1]!, 1001);
        sim.faults.ignoreChanges = 1;
        const err = await rejected(s.addTagged(c.ports[1]!, 1002));
        expect(err).to.be.instanceOf(SwitchError);
        expect(err.message).to.match(/port \S+ does not read back as asked after "add tagged VLAN 1002": expected trunk, native none, allowed 1001-1002, the switch shows trunk, native none, allowed 1001/);
        await s.close(AbortSignal.timeout(5000));
        expect(sim.carried(c.ports[1]!)).to.deep.equal({ native: null, tagged: [1001] });
      });

      it('counts the change lines it sends (changesSent): not reads, not a change already made, not one refused at the interface (or the VLAN it makes first)', async () => {
        const s = await driver().open(info(sim), live());
        const port = c.ports[3]!;
        await s.getPortVlans(port);
        expect(s.changesSent).to.equal(0);
        await s.addTagged(port, 1005);
        const sent = s.changesSent!;
        expect(sent).to.be.above(0);
        await s.addTagged(port, 1005);
        expect(s.changesSent).to.equal(sent);
        sim.faults.failConfig = true;
        try {
          expect((await rejected(s.addTagged(port, 1006))).message).to.match(/refused "(interface |vlan )/);
        } finally {
          sim.faults.failConfig = false;
        }
        expect(s.changesSent).to.equal(sent);
        await s.close(AbortSignal.timeout(5000));
      });

      it('saves once when the session that changed the switch closes, and not at all with saving off', async () => {
        const saves = sim.saves;
        const s = await driver().open(info(sim), live());
        await s.setNative(c.ports[2]!, 1003);
        await s.addTagged(c.ports[2]!, 1004);
        await s.close(AbortSignal.timeout(5000));
        expect(sim.saves).to.equal(saves + 1);
        const t = await driver(false).open(info(sim), live());
        await t.removeNative(c.ports[2]!);
        await t.close(AbortSignal.timeout(5000));
        expect(sim.saves).to.equal(saves + 1);
        expect(sim.carried(c.ports[2]!)).to.deep.equal({ native: null, tagged: [1004] });
      });

      it('shuts a port and brings it up with the vendor\'s commands, reading its administrative state back', async () => {
        const s = await driver(false).open(info(sim), live());
        const port = c.ports[1]!;
        const before = sim.received.length;
        await s.setEnabled!(port, false);
        expect(sim.isUp(port)).to.equal(false);
        const sent = sim.received.slice(before);
        expect(sent).to.include('shutdown');
        const show = c.vendor === 'nexus' ? `show interface ${port}` : c.vendor === 'arista_eos' ? `show interfaces ${port} status` : `show interfaces configuration ${port}`;
        expect(sent.filter((l) => l === show), 'read before and after').to.have.length(2);
        expect((await s.getPortVlans(port)).enabled).to.equal(false);
        const changes = s.changesSent!;
        await s.setEnabled!(port, false);
        expect(s.changesSent, 'a shut port is not shut again').to.equal(changes);
        await s.setEnabled!(port, true);
        expect(sim.isUp(port)).to.equal(true);
        expect(sim.received).to.include('no shutdown');
        // A switch that says yes and does nothing: the read-back catches it.
        sim.faults.ignoreChanges = 1;
        const err = await rejected(s.setEnabled!(port, false));
        expect(err.message).to.match(/does not read back as asked after "shut the port down": the switch shows it administratively up/);
        await s.close(AbortSignal.timeout(5000));
      });

      it('reads the learned MACs and LLDP neighbours of every port in two commands, as the service names its ports; a shut port shows nothing', async () => {
        const [a, b, x] = c.ports as [string, string, string];
        sim.learn(a, 'de:ad:be:ef:10:01', 1001);
        sim.learn(a, '52:54:00:aa:00:01', 1001);
        sim.learn(b, 'DE-AD-BE-EF-10-02');
        sim.neighbor(a, { chassisId: 'de:ad:be:ef:10:00', portId: 'de:ad:be:ef:10:01', systemName: 'node-a' });
        const other = sim.vendor.portNames[20]!;
        sim.learn(other, 'de:ad:be:ef:10:99');
        sim.portState(x).shutdown = true;
        sim.learn(x, 'de:ad:be:ef:10:03');
        try {
          const s = await driver(false).open(info(sim), live());
          const before = sim.received.length;
          const w = await s.readWiring!([a, b, x]);
          expect(sim.received.length - before).to.equal(2);
          expect(w.get(a)).to.deep.equal({ macs: ['52:54:00:aa:00:01', 'de:ad:be:ef:10:01'], lldp: [{ chassisId: 'de:ad:be:ef:10:00', portId: 'de:ad:be:ef:10:01', systemName: 'node-a' }] });
          expect(w.get(b)).to.deep.equal({ macs: ['de:ad:be:ef:10:02'], lldp: [] });
          expect(w.get(x)).to.deep.equal({ macs: [], lldp: [] });
          // A port the service did not ask about is listed under the name the switch printed.
          const rest = [...w.entries()].filter(([p]) => ![a, b, x].includes(p));
          expect(rest.map(([, v]) => v)).to.deep.equal([{ macs: ['de:ad:be:ef:10:99'], lldp: [] }]);
          await s.close();
        } finally {
          for (const p of [a, b, x, other]) {
            sim.learn(p, null);
            sim.neighbor(p, null);
          }
          sim.portState(x).shutdown = false;
        }
      });

      it('reads a native VLAN that is off the trunk\'s allowed list as no native VLAN (the switch forwards nothing untagged there)', async () => {
        // An operator's `switchport trunk allowed vlan remove 1101` on a port the service holds
        // natively on 1101 and tagged on 1102: the drift audit must see the native VLAN gone.
        const port = c.ports[2]!;
        for (const v of [1101, 1102]) sim.vlans.add(v);
        Object.assign(sim.portState(port), { switchport: true, mode: 'trunk', native: 1101, allowed: new Set([1102]) });
        expect(sim.carried(port)).to.deep.equal({ native: null, tagged: [1102] });
        const s = await driver().open(info(sim), live());
        const v = await s.getPortVlans(port);
        expect({ native: v.native, tagged: v.tagged }).to.deep.equal(sim.carried(port));
        // and a change from there leaves exactly what is asked
        await s.setNative(port, 1101);
        expect(sim.carried(port)).to.deep.equal({ native: 1101, tagged: [1102] });
        await s.close(AbortSignal.timeout(5000));
      });

      it('does not retry a refused login, and says so without the password', async () => {
        const log = recordingLog();
        const err = await rejected(driver().open(info(sim, { password: `${sim.password}-wrong` }), live(), { log }));
        expect(err.message).to.match(/login refused for user hilt: wrong user name or password/);
        expect(err.message).to.not.include(sim.password);
        expect(log.lines.filter((l) => /trying again/.test(l))).to.have.length(0);
      });

      it('retries a login whose connection drops (transport errors only), then gives up saying why', async () => {
        const dropping = await simFor(c, { faults: { drop: 'login' } });
        const log = recordingLog();
        const err = await rejected(driver().open(info(dropping), live(), { log }));
        expect(err.message).to.match(/closed the (connection|session).*\(3 login attempts\)/);
        expect(log.lines.filter((l) => /trying again/.test(l))).to.have.length(2);
        const unreachable = await rejected(driver().open(info(sim, { hostname: `127.0.0.1:${await closedPort()}` }), live()));
        expect(unreachable.message).to.match(/cannot reach the switch \(connect ECONNREFUSED 127\.0\.0\.1:\d+\) \(3 login attempts\)/);
      });

      it('gives up a login that hangs when its signal aborts', async () => {
        const hung = await simFor(c, { faults: { hang: 'login' } });
        const t0 = Date.now();
        const err = await rejected(driver().open(info(hung), AbortSignal.timeout(300)));
        expect(Date.now() - t0).to.be.below(1500);
        expect(err.name).to.match(/TimeoutError|AbortError/);
      });

      it('refuses a switch whose host key is not the recorded one, before logging in', async () => {
        const logins = sim.logins;
        const err = await rejected(driver().open(info(sim, {}, `SHA256:${'B'.repeat(43)}`), live()));
        expect(err.message).to.include(`host key changed: the service recorded SHA256:${'B'.repeat(43)}, the switch presented ${sim.hostKey}`);
        expect(sim.logins).to.equal(logins);
      });
    });
  }

  it('does not take a banner line ending in "#" for the prompt', async () => {
    const c = VENDOR_CASES.find((x) => x.vendor === 'nexus')!;
    const sim = await simFor(c, { banner: '\n##############################\n# Authorized access only #\n##############################\n' });
    const entry = SWITCH_DRIVERS.find((e) => e.type === c.type)!;
    const driver = new CliSwitchDriver((entry.create({ settings: {} as never }) as CliSwitchDriver).table, { save: false, readyTimeoutMs: 5000 });
    const s = await driver.open({ name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password, ...c.extra } }, AbortSignal.timeout(5000));
    expect(await s.getPortVlans('Ethernet1/5')).to.deep.equal({ native: 1, tagged: [], enabled: true });
    await s.close();
  });

  it('Arista EOS: reads the administrative state from the Status column, whatever the port\'s description says', async () => {
    const c = VENDOR_CASES.find((x) => x.vendor === 'arista_eos')!;
    const sim = await simFor(c);
    const port = c.ports[0]!;
    sim.portState(port).description = 'disabled in rack';
    const entry = SWITCH_DRIVERS.find((e) => e.type === c.type)!;
    const driver = new CliSwitchDriver((entry.create({ settings: {} as never }) as CliSwitchDriver).table, { save: false, readyTimeoutMs: 5000 });
    const s = await driver.open({ name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password } }, live());
    try {
      expect((await s.getPortVlans(port)).enabled).to.equal(true);
      await s.setEnabled!(port, false);
      expect(sim.isUp(port)).to.equal(false);
    } finally {
      await s.close();
    }
  });

  it('Dell OS10: takes a trunk an operator opened to every VLAN down to the one asked', async () => {
    const c = FABRIC_CASES.find((x) => x.vendor === 'dellos10')!;
    const sim = await simFor(c, { vlans: '1-4093' });
    const port = c.ports[0]!;
    // an uplink's configuration left on the port: `switchport trunk allowed vlan 1-4093`
    Object.assign(sim.portState(port), { mode: 'trunk', access: 1, allowed: new Set(Array.from({ length: 4093 }, (_, i) => i + 1)) });
    const entry = SWITCH_DRIVERS.find((e) => e.type === c.type)!;
    const driver = new CliSwitchDriver((entry.create({ settings: {} as never }) as CliSwitchDriver).table, { save: false, readyTimeoutMs: 5000 });
    const s = await driver.open({ name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password } }, live());
    try {
      await s.addTagged(port, 1001);
      expect(sim.carried(port)).to.deep.equal({ native: null, tagged: [1001] });
    } finally {
      await s.close();
    }
  });

  for (const [vendor, lag, member] of [['junos', 'ae0', 'ae0'], ['dellos10', '10', 'port-channel10'], ['sonic', 'PortChannel0001', 'PortChannel0001'], ['cumulus_nvue', 'bond1', 'bond1']] as const) {
    it(`${vendor}: reads a member of a link aggregation as carrying the bundle's VLANs, and changes it not at all`, async () => {
      const c = FABRIC_CASES.find((x) => x.vendor === vendor)!;
      const sim = await simFor(c);
      const port = c.ports[0]!;
      sim.portState(port).lag = lag;
      const entry = SWITCH_DRIVERS.find((e) => e.type === c.type)!;
      const driver = new CliSwitchDriver((entry.create({ settings: {} as never }) as CliSwitchDriver).table, { save: false, readyTimeoutMs: 5000 });
      const s = await driver.open({ name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password } }, live());
      try {
        // not an empty port: the drift audit must see what it carries
        expect(await s.getPortVlans(port)).to.deep.include({ native: null, tagged: [], other: [`member of ${member} (carries its VLANs)`] });
        const before = sim.received.length;
        for (const change of [() => s.addTagged(port, 1001), () => s.resetPort(port)]) {
          const err = await rejected(change());
          expect(err.message).to.match(new RegExp(`port ${port} is a member of ${member}`));
        }
        expect(sim.received.slice(before).filter((l) => /^(set|delete|switchport|no switchport|configure|interface|sudo config|nv (set|unset|config apply))/.test(l)), 'nothing sent').to.deep.equal([]);
        expect(s.changesSent).to.equal(0);
      } finally {
        await s.close();
      }
    });
  }

  it('cumulus_nvue: a change another login as the same user staged in the shared pending revision is not applied with ours', async () => {
    const c = FABRIC_CASES.find((x) => x.vendor === 'cumulus_nvue')!;
    const sim = await simFor(c);
    const [p1, p2] = c.ports as [string, string];
    const table = CUMULUS_NVUE_TABLE;
    const s = await new CliSwitchDriver(table, { save: false, readyTimeoutMs: 5000 }).open({ name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password } }, live());
    const other = await CliSession.open({ name: 'sw', host: '127.0.0.1', port: Number(sim.address.split(':')[1]), username: sim.username, password: sim.password }, table.dialect, live());
    try {
      await s.setNative(p1, 1001);
      // an operator logged in as the same user, half-way through a change of their own
      await other.run(`nv set interface ${p2} bridge domain br_default vlan 2000`);
      await other.run('nv set bridge domain br_default vlan 2000');
      const err = await rejected(s.commit!());
      expect(err).to.be.instanceOf(SwitchError);
      expect(err.message).to.match(/pending revision holds changes this session did not stage.*interface swp2/);
      expect((err as SwitchError).nothingSent).to.equal(true);
      expect(sim.commits, 'nothing applied').to.equal(0);
      expect(sim.carried(p2), 'the other login\'s change not applied').to.deep.equal(c.fresh);
      expect(sim.carried(p1)).to.deep.equal(c.fresh);
      expect(nvuePending(sim), 'nothing left pending for the next apply').to.equal(false);
      // the next batch, without the other login's lines, is applied
      await s.setNative(p1, 1001);
      expect([...(await s.commit!()).values()]).to.deep.equal([]);
      expect(sim.carried(p1)).to.deep.equal({ native: 1001, tagged: [] });
    } finally {
      other.destroy();
      await s.close();
    }
  });

  it('masks the password wherever the switch would echo it back in an error', async () => {
    const c = VENDOR_CASES.find((x) => x.vendor === 'arista_eos')!;
    const sim = await simFor(c, { faults: { failConfig: true } });
    const entry = SWITCH_DRIVERS.find((e) => e.type === c.type)!;
    const cli = await CliSession.open({ name: 'sw', host: '127.0.0.1', port: Number(sim.address.split(':')[1]), username: sim.username, password: sim.password },
      (entry.create({ settings: {} as never }) as CliSwitchDriver).table.dialect, live());
    await cli.run('configure terminal');
    const err = await rejected(cli.run(`description ${sim.password}`));
    expect(err.message).to.match(/refused "description \*+": % Authorization denied for command 'description \*+'/);
    expect(err.message).to.not.include(sim.password);
    cli.destroy();
  });
});
