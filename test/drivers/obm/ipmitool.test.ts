/**
 * IpmitoolDriver against real ipmitool and a real BMC simulator (ipmi_sim, cipher suite 3).
 * What the BMC was told is read back from the simulated chassis' state files and hook log.
 * Missing ipmitool/ipmi_sim fails the suite (before hook); nothing is skipped. The per-BMC
 * queue, pacing and deadline of power calls are the service's: test/hardware/power.test.ts.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { ipmi, IpmitoolDriver, parseBmcHost } from '../../../drivers/obm/ipmitool';
import type { IpmiFields, IpmitoolOptions } from '../../../drivers/obm/ipmitool';
import { ObmError } from '../../../drivers/obm/types';
import { DriverRegistry } from '../../../drivers/registry';
import { DEFAULTS } from '../../../src/config';
import { freeUdpPort, IpmiSim, requireIpmiTools, startIpmiSim, stopAllIpmiSims } from '../../helpers/ipmisim';
import { spyExec } from '../../helpers/exec-spy';

const USER = 'admin';
const PASSWORD = 'Pw$9!xQ7zK'; // distinctive, so finding it anywhere is meaningful

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, pred: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

/** Awaits a promise that must reject with ObmError; returns the error and how long it took. */
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

/** A call that is never stopped. */
const LIVE = new AbortController().signal;

function driver(opts: IpmitoolOptions = {}): IpmitoolDriver {
  return new IpmitoolDriver({ cipherSuite: '3', ...opts });
}

function info(sim: { host: string }, password = PASSWORD): IpmiFields {
  return { host: sim.host, user: USER, password };
}

/** 127.0.0.1:PORT where nothing listens (the kernel answers ICMP port unreachable, ipmitool retries). */
async function deadBmc(): Promise<IpmiFields> {
  return { host: `127.0.0.1:${await freeUdpPort()}`, user: USER, password: PASSWORD };
}

function cmdline(pid: number): string {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' '); } catch { return ''; }
}

