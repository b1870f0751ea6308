/**
 * The lease of active/standby on PostgreSQL (actors/persistence/lease.ts) and the fencing of
 * writes by its token (hilt_write), against a real PostgreSQL the tests start.
 */
import { expect } from 'chai';
import { AddressInfo, connect as connectSocket, createServer, Socket } from 'node:net';
import { join } from 'node:path';
import { Client } from 'pg';
import { FencedError, migrateDatabase, PostgresPersistenceEngine } from '../../../actors/persistence/postgres';
import { HeldLease, LeaseCandidate, readLease } from '../../../actors/persistence/lease';
import type { PersistedEvent } from '../../../actors/persistence/engine';
import { freshDatabase } from '../../helpers/postgres';
import { LEASE_LOCK_CLASS } from '../../../actors/persistence/postgres-schema';

const ev = (key: string, seq: number, data: unknown): PersistedEvent => ({ key, sequenceNumber: seq, data, tags: [], createdAt: Date.now() });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Acquire with a deadline; what is held and the aborts are kept for the afterEach to end. */
const acquirer = (controllers: AbortController[], held: HeldLease[]) => async (c: LeaseCandidate, timeoutMs = 15_000) => {
  const ctl = new AbortController();
  controllers.push(ctl);
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  const l = await c.acquire(ctl.signal);
  clearTimeout(timer);
  if (l) held.push(l);
  return l;
};

