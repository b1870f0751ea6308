/**
 * Power control through the HTTP API with the real IPMI driver: real ipmitool against real
 * ipmi_sim BMCs on loopback (issue 4). Never skipped: a missing tool fails the suite.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, IPMI_OBM, Creds } from '../../helpers/server';
import { startIpmiSim, stopAllIpmiSims, requireIpmiTools, freeUdpPort, IpmiSim } from '../../helpers/ipmisim';
import { loggerOptions } from '../../../src/redact';
import { until } from '../../helpers/wait';

const BMC_USER = 'admin';
const BMC_PASSWORD = 'bmc-Pa55-word';
const TIMEOUT_MS = 4000;

describe('power control over IPMI (ipmitool against ipmi_sim)', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let member: Creds;
  const logs: string[] = [];
  const sims: Record<string, IpmiSim> = {};

  const register = (node: string, host: string, password = BMC_PASSWORD) =>
    must(api.put(`/node/${node}`, { obm: { type: IPMI_OBM, host, user: BMC_USER, password } }));

  before(async () => {
    await requireIpmiTools();
    ts = await startTestServer(
      { ipmiCipherSuite: '3', obmTimeoutMs: TIMEOUT_MS },
      { logger: loggerOptions('trace', { write: (line: string) => { logs.push(line); } }) },
    );
    api = ts.api;
    await must(api.put('/project/pp'));
    member = await makeUser(api, 'pp-member', 'pw', ['pp']);
    for (const name of ['b1', 'b2', 'b3']) {
      sims[name] = await startIpmiSim({ user: BMC_USER, password: BMC_PASSWORD });
      await register(name, sims[name].host);
    }
  });
  after(async () => { await stopAllIpmiSims(); });

  it('power_cycle powers on a node that is off, with PXE as next boot device', async () => {
    const bmc = sims.b1;
    expect(bmc.powerState()).to.equal('off');
    await must(api.post('/node/b1/power_cycle'));
    await until('power on', () => bmc.powerState() === 'on');
    expect(bmc.bootDevice()).to.equal('pxe');
    expect(bmc.log()).to.include('set boot pxe');
  });

  it('power_cycle cycles a node that is on (and force uses a reset)', async () => {
    const bmc = sims.b1;
    bmc.clearLog();
    await must(api.post('/node/b1/power_cycle'));
    expect(bmc.log()).to.include('set power 0');
    await until('power back on', () => bmc.powerState() === 'on');
    bmc.clearLog();
    await must(api.post('/node/b1/power_cycle', { force: true }));
    expect(bmc.log()).to.include('set reset 1');
  });

  it('power_off turns the node off; again has no effect', async () => {
    await must(api.post('/node/b1/power_off'));
    expect(sims.b1.powerState()).to.equal('off');
    await must(api.post('/node/b1/power_off'));
    expect(sims.b1.powerState()).to.equal('off');
  });

  it('power_on turns the node on and leaves the boot device; again has no effect', async () => {
    const bmc = sims.b2;
    bmc.setPower(false);
    bmc.clearLog();
    await must(api.post('/node/b2/power_on'));
    expect(bmc.powerState()).to.equal('on');
    await must(api.post('/node/b2/power_on'));
    expect(bmc.powerState()).to.equal('on');
    expect(bmc.log()).to.deep.equal(['set power 1', 'set power 1']);
    await must(api.post('/node/b2/power_off'));
  });

  it('boot_device sets pxe, disk or none on the BMC, persistently; other devices are a 400 that reaches no BMC', async () => {
    const bmc = sims.b2;
    for (const [dev, seen] of [['disk', 'default'], ['pxe', 'pxe'], ['none', 'none'], ['disk', 'default']] as const) {
      await must(api.put('/node/b2/boot_device', { bootdev: dev }));
      expect(bmc.bootDevice(), dev).to.equal(seen);
    }
    bmc.clearLog();
    const r = await api.put('/node/b2/boot_device', { bootdev: 'cdrom' });
    expect(r.status).to.equal(400);
    expect(r.body.type).to.equal('BadArgumentError');
    expect(bmc.log()).to.deep.equal([]);
    expect(bmc.bootDevice()).to.equal('default');
  });

  it('power_status reads the BMC', async () => {
    sims.b2.setPower(true);
    expect((await api.get('/node/b2/power_status')).body).to.deep.equal({ power_status: 'on' });
    sims.b2.setPower(false);
    expect((await api.get('/node/b2/power_status')).body).to.deep.equal({ power_status: 'off' });
  });

  it('lets the node\'s project control power, and nobody else', async () => {
    expect((await api.with(member).post('/node/b3/power_off')).status).to.equal(401);
    await must(api.post('/project/pp/connect_node', { node: 'b3' }));
    await must(api.with(member).post('/node/b3/power_cycle'));
    await until('b3 on', () => sims.b3.powerState() === 'on');
    expect((await api.with(member).get('/node/b3/power_status')).body.power_status).to.equal('on');
    await must(api.with(member).post('/node/b3/power_off'));
    await must(api.with(member).post('/node/b3/power_on'));
    expect(sims.b3.powerState()).to.equal('on');
    await must(api.with(member).put('/node/b3/boot_device', { bootdev: 'disk' }));
    expect(sims.b3.bootDevice()).to.equal('default');
    expect((await api.with(member).put('/node/b1/boot_device', { bootdev: 'disk' })).status).to.equal(401);
  });

  it('tells a project member a BMC failure without the BMC\'s address or user; the log keeps it', async () => {
    const sim = await startIpmiSim({ user: BMC_USER, password: BMC_PASSWORD });
    await register('badpw-m', sim.host, 'not-the-password');
    await must(api.post('/project/pp/connect_node', { node: 'badpw-m' }));
    const r = await api.with(member).post('/node/badpw-m/power_on');
    expect(r.status).to.equal(502);
    expect(r.body.type).to.equal('OBMError');
    expect(r.body.msg).to.match(/^the node's BMC: ipmitool chassis power on failed: .*Unable to establish/);
    expect(r.text).to.not.include(sim.host).and.not.include('127.0.0.1');
    expect(logs.some((l) => l.includes(`BMC ${sim.host}: ipmitool chassis power on failed`))).to.equal(true);
    const admin = await api.post('/node/badpw-m/power_on');
    expect(admin.body.msg).to.include(`BMC ${sim.host}:`);
  });

  it('answers a wrong BMC password with 502 OBMError, quickly, without the password', async () => {
    const sim = await startIpmiSim({ user: BMC_USER, password: BMC_PASSWORD });
    await register('badpw', sim.host, 'not-the-password');
    const t = Date.now();
    const r = await api.post('/node/badpw/power_cycle');
    expect(Date.now() - t).to.be.below(TIMEOUT_MS + 1000);
    expect(r.status).to.equal(502);
    expect(r.body.type).to.equal('OBMError');
    expect(r.body.msg).to.match(/Unable to establish|session/i);
    expect(r.text).to.not.include('not-the-password');
    expect(sim.powerState()).to.equal('off');
  });

  it('answers an unreachable BMC with 502 within the timeout, and stays responsive meanwhile', async () => {
    const port = await freeUdpPort();
    await register('dead', `127.0.0.1:${port}`);
    const t = Date.now();
    let answered = false;
    const pending = api.post('/node/dead/power_off').then((r) => ((answered = true), r));
    // While that BMC is silent, other nodes and reads are served: before its call's answer, which
    // comes at its timeout (not a wall-clock bound: a loaded machine slows ipmitool's start).
    expect((await api.get('/node/b2/power_status')).status).to.equal(200);
    expect((await api.get('/nodes/all')).status).to.equal(200);
    expect(answered, 'the reads waited for the silent BMC').to.equal(false);
    const r = await pending;
    expect(r.status).to.equal(502);
    expect(r.body.type).to.equal('OBMError');
    expect(Date.now() - t).to.be.below(TIMEOUT_MS + 1500);
  });

  it('answers each of several concurrent calls to one unreachable BMC within the timeout', async () => {
    const port = await freeUdpPort();
    await register('dead2', `127.0.0.1:${port}`);
    const t = Date.now();
    const rs = await Promise.all([0, 1, 2].map(async () => {
      const r = await api.post('/node/dead2/power_off');
      return { ...r, ms: Date.now() - t };
    }));
    for (const r of rs) {
      expect(r.status).to.equal(502);
      expect(r.body.type).to.equal('OBMError');
      expect(r.ms).to.be.below(TIMEOUT_MS + 1500);
      // Each within its own deadline: waiting behind the first (still busy), or timed out in its
      // turn (which of the two depends on how far apart the calls arrived).
      expect(r.body.msg).to.match(new RegExp(`did not answer within ${TIMEOUT_MS} ms`));
    }
  });

  it('refuses IPMI settings ipmitool cannot use at registration (400)', async () => {
    for (const [host, password] of [['-oProxy=x', 'p'], ['h:70000', 'p'], ['h', 'x'.repeat(21)], ['', 'p']]) {
      const r = await api.put('/node/badobm', { obm: { type: IPMI_OBM, host, user: 'u', password } });
      expect(r.status, `${host}`).to.equal(400);
    }
  });

  it('never puts the BMC password in an answer or a log line', async () => {
    for (const path of ['/node/b1', '/admin/actors/node/b1', '/admin/actors/node/b1/journal']) {
      expect((await api.get(path)).text, path).to.not.include(BMC_PASSWORD);
    }
    expect(logs.length).to.be.above(10);
    for (const line of logs) {
      expect(line).to.not.include(BMC_PASSWORD);
      expect(line).to.not.include('not-the-password');
    }
  });
});

/**
 * Calls at once, with a timeout no loaded machine reaches (ipmitool's starts slow down with the
 * machine's load, and each call's deadline counts its wait behind the calls ahead of it).
 */
