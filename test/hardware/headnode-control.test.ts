/**
 * HeadnodeControl with the mock driver: interrupted operations are finished (by the monitor or
 * by the next call), and a VM gone behind the service's back is recorded as died.
 */
import { expect } from 'chai';
import { startTestServer, must, type Client, type TestServer } from '../helpers/server';
import { MockHeadnodeDriver } from '../../drivers/headnode/mock';
import type { HeadnodeStatus, HnicSpec } from '../../drivers/headnode/types';

import { sleep } from '../../lib/time';

async function until<T>(what: string, f: () => Promise<T>, ok: (v: T) => boolean, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await sleep(20);
  }
}

/** Rejects with the signal's reason once it aborts, as a driver's call does. */
const aborted = (signal: AbortSignal) => new Promise<never>((_, reject) => {
  signal.addEventListener('abort', () => reject(signal.reason), { once: true });
});

/** A mock driver whose chosen calls do their work and then never end by themselves. */
class HangingMock extends MockHeadnodeDriver {
  /** boot: the start hangs before booting the VM; start: after */
  readonly hang = new Set<'boot' | 'start' | 'destroy'>();

  override async start(name: string, hnics: HnicSpec[], signal: AbortSignal): Promise<HeadnodeStatus> {
    if (this.hang.has('boot')) await sleep(5000, signal);
    const booted = await super.start(name, hnics, signal);
    if (this.hang.has('start')) await aborted(signal); // the VM runs, the call hangs
    return booted;
  }

  override async destroy(name: string, signal: AbortSignal): Promise<void> {
    if (this.hang.has('destroy')) await aborted(signal);
    return super.destroy(name, signal);
  }
}

/** A mock driver whose start boots the VM and then fails, and whose power-off can fail. */
class FailingMock extends MockHeadnodeDriver {
  failStart = false;
  /** how many power-offs fail from now on */
  stopFailures = 0;

  override async start(name: string, hnics: HnicSpec[], signal: AbortSignal): Promise<HeadnodeStatus> {
    const booted = await super.start(name, hnics, signal);
    if (this.failStart) throw new Error('the guest did not come up');
    return booted;
  }

  override async stop(name: string, signal: AbortSignal): Promise<void> {
    if (this.stopFailures > 0) {
      this.stopFailures--;
      throw new Error('QMP does not answer');
    }
    return super.stop(name, signal);
  }
}

/** Time an HTTP call. */
async function timed<T>(call: Promise<T>): Promise<[T, number]> {
  const t0 = Date.now();
  const r = await call;
  return [r, Date.now() - t0];
}

/** The headnode once its current operation has recorded its outcome. */
const settled = (ts: TestServer, h: string, ms: number) =>
  until(`${h} settled`, async () => (await ts.api.get(`/headnode/${h}`)).body, (b) => !['starting', 'stopping'].includes(b.status), ms);

