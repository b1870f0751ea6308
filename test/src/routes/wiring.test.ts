/**
 * Wiring validation over HTTP, per SSH vendor (the switch a simulator over real SSH, told where
 * each MAC is), per REST vendor (a simulator of its REST API) and the mock: `ok` (the nic's MAC learned on its port, or named by the port's
 * LLDP neighbour), `mismatch` (two cables swapped), `unseen`, `unwired`, the proposals for
 * unwired ports; every switch at once in one session each (a switch deleted meanwhile left out);
 * the metrics; the refusals.
 */
import { expect } from 'chai';
import { must, startTestServer, stopTestServer, TestServer, Client, mockSwitch, makeUser, finished } from '../../helpers/server';
import { registration, simFor, SSH_CASES, VENDOR_CASES } from '../../helpers/switch-sims';
import { REST_CASES, restRegistration, restSimFor } from '../../helpers/rest-switch-sims';
import type { AnyRestSim } from '../../sim/rest-switch';
import type { SwitchSim } from '../../sim/switch/sim';
import { parseExposition, value } from '../../helpers/prometheus';
import { SHUT_NOTE, WiringCheck } from '../../../hardware/wiring';

import type { SwitchDriverEntry, SwitchSession } from '../../../drivers/switch/types';

/** A switch whose driver reads no MAC table (as Open vSwitch's). */
const bare: SwitchDriverEntry = {
  type: 'http://schema.example/switches/bare',
  extension: 'test.switches.bare',
  fields: { type: 'object', additionalProperties: false, properties: {} },
  portName: /^p\d+$/,
  create: () => ({
    open: async (): Promise<SwitchSession> => ({
      setNative: async () => undefined, removeNative: async () => undefined, addTagged: async () => undefined,
      removeTagged: async () => undefined, resetPort: async () => undefined,
      getPortVlans: async () => ({ native: null, tagged: [] }), close: async () => undefined,
    }),
  }),
};

/** Where a switch learned what: a simulator's tables, or the mock's. */
interface Tables {
  ports: string[];
  /** the switch learns `mac` on `port` */
  learn(port: string, mac: string): void;
  neighbor(port: string, chassisId: string, portId: string, systemName: string): void;
  /** forget everything learned */
  clear(): void;
  logins(): number;
}

