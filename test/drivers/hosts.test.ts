/**
 * How drivers take the address of the device they contact: every switch family and BMC driver
 * reaches its simulator listening on the IPv6 loopback (`[::1]:port`, or a URL with `[::1]`),
 * and every entry refuses at registration an address that is no host name or IP literal, while
 * accepting each form a site could use (DNS names, IPv4, IPv6, with a port where the driver
 * takes one).
 */
import { expect } from 'chai';
import { SWITCH_DRIVERS } from '../../drivers/switch';
import { parseHostname } from '../../drivers/switch/ssh/driver';
import { OBM_DRIVERS } from '../../drivers/obm';
import { redfish, RedfishDriver } from '../../drivers/obm/redfish';
import { parseBmcHost } from '../../drivers/obm/ipmitool';
import { DriverRegistry } from '../../drivers/registry';
import type { SwitchDriver, SwitchDriverEntry } from '../../drivers/switch/types';
import { simFor, SSH_CASES } from '../helpers/switch-sims';
import { REST_CASES, restRegistration, restSimFor } from '../helpers/rest-switch-sims';
import { startRedfishSim } from '../helpers/redfish-sim';
import { startIpmiSim } from '../helpers/ipmisim';
import { startSerialLine } from '../helpers/serial-line';
import { until } from '../helpers/wait';
import { IpmitoolDriver } from '../../drivers/obm/ipmitool';

const live = () => new AbortController().signal;
const entryOf = (type: string) => SWITCH_DRIVERS.find((e) => e.type === type) as SwitchDriverEntry<SwitchDriver>;
const settings = { switchSave: false, switchTimeoutMs: 10_000, obmTimeoutMs: 10_000 } as never;