describe('HeadnodeControl (mock driver)', () => {
  /** Headnode h of project p, its hnic eth0 on network w, under a driver whose calls can be made to fail. */
  async function headnodeOnW(): Promise<{ driver: FailingMock; api: Client }> {
    const driver = new FailingMock();
    const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 0 }, { headnodeDriver: driver });
    const api = ts.api;
    await must(api.put('/project/p'));
    await must(api.put('/network/w', { owner: 'p', access: 'p', net_id: '' }));
    await must(api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
    await must(api.put('/headnode/h/hnic/eth0'));
    await must(api.post('/headnode/h/hnic/eth0/connect_network', { network: 'w' }));
    return { driver, api };
  }

  it('the monitor finishes a start whose outcome was never recorded', async () => {
    const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 50 });
    await must(ts.api.put('/project/p'));
    await must(ts.api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
    // The intent is recorded, then nothing: as if recording the outcome had failed.
    await ts.world.headnodes.ask('h', { type: 'headnode.beginStart', by: 'test' });
    expect((await ts.api.get('/headnode/h')).body.status).to.equal('starting');
    const h = await until('h', async () => (await ts.api.get('/headnode/h')).body, (b) => b.status === 'running');
    expect(h.vncport).to.be.a('number');
    expect((ts.headnodes.driver as MockHeadnodeDriver).vm('h')?.running).to.equal(true);
  });

  it('the next start finishes an interrupted start and answers 200; a stop likewise', async () => {
    const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 0 });
    await must(ts.api.put('/project/p'));
    await must(ts.api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
    await ts.world.headnodes.ask('h', { type: 'headnode.beginStart', by: 'test' });
    await must(ts.api.post('/headnode/h/start'));
    expect((await ts.api.get('/headnode/h')).body.status).to.equal('running');
    // Once running, a start is a 409 again.
    expect((await ts.api.post('/headnode/h/start')).status).to.equal(409);
    await ts.world.headnodes.ask('h', { type: 'headnode.beginStop', by: 'test' });
    expect((await ts.api.put('/headnode/h/hnic/e')).status).to.equal(409);
    await must(ts.api.post('/headnode/h/stop'));
    expect((await ts.api.get('/headnode/h')).body).to.include({ status: 'stopped', vncport: null });
    expect((ts.headnodes.driver as MockHeadnodeDriver).vm('h')?.running).to.equal(false);
  });

  it('the monitor records a VM that crashed as died, and leaves a running one alone', async () => {
    const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 50 });
    await must(ts.api.put('/project/p'));
    for (const h of ['a', 'b']) {
      await must(ts.api.put(`/headnode/${h}`, { project: 'p', base_img: 'base-headnode' }));
      await must(ts.api.post(`/headnode/${h}/start`));
    }
    (ts.headnodes.driver as MockHeadnodeDriver).crash('a');
    const a = await until('a', async () => (await ts.api.get('/headnode/a')).body, (b) => b.status === 'died');
    expect(a.error).to.match(/without a stop call/);
    await sleep(200);
    expect((await ts.api.get('/headnode/b')).body.status).to.equal('running');
  });

  it('keeps hnic attachments of names containing "/" apart (a/b + c is not a + b/c)', async () => {
    const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 0 });
    const api = ts.api;
    await must(api.put('/project/p'));
    await must(api.put('/network/w', { owner: 'p', access: 'p', net_id: '' }));
    for (const [h, nic] of [['a', 'b%2Fc'], ['a%2Fb', 'c']]) {
      await must(api.put(`/headnode/${h}`, { project: 'p', base_img: 'base-headnode' }));
      await must(api.put(`/headnode/${h}/hnic/${nic}`));
      await must(api.post(`/headnode/${h}/hnic/${nic}/connect_network`, { network: 'w' }));
    }
    await must(api.post('/headnode/a/hnic/b%2Fc/detach_network'));
    // a/b's hnic c still holds w.
    expect((await api.del('/network/w')).status).to.equal(409);
    expect((await api.get('/headnode/a%2Fb')).body.networks).to.deep.equal({ c: 'w' });
  });

  it('a failed start whose power-off fails too is not recorded as stopped: it holds its networks until a power-off works', async () => {
    const { driver, api } = await headnodeOnW();
    driver.failStart = true;
    driver.stopFailures = 1;
    const r = await api.post('/headnode/h/start');
    expect(r.status).to.equal(502);
    expect(r.body.msg).to.match(/did not come up.*powering .* off failed.*QMP does not answer/);
    expect(driver.vm('h')?.running).to.equal(true); // the stray VM, on w's VLAN
    const h = (await api.get('/headnode/h')).body;
    expect(h).to.include({ status: 'stopping', vncport: null });
    expect(h.error).to.match(/QMP does not answer/);
    // Its hnic keeps w: neither detached nor deleted while the VM may run on w's VLAN.
    expect((await api.post('/headnode/h/hnic/eth0/detach_network')).status).to.equal(409);
    expect((await api.del('/network/w')).status).to.equal(409);
    // The next VM operation powers it off first, then starts it.
    driver.failStart = false;
    await must(api.post('/headnode/h/start'));
    expect((await api.get('/headnode/h')).body.status).to.equal('running');
    expect(driver.vm('h')?.boots).to.equal(2);
  });

  it('a power-off still owed after its retry failed too stays owed: the next start answers 502 with the reason, not 200 as running', async () => {
    const { driver, api } = await headnodeOnW();
    driver.failStart = true;
    driver.stopFailures = 2; // the failed start's power-off, and the next call's retry of it
    expect((await api.post('/headnode/h/start')).status).to.equal(502);
    driver.failStart = false;
    const r = await api.post('/headnode/h/start');
    expect(r.status, JSON.stringify(r.body)).to.equal(502);
    expect(r.body).to.include({ type: 'HeadnodeError' });
    expect(r.body.msg).to.match(/QMP does not answer/);
    expect(driver.vm('h')?.running).to.equal(true); // the stray VM still runs on w's VLAN
    expect((await api.get('/headnode/h')).body).to.include({ status: 'stopping', vncport: null });
    expect((await api.post('/headnode/h/hnic/eth0/detach_network')).status).to.equal(409);
    // A power-off that works ends it; the start then boots the VM.
    await must(api.post('/headnode/h/start'));
    const h = (await api.get('/headnode/h')).body;
    expect(h).to.include({ status: 'running', error: null });
    expect(h.vncport).to.be.a('number');
  });

  it('the monitor retries the power-off a failed start owes, and a headnode that never ran is changeable again', async () => {
    const driver = new FailingMock();
    const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 50 }, { headnodeDriver: driver });
    await must(ts.api.put('/project/p'));
    await must(ts.api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
    driver.failStart = true;
    driver.stopFailures = 2; // the monitor's first retry fails too
    expect((await ts.api.post('/headnode/h/start')).status).to.equal(502);
    const h = await until('h off', async () => (await ts.api.get('/headnode/h')).body, (b) => b.status !== 'stopping', 5000);
    expect(h).to.include({ status: 'created', vncport: null });
    expect(h.error).to.match(/did not come up/); // the start's reason, as after any failed first start
    expect(driver.vm('h')?.running).to.equal(false);
    await must(ts.api.put('/headnode/h/hnic/eth0'));
  });

  describe('with HILT_HEADNODE_TIMEOUT_MS', () => {
    it('answers 502 at the deadline of a start that outlasts it, and records the start as failed', async () => {
      // A start takes 5 s: far beyond the deadline (the power-off after it is quick).
      const driver = new HangingMock();
      driver.hang.add('boot');
      const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 0, headnodeTimeoutMs: 300 }, { headnodeDriver: driver });
      await must(ts.api.put('/project/p'));
      await must(ts.api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
      const [r, ms] = await timed(ts.api.post('/headnode/h/start'));
      expect(r.status).to.equal(502);
      expect(r.body).to.deep.equal({ type: 'HeadnodeError', msg: 'headnode h: starting the VM did not finish within 300 ms' });
      expect(ms).to.be.within(290, 1000);
      // The driver's wait ended at the deadline, and the power-off after it had 300 ms of its
      // own: the outcome is recorded well before the 5 s a driver ignoring its signal would take.
      const h = await settled(ts, 'h', 2000);
      expect(h).to.include({ status: 'created', vncport: null, error: 'headnode h: starting the VM did not finish within 300 ms' });
      expect(driver.vm('h')).to.include({ running: false, boots: 0 });
      await must(ts.api.put('/headnode/h/hnic/eth0')); // a first start that failed leaves it changeable
    });

    it('powers off a VM whose start ran out of time after booting it, with a budget of its own', async () => {
      const driver = new HangingMock();
      const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 0, headnodeTimeoutMs: 300 }, { headnodeDriver: driver });
      await must(ts.api.put('/project/p'));
      await must(ts.api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
      driver.hang.add('start');
      const [r, ms] = await timed(ts.api.post('/headnode/h/start'));
      expect(r.status).to.equal(502);
      expect(ms).to.be.within(290, 1000);
      expect(driver.vm('h')?.boots).to.equal(1);
      const h = await settled(ts, 'h', 2000);
      expect(h).to.include({ status: 'created', vncport: null });
      expect(h.error).to.match(/did not finish within 300 ms/);
      // Recorded as not running, and it is not: the power-off did not reuse the aborted signal.
      expect(driver.vm('h')?.running).to.equal(false);
      driver.hang.clear();
      await must(ts.api.post('/headnode/h/start'));
      expect((await ts.api.get('/headnode/h')).body.status).to.equal('running');
    });

    it('powers off a VM whose start ends well after its deadline, ignoring its signal: the 502 stands, the headnode is not recorded running', async () => {
      // A driver whose start does not heed its signal: it boots the VM 600 ms in and resolves.
      class DeafMock extends MockHeadnodeDriver {
        override async start(name: string, hnics: HnicSpec[], _signal: AbortSignal): Promise<HeadnodeStatus> {
          await sleep(600);
          return super.start(name, hnics, new AbortController().signal);
        }
      }
      const driver = new DeafMock();
      const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 0, headnodeTimeoutMs: 300 }, { headnodeDriver: driver });
      await must(ts.api.put('/project/p'));
      await must(ts.api.put('/network/w', { owner: 'p', access: 'p', net_id: '' }));
      await must(ts.api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
      await must(ts.api.put('/headnode/h/hnic/eth0'));
      await must(ts.api.post('/headnode/h/hnic/eth0/connect_network', { network: 'w' }));
      expect((await ts.api.post('/headnode/h/start')).status).to.equal(502);
      const h = await settled(ts, 'h', 3000);
      // As docs/api.md says of a start that ran out of time: powered off, left `created`.
      expect(h).to.include({ status: 'created', vncport: null });
      expect(h.error).to.match(/did not finish within 300 ms/);
      expect(driver.vm('h')?.boots).to.equal(1);
      expect(driver.vm('h')?.running).to.equal(false);
      // So its network may go, and its VLAN with it, with no VM left on that VLAN.
      await must(ts.api.post('/headnode/h/hnic/eth0/detach_network'));
      await must(ts.api.del('/network/w'));
      expect(driver.vm('h')?.running).to.equal(false);
    });

    it('leaves a delete that ran out of time deleting, with the reason and the VM powered off; asking again finishes it', async () => {
      const driver = new HangingMock();
      const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 0, headnodeTimeoutMs: 300 }, { headnodeDriver: driver });
      await must(ts.api.put('/project/p'));
      await must(ts.api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
      await must(ts.api.post('/headnode/h/start'));
      driver.hang.add('destroy');
      const [r, ms] = await timed(ts.api.del('/headnode/h'));
      expect(r.status).to.equal(502);
      expect(r.body.msg).to.equal('headnode h: deleting the VM did not finish within 300 ms');
      expect(ms).to.be.within(290, 1000);
      const h = await until('h recorded', async () => (await ts.api.get('/headnode/h')).body, (b) => b.error !== null, 2000);
      expect(h).to.include({ status: 'deleting', error: 'headnode h: deleting the VM did not finish within 300 ms' });
      expect(driver.vm('h')?.running).to.equal(false);
      driver.hang.clear();
      await must(ts.api.del('/headnode/h'));
      expect((await ts.api.get('/headnode/h')).status).to.equal(404);
    });

    it('shows no VNC port for a headnode whose failed delete powered its VM off (the port may be another VM\'s next)', async () => {
      const driver = new HangingMock();
      const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 0, headnodeTimeoutMs: 300 }, { headnodeDriver: driver });
      await must(ts.api.put('/project/p'));
      await must(ts.api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
      await must(ts.api.post('/headnode/h/start'));
      expect((await ts.api.get('/headnode/h')).body.vncport).to.be.a('number');
      driver.hang.add('destroy');
      expect((await ts.api.del('/headnode/h')).status).to.equal(502);
      const h = await until('h recorded', async () => (await ts.api.get('/headnode/h')).body, (b) => b.error !== null, 2000);
      expect(driver.vm('h')?.running).to.equal(false);
      expect(h).to.include({ status: 'deleting', vncport: null });
    });

    it('gives each operation its whole deadline once it has the headnode: one queued behind a slow one still runs', async () => {
      const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 0, headnodeTimeoutMs: 600, mockHeadnodeDelayMs: 400 });
      await must(ts.api.put('/project/p'));
      await must(ts.api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
      // The stop waits about 400 ms behind the start, then takes 400 ms of its own 600.
      const [start, stop] = await Promise.all([ts.api.post('/headnode/h/start'), ts.api.post('/headnode/h/stop')]);
      expect([start.status, stop.status]).to.deep.equal([200, 200]);
      expect((await ts.api.get('/headnode/h')).body.status).to.equal('stopped');
    });
  });
});
