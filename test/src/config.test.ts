import { expect } from 'chai';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, parseVlanPool, DEFAULTS, trustProxyOption } from '../../src/config';

describe('configuration', () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-cfg-')); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('has the documented defaults', () => {
    const c = loadConfig({});
    expect(c).to.include({ host: '127.0.0.1', port: 5000, dataDir: './data', adminUser: 'admin' });
    expect(c.vlanPool).to.deep.equal([[1000, 1999]]);
    expect(c.adminPassword).to.equal(undefined);
  });

  it('reads the config file, and the environment overrides it', () => {
    const file = join(dir, 'hilt.json');
    writeFileSync(file, JSON.stringify({ port: 7000, vlanPool: '10-20', host: '0.0.0.0' }));
    const fromFile = loadConfig({ HILT_CONFIG: file });
    expect(fromFile.port).to.equal(7000);
    expect(fromFile.host).to.equal('0.0.0.0');
    expect(fromFile.vlanPool).to.deep.equal([[10, 20]]);
    const both = loadConfig({ HILT_CONFIG: file, HILT_PORT: '7001', HILT_VLAN_POOL: '30-40,50' });
    expect(both.port).to.equal(7001);
    expect(both.vlanPool).to.deep.equal([[30, 40], [50, 50]]);
  });

  it('refuses unknown settings and malformed values with a clear message', () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ prot: 1 }));
    expect(() => loadConfig({ HILT_CONFIG: file })).to.throw(/unknown setting "prot"/);
    expect(() => loadConfig({ HILT_PORT: 'abc' })).to.throw(/HILT_PORT/);
    for (const bad of ['0-10', '10-5000', 'a-b', '20-10', '']) expect(() => parseVlanPool(bad), bad).to.throw(/VLAN pool/);
  });

  it('reads the operations settings: open metrics, the trusted proxy, the dashboard session\'s length', () => {
    expect(DEFAULTS).to.include({ metricsOpen: false, trustProxy: '', uiSessionMinutes: 480 });
    expect(loadConfig({ HILT_METRICS_OPEN: '1', HILT_TRUST_PROXY: '127.0.0.1', HILT_UI_SESSION_MINUTES: '30' })).to.include({ metricsOpen: true, trustProxy: '127.0.0.1', uiSessionMinutes: 30 });
    for (const ok of ['true', '2', '127.0.0.1, ::1', 'loopback,127.0.0.0/8', '127.0.0.0/255.0.0.0', '::1/128']) expect(loadConfig({ HILT_TRUST_PROXY: ok }).trustProxy, ok).to.equal(ok);
    expect(loadConfig({ HILT_METRICS_OPEN: '0' }).metricsOpen).to.equal(false);
    expect(() => loadConfig({ HILT_METRICS_OPEN: 'yes' })).to.throw(/HILT_METRICS_OPEN must be 1 or 0/);
    expect(() => loadConfig({ HILT_UI_SESSION_MINUTES: '0' })).to.throw(/uiSessionMinutes/);
    expect(trustProxyOption('')).to.equal(false);
    expect(trustProxyOption('true')).to.equal(true);
    expect(trustProxyOption('2')).to.equal(2);
    expect(trustProxyOption('127.0.0.1, ::1')).to.deep.equal(['127.0.0.1', '::1']);
  });

  it('reads the listener\'s bounds: the time a request may take to arrive, and the connections open at once', () => {
    expect(DEFAULTS).to.include({ requestTimeoutMs: 30_000, maxConnections: 4096 });
    expect(loadConfig({ HILT_REQUEST_TIMEOUT_MS: '5000', HILT_MAX_CONNECTIONS: '100' })).to.include({ requestTimeoutMs: 5000, maxConnections: 100 });
    const file = join(dir, 'listener.json');
    writeFileSync(file, JSON.stringify({ requestTimeoutMs: 2000, maxConnections: 10 }));
    expect(loadConfig({ HILT_CONFIG: file })).to.include({ requestTimeoutMs: 2000, maxConnections: 10 });
    expect(() => loadConfig({ HILT_REQUEST_TIMEOUT_MS: '999' })).to.throw(/HILT_REQUEST_TIMEOUT_MS \(requestTimeoutMs\) must be an integer of at least 1000, got 999/);
    expect(() => loadConfig({ HILT_REQUEST_TIMEOUT_MS: '30s' })).to.throw(/HILT_REQUEST_TIMEOUT_MS must be a non-negative integer/);
    expect(() => loadConfig({ HILT_MAX_CONNECTIONS: '0' })).to.throw(/HILT_MAX_CONNECTIONS \(maxConnections\) must be a positive integer, got 0/);
    writeFileSync(file, JSON.stringify({ maxConnections: 'many' }));
    expect(() => loadConfig({ HILT_CONFIG: file })).to.throw(/"maxConnections" .* must be a number/);
  });

  it('reads how often a live console\'s viewers are pinged (HILT_CONSOLE_PING_MS)', () => {
    expect(DEFAULTS.consolePingMs).to.equal(30_000);
    expect(loadConfig({ HILT_CONSOLE_PING_MS: '5000' }).consolePingMs).to.equal(5000);
    expect(() => loadConfig({ HILT_CONSOLE_PING_MS: '99' })).to.throw(/HILT_CONSOLE_PING_MS must be an integer of at least 100, got 99/);
  });

  it('reads the bound of a node\'s console log (HILT_CONSOLE_LOG_BYTES): 1024 to 64 MiB', () => {
    expect(DEFAULTS.consoleLogBytes).to.equal(1 << 20);
    expect(loadConfig({ HILT_CONSOLE_LOG_BYTES: String(64 << 20) }).consoleLogBytes).to.equal(64 << 20);
    expect(() => loadConfig({ HILT_CONSOLE_LOG_BYTES: '1023' })).to.throw(/HILT_CONSOLE_LOG_BYTES must be an integer from 1024 to 67108864 \(64 MiB\), got 1023/);
    expect(() => loadConfig({ HILT_CONSOLE_LOG_BYTES: String((64 << 20) + 1) })).to.throw(/HILT_CONSOLE_LOG_BYTES must be an integer from 1024 to 67108864 \(64 MiB\), got 67108865/);
    // The file's value too.
    const file = join(dir, 'log-bytes.json');
    writeFileSync(file, JSON.stringify({ consoleLogBytes: 1 << 30 }));
    expect(() => loadConfig({ HILT_CONFIG: file })).to.throw(/HILT_CONSOLE_LOG_BYTES must be an integer from 1024 to 67108864/);
  });

  it('reads how many viewers a node\'s live console may have at once (HILT_CONSOLE_VIEWERS)', () => {
    expect(DEFAULTS.consoleViewers).to.equal(16);
    expect(loadConfig({ HILT_CONSOLE_VIEWERS: '1' }).consoleViewers).to.equal(1);
    expect(loadConfig({ HILT_CONSOLE_VIEWERS: '200' }).consoleViewers).to.equal(200);
    expect(() => loadConfig({ HILT_CONSOLE_VIEWERS: '0' })).to.throw(/HILT_CONSOLE_VIEWERS must be a positive integer, got 0/);
    expect(() => loadConfig({ HILT_CONSOLE_VIEWERS: 'many' })).to.throw(/HILT_CONSOLE_VIEWERS must be a non-negative integer, got "many"/);
  });

  it('saves switch configurations by default; HILT_SWITCH_SAVE turns it off', () => {
    expect(loadConfig({}).switchSave).to.equal(true);
    for (const off of ['false', '0', 'off', 'no']) expect(loadConfig({ HILT_SWITCH_SAVE: off }).switchSave, off).to.equal(false);
    for (const on of ['true', '1', 'on', 'yes']) expect(loadConfig({ HILT_SWITCH_SAVE: on }).switchSave, on).to.equal(true);
    expect(() => loadConfig({ HILT_SWITCH_SAVE: 'maybe' })).to.throw(/HILT_SWITCH_SAVE must be true or false/);
  });

  it('chooses the storage engine: lmdb by default, memory or postgres on request, nothing else', () => {
    expect(loadConfig({}).storage).to.equal('lmdb');
    expect(loadConfig({ HILT_STORAGE: 'memory' }).storage).to.equal('memory');
    expect(() => loadConfig({ HILT_STORAGE: 'sqlite' })).to.throw(/HILT_STORAGE must be one of lmdb, memory, postgres/);
  });

  it('reads the PostgreSQL settings: the database URL is required, the lease TTL has a floor', () => {
    expect(DEFAULTS).to.include({ leaseTtlMs: 5000, databasePoolSize: 8 });
    expect(() => loadConfig({ HILT_STORAGE: 'postgres' })).to.throw(/HILT_STORAGE=postgres needs HILT_DATABASE_URL/);
    const c = loadConfig({
      HILT_STORAGE: 'postgres', HILT_DATABASE_URL: 'postgres://hilt:pw@db.example:5432/hilt?sslmode=require',
      HILT_LEASE_TTL_MS: '3000', HILT_DATABASE_POOL_SIZE: '4', HILT_INSTANCE_NAME: 'hilt-a',
    });
    expect(c).to.include({ storage: 'postgres', databaseUrl: 'postgres://hilt:pw@db.example:5432/hilt?sslmode=require', leaseTtlMs: 3000, databasePoolSize: 4, instanceName: 'hilt-a' });
    expect(() => loadConfig({ HILT_STORAGE: 'postgres', HILT_DATABASE_URL: 'mysql://x' })).to.throw(/HILT_DATABASE_URL must be a postgres/);
    expect(() => loadConfig({ HILT_STORAGE: 'postgres', HILT_DATABASE_URL: 'postgres://x/y', HILT_LEASE_TTL_MS: '200' })).to.throw(/HILT_LEASE_TTL_MS must be at least 1000/);
    // The bound on each read and commit: unset means the lease's TTL (actors/persistence/index.ts).
    expect(c.databaseTimeoutMs).to.equal(undefined);
    expect(loadConfig({ HILT_STORAGE: 'postgres', HILT_DATABASE_URL: 'postgres://x/y', HILT_DATABASE_TIMEOUT_MS: '2500' }).databaseTimeoutMs).to.equal(2500);
    expect(() => loadConfig({ HILT_STORAGE: 'postgres', HILT_DATABASE_URL: 'postgres://x/y', HILT_DATABASE_TIMEOUT_MS: '50' })).to.throw(/HILT_DATABASE_TIMEOUT_MS must be an integer of at least 100/);
  });

  it('refuses a database URL the PostgreSQL client cannot read, naming the setting and never the password', () => {
    // Read at start only, it would leave the process a standby forever, "waiting for the database".
    for (const bad of ['postgres://hilt:pa#ss@db.example/hilt', 'postgres://hilt:pa/ss@db.example/hilt', 'postgres://hilt@db.example:99999/hilt']) {
      let err: Error | undefined;
      try {
        loadConfig({ HILT_STORAGE: 'postgres', HILT_DATABASE_URL: bad });
      } catch (e) {
        err = e as Error;
      }
      expect(err?.message, bad).to.match(/HILT_DATABASE_URL cannot be read as a URL/);
      expect(err!.message).to.not.include('pa#ss').and.to.not.include('pa/ss');
    }
    for (const ok of ['postgresql://hilt@/hilt?host=/var/run/postgresql', 'postgres://hilt:pa%23ss@db.example/hilt', 'postgres://hilt:pa ss@db.example:5432/hilt']) {
      expect(loadConfig({ HILT_STORAGE: 'postgres', HILT_DATABASE_URL: ok }).databaseUrl, ok).to.equal(ok);
    }
  });

  it('reads the headnode settings from the file and the environment', () => {
    expect(DEFAULTS).to.include({ headnodeDriver: 'qemu', headnodeImagesDir: './images', ovsBridge: 'br-hilt', headnodeAccel: 'tcg', headnodeTimeoutMs: 120_000 });
    const file = join(dir, 'hn.json');
    writeFileSync(file, JSON.stringify({ headnodeDriver: 'mock', ovsDb: '/run/ovs/db.sock' }));
    expect(loadConfig({ HILT_CONFIG: file })).to.include({ headnodeDriver: 'mock', ovsDb: '/run/ovs/db.sock' });
    const env = loadConfig({
      HILT_CONFIG: file, HILT_HEADNODE_DRIVER: 'qemu', HILT_HEADNODE_IMAGES: '/srv/images', HILT_OVS_BRIDGE: 'br0',
      HILT_OVS_DB: '/tmp/db.sock', HILT_HEADNODE_ACCEL: 'kvm', HILT_HEADNODE_MEMORY_MB: '1024', HILT_HEADNODE_CHECK_MS: '0',
      HILT_HEADNODE_TIMEOUT_MS: '45000',
    });
    expect(env).to.include({
      headnodeDriver: 'qemu', headnodeImagesDir: '/srv/images', ovsBridge: 'br0', ovsDb: '/tmp/db.sock', headnodeAccel: 'kvm',
      headnodeMemoryMb: 1024, headnodeCheckMs: 0, headnodeTimeoutMs: 45000,
    });
    expect(() => loadConfig({ HILT_HEADNODE_TIMEOUT_MS: '2m' })).to.throw(/HILT_HEADNODE_TIMEOUT_MS/);
    expect(loadConfig({ HILT_IPMI_CIPHER_SUITE: '3', HILT_OBM_TIMEOUT_MS: '2500' })).to.include({ ipmiCipherSuite: '3', obmTimeoutMs: 2500 });
    expect(loadConfig({}).ipmiCipherSuite).to.equal(undefined);
    expect(() => loadConfig({ HILT_HEADNODE_DRIVER: 'libvirt' })).to.throw(/HILT_HEADNODE_DRIVER must be one of qemu, mock/);
    expect(() => loadConfig({ HILT_HEADNODE_ACCEL: 'hvf' })).to.throw(/HILT_HEADNODE_ACCEL/);
    // The headnodes' Open vSwitch settings are read at the start, as the OVS switch driver's are.
    for (const bridge of ['-br', 'a-bridge-name-too-long', 'br 0', 'br;x']) expect(() => loadConfig({ HILT_OVS_BRIDGE: bridge }), bridge).to.throw(/HILT_OVS_BRIDGE .* must be an Open vSwitch bridge name/);
    expect(() => loadConfig({ HILT_OVS_DB: 'unix:' })).to.throw(/HILT_OVS_DB "unix:" names no socket/);
    expect(loadConfig({ HILT_OVS_BRIDGE: 'br-hil_1.0', HILT_OVS_DB: 'unix:/run/openvswitch/db.sock' })).to.include({ ovsBridge: 'br-hil_1.0', ovsDb: 'unix:/run/openvswitch/db.sock' });
  });

  it('takes the headnode base images from HIL_BASE_IMG', () => {
    expect(loadConfig({ HIL_BASE_IMG: 'a, b' }).baseImages).to.deep.equal(['a', 'b']);
    expect(() => loadConfig({ HIL_BASE_IMG: 'ok,bad name' })).to.throw(/base images/);
    const file = join(dir, 'img.json');
    writeFileSync(file, JSON.stringify({ baseImages: 'x,y' }));
    expect(loadConfig({ HILT_CONFIG: file }).baseImages).to.deep.equal(['x', 'y']);
    writeFileSync(file, JSON.stringify({ baseImages: ['../etc'] }));
    expect(() => loadConfig({ HILT_CONFIG: file })).to.throw(/base images/);
    expect(DEFAULTS.baseImages).to.deep.equal(['base-headnode']);
  });
});