describe('drivers and their devices\' addresses', function () {
  this.timeout(30_000);

  describe('an IPv6 loopback device', () => {
    for (const c of SSH_CASES) {
      it(`${c.vendor}: registered as [::1]:port, changes a port of the switch`, async () => {
        const sim = await simFor(c, { address: '::1' });
        expect(sim.address).to.match(/^\[::1\]:\d+$/);
        const fields = { hostname: sim.address, username: sim.username, password: sim.password, ...c.extra };
        const entry = entryOf(c.type);
        expect(entry.check!(fields)).to.equal(null);
        const s = await entry.create({ settings }).open({ name: 'sw6', type: c.type, fields }, live());
        await s.addTagged(c.ports[0]!, 1001);
        await s.commit?.();
        await s.close();
        expect(sim.carried(c.ports[0]!).tagged).to.deep.equal([1001]);
        // messages name the switch as [v6]:port
        const err = await entry.create({ settings }).open({ name: 'sw6', type: c.type, fields: { ...fields, password: 'wrong' } }, live())
          .then(() => null, (e: Error) => e);
        expect(err?.message).to.include(`(${sim.address})`);
      });
    }

    for (const c of REST_CASES) {
      it(`${c.vendor}: registered as ${c.tls ? 'https' : 'http'}://[::1]:port, changes a port of the switch`, async () => {
        const sim = await restSimFor(c, { address: '::1' });
        expect(sim.url).to.match(/^https?:\/\/\[::1\]:\d+$/);
        const { type: _t, ...fields } = restRegistration(c, sim);
        const entry = entryOf(c.type);
        expect(entry.check!(fields)).to.equal(null);
        const s = await entry.create({ settings }).open({ name: 'sw6', type: c.type, fields }, live());
        await s.addTagged(c.ports[0]!, 1001);
        await s.close();
        expect(sim.carried(c.ports[0]!).tagged).to.deep.equal([1001]);
      });
    }

    it('redfish: a BMC at https://[::1]:port is powered on, its origin naming it', async () => {
      const sim = await startRedfishSim({ user: 'root', password: 'Rf-v6-pw', address: '::1' });
      const d = new RedfishDriver();
      try {
        expect(sim.url).to.match(/^https:\/\/\[::1\]:\d+$/);
        const fields = { host: sim.url, user: 'root', password: 'Rf-v6-pw', ca_cert: sim.certPem };
        expect(redfish.check!(fields)).to.equal(null);
        expect(redfish.device(fields)).to.equal(sim.url);
        await d.powerOn(fields, live());
        expect(sim.system().PowerState).to.equal('On');
      } finally {
        await d.close(AbortSignal.timeout(2000));
        await sim.stop();
      }
    });
    it('ipmi: the serial console (SOL) of a BMC at [::1]:port carries the node\'s output', async () => {
      const line = await startSerialLine();
      const sim = await startIpmiSim({ user: 'hilt', password: 'Ipmi-v6-pw', address: '::1', solPort: line.port });
      let out = '';
      let link: { close(): void } | undefined;
      try {
        expect(sim.host).to.match(/^\[::1\]:\d+$/);
        link = await new IpmitoolDriver().openConsole({ host: sim.host, user: 'hilt', password: 'Ipmi-v6-pw' },
          { data: (b) => void (out += b.toString('latin1')), ended: () => undefined }, AbortSignal.timeout(20_000));
        await line.write('hello over v6\r\n');
        await until('the console carried the line', () => out.includes('hello over v6'), 10_000);
      } finally {
        link?.close();
        await sim.stop();
        await line.close();
      }
    });
  });

  describe('registration', () => {
    const switches = new DriverRegistry('switch', SWITCH_DRIVERS);
    const obms = new DriverRegistry('OBM', OBM_DRIVERS);
    const T = 'http://schema.massopencloud.org/haas/v0/';
    const ssh = SSH_CASES.map((c) => ({ name: c.vendor, body: (hostname: string) => ({ type: c.type, hostname, username: 'u', password: 'p', ...c.extra }) }));
    const rest = REST_CASES.map((c) => ({ name: c.vendor, body: (hostname: string) => ({ type: c.type, hostname, username: 'u', password: 'p', interface_type: c.interfaceType }) }));
    const ipmi = (host: string) => ({ type: `${T}obm/ipmi`, host, user: 'u', password: 'p' });
    const rf = (host: string) => ({ type: `${T}obm/redfish`, host, user: 'u', password: 'p' });
    const ok = (r: unknown) => expect(r, String(r)).to.be.an('object');
    const refused = (r: unknown) => expect(r, JSON.stringify(r)).to.be.a('string').and.match(/host(name)? .*(is not|must)|hostname|host /);

    const BAD_HOSTS = ['sw(1)', 'sw+1', 'sw 1', 'sw/1', 'sw..example', '-sw', 'sw-.example', 'sw\u00e9', '1.2.3', '256.1.1.1', ':::::', 'sw1:22:33', 'a'.repeat(64)];
    const GOOD_HOSTS = ['sw1', 'sw-1.lab.example', 'sw1.lab.example.', 'rack_3-sw', '127.0.0.1', '::1', '0:0:0:0:0:0:0:1', 'fe80::1%eth0'];

    it('SSH switches and IPMI: refuse what is no host name or IP literal (with or without a port)', () => {
      for (const h of [...BAD_HOSTS, ...BAD_HOSTS.filter((b) => !b.includes(':')).map((b) => `${b}:22`), '[sw1]:22', '[:::::]:22', '[::1', '[::1]:', '[::1]:0', 'sw1:65536']) {
        for (const s of ssh) refused(switches.validate(s.body(h)));
        refused(obms.validate(ipmi(h)));
      }
    });

    it('SSH switches and IPMI: take DNS names, IPv4 and IPv6 literals, bare or bracketed, with a port where given', () => {
      for (const h of [...GOOD_HOSTS, 'sw1:2222', '127.0.0.1:2222', '[::1]', '[::1]:2222', '[0:0:0:0:0:0:0:1]:22']) {
        for (const s of ssh) ok(switches.validate(s.body(h)));
        ok(obms.validate(ipmi(h)));
      }
      expect(parseHostname('::1')).to.deep.equal({ host: '::1', port: 22 });
      expect(parseHostname('[::1]:2222')).to.deep.equal({ host: '::1', port: 2222 });
      expect(parseHostname('fe80::1%eth0')).to.deep.equal({ host: 'fe80::1%eth0', port: 22 });
      expect(parseBmcHost('::1')).to.deep.equal({ address: '::1', port: 623, label: '[::1]:623' });
    });

    it('REST switches and Redfish: refuse a URL whose host is no host name or IP literal', () => {
      // A URL parser makes `1.2.3` the IPv4 1.2.0.3, and `swé` its IDNA (punycode) name.
      for (const h of BAD_HOSTS.filter((b) => !/[ /:]/.test(b) && b !== '1.2.3' && b !== 'sw\u00e9')) {
        for (const url of [`https://${h}`, `http://${h}:8008`]) {
          for (const s of rest) refused(switches.validate(s.body(url)));
          refused(obms.validate(rf(url)));
        }
      }
      for (const url of ['https://sw%281%29', 'https://[::1', 'https://sw 1', 'https://sw/1/']) {
        for (const s of rest) refused(switches.validate(s.body(url)));
        refused(obms.validate(rf(url)));
      }
    });

    it('REST switches and Redfish: take DNS names, IPv4 and IPv6 literals, with a port', () => {
      for (const url of ['https://sw1.lab.example', 'https://sw1.lab.example.:8888', 'http://rack_3-sw:8008', 'https://127.0.0.1:8443', 'https://[::1]', 'https://[0:0:0:0:0:0:0:1]:8443']) {
        for (const s of rest) ok(switches.validate(s.body(url)));
        ok(obms.validate(rf(url)));
      }
    });
  });
});
