/**
 * PowerControl: every power call goes to the driver of the node's OBM type through a per-BMC
 * device queue (one call at a time per BMC, paced as the driver's entry asks, each answered
 * within the OBM timeout of being made), and driver failures become 502 OBMError. First with
 * fake drivers, then with the real ipmitool driver against ipmi_sim BMCs.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import * as net from 'node:net';
import { PowerControl, withoutBmcIdentity } from '../../hardware/power';
import { DriverFields, DriverRegistry, DriverSet } from '../../drivers/registry';
import { BootDevice, ObmDriver, ObmDriverEntry, ObmError, PowerState } from '../../drivers/obm/types';
import { ipmi, IpmitoolDriver } from '../../drivers/obm/ipmitool';
import { mock } from '../../drivers/obm/mock';
import { DEFAULTS } from '../../src/config';
import { HiltError } from '../../src/errors';
import { freeUdpPort, IpmiSim, requireIpmiTools, startIpmiSim, stopAllIpmiSims } from '../helpers/ipmisim';
import { spyExec } from '../helpers/exec-spy';
import { redfish } from '../../drivers/obm/redfish';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** PowerControl over the given OBM entries. */
function powerControl(timeoutMs: number, ...entries: ObmDriverEntry[]): PowerControl {
  return new PowerControl(new DriverSet(new DriverRegistry<ObmDriver, ObmDriverEntry>('OBM', entries), { settings: DEFAULTS }), timeoutMs);
}

async function failure(p: Promise<unknown>): Promise<HiltError> {
  const err = await p.then(() => { throw new Error('expected a failure'); }, (e: unknown) => e);
  expect(err).to.be.instanceOf(HiltError);
  return err as HiltError;
}