describe('PostgreSQL lease and fencing', () => {
  let url: string;
  const held: HeldLease[] = [];
  const engines: PostgresPersistenceEngine[] = [];
  const controllers: AbortController[] = [];
  beforeEach(async () => {
    url = await freshDatabase();
    await migrateDatabase({ url });
  });
  afterEach(async () => {
    for (const c of controllers.splice(0)) c.abort();
    for (const l of held.splice(0)) l.lose('test over');
    for (const e of engines.splice(0)) await e.close();
  });

  const candidate = (holder: string, ttlMs: number, opts: { renewMs?: number; pollMs?: number } = {}) => new LeaseCandidate({ url }, { holder, ttlMs, ...opts });
  const acquire = acquirer(controllers, held);
  const engine = (fence?: number, onFenced?: (e: FencedError) => void) => {
    const e = new PostgresPersistenceEngine({ url, poolSize: 1 }, { fence, onFenced });
    engines.push(e);
    return e;
  };

  it('is not taken over as lapsed when its holder renews between the look and the takeover', async () => {
    // a holds it and stops renewing (its renewals are far apart), its session open (a paused
    // process, which does not look at its clock): the lease lapses.
    const a = (await acquire(new LeaseCandidate({ url }, { holder: 'a', ttlMs: 300, renewMs: 60_000, selfCheck: false })))!;
    await sleep(400);
    const b = candidate('b', 300);
    const client = new Client({ connectionString: url });
    await client.connect();
    const renewer = new Client({ connectionString: url });
    await renewer.connect();
    const tryAcquire = (b as unknown as { tryAcquire(c: Client): Promise<HeldLease | null> }).tryAcquire.bind(b);
    try {
      // b sees a's last renewal, and sees it unchanged a TTL later (lapsed)…
      expect(await tryAcquire(client)).to.equal(null);
      await sleep(400);
      // …then a's renewal lands between that look and b's compare-and-set.
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      let looks = 0;
      (client as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = async (...args: unknown[]) => {
        const r = await query(...args);
        if (looks++ === 0) await renewer.query('UPDATE hilt_lease SET renewed_at = now() WHERE id = 1 AND token = $1', [a.token]);
        return r;
      };
      const took = await tryAcquire(client);
      if (took) held.push(took);
      expect(looks, 'b looked, then tried its compare-and-set').to.equal(2);
      expect(took, 'b took over a lease its holder had just renewed').to.equal(null);
      expect((await readLease({ url })).holder).to.equal('a');
    } finally {
      await client.end().catch(() => undefined);
      await renewer.end();
    }
  });

  it('gives the lease to one candidate at a time, with a new fencing token each time', async () => {
    const a = (await acquire(candidate('a', 2000)))!;
    expect(a.token).to.equal(1);
    expect(a.held()).to.equal(true);
    // b polls but cannot get it while a renews.
    const ctl = new AbortController();
    const b = candidate('b', 2000).acquire(ctl.signal);
    await sleep(2500);
    ctl.abort();
    expect(await b).to.equal(null);
    expect((await readLease({ url })).holder).to.equal('a');
    await a.release();
    const c = (await acquire(candidate('c', 2000), 3000))!;
    expect(c.token).to.equal(2);
    expect(await a.lost).to.equal('released');
  });

  it('refuses every write of a holder whose lease was taken over, in the transaction itself', async () => {
    // a renews far too rarely: as if it were paused past its TTL.
    const a = (await acquire(candidate('a', 600, { renewMs: 60_000 })))!;
    let fenced: FencedError | undefined;
    const ea = engine(a.token, (e) => (fenced = e));
    await ea.persist([ev('node:x', 1, 'by a')]);
    const started = Date.now();
    const b = (await acquire(candidate('b', 600)))!;
    expect(Date.now() - started).to.be.at.least(300);
    expect(b.token).to.equal(a.token + 1);
    // a's engine still writes with a's token (a has not looked at its lease): refused.
    let err: Error | undefined;
    await ea.persist([ev('node:x', 2, 'by a, too late')]).catch((e: Error) => (err = e));
    expect(err).to.be.instanceOf(FencedError);
    expect(fenced).to.equal(err);
    // and so is every later one, without a round trip.
    await ea.takeSnapshot({ key: 'node:x', sequenceNumber: 1, data: 'snap', createdAt: 0 }).then(() => expect.fail('written'), (e) => expect(e).to.equal(err));
    const eb = engine(b.token);
    await eb.persist([ev('node:x', 2, 'by b')]);
    const events: unknown[] = [];
    for await (const e of eb.events('node:x')) events.push(e.data);
    expect(events).to.deep.equal(['by a', 'by b']);
    // a's own clock tells it too.
    expect(a.held()).to.equal(false);
  });

  it('refuses journal retention\'s prune of a holder whose lease was taken over: nothing leaves the store', async () => {
    const a = (await acquire(candidate('a', 600, { renewMs: 60_000 })))!;
    await engine(a.token).persist([ev('node:old', 1, 'by a')]);
    const b = (await acquire(candidate('b', 600)))!;
    // A fresh engine with a's token: no refusal remembered, the database itself refuses.
    let fenced: FencedError | undefined;
    await engine(a.token, (e) => (fenced = e)).prune([{ key: 'node:old', upTo: 1 }]).then(() => expect.fail('pruned'), (e) => expect(e).to.be.instanceOf(FencedError));
    expect(fenced).to.be.instanceOf(FencedError);
    const eb = engine(b.token);
    expect(await eb.head('node:old')).to.equal(1);
    expect(await eb.prune([{ key: 'node:old', upTo: 1 }])).to.deep.equal({ events: 1, keys: 1 });
  });

  it('makes a takeover wait for a write in flight, and refuses writes after it', async () => {
    const a = (await acquire(candidate('a', 500, { renewMs: 60_000 })))!;
    // A write of a's in flight: its transaction holds the lease row's KEY SHARE lock.
    const w = new Client({ connectionString: url });
    await w.connect();
    await w.query('BEGIN');
    await w.query("SELECT hilt_write($1, $2, NULL)", [a.token, JSON.stringify([{ k: 'node:y', s: 1, c: 0, t: null, d: 'in flight' }])]);
    let taken = false;
    const b = acquire(candidate('b', 500)).then((l) => ((taken = true), l));
    await sleep(1500);
    expect(taken, 'taken over while a write of the old holder was in flight').to.equal(false);
    await w.query('COMMIT');
    const lb = (await b)!;
    expect(lb.token).to.equal(a.token + 1);
    await w.query("SELECT hilt_write($1, $2, NULL)", [a.token, JSON.stringify([{ k: 'node:y', s: 2, c: 0, t: null, d: 'late' }])])
      .then(() => expect.fail('written'), (e: { code?: string }) => expect(e.code).to.equal('HL001'));
    const rows = (await w.query("SELECT data FROM hilt_events WHERE key = 'node:y' ORDER BY seq")).rows.map((r) => r.data);
    expect(rows).to.deep.equal(['in flight']);
    await w.end();
  });

  it('is taken over at once when its holder\'s session is gone (a killed process), after the TTL when the holder only stops renewing', async () => {
    const ttl = 4000;
    const a = (await acquire(candidate('a', ttl, { renewMs: 60_000 })))!;
    // Stopped renewing but alive (paused): b waits for the TTL.
    let started = Date.now();
    const b = (await acquire(candidate('b', ttl)))!;
    expect(Date.now() - started).to.be.at.least(ttl - 1000);
    a.lose('test');
    // b's session ends abruptly, as when its process is killed: its advisory lock goes with it.
    const admin = new Client({ connectionString: url });
    await admin.connect();
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'hilt lease' AND pid <> pg_backend_pid()");
    await admin.end();
    started = Date.now();
    const c = (await acquire(candidate('c', ttl)))!;
    expect(Date.now() - started).to.be.below(ttl - 1000);
    expect(c.token).to.equal(b.token + 1);
    expect(await b.lost).to.match(/connection that holds the lease/);
  });

  it('stops holding as soon as a renewal finds another token, and when its validity runs out', async () => {
    const a = (await acquire(candidate('a', 5000, { renewMs: 100 })))!;
    await sleep(300);
    expect(a.held()).to.equal(true);
    // Another process took it over (as its compare-and-set does).
    const admin = new Client({ connectionString: url });
    await admin.connect();
    await admin.query("UPDATE hilt_lease SET token = token + 1, holder = 'other', renewed_at = now()");
    await admin.end();
    const t = Date.now();
    expect(await a.lost).to.equal('another hilt process took the lease over');
    expect(Date.now() - t).to.be.below(2000);
    expect(a.held()).to.equal(false);
    // A holder that cannot renew (here: never renews) stops believing in it after its TTL.
    const b = (await acquire(candidate('b', 400, { renewMs: 60_000, pollMs: 50 })))!;
    expect(b.held()).to.equal(true);
    await sleep(600);
    expect(b.held()).to.equal(false);
  });
});

describe('PostgreSQL lease whose validity runs out', () => {
  it('is lost (the service steps down, its consoles end) as its validity ends, not at its next renewal', async function () {
    this.timeout(20_000);
    const url = await freshDatabase();
    await migrateDatabase({ url });
    // Renewals far apart: none comes before the validity ends (as when they fail).
    const a = (await new LeaseCandidate({ url }, { holder: 'a', ttlMs: 1000, renewMs: 5000 }).acquire())!;
    try {
      const lost = a.lost.then(() => performance.now());
      while (a.held()) await sleep(5);
      const lapsedAt = performance.now();
      const at = await Promise.race([lost, sleep(3000).then(() => Infinity)]);
      expect(at - lapsedAt, 'lost this long after its validity ended').to.be.below(200);
    } finally {
      a.lose('test over');
    }
  });
});

describe('PostgreSQL lease and the database\'s clock', () => {
  let url: string;
  const held: HeldLease[] = [];
  const controllers: AbortController[] = [];
  beforeEach(async () => {
    url = await freshDatabase();
    await migrateDatabase({ url });
  });
  afterEach(() => {
    for (const c of controllers.splice(0)) c.abort();
    for (const l of held.splice(0)) l.lose('test over');
  });
  const acquire = acquirer(controllers, held);
  const admin = async (text: string, params: unknown[] = []) => {
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      return (await c.query(text, params)).rows;
    } finally {
      await c.end();
    }
  };

  it('a step forward of the database\'s clock does not give a live, renewing holder\'s lease to a standby', async function () {
    this.timeout(20_000);
    const a = (await acquire(new LeaseCandidate({ url }, { holder: 'a', ttlMs: 2000, renewMs: 400 })))!;
    const b = new LeaseCandidate({ url }, { holder: 'b', ttlMs: 2000, pollMs: 20 });
    const ctl = new AbortController();
    controllers.push(ctl);
    const b2: { got: HeldLease | null } = { got: null };
    const taking = b.acquire(ctl.signal).then((l) => {
      b2.got = l;
      if (l) held.push(l);
    });
    // The database's clock jumps an hour ahead: a's last renewal now looks an hour old to it.
    // a goes on renewing every 400 ms, its own (monotonic) clock unmoved.
    for (let i = 0; i < 4 && !b2.got; i++) {
      await sleep(300);
      await admin("UPDATE hilt_lease SET renewed_at = now() - interval '1 hour' WHERE id = 1");
      await sleep(100);
      const g = b2.got as HeldLease | null;
      if (g) expect(a.held() && g.mayAct(), 'a and b both acting').to.equal(false);
    }
    await sleep(300);
    ctl.abort();
    await taking;
    expect(b2.got, 'b took the lease of a holder that renews').to.equal(null);
    expect(a.held()).to.equal(true);
  });

  it('a step back of the database\'s clock does not keep a standby waiting longer than the TTL for a holder that stopped renewing', async function () {
    this.timeout(20_000);
    const ttl = 1000;
    // a stops renewing (a vanished machine: its session stays open) after a renewal that, by the
    // database's clock, lies an hour in the future (its clock was stepped back since).
    const a = (await acquire(new LeaseCandidate({ url }, { holder: 'a', ttlMs: ttl, renewMs: 60_000, selfCheck: false })))!;
    await admin("UPDATE hilt_lease SET renewed_at = now() + interval '1 hour' WHERE id = 1");
    const t = Date.now();
    const b = await acquire(new LeaseCandidate({ url }, { holder: 'b', ttlMs: ttl, pollMs: 50 }), 6000);
    expect(b, 'b took the lease within the TTL and a few polls').to.not.equal(null);
    expect(Date.now() - t).to.be.below(ttl + 2000);
    expect(a.reason, 'a\'s session was still open').to.equal(undefined);
    expect(b!.mayAct()).to.equal(true);

    // b's session ends (killed) after a renewal an hour ahead by the database's clock: c takes
    // over at once and waits no longer than the TTL before it acts.
    await admin("UPDATE hilt_lease SET renewed_at = now() + interval '1 hour' WHERE id = 1");
    b!.lose('killed');
    const c = (await acquire(new LeaseCandidate({ url }, { holder: 'c', ttlMs: ttl, pollMs: 50 }), 6000))!;
    expect(c, 'c took the lease').to.not.equal(null);
    expect(c.holdOffMs, 'c acts within the TTL').to.be.at.most(ttl);
  });

  it('a takeover of a gone session does not start acting before the holder\'s last renewal ends, one that landed after the look', async () => {
    const ttl = 2000;
    const a = (await acquire(new LeaseCandidate({ url }, { holder: 'a', ttlMs: ttl, renewMs: 60_000 })))!;
    await sleep(1200);
    const b = new LeaseCandidate({ url }, { holder: 'b', ttlMs: ttl });
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      // b looks; then a renews (its view now lasts the TTL from here) and its session's advisory
      // lock goes (the database ended its session: a, cut off, does not know), before b's takeover.
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      let looks = 0;
      (client as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = async (...args: unknown[]) => {
        const r = await query(...args);
        if (looks++ === 0) {
          await (a as unknown as { tick(): Promise<void> }).tick();
          await (a as unknown as { client: Client }).client.query('SELECT pg_advisory_unlock_all()');
        }
        return r;
      };
      const took = await (b as unknown as { tryAcquire(c: Client): Promise<HeldLease | null> }).tryAcquire(client);
      if (took) held.push(took);
      expect(a.held()).to.equal(true);
      // Either b did not take it, or it acts no sooner than a's view of its lease ends.
      if (took) expect(took.holdOffMs, 'b acts while a still believes it holds the lease').to.be.at.least(ttl - 300);
    } finally {
      await client.end().catch(() => undefined);
    }
  });
});

