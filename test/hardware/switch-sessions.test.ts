import { expect } from 'chai';
import { SwitchSessions } from '../../hardware/switch-sessions';
import { SwitchDriver, SwitchError, SwitchInfo, SwitchSession } from '../../drivers/switch/types';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sw = (name: string): SwitchInfo => ({ name, type: 'fake', fields: {} });

/** Records sessions and calls; `hang` ports never answer, `fail` ports throw. */
class FakeDriver implements SwitchDriver {
  log: string[] = [];
  open_ = new Map<string, number>();
  maxOpen = 0;
  /** the most sessions open at once across switches */
  maxOpenAll = 0;
  opened = 0;
  failOpen = false;
  constructor(private readonly delayMs = 10) {}
  async open(info: SwitchInfo): Promise<SwitchSession> {
    if (this.failOpen) throw new SwitchError('login refused');
    const n = (this.open_.get(info.name) ?? 0) + 1;
    this.open_.set(info.name, n);
    this.maxOpen = Math.max(this.maxOpen, n);
    this.maxOpenAll = Math.max(this.maxOpenAll, [...this.open_.values()].reduce((a, b) => a + b, 0));
    const id = ++this.opened;
    this.log.push(`${info.name} open#${id}`);
    const op = (what: string) => async (port: string) => {
      if (port === 'hang') await new Promise(() => undefined);
      // 'slow' takes 3x the delay and still lands, whatever the caller decided meanwhile
      await sleep(port === 'slow' ? this.delayMs * 3 : this.delayMs);
      if (port === 'fail') throw new SwitchError(`port ${port} refused`);
      this.log.push(`${info.name} #${id} ${what} ${port}`);
    };
    return {
      setNative: op('native'), removeNative: op('-native'), addTagged: op('tag'), removeTagged: op('-tag'), resetPort: op('reset'),
      getPortVlans: async () => ({ native: null, tagged: [] }),
      close: async () => { this.log.push(`${info.name} close#${id}`); this.open_.set(info.name, (this.open_.get(info.name) ?? 1) - 1); },
    };
  }
}

