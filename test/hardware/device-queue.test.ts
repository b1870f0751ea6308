import { expect } from 'chai';
import { DeviceQueue, DeviceTimeoutError, TimedOut } from '../../hardware/device-queue';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A call that logs its start and end and takes `ms` (or hangs until aborted when ms < 0). */
function recorder() {
  const log: string[] = [];
  let running = 0;
  let maxRunning = 0;
  const call = (name: string, ms: number, fail = false) => async (signal: AbortSignal) => {
    running++;
    maxRunning = Math.max(maxRunning, running);
    log.push(`start ${name}`);
    try {
      if (ms < 0) {
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
        log.push(`aborted ${name}`);
        throw signal.reason;
      }
      await sleep(ms);
      if (fail) throw new Error(`${name} failed`);
      log.push(`end ${name}`);
      return name;
    } finally {
      running--;
    }
  };
  return { log, call, maxRunning: () => maxRunning };
}

describe('DeviceQueue', () => {
  it('runs the calls of one device one at a time, in order, and devices in parallel', async () => {
    const q = new DeviceQueue({ timeoutMs: 1000 });
    const r = recorder();
    const results = await Promise.all([
      q.run('a', r.call('a1', 100)), q.run('a', r.call('a2', 100)), q.run('b', r.call('b1', 100)), q.run('b', r.call('b2', 100)),
    ]);
    expect(results).to.deep.equal(['a1', 'a2', 'b1', 'b2']);
    const a = r.log.filter((l) => l.endsWith('a1') || l.endsWith('a2'));
    expect(a).to.deep.equal(['start a1', 'end a1', 'start a2', 'end a2']);
    expect(r.maxRunning()).to.equal(2); // one per device, a and b at once (not a time: loaded CI cores stretch it)
    expect(q.busy('a')).to.equal(false);
  });

  it('fails only the call that failed; the next one runs', async () => {
    const q = new DeviceQueue({ timeoutMs: 1000 });
    const r = recorder();
    const out = await Promise.allSettled([q.run('a', r.call('x', 5, true)), q.run('a', r.call('y', 5))]);
    expect(out[0].status).to.equal('rejected');
    expect((out[0] as PromiseRejectedResult).reason.message).to.equal('x failed');
    expect(out[1]).to.deep.equal({ status: 'fulfilled', value: 'y' });
  });

  it('answers a hung call at its deadline, aborts its signal, and holds the device until it has ended', async () => {
    const q = new DeviceQueue({ timeoutMs: 50 });
    const r = recorder();
    const t0 = Date.now();
    const hung = q.run('a', r.call('hung', -1), { what: 'setting a VLAN' }).catch((e) => e);
    const next = q.run('a', r.call('next', 5));
    const err = await hung;
    expect(err).to.be.instanceOf(DeviceTimeoutError);
    expect(err.message).to.match(/a: setting a VLAN did not finish within 50 ms/);
    expect(Date.now() - t0).to.be.below(500); // at its deadline, not never
    expect(await next).to.equal('next');
    // The aborted call ended before the next one started: never two at once on one device.
    expect(r.log).to.deep.equal(['start hung', 'aborted hung', 'start next', 'end next']);
    expect(r.maxRunning()).to.equal(1);
  });

  it('gives a call that ignores the abort settleMs to end, then moves on', async () => {
    const q = new DeviceQueue({ timeoutMs: 50, settleMs: 300 });
    const deaf = async () => { await new Promise(() => undefined); };
    const t0 = Date.now();
    const first = q.run('a', deaf).catch((e) => e);
    const second = q.run('a', async () => Date.now() - t0);
    expect(await first).to.be.instanceOf(DeviceTimeoutError);
    const startedAfter = await second;
    expect(startedAfter).to.be.at.least(340); // 50 ms deadline + 300 ms settle
    expect(startedAfter).to.be.below(1000);
  });

  it('counts waiting time when asked to: a call queued behind a hung one times out without running', async () => {
    // minRunMs: the call behind must not start with a sliver of time left (it would run, not wait).
    const q = new DeviceQueue({ timeoutMs: 100, settleMs: 5000, minRunMs: 30 });
    const r = recorder();
    const t0 = Date.now();
    const out = await Promise.allSettled([
      q.run('bmc', r.call('hung', -1), { from: 'submit' }),
      q.run('bmc', r.call('behind', 5), { from: 'submit' }),
    ]);
    expect(out.map((o) => o.status)).to.deep.equal(['rejected', 'rejected']);
    expect((out[1] as PromiseRejectedResult).reason.message).to.match(/still busy with an earlier call/);
    // Each answered within its timeout of being made, not after the hung call's settle time.
    expect(Date.now() - t0).to.be.below(1000);
    expect(r.log).to.not.include('start behind');
  });

  it('spaces calls to one device by minIntervalMs', async () => {
    const q = new DeviceQueue({ timeoutMs: 1000, minIntervalMs: 40 });
    const starts: number[] = [];
    await Promise.all([1, 2, 3].map(() => q.run('bmc', async () => { starts.push(Date.now()); })));
    expect(starts[1] - starts[0]).to.be.at.least(38);
    expect(starts[2] - starts[1]).to.be.at.least(38);
  });

  it('does not start a call with less than minRunMs left before its deadline', async () => {
    const q = new DeviceQueue({ timeoutMs: 100, minRunMs: 50 });
    const r = recorder();
    const out = await Promise.allSettled([
      q.run('bmc', r.call('long', 70), { from: 'submit' }),
      q.run('bmc', r.call('late', 5), { from: 'submit' }),
    ]);
    expect(out[0].status).to.equal('fulfilled');
    expect(out[1].status).to.equal('rejected');
    expect(r.log).to.not.include('start late');
  });

  it('runs onIdle in the device\'s turn once its queue has emptied; calls made meanwhile wait for it', async () => {
    const events: string[] = [];
    const q = new DeviceQueue({
      timeoutMs: 1000,
      onIdle: async (device) => { events.push(`idle ${device} start`); await sleep(30); events.push(`idle ${device} end`); },
    });
    await Promise.all([q.run('sw', async () => { events.push('op1'); }), q.run('sw', async () => { events.push('op2'); })]);
    await sleep(5); // onIdle has begun
    await q.run('sw', async () => { events.push('op3'); });
    await q.idle();
    expect(events).to.deep.equal(['op1', 'op2', 'idle sw start', 'idle sw end', 'op3', 'idle sw start', 'idle sw end']);
  });

  it('builds timeout errors with the given factory', async () => {
    class ObmLike extends Error {}
    const q = new DeviceQueue({ timeoutMs: 20, timeoutError: (m) => new ObmLike(m) });
    const err = await q.run('x', (s) => new Promise((_, rej) => s.addEventListener('abort', () => rej(s.reason)))).catch((e) => e);
    expect(err).to.be.instanceOf(ObmLike);
  });

  it('tells the error factory which call ran out of time and whether it ever got the device', async () => {
    const seen: TimedOut[] = [];
    const q = new DeviceQueue({ timeoutMs: 40, settleMs: 500, timeoutError: (m, t) => { seen.push(t); return new Error(m); } });
    const hang = (s: AbortSignal) => new Promise((_, rej) => s.addEventListener('abort', () => rej(s.reason)));
    // The first call does not end when aborted, so the device stays its own (settleMs) and the
    // second never gets it, whichever deadline a loaded machine fires first.
    const stuck = () => new Promise(() => undefined);
    await Promise.allSettled([q.run('bmc', stuck, { from: 'submit', what: 'power off' }), q.run('bmc', hang, { from: 'submit', what: 'power status' })]);
    // Both deadlines fall on the same millisecond: either may be reported first.
    expect(seen).to.have.deep.members([
      { device: 'bmc', what: 'power off', timeoutMs: 40, waiting: false },
      { device: 'bmc', what: 'power status', timeoutMs: 40, waiting: true },
    ]);
  });
});
