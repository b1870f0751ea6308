/**
 * Power control through the HTTP API with the Redfish driver, end to end over HTTPS against
 * the Redfish BMC simulator (test/helpers/redfish-sim.ts) on 127.0.0.1 (issue 15). The
 * simulator's state after each call shows that the BMC really changed.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, CallOpts, Res, must, makeUser, Creds, REDFISH_OBM } from '../../helpers/server';
import { RedfishSim, RedfishSimOptions, startRedfishSim, stopAllRedfishSims } from '../../helpers/redfish-sim';
import { loggerOptions } from '../../../src/redact';
import { parseExposition, value } from '../../helpers/prometheus';

const BMC_USER = 'hilt-ops';
const BMC_PASSWORD = 'Redfish-Pa55-word!';
const TIMEOUT_MS = 3000;

/** Every answer the service gave in this file, to look for secrets in. */
const answers: string[] = [];

/** A client that keeps every answer's text. */
class Recording extends Client {
  override async call(method: string, path: string, opts: CallOpts = {}): Promise<Res> {
    const r = await super.call(method, path, opts);
    answers.push(r.text);
    return r;
  }
  override with(as: Creds | null): Client {
    return new Recording(this.url, as);
  }
}

describe('power control over Redfish (HTTPS, against the Redfish BMC simulator)', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let member: Client;
  const logs: string[] = [];
  const sims: Record<string, RedfishSim> = {};

  const obm = (sim: RedfishSim, extra: Record<string, unknown> = {}) =>
    ({ type: REDFISH_OBM, host: sim.url, user: BMC_USER, password: BMC_PASSWORD, ca_cert: sim.certPem, ...extra });
  const register = (node: string, o: Record<string, unknown>) => must(api.put(`/node/${node}`, { obm: o }));
  const bmc = (opts: Partial<RedfishSimOptions> = {}) => startRedfishSim({ user: BMC_USER, password: BMC_PASSWORD, ...opts });
  /** a node on its own simulated BMC, optionally in project rp */
  async function node(name: string, opts: Partial<RedfishSimOptions> = {}, inProject = false, extra: Record<string, unknown> = {}) {
    sims[name] = await bmc(opts);
    await register(name, obm(sims[name], extra));
    if (inProject) await must(api.post('/project/rp/connect_node', { node: name }));
    return sims[name];
  }
  const did = (sim: RedfishSim) => sim.events.filter((e) => !e.startsWith('login'));
  const boot = (sim: RedfishSim) => [sim.system().BootSourceOverrideTarget, sim.system().BootSourceOverrideEnabled];

  before(async () => {
    ts = await startTestServer(
      { obmTimeoutMs: TIMEOUT_MS },
      { logger: loggerOptions('trace', { write: (line: string) => { logs.push(line); } }) },
    );
    api = new Recording(ts.url);
    await must(api.put('/project/rp'));
    await must(api.put('/project/other'));
    member = api.with(await makeUser(api, 'rp-member', 'pw', ['rp']));
  });
  after(async () => { await stopAllRedfishSims(); });

  it('is an active extension', async () => {
    expect((await must(api.get('/active_extensions'))).body).to.include('hilt.obm.redfish');
  });

  /** Every power call and boot device, with the BMC's state checked after each. */
  async function everyCall(as: Client, name: string, sim: RedfishSim): Promise<void> {
    const status = async () => (await must(as.get(`/node/${name}/power_status`))).body.power_status;
    expect(await status()).to.equal('off');

    await must(as.post(`/node/${name}/power_on`));
    expect(sim.system().PowerState).to.equal('On');
    expect(did(sim)).to.deep.equal(['booted Hdd', 'reset On']);
    expect(await status()).to.equal('on');

    await must(as.put(`/node/${name}/boot_device`, { bootdev: 'pxe' }));
    expect(boot(sim)).to.deep.equal(['Pxe', 'Continuous']);

    await must(as.post(`/node/${name}/power_cycle`));
    expect(did(sim).slice(2)).to.deep.equal(['boot Pxe Continuous', 'boot Pxe Once', 'booted Pxe', 'reset ForceRestart']);
    expect(boot(sim)).to.deep.equal(['Pxe', 'Disabled']); // the one-time PXE boot replaced boot_device's setting, as in HIL

    await must(as.put(`/node/${name}/boot_device`, { bootdev: 'disk' }));
    expect(boot(sim)).to.deep.equal(['Hdd', 'Continuous']);
    await must(as.put(`/node/${name}/boot_device`, { bootdev: 'none' }));
    expect(boot(sim)).to.deep.equal(['None', 'Disabled']);

    await must(as.post(`/node/${name}/power_off`));
    expect(sim.system().PowerState).to.equal('Off');
    expect(await status()).to.equal('off');
    await must(as.post(`/node/${name}/power_off`)); // again: nothing to do

    await must(as.post(`/node/${name}/power_cycle`, { force: true }));
    expect(sim.system().PowerState).to.equal('On');
    expect(did(sim).slice(-3)).to.deep.equal(['boot Pxe Once', 'booted Pxe', 'reset On']);
    expect(sim.system().boots).to.deep.equal(['Hdd', 'Pxe', 'Pxe']);
    expect(await status()).to.equal('on');
    await must(as.post(`/node/${name}/power_on`)); // already on: nothing to do
    expect(did(sim).at(-1)).to.equal('reset On');
  }

  it('serves every power call and boot device to a project member on its node, with one BMC session', async () => {
    const sim = await node('rf-member', {}, true);
    await everyCall(member, 'rf-member', sim);
    expect(sim.logins).to.equal(1);
    expect(sim.requests.filter((r) => r.path.startsWith('/redfish/v1/Systems')).every((r) => r.auth === 'token')).to.equal(true);
  });

  /** hilt_driver_calls_total of the redfish driver, by call and outcome. */
  const redfishCalls = async () => {
    const m = parseExposition((await must(api.get('/metrics'))).text);
    return (call: string, outcome: string) => value(m, 'hilt_driver_calls_total', { kind: 'obm', driver: 'redfish', call, outcome });
  };

  it('serves every power call and boot device to an admin on a free node, with one BMC session; metrics count each call of the redfish driver', async () => {
    const sim = await node('rf-admin');
    const before = await redfishCalls();
    await everyCall(api, 'rf-admin', sim);
    expect(sim.logins).to.equal(1);
    const after = await redfishCalls();
    const moved = (call: string) => after(call, 'ok') - before(call, 'ok');
    expect({ status: moved('power_status'), on: moved('power_on'), off: moved('power_off'), cycle: moved('power_cycle'), boot: moved('boot_device') })
      .to.deep.equal({ status: 4, on: 2, off: 2, cycle: 2, boot: 3 });
  });

  it('refuses the calls to anyone else (401) and reaches no BMC for them', async () => {
    const sim = sims['rf-admin']!;
    const before = sim.requests.length;
    const outsider = api.with(await makeUser(api, 'rf-outsider', 'pw', ['other']));
    for (const as of [member, outsider]) {
      expect((await as.post('/node/rf-admin/power_on')).status).to.equal(401);
      expect((await as.put('/node/rf-admin/boot_device', { bootdev: 'pxe' })).status).to.equal(401);
      expect((await as.get('/node/rf-admin/power_status')).status).to.equal(401);
    }
    expect((await outsider.post('/node/rf-member/power_off')).status).to.equal(401);
    expect((await member.put('/node/rf-member/boot_device', { bootdev: 'usb' })).status).to.equal(400);
    expect(sim.requests.length).to.equal(before);
  });

  it('refuses bad Redfish fields at node_register (400) and registers nothing', async () => {
    const sim = sims['rf-admin']!;
    for (const o of [
      { ...obm(sim), host: '127.0.0.1:8443' },
      { ...obm(sim), host: `${sim.url}/redfish/v1` },
      { ...obm(sim), system: 'Systems/1' },
      { ...obm(sim), verify_tls: 'yes' },
      { ...obm(sim), ca_cert: 'not a certificate' },
      { ...obm(sim), password: '' },
      { ...obm(sim), port: 443 },
    ]) {
      const r = await api.put('/node/rf-bad', { obm: o });
      expect(r.status, JSON.stringify(o)).to.equal(400);
      expect(r.body.type).to.equal('BadArgumentError');
      expect(r.text).to.not.include(BMC_PASSWORD);
    }
    expect((await api.get('/node/rf-bad')).status).to.equal(404);
  });

  it('verifies the BMC\'s TLS certificate by default: a self-signed BMC is refused until its ca_cert is given or verify_tls is false', async () => {
    const sim = await bmc();
    await register('rf-tls', { type: REDFISH_OBM, host: sim.url, user: BMC_USER, password: BMC_PASSWORD });
    const t = Date.now();
    const r = await api.post('/node/rf-tls/power_on');
    expect(Date.now() - t).to.be.below(TIMEOUT_MS + 1000);
    expect(r.status).to.equal(502);
    expect(r.body).to.deep.equal({
      type: 'OBMError',
      msg: `BMC ${sim.url}: reading the service root failed: the BMC's TLS certificate was refused because it is self-signed ` +
        '(self-signed certificate); give the BMC\'s CA (or its own certificate) as ca_cert, or set verify_tls to false',
    });
    expect(sim.requests).to.deep.equal([]);
    expect(sim.system().PowerState).to.equal('Off');

    await must(api.del('/node/rf-tls'));
    await register('rf-tls', obm(sim));
    await must(api.post('/node/rf-tls/power_on'));
    expect(sim.system().PowerState).to.equal('On');

    await must(api.del('/node/rf-tls'));
    await register('rf-tls', { type: REDFISH_OBM, host: sim.url, user: BMC_USER, password: BMC_PASSWORD, verify_tls: false });
    await must(api.post('/node/rf-tls/power_off'));
    expect(sim.system().PowerState).to.equal('Off');
  });

  it('answers a wrong BMC password with 502 and the BMC\'s text, quickly, without the password', async () => {
    const sim = await bmc();
    await register('rf-badpw', obm(sim, { password: 'not-the-password' }));
    const before = await redfishCalls();
    const t = Date.now();
    const r = await api.post('/node/rf-badpw/power_cycle');
    expect(Date.now() - t).to.be.below(TIMEOUT_MS + 1000);
    expect(r.status).to.equal(502);
    expect(r.body.type).to.equal('OBMError');
    expect(r.body.msg).to.equal(`BMC ${sim.url}: login as ${BMC_USER} refused (HTTP 401): While accessing the resource at ` +
      '\'/redfish/v1/SessionService/Sessions\', the service received an authorization error \'Invalid username or password\'. ' +
      '(wrong user or password)');
    expect(r.text).to.not.include('not-the-password');
    expect(sim.system().PowerState).to.equal('Off');
    expect(sim.logins).to.equal(0);
    expect((await redfishCalls())('power_cycle', 'error') - before('power_cycle', 'error')).to.equal(1);
  });

  it('answers a hung BMC with 502 within the timeout, and stays responsive meanwhile', async () => {
    const sim = await node('rf-hung');
    sim.hang = true;
    const t = Date.now();
    const pending = api.post('/node/rf-hung/power_off');
    const t2 = Date.now();
    expect((await api.get('/node/rf-admin/power_status')).status).to.equal(200);
    expect((await api.get('/nodes/all')).status).to.equal(200);
    await must(member.post('/node/rf-member/power_off'));
    expect(Date.now() - t2).to.be.below(2000);
    const r = await pending;
    const ms = Date.now() - t;
    expect(r.status).to.equal(502);
    expect(r.body).to.deep.equal({ type: 'OBMError', msg: `BMC ${sim.url} did not answer within ${TIMEOUT_MS} ms (power off)` });
    expect(ms).to.be.within(TIMEOUT_MS - 100, TIMEOUT_MS + 1000);
    // the abandoned request was cancelled: its connection is gone
    for (const end = Date.now() + 3000; sim.held() > 0 && Date.now() < end;) await new Promise((res) => setTimeout(res, 20));
    expect(sim.held()).to.equal(0);
    // calls queued behind a hung one are answered within the timeout too
    const t3 = Date.now();
    const rs = await Promise.all([api.post('/node/rf-hung/power_on'), api.get('/node/rf-hung/power_status')]);
    for (const x of rs) expect(x.status).to.equal(502);
    expect(Date.now() - t3).to.be.below(TIMEOUT_MS + 1000);
    sim.hang = false;
  });

  it('answers a refused reset with 502 and the BMC\'s ExtendedInfo text; a member reads it without the BMC\'s address or user', async () => {
    const sim = await node('rf-refuse', { power: 'On' }, true);
    sim.refuseResets = 'The host is updating its firmware; try again in 10 minutes.';
    const r = await api.post('/node/rf-refuse/power_off');
    expect(r.status).to.equal(502);
    expect(r.body).to.deep.equal({
      type: 'OBMError', msg: `BMC ${sim.url}: reset ForceOff refused (HTTP 409): The host is updating its firmware; try again in 10 minutes.`,
    });
    const m = await member.post('/node/rf-refuse/power_cycle');
    expect(m.status).to.equal(502);
    expect(m.body).to.deep.equal({
      type: 'OBMError', msg: 'the node\'s BMC: reset ForceRestart refused (HTTP 409): The host is updating its firmware; try again in 10 minutes.',
    });
    const wrong = await bmc();
    await register('rf-refuse2', obm(wrong, { password: 'wrong-one' }));
    await must(api.post('/project/rp/connect_node', { node: 'rf-refuse2' }));
    const w = await member.post('/node/rf-refuse2/power_on');
    expect(w.status).to.equal(502);
    expect(w.body.msg).to.match(/^the node's BMC: login as \[user\] refused \(HTTP 401\): /);
    for (const text of [m.text, w.text]) {
      expect(text).to.not.include('127.0.0.1').and.not.include(BMC_USER);
    }
    // the log keeps the whole text for the operator
    expect(logs.some((l) => l.includes(`BMC ${sim.url}: reset ForceRestart refused`))).to.equal(true);
    expect(sim.system().PowerState).to.equal('On');
  });

  it('power-cycles through a BMC that lacks ForceRestart (ForceOff, then On)', async () => {
    const sim = await node('rf-noforce', { power: 'On', resetTypes: ['On', 'ForceOff', 'GracefulShutdown', 'GracefulRestart'] });
    await must(api.post('/node/rf-noforce/power_cycle'));
    expect(did(sim)).to.deep.equal(['boot Pxe Once', 'reset ForceOff', 'booted Pxe', 'reset On']);
    expect(sim.system().PowerState).to.equal('On');
  });

  it('drives the systems of one BMC one call at a time, each node naming its system', async () => {
    const sim = await bmc({ systems: ['1', '2'] });
    await register('rf-blade1', obm(sim, { system: '/redfish/v1/Systems/1' }));
    await register('rf-blade2', obm(sim, { system: '/redfish/v1/Systems/2' }));
    await register('rf-blade-any', obm(sim));
    const rs = await Promise.all([
      api.post('/node/rf-blade1/power_on'), api.post('/node/rf-blade2/power_cycle'), api.get('/node/rf-blade1/power_status'),
    ]);
    expect(rs.map((r) => r.status)).to.deep.equal([200, 200, 200]);
    expect(rs[2]!.body).to.deep.equal({ power_status: 'on' });
    expect([sim.system('1').PowerState, sim.system('2').PowerState]).to.deep.equal(['On', 'On']);
    expect(sim.system('2').boots).to.deep.equal(['Pxe']);
    expect(sim.logins).to.equal(1);
    const r = await api.get('/node/rf-blade-any/power_status');
    expect(r.status).to.equal(502);
    expect(r.body.msg).to.include('found 2 ComputerSystems (/redfish/v1/Systems/1, /redfish/v1/Systems/2)');
  });

  it('deletes its BMC sessions when the service stops', async () => {
    const sim = await bmc();
    const other = await startTestServer({ obmTimeoutMs: TIMEOUT_MS });
    try {
      await must(other.api.put('/node/rf-stop', { obm: obm(sim) }));
      await must(other.api.post('/node/rf-stop/power_on'));
      await must(other.api.get('/node/rf-stop/power_status'));
      expect(sim.activeSessions()).to.equal(1);
    } finally {
      await stopTestServer(other);
    }
    expect(sim.logouts).to.equal(1);
    expect(sim.activeSessions()).to.equal(0);
  });

  it('never puts a BMC password or session token in an answer or a log line', async () => {
    for (const path of ['/node/rf-member', '/admin/actors/node/rf-member', '/admin/actors/node/rf-member/journal']) {
      const r = await api.get(path);
      expect(r.status, path).to.equal(200);
    }
    const tokens = Object.values(sims).flatMap((s) => s.tokens());
    expect(tokens.length).to.be.above(3);
    expect(answers.length).to.be.above(50);
    expect(logs.length).to.be.above(50);
    for (const text of [...answers, ...logs]) {
      for (const secret of [BMC_PASSWORD, 'not-the-password', 'wrong-one', ...tokens]) expect(text).to.not.include(secret);
    }
  });
});
