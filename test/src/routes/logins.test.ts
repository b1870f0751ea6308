/**
 * Logins (issue 11 items 5 and 6): throttling per user name (429 with Retry-After, growing
 * locks with a cap, never for good), failures logged without the password, the same cost for a
 * wrong password and an unknown name, and a flood of bad logins that leaves reads responsive.
 */
import { expect } from 'chai';
import { Agent, request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, basic } from '../../helpers/server';
import { startServerProcess } from '../../helpers/process';
import { loggerOptions } from '../../../src/redact';
import { LoginThrottle } from '../../../src/auth/throttle';
import { hashPassword, Limiter, SCRYPT_IN_FLIGHT, scryptSlots } from '../../../src/auth/password';
import { Authenticator } from '../../../src/auth/basic';
import type { UserState } from '../../../actors/user/protocol';
import type { ReadModel } from '../../../actors/readmodel';
import { HiltError } from '../../../src/errors';
import { spyScrypt } from '../../helpers/scrypt-spy';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('login throttling (LoginThrottle, a fake clock)', () => {
  let now = 0;
  const clock = () => now;

  it('locks a name after 10 failures within a minute for 60 s, then 120, 240 and at most 300 s', () => {
    now = 1_000_000;
    const t = new LoginThrottle({ now: clock });
    for (const expected of [60, 120, 240, 300, 300]) {
      for (let i = 1; i < 10; i++) {
        expect(t.fail('alice')).to.deep.equal({ failures: i });
        now += 1000;
      }
      expect(t.fail('alice')).to.deep.equal({ failures: 10, lockedForMs: expected * 1000 });
      expect(t.retryAfter('alice')).to.equal(expected);
      expect(t.retryAfter('bob'), 'another name').to.equal(null);
      now += expected * 1000 - 1;
      expect(t.retryAfter('alice')).to.equal(1);
      now += 1;
      // The lock ended: the name may try again (a correct password works).
      expect(t.retryAfter('alice')).to.equal(null);
    }
  });

  it('does not lock for failures spread beyond the minute; a success or 15 quiet minutes start the name afresh', () => {
    now = 0;
    const t = new LoginThrottle({ now: clock });
    for (let i = 0; i < 30; i++) {
      expect(t.fail('slow').lockedForMs).to.equal(undefined);
      now += 6_700;
    }
    for (let i = 0; i < 10; i++) t.fail('a');
    now += 60_000;
    for (let i = 0; i < 10; i++) t.fail('a');
    expect(t.retryAfter('a')).to.equal(120);
    now += 120_000;
    t.succeed('a');
    for (let i = 0; i < 9; i++) t.fail('a');
    expect(t.fail('a').lockedForMs, 'afresh after a success').to.equal(60_000);
    now += 60_000 + 15 * 60_000 + 1;
    for (let i = 0; i < 9; i++) t.fail('a');
    expect(t.fail('a').lockedForMs, 'afresh after 15 quiet minutes').to.equal(60_000);
  });

  it('keeps a bounded table: names that are not locked go first', () => {
    now = 0;
    const t = new LoginThrottle({ now: clock, maxNames: 100 });
    for (let i = 0; i < 10; i++) t.fail('target');
    for (let i = 0; i < 1000; i++) t.fail(`spray-${i}`);
    expect(t.size).to.equal(100);
    expect(t.retryAfter('target')).to.equal(60);
    // A name longer than any user's is kept as a digest, not as it came.
    t.fail('x'.repeat(100_000));
    expect(t.size).to.equal(100);
  });

  it('caps scrypt work in flight and refuses at once past the waiting line (503)', async () => {
    const l = new Limiter(2, 3);
    let running = 0;
    let most = 0;
    const job = () => l.run(async () => {
      most = Math.max(most, ++running);
      await sleep(10);
      running--;
    });
    const jobs = Array.from({ length: 5 }, job);
    const refused = await job().catch((e: HiltError) => e);
    expect(refused).to.be.instanceOf(HiltError);
    expect((refused as HiltError).type).to.equal('ServiceUnavailableError');
    await Promise.all(jobs);
    expect(most).to.equal(2);
    expect(l.inFlight).to.equal(0);
    expect(SCRYPT_IN_FLIGHT).to.be.within(1, 4);
  });
});

