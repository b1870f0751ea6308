/**
 * The data-centre switch families (Dell OS10, SONiC, Junos, Cumulus NVUE) end to end: the real
 * service over HTTP, each switch a simulator over real SSH. After every operation the
 * simulator's own state is read, to prove the switch changed (and that the VLANs a port uses
 * were made on it). Also: batching (one login, and one commit/apply where there is a candidate
 * configuration), saving, the drift audit and repair of changes made behind the service's back,
 * and no switch password in any answer or log line.
 */
import { expect } from 'chai';
import { must, makeNode, finished } from '../../helpers/server';
import { done, networksOf, operation, switchFamilyService, wireThreeNodes } from '../../helpers/switch-family';
import { FABRIC_CASES, FabricCase, RecordingClient, registration, simFor, SWITCH_PASSWORDS } from '../../helpers/switch-sims';
import type { SwitchSim } from '../../sim/switch/sim';
import { junosDefineVlan, junosVlanInterface } from '../../sim/switch/junos';
import { sleep } from '../../helpers/wait';


/** Make the switch's port carry `native` and `tagged`, as an operator would by hand on that switch. */
function byHand(c: FabricCase, sim: SwitchSim, port: string, native: number | null, tagged: number[] | 'all'): void {
  const p = sim.portState(port);
  for (const v of [...(native ? [native] : []), ...(tagged === 'all' ? [] : tagged)]) {
    if (c.vendor === 'junos') junosDefineVlan(sim, `ops-${v}`, v);
    else sim.vlans.add(v);
  }
  if (c.vendor === 'dellos10') Object.assign(p, { switchport: true, mode: 'trunk', access: native ?? 0, allowed: new Set(tagged === 'all' ? [] : tagged) });
  else Object.assign(p, { switchport: true, mode: 'trunk', native: native ?? 'none', allowed: tagged === 'all' ? 'all' : new Set([...tagged, ...(native ? [native] : [])]) });
}