describe('wiring validation (admin)', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  const sims = new Map<string, SwitchSim>();
  const tables = new Map<string, Tables>();
  const KINDS = ['mock', ...SSH_CASES.map((c) => c.vendor), ...REST_CASES.map((c) => c.vendor)];
  const restSims = new Map<string, AnyRestSim>();

  before(async () => {
    ts = await startTestServer({ switchTimeoutMs: 20_000 }, { extraDrivers: { switch: [bare] } });
    api = ts.api;
    await must(api.put('/project/wp'));
    for (const kind of KINDS) {
      const sw = `w-${kind}`;
      if (kind === 'mock') {
        await must(api.put(`/switch/${sw}`, mockSwitch));
        const ports = ['gi1/0/1', 'gi1/0/2', 'gi1/0/3', 'gi1/0/4'];
        const learned = new Map<string, { macs: string[]; lldp: { chassisId: string; portId: string; systemName: string }[] }>();
        const set = (port: string) => ts.mockSwitch.learn(sw, port, learned.get(port)!);
        const entry = (port: string) => learned.get(port) ?? (learned.set(port, { macs: [], lldp: [] }), learned.get(port)!);
        tables.set(kind, {
          ports,
          learn: (port, mac) => { entry(port).macs.push(mac); set(port); },
          neighbor: (port, chassisId, portId, systemName) => { entry(port).lldp.push({ chassisId, portId, systemName }); set(port); },
          clear: () => { for (const p of learned.keys()) ts.mockSwitch.learn(sw, p, null); learned.clear(); },
          logins: () => ts.mockSwitch.sessionsOpened.get(sw) ?? 0,
        });
      } else if (REST_CASES.some((v) => v.vendor === kind)) {
        const c = REST_CASES.find((v) => v.vendor === kind)!;
        const sim = await restSimFor(c);
        restSims.set(kind, sim);
        // Layer-2 ports that are up, as HIL left them (an OS9 port ships routed and shut, and learns nothing so).
        for (const p of sim.ports.values()) Object.assign(p, { shutdown: false }, 'hybrid' in p ? { switchport: true, hybrid: true } : {});
        await must(api.put(`/switch/${sw}`, restRegistration(c, sim)));
        tables.set(kind, {
          ports: c.ports,
          learn: (port, m) => { sim.port(port).macs.push(m.toLowerCase()); },
          neighbor: (port, chassisId, portId, systemName) => sim.setWiring(port, { lldp: { chassisId, portId, systemName } }),
          clear: () => { for (const p of sim.ports.values()) Object.assign(p, { macs: [], lldp: undefined }); },
          // A REST session's login is its probe (GET /rest, GET /api).
          logins: () => sim.requests.filter((r) => r.method === 'GET' && (r.path === '/rest' || r.path === '/api')).length,
        });
      } else {
        const c = SSH_CASES.find((v) => v.vendor === kind)!;
        const sim = await simFor(c);
        sims.set(kind, sim);
        await must(api.put(`/switch/${sw}`, registration(c, sim)));
        tables.set(kind, {
          ports: c.ports,
          learn: (port, mac) => sim.learn(port, mac, 1000),
          neighbor: (port, chassisId, portId, systemName) => sim.neighbor(port, { chassisId, portId, systemName }),
          clear: () => { sim.macs.clear(); sim.neighbors.clear(); },
          logins: () => sim.logins,
        });
      }
      const t = tables.get(kind)!;
      for (const p of t.ports) await must(api.put(`/switch/${sw}/port/${p}`));
      // Nodes a, b, c wired to ports 1-3, d registered but not wired; port 4 unwired.
      for (const [i, x] of ['a', 'b', 'c', 'd'].entries()) {
        await must(api.put(`/node/w-${kind}-${x}`, { obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'bmc', user: 'u', password: 'obm-pw' } }));
        await must(api.put(`/node/w-${kind}-${x}/nic/eth0`, { macaddr: mac(kind, i) }));
        if (i < 3) await must(api.post(`/switch/${sw}/port/${t.ports[i]}/connect_nic`, { node: `w-${kind}-${x}`, nic: 'eth0' }));
      }
    }
  });

  after(() => stopTestServer(ts));

  /** A distinct MAC per vendor and nic, as operators write them (upper case, colons). */
  function mac(kind: string, i: number): string {
    return `02:00:00:${(KINDS.indexOf(kind) + 1).toString(16).padStart(2, '0')}:00:0${i + 1}`.toUpperCase();
  }
  const lower = (m: string) => m.toLowerCase();

  for (const kind of KINDS) {
    describe(kind, () => {
      const sw = `w-${kind}`;
      const t = () => tables.get(kind)!;
      const line = (body: any, port: string) => body.ports.find((p: { port: string }) => p.port === port);
      afterEach(() => t().clear());

      it('ok where each nic\'s MAC is learned on its port (or named by its LLDP neighbour); unseen where nothing is; in one session', async () => {
        const [p1, p2, p3, p4] = t().ports as [string, string, string, string];
        t().learn(p1, mac(kind, 0));
        t().learn(p1, '52:54:00:12:34:56'); // a VM on node a: other MACs beside the nic's are fine
        t().learn(p2, mac(kind, 1));
        t().neighbor(p3, '02:00:00:ff:ff:ff', lower(mac(kind, 2)), 'node-c');
        const logins = t().logins();
        const r = await must(api.get(`/admin/switch/${sw}/wiring`));
        expect(t().logins() - logins).to.equal(1);
        expect(r.body.summary).to.deep.equal({ ok: 3, mismatch: 0, unseen: 1, unwired: 0 });
        expect(line(r.body, p1)).to.deep.equal({
          port: p1, nic: { node: `w-${kind}-a`, nic: 'eth0', macaddr: mac(kind, 0) },
          macs: ['52:54:00:12:34:56', lower(mac(kind, 0))].sort(), lldp: [], verdict: 'ok',
        });
        expect(line(r.body, p3)).to.deep.include({ verdict: 'ok', macs: [], lldp: [{ chassisId: '02:00:00:ff:ff:ff', portId: lower(mac(kind, 2)), systemName: 'node-c' }] });
        expect(line(r.body, p4)).to.deep.equal({ port: p4, nic: null, macs: [], lldp: [], verdict: 'unseen', details: [SHUT_NOTE] });
      });

      it('mismatch on both ports of two swapped cables, naming where each MAC was seen', async () => {
        const [p1, p2] = t().ports as [string, string];
        t().learn(p1, mac(kind, 1));
        t().learn(p2, mac(kind, 0));
        const r = await must(api.get(`/admin/switch/${sw}/wiring`));
        expect(r.body.summary).to.deep.include({ ok: 0, mismatch: 2 });
        expect(line(r.body, p1)).to.deep.include({ verdict: 'mismatch', macs: [lower(mac(kind, 1))] });
        expect(line(r.body, p1).details).to.deep.equal([
          `the nic's MAC ${lower(mac(kind, 0))} was learned on port ${p2}`,
          `MAC ${lower(mac(kind, 1))} learned here belongs to nic eth0 of node w-${kind}-b`,
        ]);
        expect(line(r.body, p2).details).to.deep.equal([
          `the nic's MAC ${lower(mac(kind, 1))} was learned on port ${p1}`,
          `MAC ${lower(mac(kind, 0))} learned here belongs to nic eth0 of node w-${kind}-a`,
        ]);
        // The metrics count them.
        const m = parseExposition((await must(api.get('/metrics'))).text);
        expect(value(m, 'hilt_wiring_ports', { switch: sw, verdict: 'mismatch' })).to.equal(2);
      });

      it('mismatch for a nic whose MAC was learned only on another port, even one the service does not know', async () => {
        const [p1] = t().ports as [string];
        const uplink = kind === 'mock' ? 'gi1/0/40' : restSims.has(kind) ? [...restSims.get(kind)!.ports.keys()][39]! : sims.get(kind)!.vendor.portNames[39]!;
        t().learn(uplink, mac(kind, 0));
        const r = await must(api.get(`/admin/switch/${sw}/wiring`));
        expect(line(r.body, p1)).to.deep.include({ verdict: 'mismatch', macs: [] });
        // named as the switch prints it (`Eth1/40`, `ge-0/0/39.0`)
        expect(line(r.body, p1).details[0]).to.match(new RegExp(`^the nic's MAC ${lower(mac(kind, 0))} was learned on port \\S*\\D${/\d+$/.exec(uplink)![0]}(\\.0)?$`));
      });

      it('unwired where a port the service wires to no nic learned something; proposes the nic whose MAC it is, never applying it', async () => {
        const [, , , p4] = t().ports as [string, string, string, string];
        t().learn(p4, mac(kind, 3));
        const r = await must(api.get(`/admin/switch/${sw}/wiring`));
        expect(line(r.body, p4)).to.deep.include({ verdict: 'unwired', nic: null, details: [`MAC ${lower(mac(kind, 3))} learned here belongs to nic eth0 of node w-${kind}-d`] });
        const p = await must(api.post(`/admin/switch/${sw}/wiring/propose`));
        expect(p.body).to.deep.equal({
          switch: sw,
          proposals: [{
            port: p4, node: `w-${kind}-d`, nic: 'eth0', macaddr: mac(kind, 3), evidence: ['mac'], nic_wired_to: null,
            apply: `POST /switch/${sw}/port/${p4}/connect_nic {"node": "w-${kind}-d", "nic": "eth0"}`,
          }],
          unknown: [],
          ambiguous: [],
        });
        expect((await must(api.get(`/switch/${sw}/port/${p4}`))).body, 'not applied').to.deep.equal({});
        // A MAC no nic has: unknown, no proposal.
        t().clear();
        t().learn(p4, '02:aa:bb:cc:dd:ee');
        const q = await must(api.post(`/admin/switch/${sw}/wiring/propose`));
        expect(q.body).to.deep.include({ proposals: [], unknown: [{ port: p4, macs: ['02:aa:bb:cc:dd:ee'] }] });
      });
    });
  }

  // Mocha runs a suite's own tests before its nested suites: these come last.
  describe('afterwards', () => {
    it('checks every switch, one session each, with a summary; lists only the ports with problems', async () => {
      const nexus = tables.get('nexus')!;
      nexus.learn(nexus.ports[0]!, mac('nexus', 1));
      const before = new Map(KINDS.map((k) => [k, tables.get(k)!.logins()]));
      const r = await must(api.get('/admin/wiring'));
      for (const k of KINDS) expect(tables.get(k)!.logins() - before.get(k)!, k).to.equal(1);
      // Node b's MAC on node a's port: both ports are wrong.
      expect(r.body.summary).to.deep.include({ switches: KINDS.length, unsupported: 0, failed: 0, mismatch: 2 });
      const n = r.body.switches.find((s: { switch: string }) => s.switch === 'w-nexus');
      expect(n.status).to.equal('checked');
      expect(n.problems.map((p: { port: string; verdict: string }) => [p.port, p.verdict])).to.deep.equal([[nexus.ports[0], 'mismatch'], [nexus.ports[1], 'mismatch']]);
      nexus.clear();
    });

    it('says which switches cannot be read (unreachable, no driver support) without failing the others', async () => {
      const c = VENDOR_CASES[0]!;
      const dead = await simFor(c);
      await must(api.put('/switch/w-dead', registration(c, dead)));
      await must(api.put(`/switch/w-dead/port/${c.ports[0]}`));
      await dead.close();
      const r = await must(api.get('/admin/wiring'));
      expect(r.body.summary).to.deep.include({ switches: KINDS.length, failed: 1 });
      const d = r.body.switches.find((s: { switch: string }) => s.switch === 'w-dead');
      expect(d.status).to.equal('failed');
      expect(d.error).to.match(/^switch w-dead cannot be read: /);
      const one = await api.get('/admin/switch/w-dead/wiring');
      expect(one.status).to.equal(502);
      expect(one.body.type).to.equal('SwitchError');
      await must(api.del(`/switch/w-dead/port/${c.ports[0]}`));
      await must(api.del('/switch/w-dead'));
    });

    it('shows why a free port shut by the policy learns nothing', async () => {
      const m = tables.get('mock')!;
      const [p1] = m.ports as [string];
      await must(api.post('/project/wp/connect_node', { node: 'w-mock-a' }));
      const rv = await must(api.post(`/switch/w-mock/port/${p1}/revert`), 202);
      expect((await finished(api, rv.body.status_id)).status).to.equal('DONE');
      m.learn(p1, mac('mock', 0));
      const r = await must(api.get('/admin/switch/w-mock/wiring'));
      const l = r.body.ports.find((p: { port: string }) => p.port === p1);
      expect(l).to.deep.include({ verdict: 'unseen', macs: [] });
      expect(l.details).to.deep.equal([SHUT_NOTE]);
      m.clear();
    });

    it('is for admins only (401 before 404), 404 for an unknown switch, 409 for a driver without the tables, and takes no body or query', async () => {
      const member = await makeUser(api, 'wp-member', 'pw', ['wp']);
      expect((await api.with(member).get('/admin/switch/w-mock/wiring')).status).to.equal(401);
      expect((await api.with(member).get('/admin/wiring')).status).to.equal(401);
      expect((await api.with(member).post('/admin/switch/nope/wiring/propose')).status).to.equal(401);
      // An auditor reads what an admin reads: a proposal changes nothing.
      await must(api.put('/auth/basic/user/wp-auditor', { password: 'pw', role: 'auditor' }));
      const auditor = { user: 'wp-auditor', password: 'pw' };
      expect((await must(api.with(auditor).post('/admin/switch/w-mock/wiring/propose'))).body).to.include.keys('switch', 'proposals');
      expect((await api.with(auditor).post('/admin/switch/nope/wiring/propose')).status).to.equal(404);
      const missing = await api.get('/admin/switch/nope/wiring');
      expect(missing.status).to.equal(404);
      expect(missing.body).to.deep.equal({ type: 'NotFoundError', msg: 'switch nope does not exist' });
      expect((await api.post('/admin/switch/nope/wiring/propose')).status).to.equal(404);
      expect((await api.post('/admin/switch/w-mock/wiring/propose', { ports: ['gi1/0/1'] })).status).to.equal(400);
      expect((await api.get('/admin/wiring?all=1')).status).to.equal(400);
      expect((await api.get('/v0/admin/switch/w-mock/wiring')).status).to.equal(200);
      await must(api.put('/switch/w-bare', { type: bare.type }));
      await must(api.put('/switch/w-bare/port/p1'));
      const b = await api.get('/admin/switch/w-bare/wiring');
      expect(b.status).to.equal(409);
      expect(b.body).to.deep.equal({ type: 'IllegalStateError', msg: `switch w-bare: its driver (${bare.type}) cannot read the switch's learned MACs and LLDP neighbours` });
      const all = await must(api.get('/admin/wiring'));
      expect(all.body.summary).to.deep.include({ unsupported: 1 });
      expect(all.body.switches.find((x: { switch: string }) => x.switch === 'w-bare')).to.deep.include({ status: 'unsupported' });
      await must(api.del('/switch/w-bare/port/p1'));
      await must(api.del('/switch/w-bare'));
    });
  });
});