describe('SwitchSessions', () => {
  it('applies work queued while a session is open in that same session (batching)', async () => {
    const d = new FakeDriver();
    const s = new SwitchSessions(() => d, 1000);
    await Promise.all(['p1', 'p2', 'p3', 'p4'].map((p) => s.submit(sw('a'), (x) => x.setNative(p, 5))));
    expect(d.opened).to.equal(1);
    expect(d.log).to.deep.equal(['a open#1', 'a #1 native p1', 'a #1 native p2', 'a #1 native p3', 'a #1 native p4', 'a close#1']);
  });

  it('never opens two sessions on one switch, and runs different switches in parallel', async () => {
    const d = new FakeDriver(20);
    const s = new SwitchSessions(() => d, 1000);
    const work: Promise<void>[] = [];
    for (let i = 0; i < 5; i++) for (const name of ['a', 'b', 'c', 'd']) work.push(s.submit(sw(name), (x) => x.addTagged(`p${i}`, 7)));
    // work arriving while the first batches run still joins them or waits its turn
    await sleep(30);
    for (const name of ['a', 'b', 'c', 'd']) work.push(s.submit(sw(name), (x) => x.addTagged('late', 7)));
    await Promise.all(work);
    expect(d.maxOpen).to.equal(1);
    // The four switches' sessions were open at once (not a time: 6 operations of 20 ms per
    // switch take about 120 ms in parallel, 480 one switch after another, but a loaded CI
    // machine stretches either).
    expect(d.maxOpenAll).to.equal(4);
    for (const name of ['a', 'b', 'c', 'd']) expect(d.log.filter((l) => l.startsWith(`${name} #`))).to.have.length(6);
  });

  it('fails only the operation that failed, then carries on in a fresh session', async () => {
    const d = new FakeDriver();
    const s = new SwitchSessions(() => d, 1000);
    const results = await Promise.allSettled([
      s.submit(sw('a'), (x) => x.setNative('p1', 1)),
      s.submit(sw('a'), (x) => x.setNative('fail', 1)),
      s.submit(sw('a'), (x) => x.setNative('p3', 1)),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    expect(((results[1] as PromiseRejectedResult).reason as Error).message).to.match(/refused/);
    expect(d.opened).to.equal(2);
    expect(d.log).to.include('a #2 native p3');
  });

  it('bounds every step with the timeout: a hanging switch fails its operation, not the queue', async () => {
    const d = new FakeDriver();
    const s = new SwitchSessions(() => d, 100);
    const t = Date.now();
    const results = await Promise.allSettled([s.submit(sw('a'), (x) => x.resetPort('hang')), s.submit(sw('a'), (x) => x.resetPort('ok'))]);
    expect(results[0].status).to.equal('rejected');
    expect(((results[0] as PromiseRejectedResult).reason as Error)).to.be.instanceOf(SwitchError);
    expect(((results[0] as PromiseRejectedResult).reason as Error).message).to.match(/within 100 ms/);
    expect(results[1].status).to.equal('fulfilled');
    // 100 ms timeout, then up to 4 more timeouts for the hung call to finish (it never does).
    expect(Date.now() - t).to.be.below(800);
  });

  it('after a timeout, keeps the switch until the timed-out call has finished: no overlap, no second session meanwhile', async () => {
    const d = new FakeDriver(100);
    const s = new SwitchSessions(() => d, 150);
    const results = await Promise.allSettled([s.submit(sw('a'), (x) => x.setNative('slow', 1)), s.submit(sw('a'), (x) => x.setNative('next', 1))]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'fulfilled']);
    expect(d.maxOpen).to.equal(1);
    // The slow change landed (at 300 ms) before the next session was even opened.
    expect(d.log).to.deep.equal(['a open#1', 'a close#1', 'a #1 native slow', 'a open#2', 'a #2 native next', 'a close#2']);
  });

  it('leaves the next call\'s session alone when a timed-out call ends after its settle time', async () => {
    const d = new FakeDriver();
    // 200 ms timeout: the switch is given to the next call 4 × 200 ms after the deadline.
    const s = new SwitchSessions(() => d, 200);
    const results = await Promise.allSettled([
      s.submit(sw('a'), async () => { await sleep(1100); }), // ignores its deadline; ends while the next call works
      s.submit(sw('a'), async (x) => { await sleep(150); await x.setNative('p2', 1); }),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'fulfilled']);
    await sleep(20);
    expect(d.log).to.deep.equal(['a open#1', 'a close#1', 'a open#2', 'a #2 native p2', 'a close#2']);
  });

  it('closes a session whose login answered after its timeout, and never uses it', async () => {
    let slowLogin = true;
    const d = new FakeDriver(10);
    const open = d.open.bind(d);
    d.open = async (info) => {
      if (slowLogin) {
        slowLogin = false;
        await sleep(200);
      }
      return open(info);
    };
    const s = new SwitchSessions(() => d, 100);
    const results = await Promise.allSettled([s.submit(sw('a'), (x) => x.setNative('p1', 1)), s.submit(sw('a'), (x) => x.setNative('p2', 1))]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'fulfilled']);
    expect(d.maxOpen).to.equal(1);
    expect(d.log).to.deep.equal(['a open#1', 'a close#1', 'a open#2', 'a #2 native p2', 'a close#2']);
  });

  it('keeps the session open for a batch whose calls come one after another, and closes it once the batch ends', async () => {
    const d = new FakeDriver(5);
    const s = new SwitchSessions(() => d, 1000);
    const batch = s.batch('a');
    for (const p of ['p1', 'p2', 'p3']) {
      await s.submit(sw('a'), (x) => x.setNative(p, 1), { batch: batch.id });
      await sleep(20);
    }
    // An operation outside the batch shares the session too, and does not close it.
    await s.submit(sw('a'), (x) => x.setNative('p4', 1));
    await sleep(20);
    expect(d.log).to.deep.equal(['a open#1', 'a #1 native p1', 'a #1 native p2', 'a #1 native p3', 'a #1 native p4']);
    s.endBatch(batch);
    await sleep(20);
    expect(d.log.at(-1)).to.equal('a close#1');
    expect(d.open_.get('a')).to.equal(0);
    // The next call logs in again, as usual.
    await s.submit(sw('a'), (x) => x.setNative('p5', 1));
    expect(d.opened).to.equal(2);
  });

  it('stops a batch\'s calls from logging in again once its login failed or a call of it ran out of time', async () => {
    const d = new FakeDriver(5);
    const s = new SwitchSessions(() => d, 100);
    const batch = s.batch('a');
    await s.submit(sw('a'), async () => undefined, { batch: batch.id });
    const results = await Promise.allSettled([
      s.submit(sw('a'), (x) => x.setNative('hang', 1), { batch: batch.id, what: 'a port read-back' }),
      s.submit(sw('a'), (x) => x.setNative('p2', 1), { batch: batch.id }),
      s.submit(sw('a'), (x) => x.setNative('p3', 1), { batch: batch.id }),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected', 'rejected']);
    expect(((results[0] as PromiseRejectedResult).reason as Error).message).to.equal('switch a: a port read-back did not finish within 100 ms (the switch stopped answering)');
    expect(((results[2] as PromiseRejectedResult).reason as Error).message).to.equal('switch a: not tried (a port read-back did not finish within 100 ms (the switch stopped answering))');
    expect(d.opened).to.equal(1);
    // Calls outside the batch are not concerned.
    await s.submit(sw('a'), (x) => x.setNative('p4', 1));
    expect(d.opened).to.equal(2);
    s.endBatch(batch);

    d.failOpen = true;
    const other = s.batch('b');
    const logins = await Promise.allSettled([1, 2, 3].map(() => s.submit(sw('b'), (x) => x.setNative('p', 1), { batch: other.id })));
    expect(logins.map((r) => r.status)).to.deep.equal(['rejected', 'rejected', 'rejected']);
    expect(((logins[2] as PromiseRejectedResult).reason as Error).message).to.equal('switch b: not tried (logging in failed: login refused)');
    s.endBatch(other);
  });

  it('fails the operation when the login fails or no driver exists', async () => {
    const d = new FakeDriver();
    d.failOpen = true;
    const s = new SwitchSessions(() => d, 1000);
    const err = await s.submit(sw('a'), (x) => x.resetPort('p')).catch((e) => e);
    expect((err as Error).message).to.match(/login refused/);
    const none = new SwitchSessions(() => undefined, 1000);
    expect(((await none.submit(sw('a'), (x) => x.resetPort('p')).catch((e) => e)) as Error).message).to.match(/no driver/);
  });

  it('marks a failure nothingSent when the call sent the switch no change: a failed login, a read, a driver whose change count did not move', async () => {
    const sent = async (s: SwitchSessions, work: (x: SwitchSession) => Promise<unknown>) => {
      const err = (await s.submit(sw('a'), async (x) => { await work(x); }).then(() => null, (e) => e)) as SwitchError;
      expect(err).to.be.instanceOf(SwitchError);
      return !err.nothingSent;
    };
    const d = new FakeDriver();
    const s = new SwitchSessions(() => d, 100);
    // A driver that does not count: a change call counts from its start, answered or not.
    expect(await sent(s, (x) => x.setNative('fail', 1))).to.equal(true);
    expect(await sent(s, (x) => x.setNative('hang', 1))).to.equal(true);
    expect(await sent(s, async (x) => { await x.getPortVlans('p'); throw new SwitchError('cannot read'); })).to.equal(false);
    d.failOpen = true;
    expect(await sent(s, (x) => x.setNative('p', 1))).to.equal(false);

    // A driver that counts: a change that failed or hung before it was sent changed nothing.
    let count = 0;
    const counting: SwitchDriver = {
      open: async () => ({
        get changesSent() { return count; },
        setNative: async (port: string) => {
          if (port === 'hang') await new Promise(() => undefined);
          if (port === 'sent') count++;
          throw new SwitchError(`port ${port} refused`);
        },
        removeNative: async () => undefined, addTagged: async () => undefined, removeTagged: async () => undefined, resetPort: async () => undefined,
        getPortVlans: async () => ({ native: null, tagged: [] }), close: async () => undefined,
      }),
    };
    const c = new SwitchSessions(() => counting, 100);
    expect(await sent(c, (x) => x.setNative('refused', 1))).to.equal(false);
    expect(await sent(c, (x) => x.setNative('hang', 1))).to.equal(false);
    expect(await sent(c, (x) => x.setNative('sent', 1))).to.equal(true);
  });

  it('tells a call its deadline when it gets the switch', async () => {
    const s = new SwitchSessions(() => new FakeDriver(), 500);
    let deadline = 0;
    const t = Date.now();
    await s.submit(sw('a'), (x) => x.setNative('p', 1), { onStart: (d) => { deadline = d; } });
    expect(deadline).to.be.within(t + 500, Date.now() + 500);
  });

  describe('host keys', () => {
    /** A driver whose switch presents `key`; it records what it was opened with. */
    class KeyedDriver implements SwitchDriver {
      opened: Array<{ hostKey?: string }> = [];
      closed = 0;
      constructor(public key: string) {}
      async open(info: SwitchInfo): Promise<SwitchSession> {
        if (info.hostKey && info.hostKey !== this.key) throw new SwitchError(`host key changed: the service recorded ${info.hostKey}, the switch presented ${this.key}`);
        this.opened.push({ hostKey: info.hostKey });
        const op = async () => undefined;
        return {
          hostKey: this.key, setNative: op, removeNative: op, addTagged: op, removeTagged: op, resetPort: op,
          getPortVlans: async () => ({ native: null, tagged: [] }),
          close: async () => { this.closed++; },
        };
      }
    }
    /** The switch actor's record, as the sessions see it; `refuse`: another key was recorded meanwhile. */
    const book = (refuse = false) => {
      const recorded = new Map<string, string>();
      return {
        recorded,
        book: {
          recorded: (name: string) => recorded.get(name),
          record: async (name: string, fp: string) => {
            if (refuse) throw new Error('another key is recorded');
            recorded.set(name, fp);
          },
        },
      };
    };

    it('records the key of the first login, and opens later sessions with the recorded key', async () => {
      const d = new KeyedDriver('SHA256:one');
      const b = book();
      const s = new SwitchSessions(() => d, 1000, b.book);
      await s.submit(sw('a'), (x) => x.setNative('p', 1));
      expect(b.recorded.get('a')).to.equal('SHA256:one');
      await sleep(20);
      await s.submit(sw('a'), (x) => x.setNative('p', 2));
      expect(d.opened).to.deep.equal([{ hostKey: undefined }, { hostKey: 'SHA256:one' }]);
      d.key = 'SHA256:two';
      await sleep(20);
      const err = (await s.submit(sw('a'), (x) => x.setNative('p', 3)).catch((e) => e)) as Error;
      expect(err.message).to.match(/host key changed: the service recorded SHA256:one, the switch presented SHA256:two/);
    });

    it('refuses a first-seen key when the switch actor recorded another one meanwhile, and closes that session', async () => {
      const d = new KeyedDriver('SHA256:one');
      const b = book(true);
      const s = new SwitchSessions(() => d, 1000, b.book);
      const err = (await s.submit(sw('a'), (x) => x.setNative('p', 1)).catch((e) => e)) as Error;
      expect(err).to.be.instanceOf(SwitchError);
      expect(err.message).to.match(/presented host key SHA256:one, but another one was recorded meanwhile/);
      expect(d.closed).to.equal(1);
    });
  });

  describe('a batch ending behind a staged change (a switch with a candidate configuration)', () => {
    /** A switch whose changes are staged and take effect at a commit; logging out discards what is staged. */
    const candidate = (timeoutMs = 1000) => {
      const sim = {
        applied: new Map<string, number>(), staged: new Map<string, number>(),
        commits: 0, logins: 0, logouts: 0, failCommit: undefined as SwitchError | undefined, hangCommit: false,
      };
      const driver: SwitchDriver = {
        open: async () => {
          sim.logins++;
          const op = async () => undefined;
          // A logout cuts a call still running (the drivers' contract).
          let cut: (err: Error) => void = () => undefined;
          return {
            get uncommitted() { return new Set(sim.staged.keys()); },
            setNative: async (p: string, v: number) => { sim.staged.set(p, v); },
            removeNative: op, addTagged: op, removeTagged: op, resetPort: op,
            getPortVlans: async (p: string) => ({ native: sim.applied.get(p) ?? null, tagged: [] }),
            commit: async () => {
              await sleep(5);
              if (sim.hangCommit) await new Promise((_, reject) => { cut = reject; });
              if (sim.failCommit) { sim.staged = new Map(); throw sim.failCommit; }
              sim.commits++;
              for (const [p, v] of sim.staged) sim.applied.set(p, v);
              sim.staged = new Map();
              return new Map<string, string>();
            },
            close: async () => { sim.logouts++; sim.staged = new Map(); cut(new SwitchError('switch a: the session was closed during the commit')); },
          };
        },
      };
      const s = new SwitchSessions(() => driver, timeoutMs);
      return { sim, s };
    };
    const outcome = (p: Promise<void>) => p.then(() => null, (e: SwitchError) => e);

    /** A drift audit's batch that logged in and read a port. */
    const audit = async (s: SwitchSessions) => {
      const batch = s.batch('a');
      await s.submit(sw('a'), async () => undefined, { batch: batch.id, what: 'logging in' });
      await s.submit(sw('a'), async (x) => { await x.getPortVlans('p9'); }, { batch: batch.id });
      // The switch idle, its session kept open for the batch.
      await sleep(10);
      return batch;
    };

    it('commits an operation queued just before the batch ends, then logs out', async () => {
      const { sim, s } = candidate();
      const batch = await audit(s);
      const op = s.submit(sw('a'), (x) => x.setNative('p1', 100));
      s.endBatch(batch);
      expect(await outcome(op)).to.equal(null);
      expect(sim.applied.get('p1')).to.equal(100);
      expect(sim.commits).to.equal(1);
      await sleep(20);
      expect(sim.logins).to.equal(1);
      expect(sim.logouts).to.equal(1);
    });

    it('fails the operation with the reason of the closing commit when that commit fails', async () => {
      const { sim, s } = candidate();
      const batch = await audit(s);
      sim.failCommit = new SwitchError('switch a: the commit was refused; nothing was applied', { nothingSent: true });
      const op = s.submit(sw('a'), (x) => x.setNative('p1', 100));
      s.endBatch(batch);
      const err = await outcome(op);
      expect(err).to.be.instanceOf(SwitchError);
      expect(err!.message).to.equal('switch a: the commit was refused; nothing was applied');
      expect(err!.nothingSent).to.equal(true);
      expect(sim.applied.has('p1')).to.equal(false);
      await sleep(20);
      expect(sim.logouts, 'the session dropped after the failed commit').to.equal(1);
      // The next operation logs in again and is applied.
      sim.failCommit = undefined;
      expect(await outcome(s.submit(sw('a'), (x) => x.setNative('p2', 200)))).to.equal(null);
      expect(sim.logins).to.equal(2);
      expect(sim.applied.get('p2')).to.equal(200);
    });

    it('fails the operation when the closing commit runs out of time, the session dropped', async () => {
      const { sim, s } = candidate(100);
      const batch = await audit(s);
      sim.hangCommit = true;
      const op = s.submit(sw('a'), (x) => x.setNative('p1', 100));
      s.endBatch(batch);
      const err = await outcome(op);
      expect(err).to.be.instanceOf(SwitchError);
      expect(err!.message).to.equal('switch a: the session was closed during the commit');
      expect(sim.logouts).to.equal(1);
      sim.hangCommit = false;
      expect(await outcome(s.submit(sw('a'), (x) => x.setNative('p2', 200)))).to.equal(null);
      expect(sim.logins).to.equal(2);
    });

    it('leaves the commit to a call queued behind the closing call, one commit for both', async () => {
      const { sim, s } = candidate();
      const batch = await audit(s);
      const first = s.submit(sw('a'), (x) => x.setNative('p1', 100));
      s.endBatch(batch);
      const second = s.submit(sw('a'), (x) => x.setNative('p2', 200));
      expect(await Promise.all([outcome(first), outcome(second)])).to.deep.equal([null, null]);
      expect(sim.commits).to.equal(1);
      expect([sim.applied.get('p1'), sim.applied.get('p2')]).to.deep.equal([100, 200]);
      await sleep(20);
      expect(sim.logins).to.equal(1);
      expect(sim.logouts).to.equal(1);
    });

    it('commits the staged change even when a batch begun meanwhile keeps the session open', async () => {
      const { sim, s } = candidate();
      const batch = await audit(s);
      const op = s.submit(sw('a'), (x) => x.setNative('p1', 100));
      s.endBatch(batch);
      const next = s.batch('a');
      expect(await outcome(op)).to.equal(null);
      expect(sim.applied.get('p1')).to.equal(100);
      await sleep(20);
      expect(sim.logouts, 'the session kept for the next batch').to.equal(0);
      await s.submit(sw('a'), async (x) => { await x.getPortVlans('p1'); }, { batch: next.id });
      s.endBatch(next);
      await sleep(20);
      expect([sim.logins, sim.logouts]).to.deep.equal([1, 1]);
    });
  });

  it('gives a logout a signal that aborts at the timeout, for the save before it', async () => {
    let got: AbortSignal | undefined;
    const d: SwitchDriver = {
      open: async () => {
        const op = async () => undefined;
        return { setNative: op, removeNative: op, addTagged: op, removeTagged: op, resetPort: op, getPortVlans: async () => ({ native: null, tagged: [] }),
          close: async (signal?: AbortSignal) => { got = signal; await new Promise((r) => signal!.addEventListener('abort', r)); } };
      },
    };
    const s = new SwitchSessions(() => d, 100);
    await s.submit(sw('a'), (x) => x.setNative('p', 1));
    await sleep(20);
    expect(got?.aborted).to.equal(false);
    await sleep(200);
    expect(got?.aborted).to.equal(true);
  });
});