describe('logins over HTTP', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  const lines: string[] = [];
  const alice = { user: 'alice', password: 'alice-right-pw' };

  before(async () => {
    ts = await startTestServer(
      { loginMaxFailures: 10, loginLockMs: 1500, loginLockMaxMs: 4000, logLevel: 'info' },
      { logger: loggerOptions('info', { write: (l: string) => void lines.push(l) }) },
    );
    api = ts.api;
    await makeUser(api, alice.user, alice.password);
    await makeUser(api, 'bob', 'bob-pw');
  });
  after(() => stopTestServer(ts));

  it('answers 429 with Retry-After after 10 failed logins for one name, for that name only; the right password works after the lock', async () => {
    const wrong = Array.from({ length: 10 }, (_, i) => `alice-wrong-${i}`);
    for (const password of wrong) expect((await api.with({ user: 'alice', password }).get('/nodes/all')).status).to.equal(401);
    const locked = await api.with(alice).get('/nodes/all');
    expect(locked.status, locked.text).to.equal(429);
    expect(locked.body).to.deep.include({ type: 'TooManyRequestsError' });
    expect(Number(locked.headers['retry-after'])).to.be.within(1, 2);
    // Other names are not touched.
    expect((await api.with({ user: 'bob', password: 'bob-pw' }).get('/nodes/all')).status).to.equal(200);
    expect((await api.get('/nodes/all')).status).to.equal(200);
    // A name that is not a user is throttled alike (a 429 tells nothing about which names exist).
    for (let i = 0; i < 10; i++) expect((await api.with({ user: 'ghost', password: `g${i}` }).get('/nodes/all')).status).to.equal(401);
    expect((await api.with({ user: 'ghost', password: 'g' }).get('/nodes/all')).status).to.equal(429);

    await sleep(1600);
    expect((await api.with(alice).get('/nodes/all')).status).to.equal(200);
    // A success starts the name afresh; the next lock after repeated failures lasts longer.
    for (let i = 0; i < 10; i++) await api.with({ user: 'alice', password: `again-${i}` }).get('/nodes/all');
    expect((await api.with(alice).get('/nodes/all')).status).to.equal(429);
    await sleep(1600);
    for (let i = 0; i < 10; i++) await api.with({ user: 'alice', password: `third-${i}` }).get('/nodes/all');
    const longer = await api.with(alice).get('/nodes/all');
    expect(longer.status).to.equal(429);
    expect(Number(longer.headers['retry-after']), 'the second lock in a row: twice the first').to.be.within(2, 3);
    await sleep(3100);
    expect((await api.with(alice).get('/nodes/all')).status, 'never locked for good').to.equal(200);

    // Every failure is logged, with the name and never a password.
    const failed = lines.filter((l) => l.includes('"login failed"')).map((l) => JSON.parse(l));
    expect(failed.length).to.be.at.least(20);
    expect(failed[0]).to.include({ user: '"alice"', level: 40 });
    expect(lines.some((l) => l.includes('its logins are refused for a while'))).to.equal(true);
    for (const l of lines) {
      for (const secret of [alice.password, 'bob-pw', ...wrong, 'again-3', 'third-9']) expect(l).to.not.include(secret);
      expect(l).to.not.include(basic(alice).slice(6));
    }
  });

  it('a remembered credential is refused too while its name is locked (no 200 for a right guess during a lock)', async () => {
    await makeUser(api, 'carol', 'carol-pw');
    const carol = api.with({ user: 'carol', password: 'carol-pw' });
    await must(carol.get('/nodes/all'));
    for (let i = 0; i < 10; i++) await api.with({ user: 'carol', password: `x${i}` }).get('/nodes/all');
    expect((await carol.get('/nodes/all')).status).to.equal(429);
    await sleep(1600);
    await must(carol.get('/nodes/all'));
  });

  it('a remembered credential or a token used meanwhile does not forgive the failures of a guesser who has not locked the name yet', async () => {
    await makeUser(api, 'gus', 'gus-pw');
    const gus = api.with({ user: 'gus', password: 'gus-pw' });
    await must(gus.get('/nodes/all'));
    const token = (await must(gus.post('/auth/tokens', {}))).body.token as string;
    const owner = api.with({ token });
    // Nine guesses, each followed by the owner's requests: the tenth still locks the name.
    for (let i = 0; i < 9; i++) {
      expect((await api.with({ user: 'gus', password: `gus-x${i}` }).get('/nodes/all')).status).to.equal(401);
      await must(gus.get('/nodes/all'));
      await must(owner.get('/nodes/all'));
    }
    expect((await api.with({ user: 'gus', password: 'gus-x9' }).get('/nodes/all')).status).to.equal(401);
    expect((await gus.get('/nodes/all')).status).to.equal(429);
    await sleep(1600);
    await must(gus.get('/nodes/all'));
  });

  it('requests that bring the same credential at once share one scrypt (after a restart every client comes at once); a shared failure counts for each', async () => {
    await makeUser(api, 'dave', 'dave-pw');
    const run = scryptSlots.run.bind(scryptSlots);
    let scrypts = 0;
    scryptSlots.run = (f) => {
      scrypts++;
      return run(f);
    };
    try {
      const dave = api.with({ user: 'dave', password: 'dave-pw' });
      const answers = await Promise.all(Array.from({ length: 16 }, () => dave.get('/nodes/all')));
      expect(answers.map((r) => r.status)).to.deep.equal(answers.map(() => 200));
      expect(scrypts, 'one verification for 16 requests').to.equal(1);
      // Ten identical wrong guesses at once: one scrypt, ten failures, so the name is locked.
      scrypts = 0;
      const wrong = await Promise.all(Array.from({ length: 10 }, () => api.with({ user: 'dave', password: 'dave-guess' }).get('/nodes/all')));
      expect(wrong.map((r) => r.status)).to.deep.equal(wrong.map(() => 401));
      expect(scrypts).to.equal(1);
      expect((await dave.get('/nodes/all')).status, 'locked after ten failures').to.equal(429);
    } finally {
      scryptSlots.run = run;
    }
  });
});