describe('power control over IPMI: calls at once', function () {
  this.timeout(120_000);
  let ts: TestServer;
  let api: Client;
  const sims: Record<string, IpmiSim> = {};
  const register = (node: string, host: string) =>
    must(api.put(`/node/${node}`, { obm: { type: IPMI_OBM, host, user: BMC_USER, password: BMC_PASSWORD } }));

  before(async () => {
    await requireIpmiTools();
    ts = await startTestServer({ ipmiCipherSuite: '3', obmTimeoutMs: 30_000 });
    api = ts.api;
    sims.b2 = await startIpmiSim({ user: BMC_USER, password: BMC_PASSWORD });
    await register('b2', sims.b2.host);
  });
  after(async () => {
    await stopAllIpmiSims();
    await stopTestServer(ts);
  });

  it('serves concurrent calls on one node one after another, all answered', async () => {
    const results = await Promise.all([
      api.post('/node/b2/power_cycle'), api.post('/node/b2/power_off'), api.get('/node/b2/power_status'),
      api.post('/node/b2/power_off'), api.post('/node/b2/power_cycle'),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200]);
    expect(sims.b2.bootDevice()).to.equal('pxe');
    await until('b2 on after the last cycle', () => sims.b2.powerState() === 'on');
  });

  it('drives many nodes on separate BMCs at once', async () => {
    const names = ['m1', 'm2', 'm3', 'm4', 'm5'];
    for (const n of names) {
      sims[n] = await startIpmiSim({ user: BMC_USER, password: BMC_PASSWORD });
      await register(n, sims[n].host);
    }
    for (const n of names) sims[n].clearLog();
    // All at once: when the first answer comes, every BMC has been asked something already;
    // one after another, the other four would have been asked nothing. (Not a time against one
    // alone: five ipmitool and five BMC processes share two busy cores in CI.)
    let atFirstAnswer: string[][] | undefined;
    const rs = await Promise.all(names.map((n) => api.post(`/node/${n}/power_cycle`)
      .then((r) => { atFirstAnswer ??= names.map((m) => sims[m].log()); return r; })));
    expect(rs.map((r) => r.status)).to.deep.equal(names.map(() => 200));
    for (const [i, asked] of atFirstAnswer!.entries()) expect(asked, `${names[i]} when the first answer came`).to.not.be.empty;
    for (const n of names) {
      await until(`${n} on`, () => sims[n].powerState() === 'on');
      expect(sims[n].bootDevice()).to.equal('pxe');
    }
  });
});