describe('IpmitoolDriver (real ipmitool against ipmi_sim)', function () {
  this.timeout(20_000);
  let sim: IpmiSim;

  before(() => requireIpmiTools());
  beforeEach(async () => { sim = await startIpmiSim({ user: USER, password: PASSWORD }); });
  afterEach(async () => { await sim?.stop(); });
  after(() => stopAllIpmiSims());

  describe('powerCycle', () => {
    it('powers on a node that is off, after setting the next boot device to PXE', async () => {
      expect(sim.powerState()).to.equal('off');
      await driver().powerCycle(info(sim), {}, LIVE);
      expect(sim.powerState()).to.equal('on');
      expect(sim.bootDevice()).to.equal('pxe');
      // bootdev first, then a status read decides: off -> "power on" (set power 1), no cycle
      expect(sim.log()).to.deep.equal(['get boot', 'set boot pxe', 'get power', 'set power 1']);
    });

    it('power-cycles a node that is on (off, then on again)', async () => {
      sim.setPower(true);
      await driver().powerCycle(info(sim), {}, LIVE);
      expect(sim.bootDevice()).to.equal('pxe');
      expect(sim.log().slice(0, 4)).to.deep.equal(['get boot', 'set boot pxe', 'get power', 'set power 0']);
      // ipmi_sim completes a cycle about 1 s later
      await waitFor('power back on', () => sim.powerState() === 'on');
      expect(sim.log().slice(4)).to.include('set power 1');
      expect(sim.log()).not.to.include('set reset 1');
    });

    it('with force, resets a running node instead of cycling it', async () => {
      sim.setPower(true);
      await driver().powerCycle(info(sim), { force: true }, LIVE);
      expect(sim.log()).to.deep.equal(['get boot', 'set boot pxe', 'get power', 'set reset 1']);
      expect(sim.powerState()).to.equal('on');
      expect(sim.bootDevice()).to.equal('pxe');
    });

    for (const force of [false, true]) {
      it(`a node that went off after its status read: the refused ${force ? 'reset' : 'cycle'} becomes a power on, as in HIL`, async () => {
        sim.setPower(true);
        const op = force ? 'Reset' : 'Cycle';
        // Runs: bootdev, status (on), then the cycle, which finds the node off (its OS shut it down).
        const spy = spyExec((n, _file, _args, options, cb) => {
          if (n !== 2) return undefined;
          sim.setPower(false);
          return execFile('/bin/sh', ['-c', `echo "Set Chassis Power Control to ${op} failed: Command not supported in present state" >&2; exit 1`], options, cb);
        });
        await driver({ execFile: spy.fn }).powerCycle(info(sim), { force }, LIVE);
        expect(spy.calls.map((c) => c.args.slice(-3).join(' '))).to.deep.equal([
          'chassis bootdev pxe', 'chassis power status', `chassis power ${force ? 'reset' : 'cycle'}`, 'chassis power status', 'chassis power on',
        ]);
        expect(sim.powerState()).to.equal('on');
        expect(sim.bootDevice()).to.equal('pxe');
      });
    }

    it('a cycle refused "in present state" while the node is still on stays a failure', async () => {
      sim.setPower(true);
      const spy = spyExec((n, _file, _args, options, cb) => (n === 2
        ? execFile('/bin/sh', ['-c', 'echo "Set Chassis Power Control to Cycle failed: Command not supported in present state" >&2; exit 1'], options, cb)
        : undefined));
      const { err } = await obmFailure(() => driver({ execFile: spy.fn }).powerCycle(info(sim), {}, LIVE));
      expect(err.message).to.include('present state');
      expect(spy.calls).to.have.length(4); // ... the refused cycle, a status read that says on; no power on
    });

    it('with force, still powers on a node that is off', async () => {
      await driver().powerCycle(info(sim), { force: true }, LIVE);
      expect(sim.log()).to.deep.equal(['get boot', 'set boot pxe', 'get power', 'set power 1']);
      expect(sim.powerState()).to.equal('on');
    });
  });

  describe('powerOff and powerStatus', () => {
    it('powers off a running node', async () => {
      sim.setPower(true);
      await driver().powerOff(info(sim), LIVE);
      expect(sim.powerState()).to.equal('off');
      expect(sim.log()).to.deep.equal(['set power 0']);
    });

    it('powering off a node that is already off succeeds and leaves it off', async () => {
      await driver().powerOff(info(sim), LIVE);
      expect(sim.powerState()).to.equal('off');
      expect(sim.log()).to.deep.equal(['set power 0']);
    });

    it('reads the power state set from outside, both ways', async () => {
      const d = driver();
      sim.setPower(true);
      expect(await d.powerStatus(info(sim), LIVE)).to.equal('on');
      sim.setPower(false);
      expect(await d.powerStatus(info(sim), LIVE)).to.equal('off');
      sim.setPower(true);
      expect(await d.powerStatus(info(sim), LIVE)).to.equal('on');
      expect(sim.log()).to.deep.equal(['get power', 'get power', 'get power']);
    });

    it('talks to a BMC given as [IPv6]:port', async () => {
      const sim6 = await startIpmiSim({ user: USER, password: PASSWORD, address: '::1', power: 'on' });
      try {
        expect(sim6.host).to.match(/^\[::1\]:\d+$/);
        expect(await driver().powerStatus(info(sim6), LIVE)).to.equal('on');
        await driver().powerOff(info(sim6), LIVE);
        expect(sim6.powerState()).to.equal('off');
      } finally {
        await sim6.stop();
      }
    });
  });

  describe('powerOn and setBootDevice', () => {
    it('powers on a node that is off without touching its boot device; again leaves it on', async () => {
      await driver().powerOn(info(sim), LIVE);
      expect(sim.powerState()).to.equal('on');
      await driver().powerOn(info(sim), LIVE);
      expect(sim.powerState()).to.equal('on');
      expect(sim.log()).to.deep.equal(['set power 1', 'set power 1']);
      expect(sim.bootDevice()).to.equal('default');
    });

    it('power on of a node that is on succeeds although the BMC refuses it "in present state"', async () => {
      const spy = spyExec((n, _file, _args, options, cb) => (n === 0
        ? execFile('/bin/sh', ['-c', 'echo "Set Chassis Power Control to Up/On failed: Command not supported in present state" >&2; exit 1'], options, cb)
        : undefined));
      sim.setPower(true);
      await driver({ execFile: spy.fn }).powerOn(info(sim), LIVE);
      expect(spy.calls.map((c) => c.args.slice(-3).join(' '))).to.deep.equal(['chassis power on', 'chassis power status']);
    });

    it('sets each boot device persistently, as HIL did (disk is the BMC\'s "default")', async () => {
      const spy = spyExec();
      for (const [dev, seen] of [['pxe', 'pxe'], ['disk', 'default'], ['none', 'none']] as const) {
        await driver({ execFile: spy.fn }).setBootDevice(info(sim), dev, LIVE);
        expect(sim.bootDevice()).to.equal(seen);
      }
      expect(spy.calls.map((c) => c.args.slice(-4).join(' '))).to.deep.equal([
        'chassis bootdev pxe options=persistent', 'chassis bootdev disk options=persistent', 'chassis bootdev none options=persistent',
      ]);
      expect(sim.log()).to.deep.equal(['get boot', 'set boot pxe', 'get boot', 'set boot default', 'get boot', 'set boot none']);
      expect(sim.powerState()).to.equal('off');
    });
  });

  describe('failures', () => {
    // ipmitool 1.8.19 prints "Set Chassis Boot Parameter 5 failed" and still exits 0 when the BMC
    // refuses a boot setting: only its missing "Set Boot Device to" tells.
    it('a BMC that refuses the boot device: setBootDevice fails with the BMC\'s reason', async () => {
      sim.refuseBoot(true);
      const { err } = await obmFailure(() => driver().setBootDevice(info(sim), 'pxe', LIVE));
      expect(err.message).to.match(/chassis bootdev pxe options=persistent failed: .*Boot Parameter 5 failed/);
      expect(sim.bootDevice()).to.equal('default');
    });

    it('a BMC that refuses PXE: powerCycle fails without powering the node on from its disk', async () => {
      sim.refuseBoot(true);
      const { err } = await obmFailure(() => driver().powerCycle(info(sim), {}, LIVE));
      expect(err.message).to.match(/chassis bootdev pxe failed/);
      expect(sim.powerState()).to.equal('off');
      expect(sim.log()).not.to.include('set power 1');
    });

    it('wrong password: ObmError with ipmitool\'s reason, fast, no retry, password not in the message', async () => {
      const spy = spyExec();
      const wrong = 'Wr0ngPass#77';
      const { err, ms } = await obmFailure(() => driver({ execFile: spy.fn }).powerCycle(info(sim, wrong), {}, LIVE));
      expect(err.message).to.include('Unable to establish IPMI v2 / RMCP+ session');
      expect(err.message).to.include(sim.host);
      expect(err.message).not.to.include(wrong);
      expect(err.message).not.to.include(PASSWORD);
      expect(ms).to.be.below(3000);
      expect(spy.calls).to.have.length(1); // a session failure is not a "busy" answer: not repeated
      expect(sim.log()).to.deep.equal([]); // nothing reached the chassis
      expect(sim.bootDevice()).to.equal('default');
    });

    it('kills ipmitool (SIGKILL) and rejects at once when the call\'s signal aborts', async () => {
      const spy = spyExec();
      const bmc = await deadBmc();
      // -R 1 -N 2 would let ipmitool itself try for ~4 s; the abort must end it now
      const { err, ms } = await obmFailure(() => driver({ execFile: spy.fn }).powerStatus(bmc, AbortSignal.timeout(500)));
      expect(err.message).to.equal(`BMC ${bmc.host}: ipmitool chassis power status was killed: the call was stopped`);
      expect(ms).to.be.within(450, 1200);
      expect(spy.calls).to.have.length(1);
      const child = spy.calls[0]!.child;
      await waitFor('ipmitool to exit', () => child.exitCode !== null || child.signalCode !== null, 1000);
      expect(child.signalCode).to.equal('SIGKILL');
    });

    it('runs nothing once the call\'s signal has aborted, not even the busy repeat', async () => {
      const controller = new AbortController();
      const spy = spyExec((_n, _file, _args, options, cb) => {
        controller.abort(); // the deadline falls while the BMC answers "busy"
        return execFile('/bin/sh', ['-c', 'echo "Get Chassis Power Status failed: Node busy" >&2; exit 1'], options, cb);
      });
      await obmFailure(() => driver({ execFile: spy.fn }).powerStatus(info(sim), controller.signal));
      expect(spy.calls).to.have.length(1);
      expect(sim.log()).to.deep.equal([]);
    });

    it('unreachable BMC: ipmitool gives up per -R/-N and its error is reported', async () => {
      const bmc = await deadBmc();
      // -R 1 -N 1 is about 2 s; ipmitool's default (-R 4 -N 1) would take about 20 s
      const { err, ms } = await obmFailure(() => driver({ retries: 1, retryTimeoutS: 1 }).powerOff(bmc, LIVE));
      expect(err.message).to.match(/^BMC 127\.0\.0\.1:\d+: ipmitool chassis power off failed: .*Unable to establish IPMI v2 \/ RMCP\+ session/);
      expect(ms).to.be.within(1500, 3500);
    });

    it('a BMC that says "Node busy" gets the command repeated once', async () => {
      const spy = spyExec((n, _file, _args, options, cb) => (n === 0
        ? execFile('/bin/sh', ['-c', 'echo "Set Chassis Power Control to Down/Off failed: Node busy" >&2; exit 1'], options, cb)
        : undefined));
      sim.setPower(true);
      await driver({ execFile: spy.fn }).powerOff(info(sim), LIVE);
      expect(spy.calls).to.have.length(2);
      expect(sim.powerState()).to.equal('off');
    });

    it('power off of a node that is off succeeds although the BMC refuses it "in present state"', async () => {
      // The BMC refuses the first command (the off); later ones reach the simulator.
      const refuseOff = () => spyExec((n, _file, _args, options, cb) => (n === 0
        ? execFile('/bin/sh', ['-c', 'echo "Set Chassis Power Control to Down/Off failed: Command not supported in present state" >&2; exit 1'], options, cb)
        : undefined));
      const spy = refuseOff();
      sim.setPower(false);
      await driver({ execFile: spy.fn }).powerOff(info(sim), LIVE);
      expect(spy.calls).to.have.length(2); // the refused off, then a status read that says off
      expect(sim.powerState()).to.equal('off');
      // Refused while the node is on: the refusal stands.
      sim.setPower(true);
      const { err } = await obmFailure(() => driver({ execFile: refuseOff().fn }).powerOff(info(sim), LIVE));
      expect(err.message).to.include('present state');
    });

    it('a BMC that stays busy: ObmError after one repeat', async () => {
      const spy = spyExec((_n, _file, _args, options, cb) =>
        execFile('/bin/sh', ['-c', 'echo "Get Chassis Power Status failed: Node busy" >&2; exit 1'], options, cb));
      const { err } = await obmFailure(() => driver({ execFile: spy.fn }).powerStatus(info(sim), LIVE));
      expect(spy.calls).to.have.length(2);
      expect(err.message).to.include('Node busy').and.include('(BMC busy)');
    });

    it('ipmitool missing: ObmError naming the path', async () => {
      const { err } = await obmFailure(() => driver({ ipmitoolPath: '/nonexistent/ipmitool' }).powerStatus(info(sim), LIVE));
      expect(err.message).to.include('ipmitool not found ("/nonexistent/ipmitool")');
    });

    it('output without a power state: ObmError, not a guess', async () => {
      const spy = spyExec((_n, _file, _args, options, cb) => execFile('/bin/echo', ['Chassis Power is unknown'], options, cb));
      const { err } = await obmFailure(() => driver({ execFile: spy.fn }).powerStatus(info(sim), LIVE));
      expect(err.message).to.include('unexpected ipmitool output');
    });
  });

  describe('validation', () => {
    const bad: Array<[string, unknown]> = [
      ['empty host', { host: '', user: USER, password: PASSWORD }],
      ['host not a string', { host: 42, user: USER, password: PASSWORD }],
      ['port 0', { host: 'bmc:0', user: USER, password: PASSWORD }],
      ['port 65536', { host: 'bmc:65536', user: USER, password: PASSWORD }],
      ['port not a number', { host: 'bmc:ipmi', user: USER, password: PASSWORD }],
      ['empty port', { host: 'bmc:', user: USER, password: PASSWORD }],
      ['host that looks like an option', { host: '-oProxyCommand=x', user: USER, password: PASSWORD }],
      ['space in host', { host: 'bmc 1', user: USER, password: PASSWORD }],
      ['unclosed bracket', { host: '[::1:623', user: USER, password: PASSWORD }],
      ['brackets around a non-IPv6', { host: '[bmc]:623', user: USER, password: PASSWORD }],
      // The host is quoted in most refusals: one that holds the password must not be.
      ['the password in the host', { host: `admin:${PASSWORD}@bmc`, user: USER, password: PASSWORD }],
      ['empty user', { host: 'bmc', user: '', password: PASSWORD }],
      ['user over 16 bytes', { host: 'bmc', user: 'u'.repeat(17), password: PASSWORD }],
      ['newline in user', { host: 'bmc', user: 'ad\nmin', password: PASSWORD }],
      ['empty password', { host: 'bmc', user: USER, password: '' }],
      ['password over 20 bytes', { host: 'bmc', user: USER, password: `${PASSWORD}${'x'.repeat(11)}` }],
      ['password not a string', { host: 'bmc', user: USER, password: 12345 }],
      ['no info at all', null],
    ];
    for (const [name, obm] of bad) {
      it(`rejects ${name} without running ipmitool`, async () => {
        const spy = spyExec();
        const d = driver({ execFile: spy.fn });
        const fields = obm as IpmiFields;
        for (const call of [() => d.powerStatus(fields, LIVE), () => d.powerOff(fields, LIVE), () => d.powerCycle(fields, {}, LIVE)]) {
          const { err } = await obmFailure(call);
          expect(err.message).to.match(/^invalid OBM info: /);
          expect(err.message).not.to.include(PASSWORD);
        }
        expect(spy.calls).to.have.length(0);
      });
    }

    it('parses host, host:port, [v6]:port and bare IPv6', () => {
      expect(parseBmcHost('127.0.0.5')).to.deep.equal({ address: '127.0.0.5', port: 623, label: '127.0.0.5:623' });
      expect(parseBmcHost('bmc-7.lab.example:6230')).to.deep.equal({ address: 'bmc-7.lab.example', port: 6230, label: 'bmc-7.lab.example:6230' });
      expect(parseBmcHost('[::1]:700')).to.deep.equal({ address: '::1', port: 700, label: '[::1]:700' });
      expect(parseBmcHost('[::ffff:127.0.0.5]')).to.deep.equal({ address: '::ffff:127.0.0.5', port: 623, label: '[::ffff:127.0.0.5]:623' });
      expect(parseBmcHost('::ffff:127.0.0.5')).to.deep.equal({ address: '::ffff:127.0.0.5', port: 623, label: '[::ffff:127.0.0.5]:623' });
    });

    it('rejects bad constructor options', () => {
      expect(() => new IpmitoolDriver({ cipherSuite: '3; reboot' })).to.throw(/cipherSuite/);
      expect(() => new IpmitoolDriver({ minIntervalMs: -1 })).to.throw(/minIntervalMs/);
      expect(() => new IpmitoolDriver({ retries: 0 })).to.throw(/retries/);
    });
  });

  describe('password handling', () => {
    it('never puts the password on a command line: -E with IPMI_PASSWORD in a minimal environment', async () => {
      process.env.HILT_TEST_CANARY = 'service-secret';
      try {
        const spy = spyExec();
        const bmc = await deadBmc(); // keeps ipmitool running long enough to inspect it in /proc
        const pending = obmFailure(() => driver({ execFile: spy.fn }).powerStatus(bmc, AbortSignal.timeout(1500)));
        await waitFor('ipmitool to start', () => spy.calls.length === 1);
        const pid = spy.calls[0]!.child.pid!;
        await waitFor('ipmitool to exec', () => cmdline(pid).startsWith('ipmitool '), 1000);
        expect(cmdline(pid)).to.include(' -E ').and.include(bmc.host.split(':')[1]!);
        const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
        expect(environ).to.include(`IPMI_PASSWORD=${PASSWORD}`);
        expect(environ.some((e) => e.startsWith('HILT_TEST_CANARY='))).to.equal(false);
        // no process on the machine shows the password in its argv
        for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
          expect(cmdline(Number(p)), `/proc/${p}/cmdline`).not.to.include(PASSWORD);
        }
        const { err } = await pending;
        expect(err.message).not.to.include(PASSWORD);
      } finally {
        delete process.env.HILT_TEST_CANARY;
      }
    });

    it('keeps the password out of the argv of every command of a real power cycle', async () => {
      const spy = spyExec();
      sim.setPower(true);
      await driver({ execFile: spy.fn }).powerCycle(info(sim), {}, LIVE);
      expect(spy.calls.map((c) => c.args.slice(c.args.indexOf('-E') + 1).join(' ')))
        .to.deep.equal(['chassis bootdev pxe', 'chassis power status', 'chassis power cycle']);
      for (const c of spy.calls) {
        expect(c.args.join(' ')).not.to.include(PASSWORD);
        expect(c.args).to.include.members(['-I', 'lanplus', '-C', '3', '-R', '1', '-N', '2', '-U', USER, '-E']);
        expect(c.env.IPMI_PASSWORD).to.equal(PASSWORD);
      }
    });

    it('redacts the password if ipmitool ever echoes it in an error', async () => {
      const spy = spyExec((_n, _file, _args, options, cb) =>
        execFile('/bin/sh', ['-c', 'echo "cannot use password $IPMI_PASSWORD" >&2; exit 1'], options, cb));
      const { err } = await obmFailure(() => driver({ execFile: spy.fn }).powerOff(info(sim), LIVE));
      expect(err.message).to.include('cannot use password ***');
      expect(err.message).not.to.include(PASSWORD);
    });
  });

  describe('pacing', () => {
    it('spaces out the commands of one call by minIntervalMs', async () => {
      await driver({ minIntervalMs: 300 }).powerCycle(info(sim), {}, LIVE);
      const ev = sim.events();
      expect(ev.map((e) => e.cmd)).to.deep.equal(['get boot', 'set boot pxe', 'get power', 'set power 1']);
      // three ipmitool runs: bootdev (get+set boot), status, on; >= 300 ms between runs
      expect(ev[2]!.t - ev[1]!.t).to.be.at.least(0.29);
      expect(ev[3]!.t - ev[2]!.t).to.be.at.least(0.29);
    });
  });

  describe('its registry entry', () => {
    const registry = new DriverRegistry('OBM', [ipmi]);

    it('takes host, user and password, refusing what ipmitool could not use with the driver\'s reason', () => {
      expect(registry.validate({ type: ipmi.type, host: 'bmc:6230', user: 'u', password: 'p' }))
        .to.deep.equal({ type: ipmi.type, fields: { host: 'bmc:6230', user: 'u', password: 'p' } });
      expect(registry.validate({ type: ipmi.type, host: 'bmc', user: 'u' })).to.match(/password/);
      expect(registry.validate({ type: ipmi.type, host: 'bmc', user: 'u', password: 'p', port: '623' })).to.match(/port/);
      expect(registry.validate({ type: ipmi.type, host: '-oProxyCommand=x', user: 'u', password: 'p' }))
        .to.equal('invalid OBM info: host "-oProxyCommand=x" is not a host name or address');
      expect(registry.validate({ type: ipmi.type, host: 'bmc', user: 'u', password: 'x'.repeat(21) }))
        .to.equal('invalid OBM info: password must be at most 20 bytes without NUL characters');
    });

    it('names a node\'s BMC by host and port, with the default port, and asks for calls to be paced', () => {
      expect(ipmi.device({ host: '127.0.0.5', user: 'u', password: 'p' })).to.equal('127.0.0.5:623');
      expect(ipmi.device({ host: '[::1]:700', user: 'u', password: 'p' })).to.equal('[::1]:700');
      expect(ipmi.pacing).to.deep.equal({ minIntervalMs: 100, minRunMs: 50 });
    });

    it('builds the driver with the configured cipher suite', async () => {
      // Without -C 3, ipmitool first asks ipmi_sim for its cipher suites and waits 10 s for no answer.
      const t = Date.now();
      sim.setPower(true);
      expect(await ipmi.create({ settings: { ...DEFAULTS, ipmiCipherSuite: '3' } }).powerStatus(info(sim), LIVE)).to.equal('on');
      expect(Date.now() - t).to.be.below(3000);
      expect(() => ipmi.create({ settings: { ...DEFAULTS, ipmiCipherSuite: '3; reboot' } })).to.throw(/cipherSuite/);
    });
  });
});
