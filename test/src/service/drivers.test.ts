/**
 * Adding a driver is one entry: a switch driver and an OBM driver defined here, with fields of
 * their own (not the mock's), are handed to the service beside the built-in ones and go through
 * registration (their schemas and checks), list_active_extensions, power calls with the
 * service's deadline, a network operation, and admin inspection, with nothing else changed.
 */
import { expect } from 'chai';
import { startTestServer, TestServer, Client, must } from '../../helpers/server';
import type { DriverFields } from '../../../drivers/registry';
import type { PortVlans, SwitchDriver, SwitchDriverEntry, SwitchInfo, SwitchSession } from '../../../drivers/switch/types';
import type { BootDevice, ObmDriver, ObmDriverEntry, PowerState } from '../../../drivers/obm/types';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A switch reached by address and port number, with a token: fields no built-in driver has. */
class FakeSwitch implements SwitchDriver {
  readonly logins: SwitchInfo[] = [];
  private readonly ports = new Map<string, PortVlans>();

  portsOf(sw: string): Record<string, PortVlans> {
    return Object.fromEntries([...this.ports].filter(([k]) => k.startsWith(`${sw}/`)).map(([k, v]) => [k.slice(sw.length + 1), v]));
  }

  async open(sw: SwitchInfo): Promise<SwitchSession> {
    this.logins.push(sw);
    const get = (port: string) => this.ports.get(`${sw.name}/${port}`) ?? { native: null, tagged: [] };
    const set = async (port: string, v: PortVlans) => { this.ports.set(`${sw.name}/${port}`, v); };
    return {
      setNative: (port, vlan) => set(port, { ...get(port), native: vlan }),
      removeNative: (port) => set(port, { ...get(port), native: null }),
      addTagged: (port, vlan) => set(port, { ...get(port), tagged: [...get(port).tagged, vlan] }),
      removeTagged: (port, vlan) => set(port, { ...get(port), tagged: get(port).tagged.filter((t) => t !== vlan) }),
      resetPort: (port) => set(port, { native: null, tagged: [] }),
      getPortVlans: async (port) => get(port),
      close: async () => undefined,
    };
  }
}

const fakeSwitch: SwitchDriverEntry<FakeSwitch> = {
  type: 'http://schema.example/switches/fake',
  extension: 'test.switches.fake',
  fields: {
    type: 'object',
    additionalProperties: false,
    required: ['address', 'port', 'token'],
    properties: { address: { type: 'string' }, port: { type: 'integer', minimum: 1, maximum: 65535 }, token: { type: 'string' } },
  },
  portName: /^port\d+$/,
  create: () => new FakeSwitch(),
  inspect: (driver, { id }) => ({ fakePorts: driver.portsOf(id) }),
};

/** A BMC reached by URL and slot; slot 13 never answers (until its call is aborted). */
class FakeBmc implements ObmDriver {
  readonly calls: { what: string; fields: DriverFields; signal: AbortSignal }[] = [];
  readonly power = new Map<string, PowerState>();

  private async call(what: string, fields: DriverFields, signal: AbortSignal): Promise<void> {
    this.calls.push({ what, fields, signal });
    if (fields.slot === 13) await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    await sleep(5);
  }
  async powerCycle(fields: DriverFields, _opts: { force?: boolean }, signal: AbortSignal): Promise<void> {
    await this.call('cycle', fields, signal);
    this.power.set(`${fields.url}#${fields.slot}`, 'on');
  }
  async powerOff(fields: DriverFields, signal: AbortSignal): Promise<void> {
    await this.call('off', fields, signal);
    this.power.set(`${fields.url}#${fields.slot}`, 'off');
  }
  async powerOn(fields: DriverFields, signal: AbortSignal): Promise<void> {
    await this.call('on', fields, signal);
    this.power.set(`${fields.url}#${fields.slot}`, 'on');
  }
  async powerStatus(fields: DriverFields, signal: AbortSignal): Promise<PowerState> {
    await this.call('status', fields, signal);
    return this.power.get(`${fields.url}#${fields.slot}`) ?? 'off';
  }
  async setBootDevice(fields: DriverFields, device: BootDevice, signal: AbortSignal): Promise<void> {
    await this.call(`boot ${device}`, fields, signal);
  }
}