describe('Data-centre switch families over HTTP, against their simulators', function () {
  this.timeout(60_000);
  const service = switchFamilyService();
  const { logs, texts, vlan } = service;
  let api: RecordingClient;
  before(() => {
    api = service.api;
  });

  const op = (node: string, nic: string, action: 'connect_network' | 'detach_network', body: Record<string, unknown>) => operation(api, node, nic, action, body);
  const nets = (node: string, nic: string) => networksOf(api, node, nic);

  for (const c of FABRIC_CASES) {
    describe(c.vendor, () => {
      let sim: SwitchSim;
      const sw = `sw-${c.vendor}`;
      const [p1, p2, p3, p4] = c.ports as [string, string, string, string];
      const n = (x: string) => `${c.vendor}-${x}`;

      before(async () => {
        sim = await simFor(c);
        await must(api.put(`/switch/${sw}`, registration(c, sim)));
        await wireThreeNodes(api, sw, c.ports, n);
      });

      it('refuses a port name of another format with 400, naming the expected one', async () => {
        const r = await api.put(`/switch/${sw}/port/${c.badPort}`);
        expect(r.status, r.text).to.equal(400);
        expect(r.body.msg).to.match(/expected the form /);
        expect((await must(api.get(`/switch/${sw}`))).body.ports).to.have.members(c.ports);
      });

      it('connects a native network: the VLAN is made on the switch, the port carries it untagged, the host key is recorded', async () => {
        expect(sim.carried(p1)).to.deep.equal(c.fresh);
        expect(sim.vlans.has(vlan['net-a']!)).to.equal(false);
        await done(op(n('a'), 'eth0', 'connect_network', { network: 'net-a' }));
        expect(sim.vlans.has(vlan['net-a']!), 'the VLAN exists on the switch').to.equal(true);
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [] });
        expect(await nets(n('a'), 'eth0')).to.deep.equal({ 'vlan/native': 'net-a' });
        expect((await must(api.get(`/switch/${sw}`))).body.host_key).to.equal(sim.hostKey);
      });

      it('adds a tagged network beside it, and removes it again', async () => {
        await done(op(n('a'), 'eth0', 'connect_network', { network: 'net-b', channel: `vlan/${vlan['net-b']}` }));
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [vlan['net-b']] });
        await done(op(n('a'), 'eth0', 'detach_network', { network: 'net-b' }));
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [] });
        // the VLAN stays on the switch: the service never deletes one
        expect(sim.vlans.has(vlan['net-b']!)).to.equal(true);
      });

      it('detaches the native network: the port carries nothing', async () => {
        await done(op(n('a'), 'eth0', 'detach_network', { network: 'net-a' }));
        expect(sim.carried(p1)).to.deep.equal({ native: null, tagged: [] });
        expect(await nets(n('a'), 'eth0')).to.deep.equal({});
      });

      it('port_revert takes every network off the port', async () => {
        await done(op(n('a'), 'eth1', 'connect_network', { network: 'net-a' }));
        await done(op(n('a'), 'eth1', 'connect_network', { network: 'net-c', channel: `vlan/${vlan['net-c']}` }));
        expect(sim.carried(p2)).to.deep.equal({ native: vlan['net-a'], tagged: [vlan['net-c']] });
        const r = await api.post(`/switch/${sw}/port/${p2}/revert`);
        expect(r.status, r.text).to.equal(202);
        expect((await finished(api, r.body.status_id)).status).to.equal('DONE');
        expect(sim.carried(p2)).to.deep.equal({ native: null, tagged: [] });
        expect(await nets(n('a'), 'eth1')).to.deep.equal({});
      });

      it(c.save ? `saves once per session that changed the switch (${c.save})` : 'has nothing to save: a commit is persistent', async () => {
        await sleep(200);
        const saves = sim.received.filter((l) => /save|write memory/.test(l));
        if (c.save) {
          expect(sim.saves).to.be.at.least(1).and.at.most(sim.logins);
          expect(saves.every((l) => l.startsWith(c.save!))).to.equal(true);
        } else expect(saves).to.deep.equal([]);
        // seven operations so far, each alone on the switch
        if (c.commits) expect(sim.commits, 'one commit per operation applied alone').to.equal(7);
      });

      it(`applies operations queued on one switch in one SSH login${c.commits ? ' and one commit' : ''}`, async () => {
        await sleep(300); // the last session's logout
        sim.loginDelayMs = 300;
        const logins = sim.logins;
        const commits = sim.commits;
        try {
          const all = await Promise.all([
            op(n('a'), 'eth0', 'connect_network', { network: 'net-a' }),
            op(n('b'), 'eth0', 'connect_network', { network: 'net-b' }),
            op(n('c'), 'eth0', 'connect_network', { network: 'net-c', channel: `vlan/${vlan['net-c']}` }),
          ]);
          for (const s of all) expect(s.status, JSON.stringify(s)).to.equal('DONE');
        } finally {
          sim.loginDelayMs = 0;
        }
        expect(sim.logins - logins).to.equal(1);
        if (c.commits) expect(sim.commits - commits).to.equal(1);
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [] });
        expect(sim.carried(p3)).to.deep.equal({ native: vlan['net-b'], tagged: [] });
        expect(sim.carried(p4)).to.deep.equal({ native: null, tagged: [vlan['net-c']] });
      });

      it('audits drift made on the switch behind the service\'s back, and repairs it', async () => {
        await sleep(300);
        const audit = async () => {
          const r = await must(api.get(`/admin/switch/${sw}/drift`));
          return { body: r.body, port: (p: string) => r.body.ports.find((x: any) => x.port === p) };
        };
        expect((await audit()).body.summary).to.deep.equal({ in_sync: 4, drifted: 0, pending: 0, unreadable: 0 });
        byHand(c, sim, p1, vlan['net-a']!, [3001, 3002, 3003, 3005]);
        byHand(c, sim, p3, 3010, []);
        const every = c.vendor === 'junos' || c.vendor === 'cumulus_nvue';
        if (every) byHand(c, sim, p4, null, 'all');
        const a = await audit();
        expect(a.body.summary).to.deep.equal({ in_sync: every ? 1 : 2, drifted: every ? 3 : 2, pending: 0, unreadable: 0 });
        expect(a.port(p1)).to.deep.include({
          status: 'drifted', actual: { native: vlan['net-a'], tagged: [3001, 3002, 3003, 3005], enabled: true },
          differences: ['tagged VLANs the service does not hold: 3001-3003,3005'],
        });
        expect(a.port(p3)).to.deep.include({ status: 'drifted', actual: { native: 3010, tagged: [], enabled: true } });
        if (every) expect(a.port(p4)).to.deep.include({ status: 'drifted', actual: { native: null, tagged: [], other: ['trunk allows every VLAN'], enabled: true } });

        const repair = (await must(api.post(`/admin/switch/${sw}/repair`))).body;
        if (repair.summary.failed) process.stdout.write(`${JSON.stringify(repair.ports)}\n`);
        expect(repair.summary).to.deep.equal({ in_sync: every ? 1 : 2, repaired: every ? 3 : 2, pending: 0, failed: 0 });
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [] });
        expect(sim.carried(p2)).to.deep.equal({ native: null, tagged: [] });
        expect(sim.carried(p3)).to.deep.equal({ native: vlan['net-b'], tagged: [] });
        expect(sim.carried(p4)).to.deep.equal({ native: null, tagged: [vlan['net-c']] });
        expect((await audit()).body.summary).to.deep.equal({ in_sync: 4, drifted: 0, pending: 0, unreadable: 0 });
      });

      if (c.vendor === 'junos') {
        it('a port made a member of a VLAN from the VLAN\'s side (set vlans NAME interface P.0) is drifted and repaired; a connect on it leaves the service\'s VLAN alone', async () => {
          await sleep(300);
          const drift = async () => (await must(api.get(`/admin/switch/${sw}/drift`))).body;
          junosDefineVlan(sim, 'ops-3020', 3020);
          junosVlanInterface(sim, 'ops-3020', `${p2}.0`);
          expect(sim.carried(p2)).to.deep.equal({ native: null, tagged: [3020] });
          const a = await drift();
          expect(a.summary).to.deep.include({ in_sync: 3, drifted: 1 });
          expect(a.ports.find((x: any) => x.port === p2)).to.deep.include({ status: 'drifted' });
          expect(a.ports.find((x: any) => x.port === p2).actual).to.deep.include({ native: null, tagged: [3020] });
          expect((await must(api.post(`/admin/switch/${sw}/repair`))).body.summary).to.deep.include({ repaired: 1, failed: 0 });
          expect(sim.carried(p2)).to.deep.equal({ native: null, tagged: [] });
          expect(sim.received).to.include(`delete vlans ops-3020 interface ${p2}.0`);

          await sleep(300);
          junosVlanInterface(sim, 'ops-3020', `${p2}.0`);
          await done(op(n('a'), 'eth1', 'connect_network', { network: 'net-a' }));
          expect(sim.carried(p2)).to.deep.equal({ native: vlan['net-a'], tagged: [] });
          await done(op(n('a'), 'eth1', 'detach_network', { network: 'net-a' }));
          expect(sim.carried(p2)).to.deep.equal({ native: null, tagged: [] });
          expect((await drift()).summary).to.deep.include({ in_sync: 4, drifted: 0 });
        });
      }
    });
  }

  for (const c of FABRIC_CASES.filter((x) => x.vendor === 'dellos10' || x.vendor === 'junos')) {
    it(`${c.vendor}: answers the pager of a switch that keeps paging on`, async () => {
      const sim = await simFor(c, { faults: { ignorePagingOff: true }, pageLines: 3 });
      const sw = `paging-${c.vendor}`;
      await must(api.put(`/switch/${sw}`, registration(c, sim)));
      await must(api.put(`/switch/${sw}/port/${c.ports[0]}`));
      await makeNode(api, `${sw}-n`, ['eth0']);
      await must(api.post(`/switch/${sw}/port/${c.ports[0]}/connect_nic`, { node: `${sw}-n`, nic: 'eth0' }));
      await must(api.post('/project/p/connect_node', { node: `${sw}-n` }));
      await done(op(`${sw}-n`, 'eth0', 'connect_network', { network: 'net-b', channel: `vlan/${vlan['net-b']}` }));
      expect(sim.carried(c.ports[0]!)).to.deep.equal({ native: null, tagged: [vlan['net-b']] });
    });
  }

  describe('afterwards', () => {
    it('never shows a switch password, in any answer or log line', async () => {
      await sleep(300);
      expect(logs.some((l) => /"msg":"sent: /.test(l))).to.equal(true);
      for (const pw of SWITCH_PASSWORDS) {
        for (const l of logs) expect(l.includes(pw), `a log line holds a switch password: ${l}`).to.equal(false);
        for (const t of texts) expect(t.includes(pw), `an answer holds a switch password: ${t}`).to.equal(false);
      }
    });
  });
});