describe('a password replaced while a login with it is being verified (Authenticator)', () => {
  const header = (user: string, password: string) => 'Basic ' + Buffer.from(`${user}:${password}`, 'utf8').toString('base64');
  const authenticator = (users: Map<string, UserState>) => new Authenticator({ users, tokenOwners: new Map<string, string>() } as unknown as ReadModel);
  const outcome = (p: Promise<unknown>) => p.then(() => 'ok', () => 'refused');

  it('the old password is refused once the user is created again with a new one, also by requests that were verifying it, and is remembered for nothing', async () => {
    const oldHash = await hashPassword('old-leaked-pw');
    const newHash = await hashPassword('new-pw-after-reset');
    const users = new Map<string, UserState>([['carol', { name: 'carol', passwordHash: oldHash, isAdmin: true, projects: [] }]]);
    const auth = authenticator(users);
    const old = header('carol', 'old-leaked-pw');

    // A request with the old password starts its scrypt (against the old hash)…
    const first = outcome(auth.authenticate(old));
    // …meanwhile the admin deletes carol and creates her again with a new password (the old one leaked)…
    users.set('carol', { name: 'carol', passwordHash: newHash, isAdmin: true, projects: [] });
    // …and another request with the old password arrives while the first is still verifying.
    const second = outcome(auth.authenticate(old));
    expect(await second, 'a request that arrived after the reset').to.equal('refused');
    expect(await first, 'a request whose password matched the hash carol no longer has').to.equal('refused');

    expect(auth.remembered(old), 'the old password is not remembered for the new hash').to.equal(undefined);
    expect(await outcome(auth.authenticate(old)), 'the old password after the reset').to.equal('refused');
    expect((await auth.authenticate(header('carol', 'new-pw-after-reset'))).user).to.equal('carol');
  });

  it('a dashboard login gets the hash its password matched: none when the user went meanwhile, the new one when it came back', async () => {
    const users = new Map<string, UserState>([['dora', { name: 'dora', passwordHash: await hashPassword('dora-pw'), isAdmin: false, projects: ['p'] }]]);
    const auth = authenticator(users);
    const login = outcome(auth.password(header('dora', 'dora-pw')));
    users.delete('dora');
    expect(await login, 'dora was deleted while her password was verified').to.equal('refused');
    // Created again with the same password: a new salt, a new hash, and the login names that one.
    const again: UserState = { name: 'dora', passwordHash: await hashPassword('dora-pw'), isAdmin: false, projects: [] };
    users.set('dora', again);
    const { caller, hash } = await auth.password(header('dora', 'dora-pw'));
    expect(hash).to.equal(again.passwordHash);
    expect(caller.projects).to.deep.equal([]);
    expect((await auth.password(header('dora', 'dora-pw'))).hash, 'remembered: the same hash').to.equal(again.passwordHash);
  });
});

