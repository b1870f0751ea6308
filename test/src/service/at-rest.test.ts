/**
 * Credentials at rest (docs/identity.md): after a full scenario (BMCs over ipmitool and Redfish,
 * SSH switches, mock ones), the bytes of the LMDB data folder, of a backup and of a PostgreSQL
 * dump hold none of the passwords; an old folder with plaintext credentials is upgraded and then
 * holds none; the key rotates while calls go on and nothing is lost; a wrong or missing key
 * refuses to start.
 */
import { expect } from 'chai';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { copyFileSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, stopTestServer, TestServer, Client, must, finished, IPMI_OBM, REDFISH_OBM, MOCK_OBM, MOCK_SWITCH } from '../../helpers/server';
import { startIpmiSim, stopAllIpmiSims, requireIpmiTools } from '../../helpers/ipmisim';
import { startRedfishSim, stopAllRedfishSims } from '../../helpers/redfish-sim';
import { VENDOR_CASES, simFor, registration } from '../../helpers/switch-sims';
import { findBin } from '../../helpers/postgres';
import { addSecret } from '../../helpers/secrets';
import { scratchDir } from '../../helpers/scratch';
import { keyFilePath } from '../../../src/secrets/at-rest';
import { keyId, newKeyText, parseKey } from '../../../lib/sealed';
import { LmdbPersistenceEngine } from '../../../actors/persistence/lmdb';
import type { PersistenceEngine } from '../../../actors/persistence/engine';
import { World } from '../../../actors/world';
import { DEFAULTS } from '../../../src/config';

const FIXTURE = join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'upgrade-v1');

/** Every file under `dir`, as bytes. */
function filesUnder(dir: string): { path: string; bytes: Buffer }[] {
  const out: { path: string; bytes: Buffer }[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (e.isFile()) out.push({ path: p, bytes: readFileSync(p) });
  }
  return out;
}

/** The passwords found in the bytes (none, when encryption at rest works). */
function found(files: { path: string; bytes: Buffer }[], passwords: string[]): string[] {
  const hits: string[] = [];
  for (const f of files) for (const pw of passwords) if (f.bytes.includes(Buffer.from(pw, 'utf8'))) hits.push(`${pw} in ${f.path}`);
  return hits;
}

/** Every sealed value of the nodes' and switches' stored events and snapshots: its key id. */
async function sealedKeyIds(dataDir: string): Promise<{ ids: Set<string>; plain: number }> {
  const engine = new LmdbPersistenceEngine(dataDir);
  const ids = new Set<string>();
  let plain = 0;
  const look = (v: unknown): void => {
    if (!v || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      if (k === '$sealed' && typeof x === 'string') ids.add(x.split(':')[1]);
      else if (k === 'password' && typeof x === 'string') plain++;
      else look(x);
    }
  };
  try {
    for (const prefix of ['node:', 'switch:']) {
      for await (const key of engine.keys(prefix)) {
        for await (const e of engine.events(key)) look(e.data);
        look((await engine.latestSnapshot(key))?.data);
      }
    }
  } finally {
    await engine.close();
  }
  return { ids, plain };
}

const BMC_USER = 'rest-bmc';

