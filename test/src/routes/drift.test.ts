/**
 * The drift audit of a switch over HTTP (GET /admin/switch/<s>/drift, POST …/repair) with the
 * mock switch, whose ports (its own LMDB folder) the tests change behind the service's back. A
 * second switch type defined here can hold its changes (to keep an operation pending) and
 * refuse or never answer a login.
 */
import { expect } from 'chai';
import { startTestServer, TestServer, Client, must, makeNode, makeUser, mockSwitch, Creds, finished } from '../../helpers/server';
import type { PortVlans, SwitchDriver, SwitchDriverEntry, SwitchInfo, SwitchSession } from '../../../drivers/switch/types';
import { SwitchError } from '../../../drivers/switch/types';


/** A lab switch: `hold()` holds every change until `release()`; a switch named `down` refuses logins, one named `mute` never answers them. */
class LabSwitch implements SwitchDriver {
  private readonly ports = new Map<string, PortVlans>();
  private gate: Promise<void> | null = null;
  private open_: (() => void) | null = null;
  logins = 0;

  hold(): void {
    this.gate = new Promise((r) => (this.open_ = r));
  }

  release(): void {
    this.open_?.();
    this.gate = null;
  }

  async open(sw: SwitchInfo, signal: AbortSignal): Promise<SwitchSession> {
    this.logins++;
    if (sw.name === 'down') throw new SwitchError('connection refused (lab switch down)');
    if (sw.name === 'mute') await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    const get = (port: string) => this.ports.get(`${sw.name}/${port}`) ?? { native: null, tagged: [] };
    const set = async (port: string, v: PortVlans) => {
      if (this.gate) await this.gate;
      this.ports.set(`${sw.name}/${port}`, v);
    };
    return {
      setNative: (port, vlan) => set(port, { ...get(port), native: vlan }),
      removeNative: (port) => set(port, { ...get(port), native: null }),
      addTagged: (port, vlan) => set(port, { ...get(port), tagged: [...new Set([...get(port).tagged, vlan])].sort((a, b) => a - b) }),
      removeTagged: (port, vlan) => set(port, { ...get(port), tagged: get(port).tagged.filter((t) => t !== vlan) }),
      resetPort: (port) => set(port, { native: null, tagged: [] }),
      getPortVlans: async (port) => get(port),
      close: async () => undefined,
    };
  }
}

const labSwitch: SwitchDriverEntry<LabSwitch> = {
  type: 'http://schema.example/switches/lab',
  extension: 'test.switches.lab',
  fields: { type: 'object', additionalProperties: false, properties: {} },
  portName: /^p\d+$/,
  create: () => new LabSwitch(),
};

const PORTS = ['gi1/0/1', 'gi1/0/2', 'gi1/0/3', 'gi1/0/4', 'gi1/0/5'];

