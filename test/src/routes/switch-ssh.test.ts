/**
 * The SSH switch drivers end to end, per vendor: the real service over HTTP, each switch a
 * simulator over real SSH (test/sim/switch). After every operation the simulator's own port
 * state is read, to prove the switch really changed. Also: batching (operations queued on one
 * switch share one login), the drift audit and repair of changes made on the simulator behind
 * the service's back, a switch that keeps paging on, saves, and no switch password in any
 * answer or log line.
 */
import { expect } from 'chai';
import { Client, must, makeNode, finished } from '../../helpers/server';
import { done, networksOf, operation, switchFamilyService, wireThreeNodes } from '../../helpers/switch-family';
import { RecordingClient, registration, simFor, SWITCH_PASSWORDS, VENDOR_CASES } from '../../helpers/switch-sims';
import type { SwitchSim } from '../../sim/switch/sim';
import { parseExposition, value } from '../../helpers/prometheus';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SSH switch drivers over HTTP, against their simulators', function () {
  this.timeout(60_000);
  const service = switchFamilyService();
  const { logs, texts, vlan } = service;
  let api: RecordingClient;
  before(() => {
    api = service.api;
  });

  const op = (node: string, nic: string, action: 'connect_network' | 'detach_network', body: Record<string, unknown>) => operation(api, node, nic, action, body);
  const nets = (node: string, nic: string) => networksOf(api, node, nic);

  it('refuses bad registration fields with 400, saying which', async () => {
    const nexus = VENDOR_CASES.find((c) => c.vendor === 'nexus')!;
    const eos = VENDOR_CASES.find((c) => c.vendor === 'arista_eos')!;
    const base = { type: nexus.type, hostname: '127.0.0.1:2201', username: 'u', password: 'p', dummy_vlan: 3999 };
    const refused = async (body: Record<string, unknown>, msg: RegExp) => {
      const r = await api.put('/switch/bad', body);
      expect(r.status, r.text).to.equal(400);
      expect(r.body.msg).to.match(msg);
    };
    await refused({ ...base, dummy_vlan: 1 }, /dummy_vlan must be a VLAN id from 2 to 4094/);
    await refused({ ...base, dummy_vlan: 'abc' }, /dummy_vlan must be a VLAN id/);
    const { dummy_vlan: _d, ...noDummy } = base;
    await refused(noDummy, /dummy_vlan is required/);
    await refused({ ...base, hostname: '127.0.0.1:99999' }, /port must be 1-65535/);
    await refused({ ...base, hostname: 'a b' }, /not a host name or address/);
    for (const hostname of ['sw(1)', 'sw+1', 'sw/1', 'sw..example', '[::1]:x', ':::::']) await refused({ ...base, hostname }, /not a host name or address|IPv6|port must be/);
    await refused({ ...base, password: 7 }, /password must be a string/);
    // Typed as lines at the in-band login and to sudo: a newline would type a command.
    for (const [field, value] of [['username', 'admin\nconfigure'], ['username', 'admin\u007f'], ['password', 'pw\rreload'], ['password', 'pw\tx']]) {
      const r = await api.put('/switch/bad', { ...base, [field]: value });
      expect(r.status, r.text).to.equal(400);
      expect(r.body).to.deep.equal({ type: 'BadArgumentError', msg: `${field} must not contain control characters` });
    }
    await refused({ ...base, type: eos.type }, /unexpected field\(s\).*dummy_vlan/);
    expect((await api.get('/switch/bad')).status).to.equal(404);
    // HIL's clients may send the dummy VLAN as a string
    await must(api.put('/switch/ok-nexus', { ...base, dummy_vlan: '3999' }));
    await must(api.del('/switch/ok-nexus'));
    // an IPv6 management address, bare (port 22) or with a port
    for (const hostname of ['::1', '[::1]:2222', '0:0:0:0:0:0:0:1']) {
      await must(api.put('/switch/ok-nexus', { ...base, hostname }));
      await must(api.del('/switch/ok-nexus'));
    }
  });

  for (const c of VENDOR_CASES) {
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
        expect(r.body.type).to.equal('BadArgumentError');
        expect(r.body.msg).to.match(/expected the form /);
      });

      it('shows no host key before the first login, and never the password', async () => {
        const r = await must(api.get(`/switch/${sw}`));
        expect(r.body).to.have.all.keys('name', 'ports', 'host_key');
        expect(r.body.host_key).to.equal(null);
        expect(r.body.ports).to.have.members(c.ports);
      });

      /** hilt_driver_calls_total of this vendor's driver, by call (outcome ok). */
      const driverCalls = async () => {
        const m = parseExposition((await must(api.get('/metrics'))).text);
        return (call: string) => value(m, 'hilt_driver_calls_total', { kind: 'switch', driver: c.vendor, call, outcome: 'ok' });
      };

      it('connects a native network: the switch port carries it untagged, the host key is recorded, metrics count the driver\'s calls', async () => {
        const before = await driverCalls();
        await done(op(n('a'), 'eth0', 'connect_network', { network: 'net-a' }));
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [] });
        const after = await driverCalls();
        expect(after('login') - before('login'), 'login').to.equal(1);
        expect(after('set_native') - before('set_native'), 'set_native').to.equal(1);
        expect(await nets(n('a'), 'eth0')).to.deep.equal({ 'vlan/native': 'net-a' });
        expect((await must(api.get(`/switch/${sw}`))).body.host_key).to.equal(sim.hostKey);
      });

      it('adds a tagged network beside it, and removes it again', async () => {
        await done(op(n('a'), 'eth0', 'connect_network', { network: 'net-b', channel: `vlan/${vlan['net-b']}` }));
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [vlan['net-b']] });
        await done(op(n('a'), 'eth0', 'detach_network', { network: 'net-b' }));
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [] });
        expect(await nets(n('a'), 'eth0')).to.deep.equal({ 'vlan/native': 'net-a' });
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

      it('saves the running configuration at the end of each session that changed the switch', async () => {
        // every session of this switch so far changed something
        await sleep(200);
        expect(sim.saves).to.be.at.least(1).and.at.most(sim.logins);
        expect(sim.received).to.include(c.vendor === 'arista_eos' ? 'write memory' : 'copy running-config startup-config');
      });

      it('applies operations queued on one switch in one SSH login', async () => {
        await sleep(300); // the last session's logout
        sim.loginDelayMs = 300;
        const before = sim.logins;
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
        expect(sim.logins - before).to.equal(1);
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [] });
        expect(sim.carried(p3)).to.deep.equal({ native: vlan['net-b'], tagged: [] });
        expect(sim.carried(p4)).to.deep.equal({ native: null, tagged: [vlan['net-c']] });
      });

      it('audits drift made on the switch behind the service\'s back (extra VLANs, another native VLAN, every VLAN), and repairs it', async () => {
        await sleep(300); // the last session's logout
        const audit = async () => {
          const r = await must(api.get(`/admin/switch/${sw}/drift`));
          return { body: r.body, text: r.text, port: (p: string) => r.body.ports.find((x: any) => x.port === p) };
        };
        expect((await audit()).body.summary).to.deep.equal({ in_sync: 4, drifted: 0, pending: 0, unreadable: 0 });
        // By hand on the switch: p1 (native net-a) gets tagged VLANs, p3 (native net-b) another
        // native VLAN, p4 (tagged net-c) an allowed list of every VLAN.
        for (const v of [3001, 3002, 3003, 3005]) (sim.portState(p1).allowed as Set<number>).add(v);
        Object.assign(sim.portState(p3), { native: 3010, allowed: new Set([3010]) });
        sim.portState(p4).allowed = 'all';
        const a = await audit();
        expect(a.body.summary).to.deep.equal({ in_sync: 1, drifted: 3, pending: 0, unreadable: 0 });
        expect(a.port(p1)).to.deep.include({
          status: 'drifted', expected: { native: vlan['net-a'], tagged: [], enabled: true }, actual: { native: vlan['net-a'], tagged: [3001, 3002, 3003, 3005], enabled: true },
          differences: ['tagged VLANs the service does not hold: 3001-3003,3005'],
        });
        expect(a.port(p3)).to.deep.include({
          status: 'drifted', actual: { native: 3010, tagged: [], enabled: true }, differences: [`native VLAN: the service holds ${vlan['net-b']}, the switch has 3010`],
        });
        // Every VLAN is said in words, not as 4093 ids.
        expect(a.port(p4)).to.deep.include({
          status: 'drifted', expected: { native: null, tagged: [vlan['net-c']], enabled: true }, actual: { native: null, tagged: [], other: ['trunk allows every VLAN'], enabled: true },
          differences: [`tagged VLANs the switch lacks: ${vlan['net-c']}`, 'the switch has: trunk allows every VLAN'],
        });
        expect(a.port(p2)).to.deep.include({ status: 'in_sync' });
        expect(a.text.length, 'the report is short').to.be.below(2500);

        const repair = (await must(api.post(`/admin/switch/${sw}/repair`))).body;
        expect(repair.summary).to.deep.equal({ in_sync: 1, repaired: 3, pending: 0, failed: 0 });
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [] });
        expect(sim.carried(p2)).to.deep.equal({ native: null, tagged: [] });
        expect(sim.carried(p3)).to.deep.equal({ native: vlan['net-b'], tagged: [] });
        expect(sim.carried(p4)).to.deep.equal({ native: null, tagged: [vlan['net-c']] });
        expect((await audit()).body.summary).to.deep.equal({ in_sync: 4, drifted: 0, pending: 0, unreadable: 0 });
        // The service's own records did not move.
        expect(await nets(n('a'), 'eth0')).to.deep.equal({ 'vlan/native': 'net-a' });
        expect(await nets(n('c'), 'eth0')).to.deep.equal({ [`vlan/${vlan['net-c']}`]: 'net-c' });
      });

      it('a port HIL left a trunk of every VLAN but those it removed carries only the network connected to it', async () => {
        const left = await simFor(c);
        const lsw = `${sw}-hil`;
        await must(api.put(`/switch/${lsw}`, registration(c, left)));
        await must(api.put(`/switch/${lsw}/port/${p1}`));
        await makeNode(api, n('e'), ['eth0']);
        await must(api.post(`/switch/${lsw}/port/${p1}/connect_nic`, { node: n('e'), nic: 'eth0' }));
        await must(api.post('/project/p/connect_node', { node: n('e') }));
        // HIL's `switchport mode trunk` (a fresh trunk allows every VLAN), then a detach's `switchport trunk allowed vlan remove 3000`
        const every = Array.from({ length: 4093 }, (_, i) => i + 1).filter((v) => v !== 3000);
        Object.assign(left.portState(p1), { mode: 'trunk', allowed: new Set(every) });
        await done(op(n('e'), 'eth0', 'connect_network', { network: 'net-b', channel: `vlan/${vlan['net-b']}` }));
        expect(left.carried(p1)).to.deep.equal({ native: null, tagged: [vlan['net-b']] });
      });

      it('answers the pager of a switch that keeps paging on', async () => {
        const paging = await simFor(c, { faults: { ignorePagingOff: true }, pageLines: 6 });
        const psw = `${sw}-paging`;
        await must(api.put(`/switch/${psw}`, registration(c, paging)));
        await must(api.put(`/switch/${psw}/port/${p1}`));
        await makeNode(api, n('d'), ['eth0']);
        await must(api.post(`/switch/${psw}/port/${p1}/connect_nic`, { node: n('d'), nic: 'eth0' }));
        await must(api.post('/project/p/connect_node', { node: n('d') }));
        await done(op(n('d'), 'eth0', 'connect_network', { network: 'net-b', channel: `vlan/${vlan['net-b']}` }));
        expect(paging.carried(p1)).to.deep.equal({ native: null, tagged: [vlan['net-b']] });
      });
    });
  }

  // Mocha runs a suite's own tests before its nested suites: this one comes last.
  describe('afterwards', () => {
    it('never shows a switch password, in any answer or log line', async () => {
      await sleep(300);
      expect(logs.some((l) => /"msg":"sent: /.test(l)), 'the commands sent to the switches are logged').to.equal(true);
      expect(SWITCH_PASSWORDS.size).to.be.at.least(VENDOR_CASES.length);
      for (const pw of SWITCH_PASSWORDS) {
        for (const l of logs) expect(l.includes(pw), `a log line holds a switch password: ${l}`).to.equal(false);
        for (const t of texts) expect(t.includes(pw), `an answer holds a switch password: ${t}`).to.equal(false);
      }
    });
  });
});