describe('wiring check of every switch, a switch deleted meanwhile', () => {
  it('is left out of the list and of the summary; the others are still checked', async () => {
    const rm = {
      switches: new Map([['a', {}], ['b', {}], ['c', {}]]),
      portsOf: () => [],
      nics: new Map(),
      wiring: { get: () => undefined },
    };
    const check = new WiringCheck({
      rm: rm as never,
      // b is deleted after checkAll listed the switches: its lookup finds nothing
      switchInfo: (name: string) => (name === 'b' ? undefined : ({ name, type: 't', fields: {} } as never)),
      sessions: { submit: async (_sw: unknown, work: (s: unknown) => Promise<void>) => { await work({ readWiring: async () => new Map() }); } } as never,
    });
    const all = await check.checkAll();
    expect(all.switches.map((s) => s.switch)).to.deep.equal(['a', 'c']);
    expect(all.summary).to.deep.include({ switches: 2, failed: 0, unsupported: 0 });
  });
});

describe('wiring verdicts from LLDP: a chassis id names the host, not which of its nics is in the port', () => {
  // Node n's eth0 (MAC …:0a) is wired to port p1 and eth1 (…:0b) to p2, but the cables are
  // swapped. An LLDP agent such as lldpd sends one chassis id for the host (eth0's MAC) on both
  // and each interface's own MAC as the port id.
  const A = '02:00:00:00:00:0a';
  const B = '02:00:00:00:00:0b';
  const nics = [{ node: 'n', name: 'eth0', macaddr: A }, { node: 'n', name: 'eth1', macaddr: B }];
  const rm = {
    switches: new Map([['s', {}]]),
    portsOf: () => [
      { name: 'p1', wire: { node: 'n', nic: 'eth0' }, config: { native: 1001, tagged: [] } },
      { name: 'p2', wire: { node: 'n', nic: 'eth1' }, config: { native: 1001, tagged: [] } },
    ],
    nic: (node: string, nic: string) => nics.find((x) => x.node === node && x.name === nic),
    nics: new Map(nics.map((x) => [`${x.node}/${x.name}`, x])),
    wiring: { get: () => undefined },
  };
  const check = new WiringCheck({ rm: rm as never, switchInfo: () => undefined, sessions: {} as never });
  const verdicts = (tables: Record<string, { macs: string[]; lldp: Array<{ chassisId: string; portId: string }> }>) =>
    Object.fromEntries(check.report('s', new Map(Object.entries(tables))).ports.map((p) => [p.port, p.verdict]));

  it('a neighbour whose port id is another nic\'s MAC does not confirm the nic its chassis id names', () => {
    expect(verdicts({
      p1: { macs: [], lldp: [{ chassisId: A, portId: B }] },
      p2: { macs: [], lldp: [{ chassisId: A, portId: A }] },
    })).to.deep.equal({ p1: 'mismatch', p2: 'mismatch' });
  });

  it('nor does the chassis id outweigh another nic\'s MAC learned on the port', () => {
    expect(verdicts({
      p1: { macs: [B], lldp: [{ chassisId: A, portId: 'eth1' }] },
      p2: { macs: [A], lldp: [{ chassisId: A, portId: 'eth0' }] },
    })).to.deep.equal({ p1: 'mismatch', p2: 'mismatch' });
  });

  it('the chassis id still confirms a nic where nothing names another (a port id that is no MAC)', () => {
    expect(verdicts({ p1: { macs: [], lldp: [{ chassisId: A, portId: 'eth0' }] }, p2: { macs: [B], lldp: [] } }))
      .to.deep.equal({ p1: 'ok', p2: 'ok' });
  });
});