describe('PowerControl', () => {
  describe('with fake drivers', () => {
    const FAKE = 'http://schema.example/obm/fake';
    const node = (bmc: string, extra: DriverFields = {}) => ({ type: FAKE, fields: { bmc, ...extra } });

    /** Records calls, each taking 100 ms; a call to a BMC named `hang…` never answers by itself, one with `fail` rejects. */
    class FakeBmcs implements ObmDriver {
      readonly log: string[] = [];
      readonly signals: AbortSignal[] = [];
      private async call(what: string, fields: DriverFields, signal: AbortSignal): Promise<void> {
        this.signals.push(signal);
        this.log.push(`start ${what} ${fields.bmc}`);
        if (String(fields.bmc).startsWith('hang')) {
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
          this.log.push(`aborted ${what} ${fields.bmc}`);
          throw new ObmError('stopped');
        }
        await sleep(100);
        if (fields.fail) throw new ObmError(`BMC ${fields.bmc} refused`);
        this.log.push(`end ${what} ${fields.bmc}`);
      }
      powerCycle = (f: DriverFields, o: { force?: boolean }, s: AbortSignal) => this.call(o.force ? 'cycle!' : 'cycle', f, s);
      powerOff = (f: DriverFields, s: AbortSignal) => this.call('off', f, s);
      powerOn = (f: DriverFields, s: AbortSignal) => this.call('on', f, s);
      powerStatus = async (f: DriverFields, s: AbortSignal): Promise<PowerState> => { await this.call('status', f, s); return 'on'; };
      setBootDevice = (f: DriverFields, d: BootDevice, s: AbortSignal) => this.call(`boot-${d}`, f, s);
    }

    function fake(pacing?: ObmDriverEntry['pacing']) {
      const driver = new FakeBmcs();
      const entry: ObmDriverEntry = {
        type: FAKE, extension: 'test.obm.fake', fields: { type: 'object' }, create: () => driver, device: (f) => `bmc-${f.bmc}`, pacing,
      };
      return { driver, entry };
    }

    it('sends each call to the driver of the node\'s OBM type, with the node\'s fields and a live signal', async () => {
      const { driver, entry } = fake();
      const pc = powerControl(1000, entry, mock);
      await pc.cycle(node('a'), true);
      await pc.off(node('a'));
      expect(await pc.status(node('a'))).to.equal('on');
      await pc.on(node('a'));
      await pc.bootDevice(node('a'), 'none');
      await pc.cycle({ type: mock.type, fields: { host: 'm', user: 'u', password: 'p' } });
      expect(driver.log.filter((l) => l.startsWith('start'))).to.deep.equal(['start cycle! a', 'start off a', 'start status a', 'start on a', 'start boot-none a']);
      expect(driver.signals.every((s) => !s.aborted)).to.equal(true);
    });

    it('runs the calls of one BMC one at a time, in order, and different BMCs in parallel', async () => {
      const { driver, entry } = fake();
      const pc = powerControl(1000, entry);
      await Promise.all([pc.cycle(node('a')), pc.off(node('a')), pc.status(node('a')), pc.cycle(node('b')), pc.off(node('b'))]);
      const a = driver.log.filter((l) => l.endsWith(' a'));
      expect(a).to.deep.equal(['start cycle a', 'end cycle a', 'start off a', 'end off a', 'start status a', 'end status a']);
      // b's calls run while a's are under way, not after them (the log's order, not the clock).
      const at = (l: string) => driver.log.indexOf(l);
      expect(at('start cycle b')).to.be.below(at('end cycle a'));
      expect(at('start off b')).to.be.below(at('end status a'));
    });

    it('spaces the calls of one BMC as the driver\'s entry asks', async () => {
      const { driver, entry } = fake({ minIntervalMs: 150, minRunMs: 0 });
      const pc = powerControl(2000, entry);
      const t = Date.now();
      await Promise.all([pc.off(node('a')), pc.off(node('a'))]);
      // 100 ms, at least 150 ms of quiet, 100 ms
      expect(Date.now() - t).to.be.at.least(345);
      expect(driver.log).to.have.length(4);
    });

    it('turns a driver failure into a 502 OBMError and keeps serving the node afterwards', async () => {
      const { entry } = fake();
      const pc = powerControl(1000, entry);
      const err = await failure(pc.off(node('a', { fail: true })));
      expect(err.type).to.equal('OBMError');
      expect(err.type).to.equal('OBMError');
      expect(err.message).to.equal('BMC a refused');
      expect(await pc.status(node('a'))).to.equal('on');
    });

    it('orders the calls it saw by when they ended (PowerSeen.call against ended), not by the wall clock; a boot device call moves neither', async () => {
      const { entry } = fake();
      const pc = powerControl(1000, entry);
      const who = (name: string) => ({ isAdmin: true, node: { name, incarnation: 'i1' } });
      expect(pc.ended).to.equal(0);
      await pc.on(node('a'), who('n1'));
      const mark = pc.ended;
      expect(pc.seen('n1', 'i1')?.call).to.equal(mark);
      await pc.off(node('b'), who('n2'));
      expect(pc.seen('n1', 'i1')?.call, 'another node\'s call').to.equal(mark);
      await pc.bootDevice(node('a'), 'pxe', who('n1'));
      expect(pc.seen('n1', 'i1')?.call, 'a boot device call').to.equal(mark);
      await failure(pc.off(node('a', { fail: true }), who('n1')));
      expect(pc.seen('n1', 'i1')?.call, 'a failed call').to.be.above(mark);
      const failed = pc.seen('n1', 'i1')!.call;
      expect(await pc.status(node('a'), who('n1'))).to.equal('on');
      expect(pc.seen('n1', 'i1')?.call).to.be.above(failed);
      expect(pc.seen('n1', 'i1')?.call).to.equal(pc.ended);
    });

    it('answers a hung call at the timeout, aborting the driver\'s call, and one queued behind it without running it', async () => {
      const { driver, entry } = fake();
      const pc = powerControl(500, entry);
      const t = Date.now();
      const [first, second] = await Promise.all([failure(pc.off(node('hang'))), failure(pc.status(node('hang')))]);
      // At the timeout, not after the hung call's settle time (4 × 500 ms) nor two timeouts.
      expect(Date.now() - t).to.be.below(500 + 450);
      expect(first.type).to.equal('OBMError');
      expect(first.message).to.equal('BMC bmc-hang did not answer within 500 ms (power off)');
      expect(second.message).to.equal('BMC bmc-hang did not answer within 500 ms (still busy with an earlier call)');
      expect(driver.log).to.deep.equal(['start off hang', 'aborted off hang']);
      expect(driver.signals[0]!.aborted).to.equal(true);
    });

    it('tells a non-admin a BMC failure without the BMC\'s address or user; an admin reads it whole', async () => {
      const { entry } = fake();
      const pc = powerControl(150, entry);
      const fields = { bmc: 'hang', host: 'https://127.0.0.7:8443', user: 'opsuser' };
      const member = await failure(pc.on({ type: FAKE, fields }, { isAdmin: false }));
      expect(member.message).to.equal("the node's BMC did not answer within 150 ms (power on)");
      expect((member as HiltError & { detail?: string }).detail).to.equal('BMC bmc-hang did not answer within 150 ms (power on)');
      const admin = await failure(pc.on({ type: FAKE, fields }, { isAdmin: true }));
      expect(admin.message).to.equal('BMC bmc-hang did not answer within 150 ms (power on)');
    });

    it('scrubs every spelling of the BMC\'s address and its user from a member\'s message', () => {
      const fields = { host: 'https://LocalHost:8443/', user: 'opsuser', password: 'x' };
      const msg = 'BMC https://localhost:8443: login as opsuser refused (HTTP 401): connect to localhost:8443 (localhost) failed';
      expect(withoutBmcIdentity(msg, fields, 'https://localhost:8443'))
        .to.equal("the node's BMC: login as [user] refused (HTTP 401): connect to [BMC] ([BMC]) failed");
      const ipmi = 'BMC 127.0.0.9:623: ipmitool chassis power off failed: Error: Unable to establish IPMI v2 / RMCP+ session';
      expect(withoutBmcIdentity(ipmi, { host: '127.0.0.9', user: 'root' }, '127.0.0.9:623'))
        .to.equal("the node's BMC: ipmitool chassis power off failed: Error: Unable to establish IPMI v2 / RMCP+ session");
    });

    it('scrubs any IPv4 or IPv6 address and its port from a member\'s message (a host name resolves to one)', () => {
      const fields = { host: 'https://bmc7.example:8443', user: 'opsuser', password: 'x' };
      const device = 'https://bmc7.example:8443';
      for (const [said, reads] of [
        ['connect ECONNREFUSED 127.0.0.40:8443', 'connect ECONNREFUSED [address]'],
        ['connect ECONNREFUSED ::1:8443', 'connect ECONNREFUSED [address]'],
        ['connect ECONNREFUSED fe80::1%eth0', 'connect ECONNREFUSED [address]'],
        ["Hostname/IP does not match certificate's altnames: IP: 192.0.2.7 is not in the cert's list", "Hostname/IP does not match certificate's altnames: IP: [address] is not in the cert's list"],
        ['at [2001:db8::5]:443 and 2001:db8:0:0:0:0:0:1:623', 'at [address] and [address]'],
        ['Get Session Challenge from 198.51.100.3 failed', 'Get Session Challenge from [address] failed'],
        ['bmc7.example:8443 said no', '[BMC] said no'],
        ['firmware 1.2.3 at 12:30:45 answered HTTP 404: dead:beef', 'firmware 1.2.3 at 12:30:45 answered HTTP 404: dead:beef'],
      ]) {
        expect(withoutBmcIdentity(`BMC ${device}: power on failed: ${said}`, fields, device), said)
          .to.equal(`the node's BMC: power on failed: ${reads}`);
      }
    });

    it('tells a non-admin the driver\'s own wording when the driver gives one; the power seen keeps it too', async () => {
      const entry: ObmDriverEntry = {
        type: FAKE, extension: 'test.obm.fake', fields: { type: 'object' }, device: (f) => `bmc-${f.bmc}`,
        create: () => new (class extends FakeBmcs {
          override powerOn = async () => {
            throw new ObmError('BMC bmc-x: power on failed: connect ECONNREFUSED 127.0.0.7:443',
              { forMembers: 'BMC bmc-x: power on failed: cannot reach the BMC (ECONNREFUSED)' });
          };
        })(),
      };
      const pc = powerControl(1000, entry);
      const who = { isAdmin: false, node: { name: 'n1', incarnation: 'i1' } };
      const member = await failure(pc.on({ type: FAKE, fields: { bmc: 'x' } }, who));
      expect(member.message).to.equal("the node's BMC: power on failed: cannot reach the BMC (ECONNREFUSED)");
      expect((member as HiltError & { detail?: string }).detail).to.equal('BMC bmc-x: power on failed: connect ECONNREFUSED 127.0.0.7:443');
      expect(pc.seen('n1', 'i1')?.error).to.equal(member.message);
      const admin = await failure(pc.on({ type: FAKE, fields: { bmc: 'x' } }, { isAdmin: true }));
      expect(admin.message).to.equal('BMC bmc-x: power on failed: connect ECONNREFUSED 127.0.0.7:443');
    });

    it('answers 502 for an OBM type no driver claims', async () => {
      const err = await failure(powerControl(1000, mock).off(node('a')));
      expect(err.type).to.equal('OBMError');
      expect(err.message).to.match(/no driver is configured for OBM type/);
    });
  });

  describe('with ipmitool against ipmi_sim', function () {
    this.timeout(30_000);
    const USER = 'admin';
    const PASSWORD = 'Pw$9!xQ7zK'; // distinctive, so finding it anywhere is meaningful
    let sim: IpmiSim;

    before(() => requireIpmiTools());
    beforeEach(async () => { sim = await startIpmiSim({ user: USER, password: PASSWORD }); });
    afterEach(async () => { await sim?.stop(); });
    after(() => stopAllIpmiSims());

    const obm = (s: { host: string }) => ({ type: ipmi.type, fields: { host: s.host, user: USER, password: PASSWORD } });
    /** 127.0.0.1:PORT where nothing listens: ipmitool retries there for about 4 s (-R 1 -N 2). */
    const deadBmc = async () => ({ host: `127.0.0.1:${await freeUdpPort()}` });
    /** The ipmi entry as the service has it, with this driver and pacing. */
    const withDriver = (driver: IpmitoolDriver, pacing = ipmi.pacing): ObmDriverEntry => ({ ...ipmi, pacing, create: () => driver });

    it('never interleaves the commands of calls to one BMC: whole power cycles, one after another', async () => {
      const pc = powerControl(10_000, withDriver(new IpmitoolDriver({ cipherSuite: '3', minIntervalMs: 0 }), { minIntervalMs: 0, minRunMs: 0 }));
      const [, , state] = await Promise.all([pc.cycle(obm(sim)), pc.cycle(obm(sim)), pc.status(obm(sim))]);
      // first cycle finds it off and powers on; the second finds it on and cycles; then the status read
      expect(sim.log().slice(0, 9)).to.deep.equal([
        'get boot', 'set boot pxe', 'get power', 'set power 1',
        'get boot', 'set boot pxe', 'get power', 'set power 0',
        'get power',
      ]);
      expect(state).to.equal('off'); // read mid-cycle, after the second call had finished
    });

    it('spaces out calls to one BMC by the entry\'s interval', async () => {
      const pc = powerControl(10_000, withDriver(new IpmitoolDriver({ cipherSuite: '3' }), { minIntervalMs: 300, minRunMs: 50 }));
      await Promise.all([pc.status(obm(sim)), pc.status(obm(sim)), pc.off(obm(sim))]);
      const ev = sim.events();
      expect(ev.map((e) => e.cmd)).to.deep.equal(['get power', 'get power', 'set power 0']);
      expect(ev[1]!.t - ev[0]!.t).to.be.at.least(0.29);
      expect(ev[2]!.t - ev[1]!.t).to.be.at.least(0.29);
    });

    it('tells a non-admin no address ipmitool printed for a BMC registered by name', async () => {
      const said = 'Error: Unable to establish IPMI v2 / RMCP+ session with 127.0.0.1:623';
      const spy = spyExec((_n, _file, _args, options, cb) => execFile('sh', ['-c', `echo '${said}' >&2; exit 1`], options, cb));
      const pc = powerControl(5000, withDriver(new IpmitoolDriver({ cipherSuite: '3', execFile: spy.fn })));
      const fields = { host: 'localhost', user: USER, password: PASSWORD };
      const member = await failure(pc.status({ type: ipmi.type, fields }, { isAdmin: false }));
      expect(member.message).to.equal("the node's BMC: ipmitool chassis power status failed: Error: Unable to establish IPMI v2 / RMCP+ session " +
        'with [address] (wrong user or password, cipher suite not supported, or BMC unreachable)');
      const admin = await failure(pc.status({ type: ipmi.type, fields }, { isAdmin: true }));
      expect(admin.message).to.include('127.0.0.1:623');
    });

    it('answers an unreachable BMC within the timeout and kills its ipmitool; the password is in no message', async () => {
      const spy = spyExec();
      const pc = powerControl(1500, withDriver(new IpmitoolDriver({ cipherSuite: '3', execFile: spy.fn })));
      const bmc = await deadBmc();
      const t = Date.now();
      const err = await failure(pc.status(obm(bmc)));
      expect(Date.now() - t).to.be.within(1400, 2200);
      expect(err.type).to.equal('OBMError');
      expect(err.message).to.equal(`BMC ${bmc.host} did not answer within 1500 ms (power status)`);
      expect(err.message).to.not.include(PASSWORD);
      expect(spy.calls).to.have.length(1);
      const child = spy.calls[0]!.child;
      for (const end = Date.now() + 1000; child.exitCode === null && child.signalCode === null && Date.now() < end;) await sleep(20);
      expect(child.signalCode).to.equal('SIGKILL');
    });

    it('answers a call queued behind a hung one within its timeout, without running ipmitool for it', async () => {
      const spy = spyExec();
      const pc = powerControl(1500, withDriver(new IpmitoolDriver({ cipherSuite: '3', execFile: spy.fn })));
      const bmc = await deadBmc();
      const t = Date.now();
      const [first, second] = await Promise.all([failure(pc.off(obm(bmc))), failure(pc.status(obm(bmc)))]);
      expect(first.message).to.equal(`BMC ${bmc.host} did not answer within 1500 ms (power off)`);
      expect(second.message).to.equal(`BMC ${bmc.host} did not answer within 1500 ms (still busy with an earlier call)`);
      expect(Date.now() - t).to.be.below(2200);
      expect(spy.calls).to.have.length(1);
    });

    it('drives five BMCs at once, in parallel', async () => {
      const sims = await Promise.all([1, 2, 3, 4, 5].map(() => startIpmiSim({ user: USER, password: PASSWORD })));
      try {
        const pc = powerControl(10_000, withDriver(new IpmitoolDriver({ cipherSuite: '3', minIntervalMs: 300 })));
        // one BMC alone: three runs with two 300 ms gaps
        let t0 = Date.now();
        await pc.cycle(obm(sims[0]!));
        const single = Date.now() - t0;
        sims[0]!.setPower(false);
        sims[0]!.clearLog();

        // What each BMC had been asked when the first cycle of five ended: serialized across
        // BMCs, the other four would have been asked nothing yet. (A bound on the time of five
        // against one failed on a loaded 2-core machine, where five ipmitools share two cores.)
        let atFirstEnd: string[][] | undefined;
        t0 = Date.now();
        await Promise.all(sims.map((s) => pc.cycle(obm(s)).then(() => { atFirstEnd ??= sims.map((x) => x.log()); })));
        const all = Date.now() - t0;
        for (const s of sims) {
          expect(s.powerState(), s.host).to.equal('on');
          expect(s.bootDevice(), s.host).to.equal('pxe');
        }
        expect(sims[1]!.log()).to.deep.equal(['get boot', 'set boot pxe', 'get power', 'set power 1']);
        for (const [i, asked] of atFirstEnd!.entries()) {
          expect(asked, `BMC ${i} when the first of five cycles ended (single ${single} ms, five ${all} ms)`).to.not.be.empty;
        }
      } finally {
        await Promise.all(sims.map((s) => s.stop()));
      }
    });
  });
  describe('with the redfish driver', () => {
    async function closedPort(): Promise<number> {
      const s = net.createServer();
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
      const port = (s.address() as net.AddressInfo).port;
      await new Promise((r) => s.close(r));
      return port;
    }

    it('tells a non-admin no address or port of a BMC registered by name that does not answer', async () => {
      const pc = powerControl(5000, redfish);
      const port = await closedPort();
      const fields = { host: `http://localhost:${port}`, user: 'opsuser', password: 'pw-123456' };
      const who = { isAdmin: false, node: { name: 'n1', incarnation: 'i1' } };
      const member = await failure(pc.status({ type: redfish.type, fields }, who));
      expect(member.message).to.equal("the node's BMC: reading the service root failed: cannot reach the BMC (ECONNREFUSED)");
      for (const text of [member.message, pc.seen('n1', 'i1')?.error ?? '']) {
        expect(text).to.not.match(/127\.0\.0\.1|::1/);
        expect(text).to.not.include(String(port));
      }
      const admin = await failure(pc.status({ type: redfish.type, fields }, { isAdmin: true }));
      expect(admin.message).to.match(/connect ECONNREFUSED (127\.0\.0\.1|::1):/);
    });
  });
});
