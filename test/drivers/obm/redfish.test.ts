/**
 * RedfishDriver against the Redfish BMC simulator (test/helpers/redfish-sim.ts) over HTTPS on
 * 127.0.0.1. What the BMC was told is read back from the simulator's events and state. The
 * per-BMC queue and the deadline of power calls are the service's (test/hardware/power.test.ts);
 * here a call's signal stands for its deadline.
 */
import { expect } from 'chai';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { redfish, RedfishDriver } from '../../../drivers/obm/redfish';
import type { RedfishFields } from '../../../drivers/obm/redfish';
import { ObmError } from '../../../drivers/obm/types';
import { DriverRegistry } from '../../../drivers/registry';
import { makeCertificate, RedfishSim, RedfishSimOptions, startRedfishSim, stopAllRedfishSims } from '../../helpers/redfish-sim';

const USER = 'root';
const PASSWORD = 'Rf$9!pw-Q7zK'; // distinctive, so finding it anywhere is meaningful

/** A call that is never stopped. */
const LIVE = new AbortController().signal;

async function obmFailure(p: () => Promise<unknown>): Promise<{ err: ObmError; ms: number }> {
  const t0 = Date.now();
  try {
    await p();
  } catch (e) {
    expect(e, String(e)).to.be.instanceOf(ObmError);
    return { err: e as ObmError, ms: Date.now() - t0 };
  }
  throw new Error('expected an ObmError, but the call succeeded');
}