describe('drift audit and repair of a switch (admin)', function () {
  this.timeout(30_000);
  let ts: TestServer;
  let api: Client;
  let member: Creds;
  let vlan: { w: number; t: number };
  const lab = () => ts.drivers.switches.driver(labSwitch.type) as LabSwitch;
  const sessions = () => ts.mockSwitch.sessionsOpened.get('ds') ?? 0;
  /** Change the mock switch behind the service's back. */
  async function behindTheBack(f: (s: SwitchSession) => Promise<void>): Promise<void> {
    const s = await ts.mockSwitch.open({ name: 'ds', type: 'mock', fields: {} }, new AbortController().signal);
    await f(s);
    await s.close();
  }
  const statuses = (body: { ports: { port: string; status: string }[] }) => Object.fromEntries(body.ports.map((p) => [p.port, p.status]));

  before(async () => {
    // The VLAN drift of ports; their administrative state (HILT_INACTIVE_PORTS=shutdown) has its own tests (inactive-ports.test.ts).
    ts = await startTestServer({ switchTimeoutMs: 1500, inactivePorts: 'keep' }, { extraDrivers: { switch: [labSwitch] } });
    api = ts.api;
    await must(api.put('/project/dp'));
    member = await makeUser(api, 'dp-member', 'pw', ['dp']);
    await must(api.put('/switch/ds', mockSwitch));
    for (const p of PORTS) await must(api.put(`/switch/ds/port/${p}`));
    // dn1..dn4 wired to ports 1..4; port 5 stays unwired.
    for (let i = 1; i <= 4; i++) {
      await makeNode(api, `dn${i}`, ['eth0']);
      await must(api.post(`/switch/ds/port/${PORTS[i - 1]}/connect_nic`, { node: `dn${i}`, nic: 'eth0' }));
      await must(api.post('/project/dp/connect_node', { node: `dn${i}` }));
    }
    await must(api.put('/network/dw', { owner: 'dp', access: 'dp', net_id: '' }));
    await must(api.put('/network/dt', { owner: 'dp', access: 'dp', net_id: '' }));
    const nets = (await api.get('/networks')).body;
    vlan = { w: Number(nets.dw.network_id), t: Number(nets.dt.network_id) };
    const connect = async (node: string, network: string, channel?: string) => {
      const r = await must(api.post(`/node/${node}/nic/eth0/connect_network`, { network, ...(channel ? { channel } : {}) }), 202);
      expect(await finished(api, r.body.status_id)).to.include({ status: 'DONE' });
    };
    await connect('dn1', 'dw');
    await connect('dn2', 'dw');
    await connect('dn2', 'dt', `vlan/${vlan.t}`);
    await connect('dn3', 'dt', `vlan/${vlan.t}`);
  });

  it('reports every port in sync after the service\'s own operations, read in one session', async () => {
    const before = sessions();
    const r = await must(api.get('/admin/switch/ds/drift'));
    expect(sessions() - before).to.equal(1);
    expect(r.body.switch).to.equal('ds');
    expect(r.body.summary).to.deep.equal({ in_sync: 5, drifted: 0, pending: 0, unreadable: 0 });
    expect(r.body.ports.map((p: { port: string }) => p.port)).to.deep.equal(PORTS);
    expect(r.body.ports[1]).to.deep.equal({
      port: 'gi1/0/2', nic: { node: 'dn2', nic: 'eth0' }, status: 'in_sync',
      expected: { native: vlan.w, tagged: [vlan.t] }, actual: { native: vlan.w, tagged: [vlan.t], enabled: true },
    });
    expect(r.body.ports[4]).to.deep.equal({
      port: 'gi1/0/5', nic: null, status: 'in_sync', expected: { native: null, tagged: [] }, actual: { native: null, tagged: [], enabled: true },
    });
  });

  it('reports exactly the ports changed behind the service\'s back, and repairs them in one session', async () => {
    // A "reboot" lost port 1's configuration; someone added VLAN 3999 to port 3 and put port 5 (unwired) on 3998.
    await behindTheBack(async (s) => {
      await s.resetPort('gi1/0/1');
      await s.addTagged('gi1/0/3', 3999);
      await s.setNative('gi1/0/5', 3998);
    });
    let before = sessions();
    const audit = await must(api.get('/admin/switch/ds/drift'));
    expect(sessions() - before).to.equal(1);
    expect(statuses(audit.body)).to.deep.equal({
      'gi1/0/1': 'drifted', 'gi1/0/2': 'in_sync', 'gi1/0/3': 'drifted', 'gi1/0/4': 'in_sync', 'gi1/0/5': 'drifted',
    });
    expect(audit.body.summary).to.deep.equal({ in_sync: 2, drifted: 3, pending: 0, unreadable: 0 });
    const [p1, , p3, , p5] = audit.body.ports;
    expect(p1).to.deep.include({ expected: { native: vlan.w, tagged: [] }, actual: { native: null, tagged: [], enabled: true } });
    expect(p1.differences).to.deep.equal([`native VLAN: the service holds ${vlan.w}, the switch has none`]);
    expect(p3.differences).to.deep.equal(['tagged VLANs the service does not hold: 3999']);
    expect(p5.differences).to.deep.equal(['native VLAN: the service holds none, the switch has 3998']);
    // The audit changed nothing.
    expect(ts.mockSwitch.port('ds', 'gi1/0/3')).to.deep.equal({ native: null, tagged: [vlan.t, 3999] });

    before = sessions();
    const repair = await must(api.post('/admin/switch/ds/repair'));
    expect(sessions() - before).to.equal(1);
    expect(statuses(repair.body)).to.deep.equal({
      'gi1/0/1': 'repaired', 'gi1/0/2': 'in_sync', 'gi1/0/3': 'repaired', 'gi1/0/4': 'in_sync', 'gi1/0/5': 'repaired',
    });
    expect(repair.body.summary).to.deep.equal({ in_sync: 2, repaired: 3, pending: 0, failed: 0 });
    // `actual` is what the switch had before the repair.
    expect(repair.body.ports[2]).to.deep.include({ actual: { native: null, tagged: [vlan.t, 3999], enabled: true } });
    expect(ts.mockSwitch.port('ds', 'gi1/0/1')).to.deep.equal({ native: vlan.w, tagged: [] });
    expect(ts.mockSwitch.port('ds', 'gi1/0/3')).to.deep.equal({ native: null, tagged: [vlan.t] });
    expect(ts.mockSwitch.port('ds', 'gi1/0/5')).to.deep.equal({ native: null, tagged: [] });
    expect((await must(api.get('/admin/switch/ds/drift'))).body.summary).to.deep.include({ in_sync: 5 });
    // The nics' networks are the service's, untouched by either call.
    expect((await api.get('/node/dn2')).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'dw', [`vlan/${vlan.t}`]: 'dt' });
  });

  it('reports a port with a pending operation as such, without reading or repairing it', async () => {
    // dn4's operation on the lab switch is held there, so its next one (on ds port 4) stays pending.
    await must(api.put('/switch/lab1', { type: labSwitch.type }));
    await must(api.put('/switch/lab1/port/p1'));
    await must(api.put('/node/dn4/nic/eth1', { macaddr: 'de:ad:be:ef:04:01' }));
    await must(api.post('/switch/lab1/port/p1/connect_nic', { node: 'dn4', nic: 'eth1' }));
    lab().hold();
    try {
      const first = await must(api.post('/node/dn4/nic/eth1/connect_network', { network: 'dw' }), 202);
      const second = await must(api.post('/node/dn4/nic/eth0/connect_network', { network: 'dt', channel: `vlan/${vlan.t}` }), 202);
      await behindTheBack((s) => s.addTagged('gi1/0/4', 3997));
      await behindTheBack((s) => s.resetPort('gi1/0/1'));
      const audit = await must(api.get('/admin/switch/ds/drift'));
      expect(statuses(audit.body)).to.deep.include({ 'gi1/0/1': 'drifted', 'gi1/0/4': 'pending' });
      expect(audit.body.ports[3]).to.deep.equal({
        port: 'gi1/0/4', nic: { node: 'dn4', nic: 'eth0' }, status: 'pending', expected: { native: null, tagged: [] }, actual: null,
      });
      const repair = await must(api.post('/admin/switch/ds/repair'));
      expect(statuses(repair.body)).to.deep.include({ 'gi1/0/1': 'repaired', 'gi1/0/4': 'pending' });
      expect(repair.body.summary).to.deep.include({ repaired: 1, pending: 1 });
      // Port 4 was left as it was; port 1 repaired.
      expect(ts.mockSwitch.port('ds', 'gi1/0/4')).to.deep.equal({ native: null, tagged: [3997] });
      expect(ts.mockSwitch.port('ds', 'gi1/0/1')).to.deep.equal({ native: vlan.w, tagged: [] });
      lab().release();
      expect(await finished(api, first.body.status_id)).to.include({ status: 'DONE' });
      expect(await finished(api, second.body.status_id)).to.include({ status: 'DONE' });
    } finally {
      lab().release();
    }
    // Once done, the audit reads it again: the port's first network started from a reset of
    // it, so the VLAN added by hand is gone with it.
    const audit = await must(api.get('/admin/switch/ds/drift'));
    expect(audit.body.ports[3]).to.deep.include({ status: 'in_sync', expected: { native: null, tagged: [vlan.t] }, actual: { native: null, tagged: [vlan.t], enabled: true } });
    expect(ts.mockSwitch.port('ds', 'gi1/0/4')).to.deep.equal({ native: null, tagged: [vlan.t] });
  });

  it('answers 502 SwitchError with the reason when the switch cannot be reached, within the switch timeout', async () => {
    await must(api.put('/switch/down', { type: labSwitch.type }));
    await must(api.put('/switch/down/port/p1'));
    await must(api.put('/switch/down/port/p2'));
    const logins = lab().logins;
    for (const call of [() => api.get('/admin/switch/down/drift'), () => api.post('/admin/switch/down/repair')]) {
      const r = await call();
      expect(r.status).to.equal(502);
      expect(r.body).to.deep.equal({ type: 'SwitchError', msg: 'switch down cannot be reached: connection refused (lab switch down)' });
    }
    // One login per call, not one per port.
    expect(lab().logins - logins).to.equal(2);

    await must(api.put('/switch/mute', { type: labSwitch.type }));
    await must(api.put('/switch/mute/port/p1'));
    const t = Date.now();
    const r = await api.get('/admin/switch/mute/drift');
    expect(r.status).to.equal(502);
    expect(r.body.msg).to.match(/^switch mute cannot be reached: .*logging in did not finish within 1500 ms/);
    expect(Date.now() - t).to.be.below(1500 + 5_000);
  });

  it('answers a switch without ports with an empty report, without contacting it', async () => {
    await must(api.put('/switch/empty', { type: labSwitch.type }));
    const logins = lab().logins;
    const r = await must(api.get('/admin/switch/empty/drift'));
    expect(r.body).to.deep.equal({ switch: 'empty', ports: [], summary: { in_sync: 0, drifted: 0, pending: 0, unreadable: 0 } });
    expect(lab().logins).to.equal(logins);
  });

  it('is for admins only (401 before 404), 404 for an unknown switch, and takes no body or query', async () => {
    expect((await api.with(member).get('/admin/switch/ds/drift')).status).to.equal(401);
    expect((await api.with(member).post('/admin/switch/ds/repair')).status).to.equal(401);
    expect((await api.with(member).get('/admin/switch/nope/drift')).status).to.equal(401);
    expect((await api.with(null).post('/admin/switch/ds/repair')).status).to.equal(401);
    const missing = await api.get('/admin/switch/nope/drift');
    expect(missing.status).to.equal(404);
    expect(missing.body).to.deep.equal({ type: 'NotFoundError', msg: 'switch nope does not exist' });
    expect((await api.post('/admin/switch/nope/repair')).status).to.equal(404);
    expect((await api.post('/admin/switch/ds/repair', { ports: ['gi1/0/1'] })).status).to.equal(400);
    expect((await api.get('/admin/switch/ds/drift?all=1')).status).to.equal(400);
    expect((await api.get('/v0/admin/switch/ds/drift')).status).to.equal(200);
  });
});
