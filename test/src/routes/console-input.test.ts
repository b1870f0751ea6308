/**
 * Who may type on a live console (HILT_CONSOLE_INPUT), how viewers are told the console ended,
 * and who may start its recording by connecting, against the mock OBM's console (it echoes what
 * reaches the node). The IPMI console itself: test/src/routes/consoles.test.ts.
 */
import { expect } from 'chai';
import WebSocket from 'ws';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, stopTestServer, TestServer, must, makeUser, obm, ADMIN, basic } from '../../helpers/server';
import { sleep, until } from '../../helpers/wait';
import { addSecret } from '../../helpers/secrets';
import { watch } from '../../helpers/console-ws';
import { prepareStream } from '../../../src/routes/consoles';
import { forRead, userCaller } from '../../../src/auth/caller';
import { HiltError } from '../../../actors/errors';

describe('live console input and endings (HILT_CONSOLE_INPUT)', function () {
  this.timeout(60_000);
  const servers: TestServer[] = [];
  after(async () => {
    for (const s of servers) await stopTestServer(s);
  });

  async function server(consoleInput: 'members' | 'admins' | 'none'): Promise<TestServer> {
    const ts = await startTestServer({ consoleInput });
    servers.push(ts);
    await must(ts.api.put('/project/p'));
    await must(ts.api.put('/node/m1', { obm: obm('bmc-m1') }));
    await must(ts.api.post('/project/p/connect_node', { node: 'm1' }));
    await makeUser(ts.api, 'mia', 'mia-pw', ['p']);
    return ts;
  }

  it('members (the default): a member types; admins: only an admin does, a member is told once', async () => {
    const mia = { user: 'mia', password: 'mia-pw' };
    const a = await server('members');
    const w = await watch(a.url, 'm1', mia);
    await until('the banner', () => w.text().includes('mock serial console of bmc-m1'));
    w.send('typed-by-mia\r');
    await until('echoed', () => w.text().includes('typed-by-mia\r\n'));
    w.ws.close();

    const b = await server('admins');
    const m = await watch(b.url, 'm1', mia);
    const root = await watch(b.url, 'm1', ADMIN);
    await until('the banners', () => m.text().includes('mock serial console') && root.text().includes('mock serial console'));
    m.send('from-mia\r');
    m.send('again\r');
    await until('the notice', () => m.text().includes('[hilt] what you type is not sent to the node (HILT_CONSOLE_INPUT=admins)'));
    root.send('from-root\r');
    await until('the admin\'s keys echoed to both', () => m.text().includes('from-root\r\n') && root.text().includes('from-root\r\n'));
    expect(m.text()).not.to.include('from-mia');
    expect(m.text().split('[hilt] what you type').length - 1, 'told once').to.equal(1);
    expect((await b.api.get('/node/m1/console')).text).not.to.include('from-mia');
    m.ws.close();
    root.ws.close();
  });

  it('none: nobody types, an admin neither', async () => {
    const c = await server('none');
    const root = await watch(c.url, 'm1', ADMIN);
    await until('the banner', () => root.text().includes('mock serial console'));
    root.send('nope\r');
    await until('the notice', () => root.text().includes('HILT_CONSOLE_INPUT=none'));
    expect((await c.api.get('/node/m1/console')).text).not.to.include('nope');
    root.ws.close();
  });

  it('a reader of the project reads the log and watches, but starts, stops and types nothing (403); a revoked token is disconnected', async () => {
    const e = await server('members');
    const rita = { user: 'rita', password: 'rita-pw' };
    await must(e.api.put('/auth/basic/user/rita', { password: rita.password }));
    await must(e.api.post('/auth/basic/user/rita/add_project', { project: 'p', role: 'reader' }));
    const reader = e.api.with(rita);
    expect((await reader.call('PUT', '/node/m1/console')).status).to.equal(403);
    // Not recorded yet: watching would start it, a change.
    const refused = await watch(e.url, 'm1', rita).then((w) => { w.ws.close(); return 101; }, (err: { status?: number }) => err.status);
    expect(refused).to.equal(403);
    await must(e.api.with({ user: 'mia', password: 'mia-pw' }).call('PUT', '/node/m1/console'));
    await until('the banner', async () => (await reader.get('/node/m1/console')).text.includes('mock serial console'));
    const w = await watch(e.url, 'm1', rita);
    await until('the log on the stream', () => w.text().includes('mock serial console'));
    w.send('from-rita\r');
    await until('the notice', () => w.text().includes('what you type is not sent to the node'));
    expect((await reader.get('/node/m1/console')).text).not.to.include('from-rita');
    expect((await reader.del('/node/m1/console')).status).to.equal(403);
    w.ws.close();
    // A member's API token: its viewer goes when the token is revoked.
    const made = await must(e.api.with({ user: 'mia', password: 'mia-pw' }).post('/auth/tokens', { project: 'p' }));
    const token = made.body.token as string;
    const t = await watch(e.url, 'm1', null, { authorization: `Bearer ${token}` });
    await until('the log on the token\'s stream', () => t.text().includes('mock serial console'));
    await must(e.api.with({ user: 'mia', password: 'mia-pw' }).del(`/auth/tokens/${made.body.id}`));
    expect((await t.closed).code).to.equal(4403);
  });

  it('a member\'s read-only token watches but types nothing; a frame over 64 KiB ends the connection (1009) and reaches nothing', async () => {
    const g = await server('members');
    const mia = g.api.with({ user: 'mia', password: 'mia-pw' });
    await must(mia.call('PUT', '/node/m1/console'));
    const made = await must(mia.post('/auth/tokens', { project: 'p', read_only: true }));
    const ro = await watch(g.url, 'm1', null, { authorization: `Bearer ${made.body.token as string}` });
    await until('the log on the stream', () => ro.text().includes('mock serial console'));
    ro.send('from-read-only-token\r');
    await until('the notice', () => ro.text().includes('what you type is not sent to the node'));
    ro.ws.close();
    const w = await watch(g.url, 'm1', { user: 'mia', password: 'mia-pw' });
    await until('the banner', () => w.text().includes('mock serial console'));
    w.ws.send(Buffer.alloc(64 * 1024 + 1, 0x62));
    expect((await w.closed).code).to.equal(1009);
    const log = (await mia.get('/node/m1/console')).text;
    expect(log).not.to.include('from-read-only-token');
    expect(log).not.to.include('bbbb');
  });

  it('disconnects a viewer that falls too far behind the output (HILT_CONSOLE_LOG_BYTES + 4 MiB waiting: 4429); the others go on', async () => {
    const h = await server('members');
    const slow = await watch(h.url, 'm1', ADMIN);
    const fast = await watch(h.url, 'm1', ADMIN);
    await until('the banners', () => slow.text().includes('mock serial console') && fast.text().includes('mock serial console'));
    // Reads nothing more: what is sent to it piles up in the kernel's buffers, then in the service's.
    (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    let code: number | undefined;
    void slow.closed.then((c) => (code = c.code));
    // The mock node echoes what is typed: 64 KiB of output per message, until the slow one is dropped.
    for (let i = 0; i < 2000 && h.consoles.viewerCount() === 2; i++) {
      fast.ws.send(Buffer.alloc(64 * 1024, 0x63));
      await sleep(2);
    }
    expect(h.consoles.viewerCount(), 'the slow viewer dropped').to.equal(1);
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await until('the slow viewer\'s close', () => code !== undefined, 20_000);
    expect(code).to.equal(4429);
    fast.send('still-here\r');
    await until('the other viewer goes on', () => fast.text().includes('still-here'), 20_000);
    fast.ws.close();
  });

  it('tells viewers the service stops (close code 1001, with the reason)', async () => {
    const d = await server('members');
    const w = await watch(d.url, 'm1', ADMIN);
    await until('the banner', () => w.text().includes('mock serial console'));
    const closing = d.close();
    expect(await w.closed).to.deep.equal({ code: 1001, reason: 'the service is stopping' });
    await closing;
  });
});

describe('a reader connecting to a console while a member stops its recording', function () {
  this.timeout(60_000);
  let ts: TestServer;
  const mia = { user: 'mia', password: 'mia-pw' };
  const rita = { user: 'rita', password: 'rita-pw' };
  before(async () => {
    ts = await startTestServer({});
    await must(ts.api.put('/project/p'));
    await must(ts.api.put('/node/m1', { obm: obm('bmc-m1') }));
    await must(ts.api.post('/project/p/connect_node', { node: 'm1' }));
    await makeUser(ts.api, mia.user, mia.password, ['p']);
    await must(ts.api.put('/auth/basic/user/rita', { password: rita.password }));
    await must(ts.api.post('/auth/basic/user/rita/add_project', { project: 'p', role: 'reader' }));
  });
  after(() => stopTestServer(ts));

  it('the node actor refuses the reader\'s attach queued behind the stop (403): the recording stays stopped', async () => {
    const hilt = ts.app.hilt;
    const reader = forRead(userCaller(hilt.world.rm.users.get('rita')!));
    await must(ts.api.with(mia).call('PUT', '/node/m1/console'));
    // The stop is in the node's mailbox before the attach, while the committed view still shows
    // the console recorded: the route's own early check passes, the actor's must not.
    const stop = hilt.world.nodes.ask('m1', { type: 'node.stopConsole', by: 'mia', project: 'p' });
    const attach = prepareStream(hilt, reader, 'm1').then(() => undefined, (e: unknown) => e);
    await stop;
    const refused = await attach;
    expect(refused, 'the attach is refused').to.be.instanceOf(HiltError);
    expect((refused as HiltError).type).to.equal('ForbiddenError');
    expect(hilt.world.rm.nodes.get('m1')!.console, 'the recording the member stopped').to.equal(undefined);
    // With the console off from the start, the route refuses before asking the actor.
    const early = await prepareStream(hilt, reader, 'm1').then(() => undefined, (e: unknown) => e);
    expect((early as HiltError).type).to.equal('ForbiddenError');
  });

  it('over HTTP: the reader\'s WebSocket never restarts a recording stopped at the same time', async () => {
    const hilt = ts.app.hilt;
    const member = ts.api.with(mia);
    for (let i = 0; i < 20; i++) {
      await must(member.call('PUT', '/node/m1/console'));
      const [stopped, w] = await Promise.all([
        member.call('DELETE', '/node/m1/console'),
        watch(ts.url, 'm1', rita).catch((e: { status?: number }) => e.status),
      ]);
      expect(stopped.status).to.equal(200);
      if (typeof w === 'object') w.ws.close();
      else expect(w, 'a refused handshake').to.equal(403);
      expect(hilt.world.rm.nodes.get('m1')!.console, `round ${i}: recording restarted by the reader`).to.equal(undefined);
    }
    // A member's viewer still starts it (the rule of PUT …/console).
    const m = await watch(ts.url, 'm1', mia);
    expect(hilt.world.rm.nodes.get('m1')!.console?.by).to.equal('mia');
    m.ws.close();
  });
});

describe('a viewer of the live console whose token ends', function () {
  this.timeout(60_000);
  let ts: TestServer;
  const mia = { user: 'mia', password: 'mia-pw' };
  before(async () => {
    ts = await startTestServer({});
    await must(ts.api.put('/project/p'));
    await must(ts.api.put('/node/m1', { obm: obm('bmc-m1') }));
    await must(ts.api.post('/project/p/connect_node', { node: 'm1' }));
    await makeUser(ts.api, mia.user, mia.password, ['p']);
    await must(ts.api.with(mia).call('PUT', '/node/m1/console'));
  });
  after(() => stopTestServer(ts));

  const token = async (body: object) => {
    const made = (await must(ts.api.with(mia).post('/auth/tokens', body))).body as { id: string; token: string; expires_at: string };
    addSecret(made.token);
    return made;
  };

  it('is disconnected within a second of the token\'s expiry (the API\'s stream and the dashboard\'s), not at the next periodic check', async () => {
    // Two tokens ending 2.5 s apart: whatever the phase of the viewers' check every 5 s, it comes
    // 2.5 s or more after one of the two expiries.
    const first = await token({ expires_in: 2 });
    await sleep(500);
    const second = await token({ expires_in: 4 });
    const login = await must(ts.api.call('POST', '/ui/api/login', { as: null, body: { token: second.token } }));
    const cookie = String([login.headers['set-cookie']].flat()[0]).split(';')[0];
    const viewers = [
      { what: 'the first token', expires: first.expires_at, w: await watch(ts.url, 'm1', null, { authorization: `Bearer ${first.token}` }) },
      { what: 'the second token', expires: second.expires_at, w: await watch(ts.url, 'm1', null, { authorization: `Bearer ${second.token}` }) },
      { what: 'the second token\'s dashboard session', expires: second.expires_at, w: await watch(ts.url, 'm1', null, { cookie, origin: ts.url }, '/ui/api') },
    ];
    const ends = viewers.map(({ w }) => w.closed.then((c) => ({ ...c, at: Date.now() })));
    for (const { w } of viewers) await until('the banner', () => w.text().includes('mock serial console of bmc-m1'));
    for (const [i, { what, expires }] of viewers.entries()) {
      const end = await ends[i];
      expect(end.code, what).to.equal(4403);
      expect(end.at - Date.parse(expires), `${what}: ms from its expiry to its disconnection`).to.be.within(0, 1000);
    }
  });

  it('a token revoked while its viewer connects is never sent the console', async () => {
    const made = await token({});
    // The revocation commits once the node actor recorded the attach, before the stream is served
    // (one that commits before the attach's turn refuses the upgrade: membership-races.test.ts).
    const nodes = ts.app.hilt.world.nodes as unknown as { ask: (id: string, cmd: { type: string }, ...rest: unknown[]) => Promise<unknown> };
    const ask = nodes.ask;
    nodes.ask = async (id, cmd, ...rest) => {
      const answer = await ask.call(nodes, id, cmd, ...rest);
      if (cmd.type === 'node.attachConsole') {
        nodes.ask = ask;
        await must(ts.api.with(mia).del(`/auth/tokens/${made.id}`));
      }
      return answer;
    };
    try {
      const w = await watch(ts.url, 'm1', null, { authorization: `Bearer ${made.token}` });
      const end = await w.closed;
      expect(end.code).to.equal(4403);
      expect(w.text(), 'the console\'s recent log').to.not.include('mock serial console');
    } finally {
      nodes.ask = ask;
    }
  });
});

describe('a console log left in the data folder by another recording (a standby pair\'s failback)', function () {
  this.timeout(60_000);
  let ts: TestServer | undefined;
  after(async () => {
    if (ts) await stopTestServer(ts);
  });

  it('is not shown to the tenant recording now: the folder of a process that was active before holds the last tenant\'s log', async () => {
    ts = await startTestServer();
    const dir = ts.dataDir;
    await must(ts.api.put('/project/red'));
    await must(ts.api.put('/project/blue'));
    const bob = await makeUser(ts.api, 'bob', 'bob-pw', ['blue']);
    await must(ts.api.put('/node/f1', { obm: obm('bmc-f1') }));
    await must(ts.api.post('/project/red/connect_node', { node: 'f1' }));
    const w = await watch(ts.url, 'f1', ADMIN);
    w.send('red-secret\r');
    await until('logged', async () => (await ts!.api.get('/node/f1/console')).text.includes('red-secret'));
    w.ws.close();
    // What the other machine's folder keeps: this recording's log, as it was when it stepped down.
    const folder = join(dir, 'consoles');
    const kept = new Map(readdirSync(folder).map((f) => [f, readFileSync(join(folder, f))]));
    await must(ts.api.post('/project/red/detach_node', { node: 'f1' }));
    await must(ts.api.post('/project/blue/connect_node', { node: 'f1' }));
    await must(ts.api.with(bob).call('PUT', '/node/f1/console'));
    await ts.close();
    for (const [f, body] of kept) writeFileSync(join(folder, f), body);
    ts = await startTestServer({}, {}, dir);
    await until('blue\'s session', () => ts!.consoles.active() === 1, 10_000);
    const r = await ts.api.with(bob).get('/node/f1/console');
    expect(r.status).to.equal(200);
    expect(r.text).not.to.include('red-secret');
  });
});

describe('a viewer whose client is gone without a word (no FIN: a laptop closed, a link cut)', function () {
  this.timeout(60_000);
  let ts: TestServer | undefined;
  after(async () => {
    if (ts) await stopTestServer(ts);
  });

  it('is disconnected when it answers no ping, though the node prints nothing; one that answers stays', async () => {
    ts = await startTestServer({ consolePingMs: 300 });
    await must(ts.api.put('/node/q1', { obm: obm('bmc-q1') }));
    await must(ts.api.call('PUT', '/node/q1/console'));
    const url = `${ts.url.replace(/^http/, 'ws')}/node/q1/console/stream`;
    const open = (autoPong: boolean) => new Promise<{ ws: WebSocket; closed: Promise<number> }>((resolve, reject) => {
      const ws = new WebSocket(url, { headers: { authorization: basic(ADMIN) }, autoPong });
      const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
      ws.once('open', () => resolve({ ws, closed }));
      ws.once('error', reject);
    });
    const gone = await open(false);
    const here = await open(true);
    let pinged = 0;
    gone.ws.on('ping', () => pinged++);
    await until('the viewers', () => ts!.consoles.viewerCount() === 2);
    // Closed by the service (1006 here: it ends the connection without a close frame).
    const code = await Promise.race([gone.closed, sleep(5000).then(() => null)]);
    expect(code, 'disconnected within a few pings').to.not.equal(null);
    expect(pinged).to.be.greaterThan(0);
    await until('the service dropped it', () => ts!.consoles.viewerCount() === 1);
    expect(here.ws.readyState).to.equal(WebSocket.OPEN);
    here.ws.close();
  });
});

describe('the viewers of one node\'s live console (HILT_CONSOLE_VIEWERS)', function () {
  this.timeout(60_000);
  let ts: TestServer;
  const mia = { user: 'mia', password: 'mia-pw' };
  before(async () => {
    ts = await startTestServer({ consoleViewers: 2 });
    await must(ts.api.put('/project/p'));
    for (const n of ['v1', 'v2']) {
      await must(ts.api.put(`/node/${n}`, { obm: obm(`bmc-${n}`) }));
      await must(ts.api.post('/project/p/connect_node', { node: n }));
    }
    await makeUser(ts.api, mia.user, mia.password, ['p']);
    await must(ts.api.with(mia).call('PUT', '/node/v1/console'));
  });
  after(() => stopTestServer(ts));

  /** The answer to a handshake refused before the upgrade: its status and JSON body. */
  const refusedHandshake = (node: string, as: { user: string; password: string }) => new Promise<{ status: number; body: { type?: string; msg?: string } }>((resolve, reject) => {
    const ws = new WebSocket(`${ts.url.replace(/^http/, 'ws')}/node/${node}/console/stream`, { headers: { authorization: basic(as) } });
    ws.once('open', () => {
      ws.close();
      reject(new Error('the handshake was accepted'));
    });
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as { type?: string; msg?: string } }));
    });
  });

  it('refuses one past the cap before the upgrade (429 TooManyRequestsError), an admin too, and the dashboard\'s with 4429; one closes, a new one is accepted', async () => {
    const a = await watch(ts.url, 'v1', mia);
    const b = await watch(ts.url, 'v1', mia);
    await until('both have the log', () => a.text().includes('mock serial console') && b.text().includes('mock serial console'));
    expect(ts.consoles.viewerCount()).to.equal(2);
    for (const who of [mia, ADMIN]) {
      const r = await refusedHandshake('v1', who);
      expect(r.status, who.user).to.equal(429);
      expect(r.body.type).to.equal('TooManyRequestsError');
      expect(r.body.msg).to.match(/node v1's console has 2 viewers, the most \(HILT_CONSOLE_VIEWERS\)/);
    }
    // The dashboard's page cannot read a refused handshake: it is told after the upgrade.
    const login = await must(ts.api.call('POST', '/ui/api/login', { as: null, body: mia }));
    const cookie = String([login.headers['set-cookie']].flat()[0]).split(';')[0];
    const page = await watch(ts.url, 'v1', null, { cookie, origin: ts.url }, '/ui/api');
    const end = await page.closed;
    expect(end.code).to.equal(4429);
    expect(end.reason).to.match(/its most viewers \(HILT_CONSOLE_VIEWERS\)/);
    expect(page.text(), 'nothing sent to the refused viewer').to.equal('');
    expect(ts.consoles.viewerCount()).to.equal(2);
    // Per node: another node's console has its own viewers.
    await must(ts.api.with(mia).call('PUT', '/node/v2/console'));
    const other = await watch(ts.url, 'v2', mia);
    await until('the other node\'s log', () => other.text().includes('mock serial console of bmc-v2'));
    other.ws.close();
    await until('the other node\'s viewer gone', () => ts.consoles.viewerCount() === 2);
    // One closes: a new one (the dashboard's too) is accepted.
    a.ws.close();
    await until('the closed viewer gone', () => ts.consoles.viewerCount() === 1);
    const c = await watch(ts.url, 'v1', null, { cookie, origin: ts.url }, '/ui/api');
    await until('the new viewer has the log', () => c.text().includes('mock serial console of bmc-v1'));
    expect(ts.consoles.viewerCount()).to.equal(2);
    b.ws.close();
    c.ws.close();
    await until('all gone', () => ts.consoles.viewerCount() === 0);
  });

  it('holds when many connect at once: at most the cap attach, the others are refused and sent nothing', async () => {
    const tries = await Promise.all(Array.from({ length: 8 }, () => watch(ts.url, 'v1', mia).catch((e: { status?: number }) => e.status)));
    const opened = tries.filter((t): t is Awaited<ReturnType<typeof watch>> => typeof t === 'object');
    for (const t of tries) if (typeof t !== 'object') expect(t).to.equal(429);
    // A refusal after the upgrade comes at once: let it arrive.
    await sleep(500);
    const live = opened.filter((w) => w.ws.readyState === WebSocket.OPEN);
    expect(live.length).to.equal(2);
    expect(ts.consoles.viewerCount()).to.equal(2);
    for (const w of opened.filter((o) => !live.includes(o))) {
      expect((await w.closed).code).to.equal(4429);
      expect(w.text()).to.equal('');
    }
    for (const w of live) w.ws.close();
    await until('all gone', () => ts.consoles.viewerCount() === 0);
  });
});