describe('RedfishDriver (against the Redfish BMC simulator over HTTPS)', function () {
  this.timeout(20_000);
  let sim: RedfishSim;
  let driver: RedfishDriver;
  const fields = (s: RedfishSim, extra: Partial<RedfishFields> = {}): RedfishFields =>
    ({ host: s.url, user: USER, password: PASSWORD, ...(s.certPem ? { ca_cert: s.certPem } : {}), ...extra });
  const start = (opts: Partial<RedfishSimOptions> = {}) => startRedfishSim({ user: USER, password: PASSWORD, ...opts });
  /** the simulator's events without the login: what the BMC was asked to do */
  const did = (s: RedfishSim) => s.events.filter((e) => !e.startsWith('login'));

  beforeEach(async () => {
    sim = await start();
    driver = new RedfishDriver();
  });
  afterEach(async () => {
    await driver.close(AbortSignal.timeout(2000));
    await sim.stop();
  });
  after(() => stopAllRedfishSims());

  describe('power calls', () => {
    it('reads the power state, both ways', async () => {
      expect(await driver.powerStatus(fields(sim), LIVE)).to.equal('off');
      sim.setPower('On');
      expect(await driver.powerStatus(fields(sim), LIVE)).to.equal('on');
      expect(did(sim)).to.deep.equal([]);
    });

    it('power_cycle of a node that is off: PXE once, then On; it boots from PXE and the override is spent', async () => {
      await driver.powerCycle(fields(sim), {}, LIVE);
      expect(did(sim)).to.deep.equal(['boot Pxe Once', 'booted Pxe', 'reset On']);
      const s = sim.system();
      expect(s.PowerState).to.equal('On');
      expect(s.boots).to.deep.equal(['Pxe']);
      expect([s.BootSourceOverrideTarget, s.BootSourceOverrideEnabled]).to.deep.equal(['Pxe', 'Disabled']);
    });

    it('power_cycle of a node that is on: PXE once, then ForceRestart (force or not)', async () => {
      sim.setPower('On');
      await driver.powerCycle(fields(sim), {}, LIVE);
      await driver.powerCycle(fields(sim), { force: true }, LIVE);
      expect(did(sim)).to.deep.equal(['boot Pxe Once', 'booted Pxe', 'reset ForceRestart', 'boot Pxe Once', 'booted Pxe', 'reset ForceRestart']);
      expect(sim.system().boots).to.deep.equal(['Pxe', 'Pxe']);
    });

    it('power_cycle of a node that went off after it was read: the refused ForceRestart becomes On', async () => {
      sim.setPower('On');
      sim.offBeforeNextReset = true;
      await driver.powerCycle(fields(sim), {}, LIVE);
      expect(did(sim)).to.deep.equal(['boot Pxe Once', 'went off', 'reset refused ForceRestart', 'booted Pxe', 'reset On']);
      expect(sim.system().PowerState).to.equal('On');
      // Refused while the node is still on: the refusal stands.
      sim.refuseResets = 'The BMC is busy.';
      const { err } = await obmFailure(() => driver.powerCycle(fields(sim), {}, LIVE));
      expect(err.message).to.include('reset ForceRestart refused (HTTP 409): The BMC is busy.');
    });

    it('power_cycle on a BMC without ForceRestart uses PowerCycle', async () => {
      const s2 = await start({ power: 'On', resetTypes: ['On', 'ForceOff', 'PowerCycle'] });
      try {
        await driver.powerCycle(fields(s2), {}, LIVE);
        expect(did(s2)).to.deep.equal(['boot Pxe Once', 'booted Pxe', 'reset PowerCycle']);
      } finally { await s2.stop(); }
    });

    it('power_cycle on a BMC with neither ForceRestart nor PowerCycle: ForceOff, then On once it is off', async () => {
      const s2 = await start({ power: 'On', resetTypes: ['On', 'ForceOff', 'GracefulShutdown'] });
      try {
        await driver.powerCycle(fields(s2), {}, LIVE);
        expect(did(s2)).to.deep.equal(['boot Pxe Once', 'reset ForceOff', 'booted Pxe', 'reset On']);
        expect(s2.system().PowerState).to.equal('On');
      } finally { await s2.stop(); }
    });

    it('reads the allowed reset types from an ActionInfo resource (OpenBMC\'s way)', async () => {
      const s2 = await start({ power: 'On', actionInfo: true, resetTypes: ['On', 'ForceOff', 'PowerCycle'] });
      try {
        await driver.powerCycle(fields(s2), {}, LIVE);
        expect(did(s2)).to.deep.equal(['boot Pxe Once', 'booted Pxe', 'reset PowerCycle']);
        expect(s2.requests.map((r) => r.path)).to.include('/redfish/v1/Systems/1/ResetActionInfo');
      } finally { await s2.stop(); }
    });

    it('takes a BMC that advertises no reset types to allow the standard ones', async () => {
      const s2 = await start({ power: 'On', noAllowableValues: true });
      try {
        await driver.powerCycle(fields(s2), {}, LIVE);
        expect(did(s2)).to.deep.equal(['boot Pxe Once', 'booted Pxe', 'reset ForceRestart']);
      } finally { await s2.stop(); }
    });

    it('says which reset types a BMC allows when none will do', async () => {
      const s2 = await start({ power: 'On', resetTypes: ['GracefulShutdown', 'Nmi'] });
      try {
        const { err } = await obmFailure(() => driver.powerOff(fields(s2), LIVE));
        expect(err.message).to.equal(`BMC ${s2.url}: power off impossible: the system /redfish/v1/Systems/1 allows the ResetType values ` +
          'GracefulShutdown, Nmi, none of ForceOff');
        expect(did(s2)).to.deep.equal([]);
      } finally { await s2.stop(); }
    });

    it('power_off: ForceOff for a node that is on; nothing for one that is off', async () => {
      sim.setPower('On');
      await driver.powerOff(fields(sim), LIVE);
      expect(sim.system().PowerState).to.equal('Off');
      await driver.powerOff(fields(sim), LIVE);
      expect(did(sim)).to.deep.equal(['reset ForceOff']);
    });

    it('power_on: On for a node that is off, leaving its boot override; nothing for one that is on', async () => {
      await driver.setBootDevice(fields(sim), 'disk', LIVE);
      await driver.powerOn(fields(sim), LIVE);
      await driver.powerOn(fields(sim), LIVE);
      expect(did(sim)).to.deep.equal(['boot Hdd Continuous', 'booted Hdd', 'reset On']);
      expect(sim.system().PowerState).to.equal('On');
    });

    it('power_on falls back to ForceOn, then PushPowerButton', async () => {
      for (const [types, used] of [[['ForceOn', 'ForceOff'], 'ForceOn'], [['PushPowerButton'], 'PushPowerButton']] as const) {
        const s2 = await start({ resetTypes: types });
        try {
          await driver.powerOn(fields(s2), LIVE);
          expect(did(s2)).to.deep.equal(['booted Hdd', `reset ${used}`]);
        } finally { await s2.stop(); }
      }
    });

    it('boot_device: Pxe or Hdd persistently (Continuous), none clears the override', async () => {
      const s = () => [sim.system().BootSourceOverrideTarget, sim.system().BootSourceOverrideEnabled];
      await driver.setBootDevice(fields(sim), 'pxe', LIVE);
      expect(s()).to.deep.equal(['Pxe', 'Continuous']);
      await driver.setBootDevice(fields(sim), 'disk', LIVE);
      expect(s()).to.deep.equal(['Hdd', 'Continuous']);
      await driver.setBootDevice(fields(sim), 'none', LIVE);
      expect(s()).to.deep.equal(['None', 'Disabled']);
      expect(sim.system().PowerState).to.equal('Off');
      // a persistent PXE override lasts across boots
      await driver.setBootDevice(fields(sim), 'pxe', LIVE);
      await driver.powerOn(fields(sim), LIVE);
      await driver.powerCycle(fields(sim), {}, LIVE);
      sim.setPower('Off');
      await driver.setBootDevice(fields(sim), 'pxe', LIVE);
      await driver.powerOn(fields(sim), LIVE);
      expect(sim.system().boots).to.deep.equal(['Pxe', 'Pxe', 'Pxe']);
    });

    it('boot_device none on a BMC whose targets omit None (sushy-tools lists Pxe, Cd, Hdd, UefiHttp): the override is disabled, the target left', async () => {
      const s2 = await start({ bootTargets: ['Pxe', 'Cd', 'Hdd', 'UefiHttp'] });
      try {
        const boot = () => [s2.system().BootSourceOverrideTarget, s2.system().BootSourceOverrideEnabled];
        await driver.setBootDevice(fields(s2), 'pxe', LIVE);
        expect(boot()).to.deep.equal(['Pxe', 'Continuous']);
        await driver.setBootDevice(fields(s2), 'none', LIVE);
        expect(boot()).to.deep.equal(['Pxe', 'Disabled']);
        // No override any more: the system boots from its own order (the simulator's disk).
        await driver.powerOn(fields(s2), LIVE);
        expect(s2.system().boots).to.deep.equal(['Hdd']);
      } finally { await s2.stop(); }
    });

    it('patches with If-Match, and once more with a fresh ETag when the first was stale', async () => {
      sim.changeBeforeNextPatch = true;
      await driver.setBootDevice(fields(sim), 'pxe', LIVE);
      expect(did(sim)).to.deep.equal(['patch refused: stale ETag', 'boot Pxe Continuous']);
      // (the simulator refuses a PATCH without If-Match: 428)
    });

    it('works with a BMC that sends no ETags', async () => {
      const s2 = await start({ etags: false });
      try {
        await driver.powerCycle(fields(s2), {}, LIVE);
        expect(did(s2)).to.deep.equal(['boot Pxe Once', 'booted Pxe', 'reset On']);
      } finally { await s2.stop(); }
    });
  });

  describe('systems', () => {
    it('refuses a BMC with several systems when the node names none, and naming the system', async () => {
      const s2 = await start({ systems: ['1', '2'] });
      try {
        const { err } = await obmFailure(() => driver.powerStatus(fields(s2), LIVE));
        expect(err.message).to.equal(`BMC ${s2.url}: listing the systems found 2 ComputerSystems (/redfish/v1/Systems/1, ` +
          '/redfish/v1/Systems/2): register the node with `system` set to the one it is');
        await driver.powerOn(fields(s2, { system: '/redfish/v1/Systems/2' }), LIVE);
        expect(s2.system('2').PowerState).to.equal('On');
        expect(s2.system('1').PowerState).to.equal('Off');
      } finally { await s2.stop(); }
    });

    it('answers a system that does not exist with the BMC\'s own 404 text', async () => {
      const { err } = await obmFailure(() => driver.powerStatus(fields(sim, { system: '/redfish/v1/Systems/9' }), LIVE));
      expect(err.message).to.equal(`BMC ${sim.url}: reading the system /redfish/v1/Systems/9 refused (HTTP 404): ` +
        'The resource at the URI \'/redfish/v1/Systems/9\' was not found.');
    });

    for (const system of ['/redfish/v1/Systems/..\\AccountService\\Accounts\\1', '/redfish/v1/Systems/%2e%2e']) {
      it(`sends nothing for a system that resolves outside /redfish/v1/Systems/ (${system})`, async () => {
        const { err } = await obmFailure(() => driver.setBootDevice(fields(sim, { system }), 'pxe', LIVE));
        expect(err.message).to.match(/system must be a ComputerSystem's @odata.id/);
        expect(sim.requests).to.deep.equal([]);
      });
    }
  });

  describe('sessions', () => {
    it('logs in once and reuses the session for every later call to the BMC', async () => {
      await driver.powerStatus(fields(sim), LIVE);
      await driver.powerCycle(fields(sim), {}, LIVE);
      await driver.setBootDevice(fields(sim), 'disk', LIVE);
      await driver.powerOff(fields(sim), LIVE);
      expect(sim.logins).to.equal(1);
      expect(sim.requests.filter((r) => r.path.startsWith('/redfish/v1/Systems')).every((r) => r.auth === 'token')).to.equal(true);
      expect(driver.client.sessions()).to.deep.equal([sim.url]);
    });

    it('logs in again when the BMC dropped the session (401), and the call succeeds', async () => {
      await driver.powerStatus(fields(sim), LIVE);
      sim.expireSessions();
      await driver.powerOn(fields(sim), LIVE);
      expect(sim.logins).to.equal(2);
      expect(sim.system().PowerState).to.equal('On');
    });

    it('deletes a session it gives up after a 401: a BMC that keeps refusing a request is not filled with live sessions', async () => {
      const s2 = await start({ maxSessions: 3 });
      try {
        s2.unauthorizedResets = true;
        for (let i = 0; i < 4; i++) {
          const { err } = await obmFailure(() => driver.powerOn(fields(s2), LIVE));
          expect(err.message).to.match(/reset On refused \(HTTP 401\)/);
        }
        expect(s2.activeSessions()).to.equal(1);
        s2.unauthorizedResets = false;
        await driver.powerOn(fields(s2), LIVE);
        expect(s2.system().PowerState).to.equal('On');
      } finally { await s2.stop(); }
    });

    it('deletes its sessions when closed', async () => {
      await driver.powerStatus(fields(sim), LIVE);
      expect(sim.activeSessions()).to.equal(1);
      await driver.close(AbortSignal.timeout(2000));
      expect(sim.logouts).to.equal(1);
      expect(sim.activeSessions()).to.equal(0);
      expect(sim.events.at(-1)).to.equal('logout 1');
    });

    it('closed while a call is logging in: waits for the login\'s answer and deletes that session too', async () => {
      sim.loginDelayMs = 400;
      const call = driver.powerStatus(fields(sim), LIVE).catch((e: Error) => e);
      while (!sim.events.includes('login root')) await new Promise((r) => setTimeout(r, 10));
      await driver.close(AbortSignal.timeout(2000));
      await call;
      expect(sim.logins).to.equal(1);
      expect(sim.activeSessions()).to.equal(0);
      expect(sim.logouts).to.equal(1);
    });

    it('a call whose deadline comes during a slow login leaves no session behind: the next call uses it', async () => {
      const s2 = await start({ maxSessions: 2 });
      try {
        // A login far longer than the three calls, even on a loaded machine.
        s2.loginDelayMs = 5000;
        // Each call is stopped while the BMC is still answering the login (its session made already).
        for (let i = 0; i < 3; i++) {
          const { err, ms } = await obmFailure(() => driver.powerStatus(fields(s2), AbortSignal.timeout(150)));
          expect(ms).to.be.below(2500); // answered at the deadline, not when the login ends
          expect(err.message).to.match(/stopped/);
        }
        expect(s2.logins).to.equal(1); // later calls waited for the login under way, made no other
        s2.loginDelayMs = 0;
        expect(await driver.powerStatus(fields(s2), LIVE)).to.equal('off');
        expect(s2.logins).to.equal(1);
        expect(s2.activeSessions()).to.equal(1);
        await driver.close(AbortSignal.timeout(2000));
        expect(s2.activeSessions()).to.equal(0);
      } finally { await s2.stop(); }
    });

    it('closed while a call is logging in to a BMC that never answers: close ends within its bound', async () => {
      sim.hang = true;
      const call = driver.powerStatus(fields(sim), AbortSignal.timeout(5000)).catch((e: Error) => e);
      while (sim.held() === 0) await new Promise((r) => setTimeout(r, 10));
      const t0 = Date.now();
      await driver.close(AbortSignal.timeout(300));
      expect(Date.now() - t0).to.be.below(1000);
      expect(await call).to.be.instanceOf(ObmError);
    });

    it('once closed, logs in no more: a call after close leaves no session on the BMC', async () => {
      await driver.close(AbortSignal.timeout(2000));
      const { err } = await obmFailure(() => driver.powerStatus(fields(sim), LIVE));
      expect(err.message).to.match(/the service is stopping/);
      expect(sim.activeSessions()).to.equal(0);
    });

    it('keeps one session per user and password: a wrong password never rides on a good session', async () => {
      await driver.powerStatus(fields(sim), LIVE);
      const { err } = await obmFailure(() => driver.powerOn(fields(sim, { password: 'not-the-password' }), LIVE));
      expect(err.message).to.equal(`BMC ${sim.url}: login as ${USER} refused (HTTP 401): While accessing the resource at ` +
        '\'/redfish/v1/SessionService/Sessions\', the service received an authorization error \'Invalid username or password\'. ' +
        '(wrong user or password)');
      expect(sim.system().PowerState).to.equal('Off');
      expect(sim.logins).to.equal(1);
    });

    it('uses basic authentication with a BMC that has no session service', async () => {
      const s2 = await start({ sessionService: false });
      try {
        await driver.powerCycle(fields(s2), {}, LIVE);
        expect(s2.logins).to.equal(0);
        expect(s2.requests.filter((r) => r.path !== '/redfish/v1').map((r) => r.auth)).to.satisfy((a: string[]) => a.length > 0 && a.every((x) => x === 'basic'));
        expect(s2.system().PowerState).to.equal('On');
      } finally { await s2.stop(); }
    });

    it('answers a wrong password on a BMC without sessions with the BMC\'s text', async () => {
      const s2 = await start({ sessionService: false });
      try {
        const { err } = await obmFailure(() => driver.powerStatus(fields(s2, { password: 'nope-nope' }), LIVE));
        expect(err.message).to.match(/refused \(HTTP 401\): There is no valid session established with the implementation\. \(the BMC refused the credentials of root\)$/);
      } finally { await s2.stop(); }
    });

    it('says so when the BMC has no room for another session', async () => {
      const s2 = await start({ maxSessions: 0 });
      try {
        const { err } = await obmFailure(() => driver.powerStatus(fields(s2), LIVE));
        expect(err.message).to.equal(`BMC ${s2.url}: login refused (HTTP 503): The session establishment failed due to the number of ` +
          'simultaneous sessions exceeding the limit of the implementation.');
      } finally { await s2.stop(); }
    });
  });

  describe('TLS', () => {
    it('refuses a self-signed BMC by default, saying what to do', async () => {
      const { err } = await obmFailure(() => driver.powerStatus({ host: sim.url, user: USER, password: PASSWORD }, LIVE));
      expect(err.message).to.equal(`BMC ${sim.url}: reading the service root failed: the BMC's TLS certificate was refused because ` +
        'it is self-signed (self-signed certificate); give the BMC\'s CA (or its own certificate) as ca_cert, or set verify_tls to false');
      expect(err.forMembers).to.equal(`BMC ${sim.url}: reading the service root failed: the BMC's TLS certificate was refused because ` +
        'it is self-signed; give the BMC\'s CA (or its own certificate) as ca_cert, or set verify_tls to false');
      expect(sim.requests).to.deep.equal([]); // no request got through
    });

    it('trusts the certificate given as ca_cert, and only that one', async () => {
      expect(await driver.powerStatus(fields(sim), LIVE)).to.equal('off');
      const dir = mkdtempSync(join(tmpdir(), 'hilt-othercert-'));
      try {
        const other = readFileSync((await makeCertificate(dir, 'other')).certFile, 'utf8');
        const d2 = new RedfishDriver();
        const { err } = await obmFailure(() => d2.powerStatus(fields(sim, { ca_cert: other }), LIVE));
        expect(err.message).to.include('TLS certificate was refused');
        await d2.close(AbortSignal.timeout(1000));
      } finally { rmSync(dir, { recursive: true, force: true }); }
    });

    it('talks to a self-signed BMC with verify_tls false', async () => {
      expect(await driver.powerStatus({ host: sim.url, user: USER, password: PASSWORD, verify_tls: false }, LIVE)).to.equal('off');
    });

    it('talks to a BMC over plain http://', async () => {
      const s2 = await start({ tls: false });
      try {
        await driver.powerOn({ host: s2.url, user: USER, password: PASSWORD }, LIVE);
        expect(s2.system().PowerState).to.equal('On');
      } finally { await s2.stop(); }
    });
  });

  describe('failures', () => {
    it('a BMC that never answers: the call\'s signal stops it at once, and its connection is closed', async () => {
      await driver.powerStatus(fields(sim), LIVE); // logged in
      sim.hang = true;
      const { err, ms } = await obmFailure(() => driver.powerOff(fields(sim), AbortSignal.timeout(500)));
      expect(ms).to.be.within(450, 1500);
      expect(err.message).to.equal(`BMC ${sim.url}: reading the system /redfish/v1/Systems/1 was stopped: the call ran out of time`);
      for (const end = Date.now() + 2000; sim.held() > 0 && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
      expect(sim.held()).to.equal(0);
    });

    it('a refused reset: the BMC\'s ExtendedInfo text', async () => {
      sim.setPower('On');
      sim.refuseResets = 'The server is updating its BIOS; try again in 10 minutes.';
      const { err } = await obmFailure(() => driver.powerOff(fields(sim), LIVE));
      expect(err.message).to.equal(`BMC ${sim.url}: reset ForceOff refused (HTTP 409): The server is updating its BIOS; try again in 10 minutes.`);
      expect(sim.system().PowerState).to.equal('On');
    });

    it('a reset the BMC accepted as a task that then failed: the task\'s message, not a success', async () => {
      sim.setPower('On');
      sim.resetTasks = { polls: 2, fail: 'The power supply did not respond.' };
      const { err } = await obmFailure(() => driver.powerOff(fields(sim), LIVE));
      expect(err.message).to.equal(`BMC ${sim.url}: reset ForceOff failed: its task ended Exception: The power supply did not respond.`);
      expect(sim.system().PowerState).to.equal('On');
    });

    it('a task whose monitor answers 204 however the task ended (OpenBMC): the task\'s own end decides', async () => {
      sim.setPower('On');
      sim.resetTasks = { polls: 1, fail: 'The power supply did not respond.', noContent: true };
      const { err } = await obmFailure(() => driver.powerOff(fields(sim), LIVE));
      expect(err.message).to.equal(`BMC ${sim.url}: reset ForceOff failed: its task ended Exception: The power supply did not respond.`);
      expect(sim.system().PowerState).to.equal('On');
      sim.resetTasks = { polls: 1, fail: null, noContent: true };
      await driver.powerOff(fields(sim), LIVE);
      expect(sim.system().PowerState).to.equal('Off');
      sim.patchTasks = { polls: 0, fail: 'The BIOS settings are locked.', noContent: true };
      const boot = await obmFailure(() => driver.setBootDevice(fields(sim), 'pxe', LIVE));
      expect(boot.err.message).to.equal(`BMC ${sim.url}: boot override Pxe Continuous failed: its task ended Exception: The BIOS settings are locked.`);
    });

    it('a reset the BMC accepted as a task: the call waits for the task to complete', async () => {
      sim.resetTasks = { polls: 2, fail: null };
      await driver.powerCycle(fields(sim), {}, LIVE);
      expect(sim.system().PowerState).to.equal('On');
      expect(did(sim)).to.deep.equal(['boot Pxe Once', 'reset task 1 On', 'booted Pxe', 'reset On']);
    });

    it('a boot override the BMC accepted as a task: the reset waits for it; one whose task failed is the call\'s failure, and no reset', async () => {
      sim.patchTasks = { polls: 2, fail: null };
      await driver.powerCycle(fields(sim), {}, LIVE);
      expect(did(sim)).to.deep.equal(['boot task 1', 'boot Pxe Once', 'booted Pxe', 'reset On']);
      sim.events.length = 0;
      sim.patchTasks = { polls: 1, fail: 'The BIOS settings are locked.' };
      const { err } = await obmFailure(() => driver.powerCycle(fields(sim), {}, LIVE));
      expect(err.message).to.equal(`BMC ${sim.url}: boot override Pxe Once failed: its task ended Exception: The BIOS settings are locked.`);
      expect(did(sim)).to.deep.equal(['boot task 2', 'boot task 2 failed']);
    });

    it('a reset task that never ends: the call\'s signal stops the wait, as a failure', async () => {
      sim.setPower('On');
      sim.resetTasks = { polls: 1_000_000, fail: null };
      const { err } = await obmFailure(() => driver.powerOff(fields(sim), AbortSignal.timeout(800)));
      expect(err.message).to.match(/reset ForceOff .*stopped/);
      expect(sim.system().PowerState).to.equal('On');
    });

    it('nothing listening: the connection error', async () => {
      const port = sim.port;
      await sim.stop();
      const { err } = await obmFailure(() => driver.powerStatus(fields(sim), LIVE));
      expect(err.message).to.equal(`BMC ${sim.url}: reading the service root failed: connect ECONNREFUSED 127.0.0.1:${port}`);
      // The node's project reads the driver's wording: undici's text names the address it tried.
      expect(err.forMembers).to.equal(`BMC ${sim.url}: reading the service root failed: cannot reach the BMC (ECONNREFUSED)`);
      sim = await start(); // for afterEach
    });

    it('never puts the password or a session token in a message', async () => {
      const messages: string[] = [];
      await driver.powerStatus(fields(sim), LIVE);
      sim.refuseResets = `echoing ${PASSWORD} and ${sim.tokens()[0]}`;
      messages.push((await obmFailure(() => driver.powerOn(fields(sim), LIVE))).err.message);
      messages.push((await obmFailure(() => driver.powerOn(fields(sim, { password: `${PASSWORD}x` }), LIVE))).err.message);
      expect(messages[0]).to.equal(`BMC ${sim.url}: reset On refused (HTTP 409): echoing *** and ***`);
      for (const m of messages) {
        expect(m).to.not.include(PASSWORD);
        for (const t of sim.tokens()) expect(m).to.not.include(t);
      }
    });

    describe('a BMC whose login refusal quotes the request (plain text)', () => {
      let server: http.Server;
      let origin: string;
      let page: (body: string) => string;
      before(async () => {
        server = http.createServer((req, res) => {
          let body = '';
          req.on('data', (d) => (body += d));
          req.on('end', () => {
            if (req.url === '/redfish/v1/') {
              res.setHeader('content-type', 'application/json');
              return res.end(JSON.stringify({ Systems: { '@odata.id': '/redfish/v1/Systems' }, Links: { Sessions: { '@odata.id': '/redfish/v1/SessionService/Sessions' } } }));
            }
            res.statusCode = 400;
            res.setHeader('content-type', 'text/plain');
            res.end(page(body));
          });
        });
        await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
        origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      });
      after(() => new Promise((r) => server.close(r)));

      const cases: Array<[string, string, (body: string) => string]> = [
        // The cut of a long page falls inside the password.
        ['a password across the cut of a long page', 'S3cr3t-Pa55w0rd-XYZ',
          (body) => `${'Request rejected by the session service. '.repeat(4).slice(0, 147)}Body was: ${body}`],
        ['a password with a tab, quoted as it came', 'Tab\tS3cr3t-Pa55', () => 'no user operator with password Tab\tS3cr3t-Pa55'],
        ['a password with a newline, quoted as it came', 'Line\nS3cr3t-Pa55', () => 'no user operator with password Line\nS3cr3t-Pa55'],
        ['a password with a tab, quoted in the JSON body', 'Tab\tS3cr3t-Pa55', (body) => `Body was: ${body}`],
      ];
      it('keeps out the basic authentication header a BMC without sessions quotes', async () => {
        const password = 'S3cr3t-Pa55w0rd-XYZ';
        const basic = Buffer.from(`operator:${password}`).toString('base64');
        let seen = '';
        const s2 = http.createServer((req, res) => {
          seen = req.headers.authorization ?? seen;
          res.setHeader('content-type', req.url === '/redfish/v1/' ? 'application/json' : 'text/plain');
          if (req.url === '/redfish/v1/') return res.end(JSON.stringify({ Systems: { '@odata.id': '/redfish/v1/Systems' } }));
          res.statusCode = 400;
          res.end(`Bad request. Headers: Authorization: ${req.headers.authorization ?? ''}`);
        });
        await new Promise<void>((r) => s2.listen(0, '127.0.0.1', r));
        const d = new RedfishDriver();
        try {
          const host = `http://127.0.0.1:${(s2.address() as AddressInfo).port}`;
          const { err } = await obmFailure(() => d.powerStatus({ host, user: 'operator', password }, LIVE));
          expect(seen).to.equal(`Basic ${basic}`);
          expect(err.message).to.match(/refused \(HTTP 400\): Bad request\. Headers: Authorization: /);
          expect(err.message).to.not.include(basic.slice(0, 12), err.message);
        } finally {
          await d.close(AbortSignal.timeout(1000));
          await new Promise((r) => s2.close(r));
        }
      });
      for (const [what, password, answer] of cases) {
        it(`keeps no part of ${what}`, async () => {
          page = answer;
          const d = new RedfishDriver();
          try {
            const { err } = await obmFailure(() => d.powerStatus({ host: origin, user: 'operator', password }, LIVE));
            expect(err.message).to.match(/refused \(HTTP 400\)/);
            expect(err.message).to.not.include('S3cr3t', err.message);
            expect(err.message).to.include('***');
          } finally { await d.close(AbortSignal.timeout(1000)); }
        });
      }
    });
  });

  describe('registration fields', () => {
    const registry = new DriverRegistry('OBM', [redfish]);
    const ok = { type: redfish.type, host: 'https://127.0.0.1:8443', user: USER, password: PASSWORD };
    const good: Array<[string, Record<string, unknown>]> = [
      ['a base URL with a port', ok],
      ['a base URL with a trailing slash and no port', { ...ok, host: 'https://127.0.0.1/' }],
      ['http://', { ...ok, host: 'http://127.0.0.1:8000' }],
      ['a host name', { ...ok, host: 'https://localhost:8443' }],
      ['an IPv6 address', { ...ok, host: 'https://[::1]:8443' }],
      ['a system', { ...ok, system: '/redfish/v1/Systems/System.Embedded.1' }],
      ['a system with a trailing slash', { ...ok, system: '/redfish/v1/Systems/1/' }],
      ['verify_tls false', { ...ok, verify_tls: false }],
    ];
    for (const [what, body] of good) {
      it(`accepts ${what}`, () => {
        expect(registry.validate(body)).to.be.an('object');
      });
    }
    const bad: Array<[string, Record<string, unknown>, RegExp]> = [
      ['no scheme', { ...ok, host: '127.0.0.1:8443' }, /must start with https:\/\/ or http:\/\//],
      ['another scheme', { ...ok, host: 'ftp://127.0.0.1' }, /must start with https:\/\/ or http:\/\//],
      ['a path', { ...ok, host: 'https://127.0.0.1/redfish/v1' }, /must be the base URL only/],
      ['a query', { ...ok, host: 'https://127.0.0.1/?x=1' }, /must be the base URL only/],
      ['credentials in the URL', { ...ok, host: 'https://u:p@127.0.0.1' }, /must not carry credentials/],
      // The host is quoted in most refusals: one that holds the password must not be.
      ['the password in a URL without a scheme', { ...ok, host: `root:${PASSWORD}@127.0.0.1` }, /must not carry credentials/],
      ['the password in a URL of another scheme', { ...ok, host: `ftp://root:${PASSWORD}@127.0.0.1` }, /must not carry credentials/],
      ['the password in a URL that does not parse', { ...ok, host: `https://root:${PASSWORD}@127.0.0.1:70000` }, /must not carry credentials/],
      ['a port out of range', { ...ok, host: 'https://127.0.0.1:70000' }, /is not a URL/],
      ['spaces', { ...ok, host: 'https://127.0.0.1 /' }, /spaces/],
      ['an empty user', { ...ok, user: '' }, /user must be a non-empty string/],
      ['an empty password', { ...ok, password: '' }, /password must be a non-empty string/],
      ['a system outside /redfish/v1/Systems', { ...ok, system: '/redfish/v1/Managers/1' }, /system must be a ComputerSystem's @odata.id/],
      ['a system with ..', { ...ok, system: '/redfish/v1/Systems/..' }, /system must be/],
      ['a system with .', { ...ok, system: '/redfish/v1/Systems/./' }, /system must be/],
      // `\` is `/` to URL parsers, `%2e%2e` is `..`: both leave /redfish/v1/Systems/.
      ['a system with backslashes', { ...ok, system: '/redfish/v1/Systems/..\\AccountService\\Accounts\\1' }, /system must be/],
      ['a system with a backslash in its id', { ...ok, system: '/redfish/v1/Systems/1\\' }, /system must be/],
      ['a system with percent-encoded dots', { ...ok, system: '/redfish/v1/Systems/%2e%2e' }, /system must be/],
      ['a system with mixed-case encoded dots', { ...ok, system: '/redfish/v1/Systems/.%2E/' }, /system must be/],
      ['a system with an encoded slash', { ...ok, system: '/redfish/v1/Systems/1%2F..' }, /system must be/],
      ['a system the URL parser spells otherwise', { ...ok, system: '/redfish/v1/Systems/a"b' }, /system must be/],
      ['verify_tls as a string', { ...ok, verify_tls: 'no' }, /^verify_tls must be a boolean$/],
      ['a ca_cert that is no PEM', { ...ok, ca_cert: 'hello' }, /at least one PEM certificate/],
      ['a ca_cert that does not parse', { ...ok, ca_cert: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' }, /does not parse/],
      ['a ca_cert with http://', { ...ok, host: 'http://127.0.0.1', ca_cert: 'x' }, /ca_cert is for a BMC reached over https/],
      ['a ca_cert with verify_tls false', { ...ok, verify_tls: false, ca_cert: 'x' }, /contradict/],
      ['an unknown field', { ...ok, port: 443 }, /^unexpected field\(s\) for .*: port$/],
      ['no password', { type: redfish.type, host: ok.host, user: USER }, /^password must be a string$/],
    ];
    for (const [what, body, msg] of bad) {
      it(`refuses ${what}`, () => {
        const r = registry.validate(body);
        expect(r).to.be.a('string').that.matches(msg);
        expect(r as string).to.not.include(PASSWORD);
      });
    }

    it('names the BMC by its origin: one device queue line per BMC, however its URL is spelt', () => {
      expect(redfish.device({ ...ok, host: 'https://LOCALHOST:443/' })).to.equal('https://localhost');
      expect(redfish.device({ ...ok, host: 'https://127.0.0.1:8443' })).to.equal('https://127.0.0.1:8443');
      expect(redfish.device({ ...ok, host: 'http://[::1]:80' })).to.equal('http://[::1]');
    });
  });
});
