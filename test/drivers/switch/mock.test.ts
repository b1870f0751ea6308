import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mock, MockSwitchDriver } from '../../../drivers/switch/mock';
import { SwitchError } from '../../../drivers/switch/types';
import { DriverRegistry } from '../../../drivers/registry';
import { DEFAULTS } from '../../../src/config';

const info = { name: 'sw1', type: 'mock', fields: {} };
const live = new AbortController().signal;

describe('MockSwitchDriver', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-mocksw-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps native and tagged VLANs per port, and persists them across restarts', async () => {
    let d = new MockSwitchDriver({ path: dir });
    const s = await d.open(info, live);
    await s.setNative('gi1/0/1', 100);
    await s.addTagged('gi1/0/1', 300);
    await s.addTagged('gi1/0/1', 200);
    await s.addTagged('gi1/0/1', 200);
    expect(await s.getPortVlans('gi1/0/1')).to.deep.equal({ native: 100, tagged: [200, 300], enabled: true });
    await s.removeTagged('gi1/0/1', 300);
    await s.close();
    await d.close();
    d = new MockSwitchDriver({ path: dir });
    expect(d.port('sw1', 'gi1/0/1')).to.deep.equal({ native: 100, tagged: [200] });
    expect(d.ports('sw1')).to.have.keys('gi1/0/1');
    const s2 = await d.open(info, live);
    await s2.removeNative('gi1/0/1');
    expect(d.port('sw1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [200] });
    await s2.resetPort('gi1/0/1');
    expect(d.port('sw1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
    await d.close();
  });

  it('applies the configured delay per operation and fails the injected ports', async () => {
    const d = new MockSwitchDriver({ path: dir, delayMs: 80, failPorts: ['sw1/gi1/0/9'] });
    const s = await d.open(info, live);
    const t = Date.now();
    await s.setNative('gi1/0/1', 5);
    expect(Date.now() - t).to.be.at.least(75);
    expect(s.changesSent).to.equal(1);
    const err = await s.setNative('gi1/0/9', 5).catch((e) => e);
    expect(err).to.be.instanceOf(SwitchError);
    expect(d.port('sw1', 'gi1/0/9')).to.deep.equal({ native: null, tagged: [] });
    // The injected failure sent nothing.
    expect(s.changesSent).to.equal(1);
    await d.close();
  });

  it('changes nothing more once its session is closed (the service closes it at a call\'s deadline)', async () => {
    const d = new MockSwitchDriver({ path: dir, delayMs: 80 });
    const s = await d.open(info, live);
    const late = s.setNative('gi1/0/1', 5).catch((e) => e);
    await s.close();
    expect(await late).to.be.instanceOf(SwitchError);
    expect(d.port('sw1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
    expect(s.changesSent).to.equal(0);
    await d.close();
  });

  it('gives up a login when its signal aborts', async () => {
    const d = new MockSwitchDriver({ path: dir, sessionDelayMs: 5000 });
    const t = Date.now();
    const err = await d.open(info, AbortSignal.timeout(50)).catch((e) => e);
    expect(err).to.have.property('name', 'AbortError');
    expect(Date.now() - t).to.be.below(1000);
    await d.close();
  });

  it('shuts and brings up ports, counting each change sent, and keeps the state across restarts', async () => {
    let d = new MockSwitchDriver({ path: dir });
    const s = await d.open(info, live);
    expect(d.enabled('sw1', 'gi1/0/1'), 'a port is up until shut').to.equal(true);
    await s.setEnabled!('gi1/0/1', false);
    await s.setEnabled!('gi1/0/1', false);
    expect(s.changesSent, 'shutting a shut port sends nothing').to.equal(1);
    expect(await s.getPortVlans('gi1/0/1')).to.deep.equal({ native: null, tagged: [], enabled: false });
    await s.setNative('gi1/0/2', 5);
    await s.close();
    await d.close();
    d = new MockSwitchDriver({ path: dir });
    expect(d.enabled('sw1', 'gi1/0/1')).to.equal(false);
    // The shut mark is not a port of its own.
    expect(Object.keys(d.ports('sw1'))).to.deep.equal(['gi1/0/2']);
    const s2 = await d.open(info, live);
    await s2.setEnabled!('gi1/0/1', true);
    expect(d.enabled('sw1', 'gi1/0/1')).to.equal(true);
    await s2.close();
    await d.close();
  });

  it('reports what it learned on its ports, normalized, and nothing on a shut port', async () => {
    const d = new MockSwitchDriver({ path: dir });
    d.learn('sw1', 'gi1/0/1', { macs: ['DE:AD:BE:EF:00:01', '0050.56a0.1234'], lldp: [{ chassisId: 'de:ad:be:ef:00:01', portId: 'eth0', systemName: 'n1' }] });
    d.learn('sw1', 'gi1/0/7', { macs: ['de-ad-be-ef-00-07'] });
    const s = await d.open(info, live);
    const w = await s.readWiring!(['gi1/0/1', 'gi1/0/2']);
    expect(Object.fromEntries(w)).to.deep.equal({
      'gi1/0/1': { macs: ['00:50:56:a0:12:34', 'de:ad:be:ef:00:01'], lldp: [{ chassisId: 'de:ad:be:ef:00:01', portId: 'eth0', systemName: 'n1' }] },
      'gi1/0/2': { macs: [], lldp: [] },
      'gi1/0/7': { macs: ['de:ad:be:ef:00:07'], lldp: [] },
    });
    await s.setEnabled!('gi1/0/1', false);
    expect((await s.readWiring!(['gi1/0/1'])).get('gi1/0/1')).to.deep.equal({ macs: [], lldp: [] });
    await s.close();
    await d.close();
  });

  describe('its registry entry', () => {
    it('takes exactly hostname, username and password, all strings', () => {
      const reg = new DriverRegistry('switch', [mock]);
      expect(reg.validate({ type: mock.type, hostname: 'h', username: 'u', password: 'p' }))
        .to.deep.equal({ type: mock.type, fields: { hostname: 'h', username: 'u', password: 'p' } });
      expect(reg.validate({ type: mock.type, hostname: 'h', username: 'u' })).to.match(/password/);
      expect(reg.validate({ type: mock.type, hostname: 'h', username: 'u', password: 'p', port: '22' })).to.match(/port/);
      expect(reg.validate({ type: mock.type, hostname: 1, username: 'u', password: 'p' })).to.match(/hostname must be a string/);
    });

    it('builds the driver from the service\'s settings, in its own folder under the data folder, and shows a switch\'s ports', async () => {
      const d = mock.create({ settings: { ...DEFAULTS, dataDir: dir, mockSwitchFailPorts: ['sw1/gi1/0/9'] } });
      const s = await d.open(info, live);
      await s.setNative('gi1/0/1', 7);
      expect(await s.setNative('gi1/0/9', 7).catch((e) => e)).to.be.instanceOf(SwitchError);
      expect(mock.inspect!(d, { id: 'sw1', fields: {} })).to.deep.equal({ mockPorts: { 'gi1/0/1': { native: 7, tagged: [] } }, mockPortsShut: [] });
      await mock.close!(d);
      const reopened = new MockSwitchDriver({ path: join(dir, 'mock-switches') });
      expect(reopened.port('sw1', 'gi1/0/1')).to.deep.equal({ native: 7, tagged: [] });
      await reopened.close();
    });

    it('accepts the port names of the switches it stands in for', () => {
      for (const ok of ['gi1/0/1', 'te1/0/48', 'gi1/0']) expect(mock.portName.test(ok), ok).to.equal(true);
      for (const bad of ['eth0', 'gi1', 'gi1/0/', 'gi1/0/1/2', '../x']) expect(mock.portName.test(bad), bad).to.equal(false);
    });
  });
});