describe('PostgreSQL lease on a connection that stops answering', () => {
  let url: string;
  let socketDir: string;
  const done: (() => void)[] = [];
  beforeEach(async () => {
    url = await freshDatabase();
    socketDir = new URL(url).searchParams.get('host')!;
    await migrateDatabase({ url });
  });
  afterEach(() => {
    for (const d of done.splice(0)) d();
  });

  /**
   * A TCP relay to the server's socket on loopback; hang() makes every connection open now stop
   * passing anything either way (a database machine gone, a VIP moved away), without closing it,
   * while new connections pass (the database answers at the URL again).
   */
  async function relay(): Promise<{ url: string; hang(): void; holdAnswers(): void; close(): void }> {
    const open = new Set<{ a: Socket; b: Socket }>();
    const server = createServer((a) => {
      const b = connectSocket(join(socketDir, '.s.PGSQL.5432'));
      const pair = { a, b };
      open.add(pair);
      a.pipe(b);
      b.pipe(a);
      const end = () => {
        open.delete(pair);
        a.destroy();
        b.destroy();
      };
      a.on('error', end).on('close', end);
      b.on('error', end).on('close', end);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const db = new URL(url).pathname;
    return {
      url: `postgresql://hilt@127.0.0.1:${port}${db}`,
      hang() {
        for (const { a, b } of open) {
          a.unpipe(b);
          b.unpipe(a);
          a.pause();
          b.pause();
        }
        open.clear();
      },
      /** The server's answers on every connection open now stop reaching the client; what the client sends still passes. */
      holdAnswers() {
        for (const { a, b } of open) {
          b.unpipe(a);
          b.pause();
        }
      },
      close() {
        server.close();
      },
    };
  }

  it('a standby whose connection hangs still takes the lease over, on a new connection', async function () {
    this.timeout(30_000);
    const r = await relay();
    done.push(() => r.close());
    const a = (await new LeaseCandidate({ url }, { holder: 'a', ttlMs: 1000 }).acquire())!;
    done.push(() => a.lose('test over'));
    const ctl = new AbortController();
    done.push(() => ctl.abort());
    const b = new LeaseCandidate({ url: r.url }, { holder: 'b', ttlMs: 1000, pollMs: 50 }).acquire(ctl.signal);
    // b looks at the lease through the relay; then its connection stops answering.
    await sleep(300);
    r.hang();
    await sleep(100);
    a.lose('the holder went away');
    const timer = setTimeout(() => ctl.abort(), 10_000);
    const got = await b;
    clearTimeout(timer);
    expect(got, 'b took the lease over').to.not.equal(null);
    got!.lose('test over');
    expect((await readLease({ url })).holder).to.equal('b');
  });

  it('a holder that releases its lease acts no more from the moment it asks, not once the database answers: a standby takes a released lease and acts at once', async function () {
    this.timeout(30_000);
    const r = await relay();
    done.push(() => r.close());
    const a = (await new LeaseCandidate({ url: r.url }, { holder: 'a', ttlMs: 5000, renewMs: 60_000 }).acquire())!;
    done.push(() => a.lose('test over'));
    // The release reaches the database and commits, but its answer is slow to come back.
    r.holdAnswers();
    void a.release();
    const ctl = new AbortController();
    done.push(() => ctl.abort());
    const timer = setTimeout(() => ctl.abort(), 10_000);
    const b = await new LeaseCandidate({ url }, { holder: 'b', ttlMs: 5000, pollMs: 50 }).acquire(ctl.signal);
    clearTimeout(timer);
    expect(b, 'b took the released lease').to.not.equal(null);
    done.push(() => b!.lose('test over'));
    expect(b!.mayAct(), 'b acts at once').to.equal(true);
    expect(a.mayAct(), 'a, which released it, still acting').to.equal(false);
  });

  it('a lease taken over at once (its holder\'s session gone) gives no hardware calls until the holder\'s own view of it ends', async function () {
    this.timeout(30_000);
    const r = await relay();
    done.push(() => r.close());
    // a holds the lease through the relay; then the database ends a's session while a, cut off,
    // hears nothing of it (a partition, a proxy): a believes it holds the lease until its TTL.
    const a = (await new LeaseCandidate({ url: r.url }, { holder: 'a', ttlMs: 2000, renewMs: 200 }).acquire())!;
    done.push(() => a.lose('test over'));
    await sleep(300);
    r.hang();
    const admin = new Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1", [LEASE_LOCK_CLASS]);
    } finally {
      await admin.end();
    }
    const ctl = new AbortController();
    done.push(() => ctl.abort());
    const timer = setTimeout(() => ctl.abort(), 10_000);
    const b = await new LeaseCandidate({ url }, { holder: 'b', ttlMs: 2000, pollMs: 50 }).acquire(ctl.signal);
    clearTimeout(timer);
    expect(b, 'b took the lease over').to.not.equal(null);
    done.push(() => b!.lose('test over'));
    expect(a.held(), 'a still believes it holds the lease').to.equal(true);
    expect(b!.held(), 'b holds it: its writes go through').to.equal(true);
    expect(b!.holdOffMs, 'b waits for the rest of a\'s TTL').to.be.above(500);
    // Never both: a acting by its own clock while b may act.
    const deadline = Date.now() + 5000;
    while (!b!.mayAct()) {
      expect(a.held() && b!.mayAct(), 'a and b both acting').to.equal(false);
      expect(Date.now(), 'b may act within the TTL').to.be.below(deadline);
      await sleep(10);
    }
    expect(a.held(), 'a no longer believes it holds the lease once b acts').to.equal(false);
  });
});