const fakeObm: ObmDriverEntry<FakeBmc> = {
  type: 'http://schema.example/obm/fake',
  extension: 'test.obm.fake',
  fields: {
    type: 'object',
    additionalProperties: false,
    required: ['url', 'slot', 'secret'],
    properties: { url: { type: 'string' }, slot: { type: 'integer', minimum: 0 }, secret: { type: 'string' } },
  },
  check: (fields) => (String(fields.url).startsWith('https://') ? null : 'url must be https'),
  device: (fields) => String(fields.url),
  create: () => new FakeBmc(),
  inspect: (driver, { fields }) => ({ fakeBmc: { power: driver.power.get(`${fields.url}#${fields.slot}`) ?? 'off' } }),
};

describe('drivers added beside the built-in ones', function () {
  this.timeout(20_000);
  let ts: TestServer;
  let api: Client;
  const bmc = () => ts.drivers.obm.driver(fakeObm.type) as FakeBmc;
  const sw = () => ts.drivers.switches.driver(fakeSwitch.type) as FakeSwitch;
  const obm = (slot: number) => ({ type: fakeObm.type, url: 'https://bmc.example/redfish', slot, secret: 'fake-obm-secret' });
  const switchBody = { type: fakeSwitch.type, address: 'sw.example', port: 2222, token: 'fake-switch-token' };

  before(async () => {
    ts = await startTestServer({ obmTimeoutMs: 300 }, { extraDrivers: { switch: [fakeSwitch], obm: [fakeObm] } });
    api = ts.api;
  });

  it('are listed by list_active_extensions with the built-in ones', async () => {
    const r = await must(api.get('/active_extensions'));
    expect(r.body).to.include.members(['test.switches.fake', 'test.obm.fake', 'hilt.switches.mock', 'hilt.obm.ipmi', 'hilt.obm.mock']);
  });

  describe('an OBM driver', () => {
    for (const [what, o, msg] of [
      ['a missing field', { type: fakeObm.type, url: 'https://b', secret: 's' }, /^obm\.slot must be an integer$/],
      ['a field of the wrong type', { ...obm(1), slot: '1' }, /^obm\.slot must be an integer$/],
      ['an unknown field', { ...obm(1), host: 'b' }, /^unexpected OBM field\(s\): host$/],
      ['fields its check refuses', { ...obm(1), url: 'http://b' }, /^url must be https$/],
    ] as const) {
      it(`refuses a node registration with ${what} (400), and registers nothing`, async () => {
        const r = await api.put('/node/fake-bad', { obm: o });
        expect(r.status).to.equal(400);
        expect(r.body.type).to.equal('BadArgumentError');
        expect(r.body.msg).to.match(msg);
        expect((await api.get('/node/fake-bad')).status).to.equal(404);
      });
    }

    it('registers a node with its own fields, and answers power calls through the driver', async () => {
      await must(api.put('/node/fake-n1', { obm: obm(1) }));
      await must(api.post('/node/fake-n1/power_cycle'));
      expect((await must(api.get('/node/fake-n1/power_status'))).body).to.deep.equal({ power_status: 'on' });
      await must(api.post('/node/fake-n1/power_off'));
      expect((await must(api.get('/node/fake-n1/power_status'))).body).to.deep.equal({ power_status: 'off' });
      await must(api.post('/node/fake-n1/power_on'));
      await must(api.put('/node/fake-n1/boot_device', { bootdev: 'disk' }));
      expect(bmc().calls.map((c) => c.what)).to.deep.equal(['cycle', 'status', 'off', 'status', 'on', 'boot disk']);
      expect(bmc().calls[0]!.fields).to.deep.equal({ url: 'https://bmc.example/redfish', slot: 1, secret: 'fake-obm-secret' });
    });

    it('shows its inspection to admins, with the secret field redacted from the state', async () => {
      await must(api.post('/node/fake-n1/power_cycle'));
      const r = await must(api.get('/admin/actors/node/fake-n1'));
      expect(r.body.fakeBmc).to.deep.equal({ power: 'on' });
      expect(r.body.state.obm).to.deep.equal({ type: fakeObm.type, fields: { url: 'https://bmc.example/redfish', slot: 1, secret: '[redacted]' } });
      expect(r.text).to.not.include('fake-obm-secret');
    });

    it('gets the service\'s deadline: a BMC that never answers is a 502 within the OBM timeout, its call aborted', async () => {
      await must(api.put('/node/fake-hang', { obm: obm(13) }));
      const t = Date.now();
      const r = await api.post('/node/fake-hang/power_off');
      expect(Date.now() - t).to.be.below(1000);
      expect(r.status).to.equal(502);
      expect(r.body).to.deep.equal({ type: 'OBMError', msg: 'BMC https://bmc.example/redfish did not answer within 300 ms (power off)' });
      expect(bmc().calls.at(-1)!.signal.aborted).to.equal(true);
    });
  });

  describe('a switch driver', () => {
    for (const [what, body] of [
      ['a missing field', { type: fakeSwitch.type, address: 'a', port: 22 }],
      ['a field of the wrong type', { ...switchBody, port: '22' }],
      ['a field out of its range', { ...switchBody, port: 70000 }],
      ['the mock\'s fields', { type: fakeSwitch.type, hostname: 'h', username: 'u', password: 'p' }],
    ] as const) {
      it(`refuses a registration with ${what} (400)`, async () => {
        expect((await api.put('/switch/fake-bad', body)).status).to.equal(400);
        expect((await api.get('/switches')).body).to.not.include('fake-bad');
      });
    }

    it('registers a switch with its own fields and its own port names', async () => {
      await must(api.put('/switch/fsw', switchBody));
      expect((await api.put('/switch/fsw/port/gi1/0/1')).status).to.equal(400);
      await must(api.put('/switch/fsw/port/port1'));
      expect((await api.get('/switch/fsw')).body).to.deep.equal({ name: 'fsw', ports: ['port1'] });
    });

    it('carries out a network connect on its port and shows the port to admins', async () => {
      await must(api.put('/project/fp'));
      await must(api.put('/network/fnet', { owner: 'fp', access: 'fp', net_id: '' }));
      const vlan = Number((await api.get('/networks')).body.fnet.network_id);
      await must(api.put('/node/fake-n2', { obm: obm(2) }));
      await must(api.put('/node/fake-n2/nic/eth0', { macaddr: 'de:ad:be:ef:00:02' }));
      await must(api.post('/switch/fsw/port/port1/connect_nic', { node: 'fake-n2', nic: 'eth0' }));
      await must(api.post('/project/fp/connect_node', { node: 'fake-n2' }));
      const id = (await must(api.post('/node/fake-n2/nic/eth0/connect_network', { network: 'fnet' }), 202)).body.status_id;
      let status: Record<string, unknown> = {};
      for (let i = 0; i < 200 && status.status !== 'DONE' && status.status !== 'ERROR'; i++) {
        status = (await api.get(`/networking_action/${id}`)).body;
        await sleep(10);
      }
      expect(status.status).to.equal('DONE');
      expect(sw().portsOf('fsw')).to.deep.equal({ port1: { native: vlan, tagged: [] } });
      expect(sw().logins.at(-1)).to.deep.equal({ name: 'fsw', type: fakeSwitch.type, fields: { address: 'sw.example', port: 2222, token: 'fake-switch-token' } });
      const r = await must(api.get('/admin/actors/switch/fsw'));
      expect(r.body.fakePorts).to.deep.equal({ port1: { native: vlan, tagged: [] } });
      expect(r.text).to.not.include('fake-switch-token');
    });
  });
});