describe('logins cost the same whether the name exists or not, and a flood of them leaves reads responsive', function () {
  this.timeout(120_000);

  it('a wrong password and an unknown name cost the same: one scrypt of the same parameters, finished before the 401', async () => {
    const ts = await startTestServer();
    await makeUser(ts.api, 'dave', 'dave-pw');
    const spy = spyScrypt();
    try {
      // Before: an unknown name was refused without a scrypt (~1.5 ms against ~50).
      const known = await spy.one(() => ts.api.with({ user: 'dave', password: 'not-it' }).get('/nodes/all'), 401);
      const unknown = await spy.one(() => ts.api.with({ user: 'nobody', password: 'not-it' }).get('/nodes/all'), 401);
      expect(unknown).to.equal(known);
    } finally {
      spy.restore();
      await stopTestServer(ts);
    }
  });

  it('32 connections of wrong passwords for 3 s: reads of a logged-in user stay fast (p99 recorded)', async () => {
    const admin = { user: 'root', password: 'root-pw' };
    const dir = mkdtempSync(join(tmpdir(), 'hilt-flood-'));
    const p = await startServerProcess({ HILT_DATA_DIR: dir, HILT_ADMIN_USER: admin.user, HILT_ADMIN_PASSWORD: admin.password, HILT_STORAGE: 'memory' });
    const api = new Client(p.url, admin);
    await must(api.put('/auth/basic/user/erin', { password: 'erin-pw' }));
    for (let i = 0; i < 20; i++) await must(api.put(`/project/fp${i}`));
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const get = (auth: string) => new Promise<number>((resolve, reject) => {
      const req = request(`${p.url}/projects`, { agent, headers: { authorization: auth } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
    const good = basic(admin);
    const measure = async (ms: number) => {
      const lat: number[] = [];
      const end = Date.now() + ms;
      while (Date.now() < end) {
        const t0 = process.hrtime.bigint();
        expect(await get(good)).to.equal(200);
        lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
        await sleep(5);
      }
      lat.sort((a, b) => a - b);
      return { n: lat.length, p50: lat[Math.floor(lat.length * 0.5)], p99: lat[Math.floor(lat.length * 0.99)] };
    };
    await get(good);
    const quiet = await measure(1500);
    let stop = false;
    let bad = 0;
    const flood = Array.from({ length: 32 }, async (_, c) => {
      for (let i = 0; !stop; i++) {
        // existing and unknown names, never the same one twice in a row
        const user = i % 2 ? 'erin' : `nobody-${c}-${i}`;
        const status = await get(basic({ user, password: `wrong-${c}-${i}` }));
        expect(status).to.be.oneOf([401, 503]);
        bad++;
      }
    });
    await sleep(300);
    const loaded = await measure(3000);
    stop = true;
    await Promise.all(flood);
    agent.destroy();
    console.log(`      reads without a flood: p50 ${quiet.p50.toFixed(1)} ms, p99 ${quiet.p99.toFixed(1)} ms (${quiet.n}); during 32 connections of bad logins (${bad} answered): p50 ${loaded.p50.toFixed(1)} ms, p99 ${loaded.p99.toFixed(1)} ms (${loaded.n})`);
    // Generous for a shared 2-core machine (68 ms was seen with four other test runs beside it);
    // a read held behind scrypt work would take seconds. The figure is in docs/reliability.md.
    expect(loaded.p99).to.be.below(Math.max(150, quiet.p99 * 4));
    p.child.kill('SIGTERM');
    await p.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('never runs more scrypt at once than its slots (in-process)', async () => {
    const ts = await startTestServer();
    let most = 0;
    const timer = setInterval(() => (most = Math.max(most, scryptSlots.inFlight)), 1);
    await Promise.all(Array.from({ length: 16 }, (_, i) => ts.api.with({ user: `u${i}`, password: 'x' }).get('/nodes/all')));
    clearInterval(timer);
    expect(most).to.be.within(1, SCRYPT_IN_FLIGHT);
    await stopTestServer(ts);
  });
});