describe('credentials at rest', function () {
  this.timeout(120_000);
  before(() => requireIpmiTools());
  after(async () => {
    await stopAllIpmiSims();
    await stopAllRedfishSims();
  });

  /**
   * Nodes on an ipmi_sim and a Redfish simulator, a nexus and an arista switch over SSH, a mock
   * node and switch, each with a password of its own; power calls and a network operation prove
   * the drivers got them; many metadata changes make a node take snapshots. Returns the passwords.
   */
  async function scenario(api: Client, tag: string): Promise<string[]> {
    const pw = (what: string) => {
      const p = `${what}-${tag}-Pw${Math.random().toString(36).slice(2, 10)}`;
      addSecret(p);
      return p;
    };
    // IPMI passwords are at most 16 bytes here (ipmi_sim's).
    const ipmiPw = pw('ipmi').slice(-16);
    addSecret(ipmiPw);
    const ipmi = await startIpmiSim({ user: BMC_USER, password: ipmiPw });
    await must(api.put('/node/r-ipmi', { obm: { type: IPMI_OBM, host: ipmi.host, user: BMC_USER, password: ipmiPw } }));
    const rfPw = pw('redfish');
    const rf = await startRedfishSim({ user: BMC_USER, password: rfPw });
    await must(api.put('/node/r-redfish', { obm: { type: REDFISH_OBM, host: rf.url, user: BMC_USER, password: rfPw, ca_cert: rf.certPem } }));
    const mockPw = pw('mockbmc');
    await must(api.put('/node/r-mock', { obm: { type: MOCK_OBM, host: 'bmc.example', user: BMC_USER, password: mockPw } }));
    expect((await must(api.get('/node/r-ipmi/power_status'))).body.power_status).to.be.a('string');
    await must(api.post('/node/r-redfish/power_on'));
    expect(rf.system().PowerState).to.equal('On');
    for (let i = 0; i < 20; i++) await must(api.put(`/node/r-ipmi/metadata/m${i}`, { value: i }));

    const passwords = [ipmiPw, rfPw, mockPw];
    await must(api.put(`/project/rp-${tag}`));
    await must(api.put(`/network/rn-${tag}`, { owner: `rp-${tag}`, access: `rp-${tag}`, net_id: '' }));
    for (const c of VENDOR_CASES.filter((v) => v.vendor === 'nexus' || v.vendor === 'arista_eos')) {
      const sim = await simFor(c, { password: pw(c.vendor) });
      passwords.push(sim.password);
      const sw = `r-${c.vendor}`;
      await must(api.put(`/switch/${sw}`, registration(c, sim)));
      await must(api.put(`/switch/${sw}/port/${c.ports[0]}`));
      const node = `r-n-${c.vendor}`;
      await must(api.put(`/node/${node}`, { obm: { type: MOCK_OBM, host: 'bmc.example', user: BMC_USER, password: mockPw } }));
      await must(api.put(`/node/${node}/nic/eth0`, { macaddr: 'de:ad:be:ef:00:01' }));
      await must(api.post(`/switch/${sw}/port/${c.ports[0]}/connect_nic`, { node, nic: 'eth0' }));
      await must(api.post(`/project/rp-${tag}/connect_node`, { node }));
      const op = await must(api.post(`/node/${node}/nic/eth0/connect_network`, { network: `rn-${tag}` }), 202);
      expect((await finished(api, op.body.status_id)).status, `${c.vendor} took the change`).to.equal('DONE');
    }
    const swPw = pw('mockswitch');
    await must(api.put('/switch/r-mock', { type: MOCK_SWITCH, hostname: 'sw.example', username: 'u', password: swPw }));
    passwords.push(swPw);
    return passwords;
  }

  it('LMDB: the data folder and a backup hold none of the passwords of a full scenario; the audit log shows none', async () => {
    const ts = await startTestServer({ storage: 'lmdb' });
    const passwords = await scenario(ts.api, 'lmdb');
    const backup = join(scratchDir('hilt-rest-'), 'copy');
    await must(ts.api.post('/admin/backup', { path: backup }));
    const audit = (await must(ts.api.get('/admin/audit?limit=1000'))).text;
    await ts.close();
    // The scan itself finds what it looks for: the key file is there, and found by its bytes.
    expect(found(filesUnder(ts.dataDir), [readFileSync(keyFilePath(ts.config), 'utf8').trim()])).to.have.length(1);
    expect(found(filesUnder(ts.dataDir), passwords)).to.deep.equal([]);
    expect(found(filesUnder(backup), passwords)).to.deep.equal([]);
    expect(filesUnder(backup).map((f) => f.path)).to.not.include(join(backup, 'secret.key'));
    expect(found([{ path: 'audit', bytes: Buffer.from(audit) }], passwords)).to.deep.equal([]);
    const { ids, plain } = await sealedKeyIds(ts.dataDir);
    expect(plain).to.equal(0);
    expect([...ids]).to.deep.equal([keyId(parseKey(readFileSync(keyFilePath(ts.config), 'utf8'))!)]);
    rmSync(backup, { recursive: true, force: true });
  });

  it('PostgreSQL: a dump of the database holds none of the passwords of a full scenario', async () => {
    const ts = await startTestServer({ storage: 'postgres' });
    const passwords = await scenario(ts.api, 'pg');
    const url = new URL(ts.config.databaseUrl!);
    const dump = spawnSync(findBin('pg_dump'), [], {
      encoding: 'buffer', timeout: 60_000, maxBuffer: 256 * 1024 * 1024,
      env: { ...process.env, PGHOST: url.searchParams.get('host')!, PGPORT: url.port, PGUSER: url.username, PGDATABASE: url.pathname.slice(1) },
    });
    expect(dump.status, dump.stderr.toString()).to.equal(0);
    expect(dump.stdout.includes(Buffer.from('$sealed'))).to.equal(true);
    expect(found([{ path: 'pg_dump', bytes: dump.stdout }], passwords)).to.deep.equal([]);
    await stopTestServer(ts);
  });

  it('upgrades hilt v1\'s data folder: its plaintext credentials are sealed, none is left in its bytes, and they still work', async () => {
    const dir = scratchDir('hilt-rest-v1-');
    await promisify(execFile)('tar', ['-xzf', join(FIXTURE, 'data.tar.gz'), '-C', dir]);
    const v1 = ['bmc-secret', 'sw-a-secret', 'sw-b-secret', 'sw-gone-secret'];
    expect(found(filesUnder(dir), v1).length, 'the fixture holds them in plain text').to.be.above(0);
    const logs: string[] = [];
    const ts = await startTestServer({ mockSwitchDelayMs: 600_000, headnodeDriver: 'mock' }, { logger: { level: 'info', stream: { write: (l: string) => void logs.push(l) } } }, dir);
    const line = logs.map((l) => JSON.parse(l)).find((l) => /stored in plain text/.test(l.msg));
    expect(line, 'the log says how many').to.not.equal(undefined);
    expect(line.sealed).to.be.at.least(10);
    // The mock BMC answers with the credentials it was given: the driver got the password.
    await must(ts.api.post('/node/n01/power_cycle'));
    await stopTestServer(ts, false);
    expect(found(filesUnder(dir), v1)).to.deep.equal([]);
    expect((await sealedKeyIds(dir)).plain).to.equal(0);
    // A second start has nothing to upgrade.
    const again = await startTestServer({ mockSwitchDelayMs: 600_000, headnodeDriver: 'mock' }, { logger: { level: 'info', stream: { write: (l: string) => void logs.push(`again ${l}`) } } }, dir);
    expect(logs.filter((l) => l.startsWith('again') && /stored in plain text/.test(l))).to.deep.equal([]);
    await stopTestServer(again);
  });

  it('upgrades a folder this format\'s actors wrote without encryption (events and snapshots)', async () => {
    const dir = scratchDir('hilt-rest-plain-');
    const engine = new LmdbPersistenceEngine(dir);
    // The release before: the same actors, credentials kept as given.
    const world = new World(engine, { vlanPool: DEFAULTS.vlanPool, snapshotEvery: 2 });
    await world.switches.ask('s-plain', { type: 'switch.register', by: 'old', switchType: MOCK_SWITCH, fields: { hostname: 'h', username: 'u', password: 'plain-switch-Pw1' } });
    await world.nodes.ask('n-plain', { type: 'node.register', by: 'old', obm: { type: MOCK_OBM, fields: { host: 'h', user: 'u', password: 'plain-bmc-Pw1' } } });
    for (let i = 0; i < 5; i++) await world.nodes.ask('n-plain', { type: 'node.setMetadata', by: 'old', label: `l${i}`, value: i });
    await world.close();
    await engine.close();
    const plain = ['plain-switch-Pw1', 'plain-bmc-Pw1'];
    expect(found(filesUnder(dir), plain).length).to.be.above(1);
    const ts = await startTestServer({}, {}, dir);
    await must(ts.api.post('/node/n-plain/power_cycle'));
    await stopTestServer(ts, false);
    expect(found(filesUnder(dir), plain)).to.deep.equal([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('a compaction that fails after the sealing does not stop the start: the log says so, and the credentials work', async () => {
    const dir = scratchDir('hilt-rest-nocompact-');
    const engine = new LmdbPersistenceEngine(dir);
    const world = new World(engine, { vlanPool: DEFAULTS.vlanPool });
    await world.nodes.ask('n-plain', { type: 'node.register', by: 'old', obm: { type: MOCK_OBM, fields: { host: 'h', user: 'u', password: 'plain-bmc-Pw2' } } });
    await world.close();
    await engine.close();
    const logs: string[] = [];
    const failing = (e: PersistenceEngine): PersistenceEngine => new Proxy(e, {
      get(target, prop, receiver) {
        if (prop === 'compact') return () => Promise.reject(new Error('compacting the store failed (injected)'));
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const ts = await startTestServer({}, { wrapEngine: failing, logger: { level: 'info', stream: { write: (l: string) => void logs.push(l) } } }, dir);
    const line = logs.map((l) => JSON.parse(l)).find((l) => /could not be compacted/.test(l.msg));
    expect(line, 'the log says the compaction failed').to.include({ level: 50, err: 'compacting the store failed (injected)' });
    expect(line.sealed).to.be.at.least(1);
    expect(line.msg).to.match(/may still hold copies/);
    await must(ts.api.post('/node/n-plain/power_cycle'));
    await stopTestServer(ts);
  });

  it('rotates the key while calls go on: nothing is lost, every credential is under the new key, which a restart reads', async () => {
    const ts = await startTestServer();
    const api = ts.api;
    const ipmiPw = 'rotate-ipmi-Pw-Xq7';
    addSecret(ipmiPw);
    const ipmi = await startIpmiSim({ user: BMC_USER, password: ipmiPw });
    await must(api.put('/node/rot-ipmi', { obm: { type: IPMI_OBM, host: ipmi.host, user: BMC_USER, password: ipmiPw } }));
    for (let i = 0; i < 60; i++) await must(api.put(`/node/rot-${i}`, { obm: { type: MOCK_OBM, host: 'h', user: 'u', password: `rot-pw-${i}-abcd` } }));
    // A webhook's signing secret is a credential too: under the new key afterwards, or unreadable.
    const hookSecret = 'rotate-webhook-signing-secret-Kq2';
    addSecret(hookSecret);
    const hook = (await must(api.post('/admin/webhooks', { url: 'http://127.0.0.1:9/hook', secret: hookSecret, types: ['project.created'] }))).body.id as string;
    const oldKey = readFileSync(keyFilePath(ts.config), 'utf8');
    const newFile = join(scratchDir('hilt-newkey-'), 'new.key');
    const newText = newKeyText();
    writeFileSync(newFile, newText, { mode: 0o600 });
    const newId = keyId(parseKey(newText)!);

    // Load: registrations, metadata and power calls, all the while.
    let loading = true;
    const acked: string[] = [];
    const failures: string[] = [];
    const loaders = Array.from({ length: 6 }, async (_, w) => {
      for (let i = 0; loading; i++) {
        const node = `load-${w}-${i}`;
        const r = await api.put(`/node/${node}`, { obm: { type: MOCK_OBM, host: 'h', user: 'u', password: `load-pw-${w}-${i}-x` } });
        if (r.status === 200) acked.push(node);
        else failures.push(`${node}: ${r.status} ${r.text}`);
        const m = await api.put(`/node/rot-${(w * 7 + i) % 60}/metadata/w${w}`, { value: i });
        if (m.status !== 200) failures.push(`metadata: ${m.status} ${m.text}`);
        const p = await api.post(`/node/rot-${(w + i) % 60}/power_cycle`);
        if (p.status !== 200) failures.push(`power: ${p.status} ${p.text}`);
      }
    });
    await new Promise((r) => setTimeout(r, 300));
    const r = await must(api.post('/admin/secret-key/rotate', { key_file: newFile }));
    loading = false;
    await Promise.all(loaders);
    expect(failures).to.deep.equal([]);
    expect(r.body).to.include({ key_id: newId, installed: true, key_file: keyFilePath(ts.config) });
    expect(r.body.previous_key_id).to.equal(keyId(parseKey(oldKey)!));
    expect(r.body.rewritten).to.be.at.least(61);
    expect(acked.length).to.be.above(10);
    // The configured file now holds the new key; the BMC still gets its password.
    expect(readFileSync(keyFilePath(ts.config), 'utf8')).to.equal(newText);
    expect(statSync(keyFilePath(ts.config)).mode & 0o777).to.equal(0o600);
    await must(api.get('/node/rot-ipmi/power_status'));
    expect((await api.post('/admin/secret-key/rotate', { key_file: newFile })).status).to.equal(409);
    await ts.close();

    const { ids, plain } = await sealedKeyIds(ts.dataDir);
    expect(plain).to.equal(0);
    expect([...ids]).to.deep.equal([newId]);
    // A restart reads the new key; everything acknowledged is there.
    const again = await startTestServer({}, {}, ts.dataDir);
    const nodes = new Set((await must(again.api.get('/nodes/all'))).body as string[]);
    for (const n of acked) expect(nodes.has(n), n).to.equal(true);
    await must(again.api.get('/node/rot-ipmi/power_status'));
    expect(again.world.credentials.open({ secret: again.world.rm.webhooks.get(hook)!.secret })).to.deep.equal({ secret: hookSecret });
    await stopTestServer(again, false);
    // The old key opens nothing any more: a start with it refuses.
    const oldFile = join(ts.dataDir, 'old.key');
    writeFileSync(oldFile, oldKey, { mode: 0o600 });
    const err = await startTestServer({ secretKeyFile: oldFile }, {}, ts.dataDir).then(() => null, (e: Error) => e);
    expect(err?.message).to.match(/is not the key the stored credentials are encrypted under/);
    rmSync(ts.dataDir, { recursive: true, force: true });
  });

  it('refuses to start with a wrong key, or without the key file, saying why', async () => {
    const ts = await startTestServer();
    await must(ts.api.put('/node/k1', { obm: { type: MOCK_OBM, host: 'h', user: 'u', password: 'wrong-key-test-pw' } }));
    await stopTestServer(ts, false);
    const file = keyFilePath(ts.config);
    const kept = join(ts.dataDir, 'kept.key');
    copyFileSync(file, kept);
    writeFileSync(file, newKeyText());
    const wrong = await startTestServer({}, {}, ts.dataDir).then(() => null, (e: Error) => e);
    expect(wrong?.message).to.match(/secret key in .* \(key [0-9a-f]{16}\) is not the key the stored credentials are encrypted under \(key [0-9a-f]{16}\): refusing to start/);
    rmSync(file);
    const missing = await startTestServer({}, {}, ts.dataDir).then(() => null, (e: Error) => e);
    expect(missing?.message).to.match(/secret key file .* is missing: the stored credentials are encrypted under key [0-9a-f]{16}/);
    writeFileSync(file, 'not a key');
    expect((await startTestServer({}, {}, ts.dataDir).then(() => null, (e: Error) => e))?.message).to.match(/does not hold a key/);
    // The right key again: it starts, and the node is there.
    copyFileSync(kept, file);
    const ok = await startTestServer({}, {}, ts.dataDir);
    await must(ok.api.get('/node/k1'));
    await stopTestServer(ok);
  });
});

describe('key rotation and registrations in flight', function () {
  this.timeout(60_000);

  /** An engine that holds back the writes of one key until released. */
  function holding(key: string) {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held!: () => void;
    const reached = new Promise<void>((r) => (held = r));
    const wrap = (engine: PersistenceEngine): PersistenceEngine => new Proxy(engine, {
      get(target, prop, receiver) {
        if (prop === 'persist') {
          return async (events: Parameters<PersistenceEngine['persist']>[0]) => {
            if (events.some((e) => e.key === key)) {
              held();
              await released;
            }
            return target.persist(events);
          };
        }
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    return { wrap, reached, release };
  }

  /** An engine whose next rewrite fails once `failNext` is set (a rotation that fails midway). */
  function failingRewrite() {
    const state = { failNext: false };
    const wrap = (engine: PersistenceEngine): PersistenceEngine => new Proxy(engine, {
      get(target, prop, receiver) {
        if (prop === 'rewrite') {
          return async (changes: Parameters<PersistenceEngine['rewrite']>[0]) => {
            if (state.failNext) {
              state.failNext = false;
              throw new Error('the disk is full');
            }
            return target.rewrite(changes);
          };
        }
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    return { state, wrap };
  }

  it('a rotation run again with another file holding its key installs that key, not what the first file holds by then', async () => {
    const f = failingRewrite();
    const ts = await startTestServer({ storage: 'lmdb' }, { wrapEngine: f.wrap });
    const api = ts.api;
    const pw = 'rerun-bmc-Pw-Qe8';
    addSecret(pw);
    await must(api.put('/node/rr-1', { obm: { type: MOCK_OBM, host: 'h', user: 'u', password: pw } }));
    const dir = scratchDir('hilt-newkey-');
    // No key in the file, or the key in use already: refused, nothing recorded.
    const bad = await api.post('/admin/secret-key/rotate', { key_file: join(dir, 'missing.key') });
    expect(bad.status).to.equal(400);
    expect(bad.body.msg).to.match(/cannot read the secret key file/);
    expect((await api.post('/admin/secret-key/rotate', { key_file: keyFilePath(ts.config) })).status).to.equal(409);
    const first = join(dir, 'first.key');
    const newText = newKeyText();
    const newId = keyId(parseKey(newText)!);
    writeFileSync(first, newText, { mode: 0o600 });
    f.state.failNext = true;
    const failed = await api.post('/admin/secret-key/rotate', { key_file: first });
    expect(failed.status).to.equal(503);
    // The operator keeps the key elsewhere and makes another key where the first file was.
    const second = join(dir, 'second.key');
    writeFileSync(second, newText, { mode: 0o600 });
    writeFileSync(first, newKeyText(), { mode: 0o600 });
    const r = await must(api.post('/admin/secret-key/rotate', { key_file: second }));
    expect(r.body).to.include({ key_id: newId, installed: true });
    // The configured file holds the key the credentials are under.
    expect(keyId(parseKey(readFileSync(keyFilePath(ts.config), 'utf8'))!)).to.equal(newId);
    await must(api.post('/node/rr-1/power_cycle'));
    await ts.close();
    const again = await startTestServer({ storage: 'lmdb' }, {}, ts.dataDir);
    await must(again.api.post('/node/rr-1/power_cycle'));
    await stopTestServer(again);
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * A service with node `node` (its BMC password `pw`) whose rotation to a new key file failed
   * half-way, then stopped: its folder, the old key's text, the new key's file and text.
   */
  async function interruptedRotation(node: string, pw: string) {
    const f = failingRewrite();
    const ts = await startTestServer({ storage: 'lmdb' }, { wrapEngine: f.wrap });
    addSecret(pw);
    await must(ts.api.put(`/node/${node}`, { obm: { type: MOCK_OBM, host: 'h', user: 'u', password: pw } }));
    const oldText = readFileSync(keyFilePath(ts.config), 'utf8');
    const newFile = join(scratchDir('hilt-newkey-'), 'new.key');
    const newText = newKeyText();
    writeFileSync(newFile, newText, { mode: 0o600 });
    f.state.failNext = true;
    expect((await ts.api.post('/admin/secret-key/rotate', { key_file: newFile })).status).to.equal(503);
    await ts.close();
    return { dataDir: ts.dataDir, oldText, newFile, newText };
  }

  it('a start that finds an interrupted rotation\'s new key file without its key refuses, naming the file and the key', async () => {
    const { dataDir, oldText, newFile, newText } = await interruptedRotation('ir-1', 'interrupted-bmc-Pw-Lk3');
    // The new key's file now holds the old key: the new one is nowhere.
    writeFileSync(newFile, oldText, { mode: 0o600 });
    const err = await startTestServer({ storage: 'lmdb' }, {}, dataDir).then(() => null, (e: Error) => e);
    expect(err?.message).to.include(newFile).and.include(keyId(parseKey(newText)!));
    // Given back, the start finishes the rotation and the credential still opens.
    writeFileSync(newFile, newText, { mode: 0o600 });
    const again = await startTestServer({ storage: 'lmdb' }, {}, dataDir);
    await must(again.api.post('/node/ir-1/power_cycle'));
    expect(keyId(parseKey(readFileSync(keyFilePath(again.config), 'utf8'))!)).to.equal(keyId(parseKey(newText)!));
    await stopTestServer(again);
  });

  it('a start that cannot read a file an interrupted rotation names (a backup taken while it ran, restored) says which keys it needs, and why', async () => {
    const { dataDir, oldText, newFile, newText } = await interruptedRotation('mr-1', 'midrotation-bmc-Pw-Q8z');
    const oldId = keyId(parseKey(oldText)!);
    // The new key's file was removed (the rotation's copy of it is what a restore needs).
    rmSync(newFile);
    const err = await startTestServer({ storage: 'lmdb' }, {}, dataDir).then(() => null, (e: Error) => e);
    expect(err?.message).to.include(newFile).and.include(oldId).and.include(keyId(parseKey(newText)!)).and.match(/rotation/);
    writeFileSync(newFile, newText, { mode: 0o600 });
    const again = await startTestServer({ storage: 'lmdb' }, {}, dataDir);
    await must(again.api.post('/node/mr-1/power_cycle'));
    await stopTestServer(again);
  });

  it('a registration sealed under the old key and committed after the rotation\'s pass is under the new key too', async () => {
    const h = holding('node:race-1');
    const ts = await startTestServer({ storage: 'lmdb' }, { wrapEngine: h.wrap });
    const api = ts.api;
    const pw = 'race-bmc-Pw-Zr4';
    addSecret(pw);
    // Sealed under the old key in its decide; its commit waits.
    const registering = api.put('/node/race-1', { obm: { type: MOCK_OBM, host: 'h', user: 'u', password: pw } });
    await h.reached;
    const newFile = join(scratchDir('hilt-newkey-'), 'new.key');
    const newText = newKeyText();
    writeFileSync(newFile, newText, { mode: 0o600 });
    const rotating = api.post('/admin/secret-key/rotate', { key_file: newFile });
    // The rotation does not end while a value under the old key is on its way to the store.
    await new Promise((r) => setTimeout(r, 300));
    h.release();
    await must(registering);
    await must(rotating);
    await must(api.post('/node/race-1/power_cycle'));
    await ts.close();
    const { ids } = await sealedKeyIds(ts.dataDir);
    expect([...ids]).to.deep.equal([keyId(parseKey(newText)!)]);
    const again = await startTestServer({ storage: 'lmdb' }, {}, ts.dataDir);
    await must(again.api.post('/node/race-1/power_cycle'));
    await stopTestServer(again);
  });
});
