/**
 * The REST switch drivers end to end, per vendor (Brocade VDX over HTTP, Dell OS9 over HTTPS with
 * its certificate as ca_cert): the real service over HTTP, each switch a simulator of its REST
 * API (test/sim/rest-switch). After every operation the simulator's own port state is read, to
 * prove the switch really changed. Also: registration refusals, HIL's ordering rule (409, nothing
 * sent to the switch), operations queued on one switch sharing one keep-alive connection, the
 * drift audit and repair of changes made on the simulator behind the service's back, OS9's save,
 * and no switch password in any answer or log line.
 */
import { expect } from 'chai';
import { must, finished } from '../../helpers/server';
import { done, networksOf, operation, switchFamilyService, wireThreeNodes } from '../../helpers/switch-family';
import { RecordingClient, SWITCH_PASSWORDS } from '../../helpers/switch-sims';
import { REST_CASES, restRegistration, restSimFor } from '../../helpers/rest-switch-sims';
import type { AnyRestSim, BrocadeSim, Os9Sim } from '../../sim/rest-switch';
import { parseExposition, value } from '../../helpers/prometheus';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('REST switch drivers over HTTP, against their simulators', function () {
  this.timeout(60_000);
  const service = switchFamilyService();
  const { logs, texts, vlan } = service;
  let api: RecordingClient;
  before(() => {
    api = service.api;
  });

  const op = (node: string, nic: string, action: 'connect_network' | 'detach_network', body: Record<string, unknown>) => operation(api, node, nic, action, body);
  const nets = (node: string, nic: string) => networksOf(api, node, nic);

  it('refuses bad registration fields with 400, saying which, and registers nothing', async () => {
    const [brocade, os9] = REST_CASES as [typeof REST_CASES[0], typeof REST_CASES[0]];
    const base = { type: brocade.type, hostname: 'http://127.0.0.1:8080', username: 'u', password: 'p', interface_type: 'TenGigabitEthernet' };
    const refused = async (body: Record<string, unknown>, msg: RegExp) => {
      const r = await api.put('/switch/bad', body);
      expect(r.status, r.text).to.equal(400);
      expect(r.body.type).to.equal('BadArgumentError');
      expect(r.body.msg).to.match(msg);
    };
    await refused({ ...base, hostname: '127.0.0.1:8080' }, /must start with https:\/\/ or http:\/\//);
    await refused({ ...base, hostname: 'http://127.0.0.1/rest' }, /must be the base URL only/);
    await refused({ ...base, hostname: 'http://admin:pw@127.0.0.1' }, /must not carry credentials/);
    // a URL parser takes these; no resolver would
    for (const hostname of ['http://sw(1)', 'https://sw+1:8888', 'https://sw..example']) {
      const r = await api.put('/switch/bad', { ...base, hostname });
      expect(r.status, r.text).to.equal(400);
      expect(r.body).to.deep.equal({ type: 'BadArgumentError', msg: `hostname "${hostname}": "${new URL(hostname).hostname}" is not a host name or address` });
    }
    await refused({ ...base, interface_type: 'Ethernet' }, /interface_type "Ethernet" is not one of GigabitEthernet, TenGigabitEthernet/);
    await refused({ ...base, type: os9.type, interface_type: 'FortyGigabitEthernet' }, /is not one of .*fortyGigE/);
    const { interface_type: _i, ...noType } = base;
    await refused(noType, /interface_type is required|interface_type must be a string/);
    await refused({ ...base, verify_tls: 'no' }, /verify_tls must be a boolean/);
    await refused({ ...base, hostname: 'https://127.0.0.1', ca_cert: 'not a certificate' }, /ca_cert must hold at least one PEM certificate/);
    await refused({ ...base, ca_cert: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' }, /ca_cert is for a switch reached over https/);
    await refused({ ...base, dummy_vlan: 5 }, /unexpected field\(s\).*dummy_vlan/);
    expect((await api.get('/switch/bad')).status).to.equal(404);
  });

  for (const c of REST_CASES) {
    describe(`${c.vendor} (${c.tls ? 'HTTPS with ca_cert' : 'HTTP'})`, () => {
      let sim: AnyRestSim;
      const sw = `sw-${c.vendor}`;
      const [p1, p2, p3, p4] = c.ports as [string, string, string, string];
      const n = (x: string) => `${c.vendor}-${x}`;

      before(async () => {
        sim = await restSimFor(c);
        await must(api.put(`/switch/${sw}`, restRegistration(c, sim)));
        await wireThreeNodes(api, sw, c.ports, n);
      });

      it('refuses a port name of another format with 400, naming the expected one', async () => {
        const r = await api.put(`/switch/${sw}/port/${encodeURIComponent(c.badPort)}`);
        expect(r.status, r.text).to.equal(400);
        expect(r.body.type).to.equal('BadArgumentError');
        expect(r.body.msg).to.match(/expected the form 1\/3 or 101\/0\/10/);
      });

      it('shows the switch without a host key or a password', async () => {
        const r = await must(api.get(`/switch/${sw}`));
        expect(r.body).to.have.all.keys('name', 'ports');
        expect(r.body.ports).to.have.members(c.ports);
      });

      const driverCalls = async () => {
        const m = parseExposition((await must(api.get('/metrics'))).text);
        return (call: string) => value(m, 'hilt_driver_calls_total', { kind: 'switch', driver: c.driver, call, outcome: 'ok' });
      };

      it('connects a native network: the switch port carries it untagged; metrics count the driver\'s calls', async () => {
        const before = await driverCalls();
        await done(op(n('a'), 'eth0', 'connect_network', { network: 'net-a' }));
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [] });
        const after = await driverCalls();
        expect(after('login') - before('login'), 'login').to.equal(1);
        expect(after('set_native') - before('set_native'), 'set_native').to.equal(1);
        expect(await nets(n('a'), 'eth0')).to.deep.equal({ 'vlan/native': 'net-a' });
      });

      it('adds a tagged network beside it, and removes it again', async () => {
        await done(op(n('a'), 'eth0', 'connect_network', { network: 'net-b', channel: `vlan/${vlan['net-b']}` }));
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [vlan['net-b']] });
        await done(op(n('a'), 'eth0', 'detach_network', { network: 'net-b' }));
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [] });
        expect(await nets(n('a'), 'eth0')).to.deep.equal({ 'vlan/native': 'net-a' });
      });

      it('refuses a tagged network before a native one, and the native one before the tagged ones (409, the switch untouched)', async () => {
        const requests = sim.requests.length;
        // node b's nic has no network: a tagged one first is refused
        let r = await api.post(`/node/${n('b')}/nic/eth0/connect_network`, { network: 'net-b', channel: `vlan/${vlan['net-b']}` });
        expect(r.status, r.text).to.equal(409);
        expect(r.body).to.deep.equal({ type: 'BlockedError', msg: `switch ${sw} carries a tagged network on a port only beside a native one: attach a native network to nic eth0 first` });
        // node a's eth0: native net-a, then tagged net-c; detaching net-a first is refused
        await done(op(n('a'), 'eth0', 'connect_network', { network: 'net-c', channel: `vlan/${vlan['net-c']}` }));
        const carried = sim.carried(p1);
        const sent = sim.requests.length;
        r = await api.post(`/node/${n('a')}/nic/eth0/detach_network`, { network: 'net-a' });
        expect(r.status, r.text).to.equal(409);
        expect(r.body.type).to.equal('BlockedError');
        expect(r.body.msg).to.match(/detach the tagged networks of nic eth0 before its native one/);
        expect(sim.requests.length, 'nothing was sent to the switch').to.equal(sent);
        expect(sim.carried(p1)).to.deep.equal(carried);
        expect(await nets(n('a'), 'eth0')).to.deep.equal({ 'vlan/native': 'net-a', [`vlan/${vlan['net-c']}`]: 'net-c' });
        expect(await nets(n('b'), 'eth0')).to.deep.equal({});
        expect(requests).to.be.below(sent);
        // in the right order both go through
        await done(op(n('a'), 'eth0', 'detach_network', { network: 'net-c' }));
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

      it('applies operations queued on one switch over one keep-alive connection', async () => {
        await sleep(300); // the last session's logout
        const before = sim.connections;
        sim.latencyMs = 50;
        try {
          const all = await Promise.all([
            op(n('a'), 'eth0', 'connect_network', { network: 'net-a' }),
            op(n('b'), 'eth0', 'connect_network', { network: 'net-b' }),
            op(n('c'), 'eth0', 'connect_network', { network: 'net-c' }),
          ]);
          for (const s of all) expect(s.status, JSON.stringify(s)).to.equal('DONE');
        } finally {
          sim.latencyMs = 0;
        }
        expect(sim.connections - before).to.equal(1);
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [] });
        expect(sim.carried(p3)).to.deep.equal({ native: vlan['net-b'], tagged: [] });
        expect(sim.carried(p4)).to.deep.equal({ native: vlan['net-c'], tagged: [] });
        await done(op(n('c'), 'eth0', 'connect_network', { network: 'net-b', channel: `vlan/${vlan['net-b']}` }));
      });

      if (c.vendor === 'dellnos9') {
        it('saves the running configuration (write memory) at the end of each session that changed the switch', async () => {
          await sleep(300);
          expect(sim.saves).to.be.at.least(1);
          expect(sim.requests.some((r) => r.body.includes('<exec-command>write memory</exec-command>'))).to.equal(true);
        });
      }

      it('audits drift made on the switch behind the service\'s back, and repairs it', async () => {
        await sleep(300);
        const audit = async () => {
          const r = await must(api.get(`/admin/switch/${sw}/drift`));
          return { body: r.body, port: (p: string) => r.body.ports.find((x: any) => x.port === p) };
        };
        expect((await audit()).body.summary).to.deep.equal({ in_sync: 4, drifted: 0, pending: 0, unreadable: 0 });
        // By hand on the switch: p1 (native net-a) gains tagged VLANs, p3 (native net-b) another
        // native VLAN, p4 (native net-c, tagged net-b) loses its tagged VLAN.
        if (c.vendor === 'brocade') {
          const b = sim as BrocadeSim;
          b.port(p1).allowed = new Set([3001, 3002, 3003, 3005]);
          b.port(p3).native = 3010;
          b.port(p4).allowed = new Set();
        } else {
          const o = sim as Os9Sim;
          for (const v of [3001, 3002, 3003, 3005]) o.port(p1).tagged.add(v);
          o.port(p3).untagged = 3010;
          o.port(p4).tagged.clear();
        }
        const a = await audit();
        expect(a.body.summary).to.deep.equal({ in_sync: 1, drifted: 3, pending: 0, unreadable: 0 });
        expect(a.port(p1)).to.deep.include({
          status: 'drifted', expected: { native: vlan['net-a'], tagged: [], enabled: true }, actual: { native: vlan['net-a'], tagged: [3001, 3002, 3003, 3005], enabled: true },
          differences: ['tagged VLANs the service does not hold: 3001-3003,3005'],
        });
        expect(a.port(p3)).to.deep.include({ status: 'drifted', actual: { native: 3010, tagged: [], enabled: true } });
        expect(a.port(p4)).to.deep.include({ status: 'drifted', differences: [`tagged VLANs the switch lacks: ${vlan['net-b']}`] });
        expect(a.port(p2)).to.deep.include({ status: 'in_sync' });

        const repair = (await must(api.post(`/admin/switch/${sw}/repair`))).body;
        expect(repair.summary).to.deep.equal({ in_sync: 1, repaired: 3, pending: 0, failed: 0 });
        expect(sim.carried(p1)).to.deep.equal({ native: vlan['net-a'], tagged: [] });
        expect(sim.carried(p3)).to.deep.equal({ native: vlan['net-b'], tagged: [] });
        expect(sim.carried(p4)).to.deep.equal({ native: vlan['net-c'], tagged: [vlan['net-b']] });
        expect((await audit()).body.summary).to.deep.equal({ in_sync: 4, drifted: 0, pending: 0, unreadable: 0 });
      });

      if (c.vendor === 'brocade') {
        it('reports a trunk of every VLAN in words, and repairs it', async () => {
          (sim as BrocadeSim).port(p2).allowed = 'all';
          const r = (await must(api.get(`/admin/switch/${sw}/drift`))).body.ports.find((x: any) => x.port === p2);
          // p2 carries nothing since its revert: shut (HILT_INACTIVE_PORTS=shutdown)
          expect(r).to.deep.include({ status: 'drifted', actual: { native: null, tagged: [], enabled: false, other: ['trunk allows every VLAN'] } });
          expect((await must(api.post(`/admin/switch/${sw}/repair`))).body.summary.repaired).to.equal(1);
          expect(sim.carried(p2)).to.deep.equal({ native: null, tagged: [] });
        });
      }
    });
  }

  // Mocha runs a suite's own tests before its nested suites: these come last.
  describe('afterwards', () => {
    it('the dashboard\'s switch table says how each REST switch is reached (its TLS), never its credentials', async () => {
      const login = await api.call('POST', '/ui/api/login', { as: null, body: { user: 'admin', password: 'admin-secret' } });
      expect(login.status, login.text).to.equal(200);
      const cookie = String([login.headers['set-cookie']].flat()[0]).split(';')[0]!;
      const r = await api.call('GET', '/ui/api/table/switches', { as: null, headers: { cookie } });
      expect(r.status, r.text).to.equal(200);
      const tls = Object.fromEntries(r.body.rows.map((x: { name: string; tls: string }) => [x.name, x.tls]));
      expect(tls).to.deep.include({ 'sw-brocade': 'none (http)', 'sw-dellnos9': 'verified (ca_cert)' });
      expect(r.text).not.to.match(/password|BEGIN CERTIFICATE/);
    });

    it('never shows a switch password, in any answer or log line; the requests sent are logged', async () => {
      await sleep(300);
      expect(logs.some((l) => /"msg":"sent: (PUT|POST) /.test(l)), 'the requests sent to the switches are logged').to.equal(true);
      expect(SWITCH_PASSWORDS.size).to.be.at.least(REST_CASES.length);
      const basics = [...SWITCH_PASSWORDS].map((pw) => Buffer.from(`hilt:${pw}`).toString('base64'));
      for (const secret of [...SWITCH_PASSWORDS, ...basics]) {
        for (const l of logs) expect(l.includes(secret), `a log line holds a switch secret: ${l}`).to.equal(false);
        for (const t of texts) expect(t.includes(secret), `an answer holds a switch secret: ${t}`).to.equal(false);
      }
    });
  });
});
