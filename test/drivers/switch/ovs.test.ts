/**
 * The Open vSwitch driver's translation between the service's VLANs and OVSDB's columns, its
 * settings and its registration entry, without an OVS (test/src/routes/switch-ovs.test.ts runs it
 * against a real one).
 */
import { expect } from 'chai';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { columnsFor, ovs, ovsdbRemote, parseColumns, toPortVlans, OVS_NAME, OvsSwitchDriver } from '../../../drivers/switch/ovs';
import { DriverRegistry } from '../../../drivers/registry';
import { SwitchError } from '../../../drivers/switch/types';

const read = (tag: string, trunks: string, mode: string, prot = 'false') => toPortVlans(parseColumns(tag, trunks, mode, prot));

describe('Open vSwitch driver: columns, names and settings', () => {
  it('writes each configuration as one combination of tag, trunks, vlan_mode and protected, never an empty trunk list outside access mode', () => {
    expect(columnsFor({ native: null, tagged: [] })).to.deep.equal(['tag=[]', 'trunks=[4095]', 'vlan_mode=trunk', 'protected=true']);
    expect(columnsFor({ native: 100, tagged: [] })).to.deep.equal(['tag=100', 'trunks=[]', 'vlan_mode=access', 'protected=false']);
    expect(columnsFor({ native: null, tagged: [300, 200, 300] })).to.deep.equal(['tag=[]', 'trunks=[200,300]', 'vlan_mode=trunk', 'protected=false']);
    expect(columnsFor({ native: 100, tagged: [200] })).to.deep.equal(['tag=100', 'trunks=[200]', 'vlan_mode=native-untagged', 'protected=false']);
    for (const bad of [0, 4095, 4096]) expect(() => columnsFor({ native: bad, tagged: [] })).to.throw(SwitchError, /cannot be used on Open vSwitch/);
  });

  it('reads back what it writes, and the dead VLAN as nothing', () => {
    expect(read('[]', '[4095]', 'trunk', 'true')).to.deep.equal({ native: null, tagged: [] });
    expect(read('100', '[]', 'access')).to.deep.equal({ native: 100, tagged: [] });
    expect(read('[]', '[200, 300]', 'trunk')).to.deep.equal({ native: null, tagged: [200, 300] });
    expect(read('100', '[200]', 'native-untagged')).to.deep.equal({ native: 100, tagged: [200] });
    // OVS's default modes: access with a tag, trunk without.
    expect(read('7', '[]', '[]')).to.deep.equal({ native: 7, tagged: [] });
  });

  it('reports in `other` what the service never sets, so that it never matches', () => {
    expect(read('[]', '[]', '[]')).to.deep.equal({ native: null, tagged: [], other: ['trunks every VLAN (trunks empty)'] });
    expect(read('100', '[]', 'native-untagged')).to.deep.equal({ native: 100, tagged: [], other: ['trunks every VLAN (trunks empty)'] });
    expect(read('100', '[200]', 'native-tagged').other).to.deep.equal(['native VLAN 100 sent tagged (vlan_mode native-tagged)']);
    expect(read('[]', '[]', 'access').other).to.deep.equal(['untagged frames on VLAN 0 (vlan_mode access without a tag)']);
    expect(read('5', '[6]', 'trunk')).to.deep.equal({ native: null, tagged: [6], other: ['tag 5 ignored by OVS (vlan_mode trunk)'] });
    expect(read('[]', '[0, 9]', 'trunk')).to.deep.equal({ native: null, tagged: [9], other: ['untagged frames on VLAN 0 (trunks 0)'] });
    expect(read('5', '[6]', 'dot1q-tunnel').other).to.deep.equal(['vlan_mode dot1q-tunnel']);
    expect(() => parseColumns('abc', '[]', '[]', 'false')).to.throw(SwitchError, /unexpected tag/);
    expect(() => parseColumns('[]', '[]', '[]', '[]')).to.throw(SwitchError, /unexpected protected/);
    // VLAN 4095 is shared by every port that trunks it: only a protected port with nothing else may.
    expect(read('[]', '[4095]', 'trunk')).to.deep.equal({ native: null, tagged: [], other: ['shares the dead VLAN 4095 with every other port that carries no VLAN (protected false)'] });
    expect(read('[]', '[100, 4095]', 'trunk', 'true')).to.deep.equal({ native: null, tagged: [100], other: ['trunks the dead VLAN 4095 beside other VLANs'] });
    expect(read('100', '[4095]', 'native-untagged', 'true').other).to.deep.equal(['trunks the dead VLAN 4095 beside other VLANs']);
    // A protected port with VLANs only keeps apart from ports with none: nothing to report.
    expect(read('100', '[]', 'access', 'true')).to.deep.equal({ native: 100, tagged: [] });
  });

  it('takes HILT_OVS_DB as a socket path or as unix:PATH', () => {
    expect(ovsdbRemote(undefined)).to.equal(undefined);
    expect(ovsdbRemote('/run/openvswitch/db.sock')).to.equal('unix:/run/openvswitch/db.sock');
    expect(ovsdbRemote('unix:/run/openvswitch/db.sock')).to.equal('unix:/run/openvswitch/db.sock');
    expect(ovsdbRemote('run/db.sock')).to.equal(`unix:${path.resolve('run/db.sock')}`);
  });

  describe('runs of ovs-vsctl (a stand-in program)', () => {
    let dir: string;
    /** A stand-in for ovs-vsctl: `br-exists` answers at once (unless told to hang); anything else runs `body`. */
    const standIn = (body: string, hangLogin = false) => {
      const file = path.join(dir, `vsctl-${Math.random().toString(36).slice(2)}`);
      fs.writeFileSync(file, `#!/bin/sh\nfor a; do [ "$a" = br-exists ] && ${hangLogin ? 'exec sleep 31.4159' : 'exit 0'}; done\n${body}\n`, { mode: 0o755 });
      return file;
    };
    /** Is a stand-in's `sleep 31.4159` still running? */
    const sleeping = () => fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).some((p) => {
      try {
        return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8') === 'sleep\u000031.4159\u0000';
      } catch {
        return false;
      }
    });
    const info = { name: 'sw', type: ovs.type, fields: { ovs_bridge: 'br-hil' } };
    before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hilt-ovs-vsctl-')); });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    it('kills a login when its signal aborts, and a session\'s call when the session is closed', async () => {
      let d = new OvsSwitchDriver({ timeoutMs: 30_000, vsctlPath: standIn('exit 0', true) });
      let t = Date.now();
      const err = await d.open(info, AbortSignal.timeout(200)).catch((e) => e);
      expect(err).to.be.instanceOf(SwitchError);
      expect(err.message).to.match(/ovs-vsctl br-exists br-hil: ended/);
      expect(Date.now() - t).to.be.below(5_000);
      d = new OvsSwitchDriver({ timeoutMs: 30_000, vsctlPath: standIn('exec sleep 31.4159') });
      const s = await d.open(info, new AbortController().signal);
      t = Date.now();
      const call = s.setNative('p1', 5).catch((e) => e);
      await new Promise((r) => setTimeout(r, 200));
      await s.close();
      expect(await call).to.be.instanceOf(SwitchError);
      expect(Date.now() - t).to.be.below(5_000);
      await new Promise((r) => setTimeout(r, 100));
      expect(sleeping()).to.equal(false);
    });

    it('says so when ovs-vsctl gave up waiting (--timeout, half the switch timeout)', async () => {
      const d = new OvsSwitchDriver({ db: '/run/test/db.sock', timeoutMs: 4_000, vsctlPath: standIn('kill -ALRM $$') });
      const s = await d.open(info, new AbortController().signal);
      const err = await s.getPortVlans('p1').catch((e) => e);
      expect(err.message).to.equal('ovs-vsctl port-to-br p1 -- get Port p1 tag trunks vlan_mode protected: gave up after 2 s (--timeout) waiting for the database at unix:/run/test/db.sock or for ovs-vswitchd');
      const missing = await new OvsSwitchDriver({ timeoutMs: 4_000, vsctlPath: path.join(dir, 'nothing-here') }).open(info, new AbortController().signal).catch((e) => e);
      expect(missing.message).to.match(/nothing-here not found \(is Open vSwitch installed\?\)/);
    });
  });

  describe('against a database-only Open vSwitch (ovsdb-server, no ovs-vswitchd)', () => {
    let dir: string;
    let server: ChildProcess;
    let sock: string;
    const vsctl = (args: string[]) => execFileSync('ovs-vsctl', [`--db=unix:${sock}`, '--no-wait', '--timeout=5', ...args], { encoding: 'utf8' }).trim();

    before(async function () {
      this.timeout(20_000);
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hilt-ovsdb-'));
      sock = path.join(dir, 'db.sock');
      execFileSync('ovsdb-tool', ['create', path.join(dir, 'conf.db'), '/usr/share/openvswitch/vswitch.ovsschema']);
      const env = { ...process.env, OVS_RUNDIR: dir, OVS_LOGDIR: dir, OVS_DBDIR: dir };
      server = spawn('ovsdb-server', [path.join(dir, 'conf.db'), `--remote=punix:${sock}`, `--unixctl=${path.join(dir, 'ctl')}`, `--pidfile=${path.join(dir, 'pid')}`], { env, stdio: 'ignore' });
      for (let i = 0; i < 100 && !fs.existsSync(sock); i++) await new Promise((r) => setTimeout(r, 50));
      vsctl(['init']);
      vsctl(['add-br', 'br-hil']);
    });
    after(() => {
      server?.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('never sets another port whose UUID begins with the name of a port deleted since the read', async () => {
      vsctl(['add-port', 'br-hil', 'victim']);
      const name = vsctl(['get', 'Port', 'victim', '_uuid']).slice(0, 8);
      vsctl(['add-port', 'br-hil', name]);
      // ovs-vsctl without ovs-vswitchd (--no-wait), whose `set` finds the port deleted by then.
      const wrapper = path.join(dir, 'vsctl');
      fs.writeFileSync(wrapper, `#!/bin/sh\nV="ovs-vsctl --db=unix:${sock} --no-wait"\nfor a; do [ "$a" = set ] && $V --if-exists del-port ${name}; done\nexec $V "$@"\n`, { mode: 0o755 });
      const s = await new OvsSwitchDriver({ db: sock, timeoutMs: 10_000, vsctlPath: wrapper }).open({ name: 'sw', type: ovs.type, fields: { ovs_bridge: 'br-hil' } }, new AbortController().signal);
      const err = await s.setNative(name, 100).catch((e) => e);
      await s.close();
      expect(err).to.be.instanceOf(SwitchError);
      expect(err.message).to.match(/is not on Open vSwitch bridge br-hil \(it does not exist\)/);
      expect(vsctl(['get', 'Port', 'victim', 'tag', 'vlan_mode'])).to.equal('[]\n[]');
    });

    it('neither reads nor sets a port named as the bridge: its own interface, the host\'s', async () => {
      const s = await new OvsSwitchDriver({ db: sock, timeoutMs: 10_000 }).open({ name: 'sw', type: ovs.type, fields: { ovs_bridge: 'br-hil' } }, new AbortController().signal);
      const set = await s.setNative('br-hil', 100).catch((e) => e);
      const read = await s.getPortVlans('br-hil').catch((e) => e);
      await s.close();
      for (const err of [set, read]) {
        expect(err).to.be.instanceOf(SwitchError);
        expect(err.message).to.match(/is Open vSwitch bridge br-hil's own interface/);
      }
      expect(vsctl(['get', 'Port', 'br-hil', 'tag', 'vlan_mode'])).to.equal('[]\n[]');
    });
  });

  it('registers a switch with ovs_bridge only, and ports named as network devices', () => {
    const reg = new DriverRegistry('switch', [ovs]);
    expect(reg.validate({ type: ovs.type, ovs_bridge: 'br-hil' })).to.deep.equal({ type: ovs.type, fields: { ovs_bridge: 'br-hil' } });
    expect(reg.validate({ type: ovs.type })).to.equal('ovs_bridge must be a string');
    expect(reg.validate({ type: ovs.type, ovs_bridge: 'br', hostname: 'h' })).to.match(/unexpected field\(s\) for .*ovs: hostname/);
    expect(reg.validate({ type: ovs.type, ovs_bridge: '-br' })).to.match(/is not an Open vSwitch bridge name/);
    expect(reg.validate({ type: ovs.type, ovs_bridge: 'a-bridge-name-too-long' })).to.match(/is not an Open vSwitch bridge name/);
    for (const good of ['eth3', 'tap-hn1', 'enp3s0f1', 'vnet0.100', 'p_1']) expect(OVS_NAME.test(good), good).to.equal(true);
    for (const bad of ['', '-x', '.x', 'gi1/0/3', 'a b', 'x'.repeat(16), 'eth0:1', 'é']) expect(OVS_NAME.test(bad), bad).to.equal(false);
    expect(ovs.type).to.equal('http://schema.massopencloud.org/haas/v0/switches/ovs');
  });
});
