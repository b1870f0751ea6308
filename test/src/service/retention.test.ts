/**
 * Journal retention (issue 27 item 4) through the API: a pass removes exactly the events of
 * objects deleted before the cutoff (and a reused name's earlier life), after appending them to
 * the archive; a live object's audit log stays complete, a live node's operation statuses still
 * resolve (its deleted nic's journal stays), the event stream answers 410 for what went, and
 * `hilt admin audit --archive` prints the archive with the audit's filters. The pass runs with a
 * clock moved on, so nothing waits for days.
 */
import { expect } from 'chai';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:http';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, mockSwitch, finished, ADMIN, basic, committed, TEST_STORAGE } from '../../helpers/server';
import { Receiver } from '../../helpers/receiver';
import { SseStream } from '../../helpers/sse';
import { addSecret } from '../../helpers/secrets';
import type { World } from '../../../actors/world';
import { cliFor, rows } from '../../helpers/cli';
import { Retention } from '../../../src/retention';
import { readArchive } from '../../../src/archive';
import type { AuditEntry } from '../../../src/audit';
import type { PersistedEvent } from '../../../actors/persistence/engine';
import { CHECKPOINT_FILE } from '../../../actors/persistence/checkpoint-file';

const DAY = 86_400_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('journal retention: what a pass removes, archives and keeps', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let archiveDir: string;
  let cutoff: number;
  let statusIds: string[];
  let goneFirstPosition: number;
  const kept: Record<string, AuditEntry[]> = {};

  const audit = async (kind: string, name: string): Promise<AuditEntry[]> => (await must(api.get(`/admin/audit?kind=${kind}&name=${encodeURIComponent(name)}&limit=1000`))).body.entries;

  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    archiveDir = mkdtempSync(join(tmpdir(), 'hilt-archive-'));
    // A live node, its nic wired and attached, then detached and deleted (its node lives on).
    await must(api.put('/switch/sw', mockSwitch));
    await must(api.put('/switch/sw/port/gi1/0/1'));
    await makeNode(api, 'live', ['eth0']);
    await must(api.post('/switch/sw/port/gi1/0/1/connect_nic', { node: 'live', nic: 'eth0' }));
    await must(api.put('/project/lab'));
    await must(api.post('/project/lab/connect_node', { node: 'live' }));
    await must(api.put('/network/net', { owner: 'lab', access: 'lab', net_id: '' }));
    statusIds = [];
    statusIds.push((await must(api.post('/node/live/nic/eth0/connect_network', { network: 'net' }), 202)).body.status_id);
    expect((await finished(api, statusIds[0])).status).to.equal('DONE');
    statusIds.push((await must(api.post('/node/live/nic/eth0/detach_network', { network: 'net' }), 202)).body.status_id);
    expect((await finished(api, statusIds[1])).status).to.equal('DONE');
    await must(api.post('/project/lab/detach_node', { node: 'live' }));
    // The release powers the node off first (docs/lifecycle.md), then frees it.
    for (let i = 0; (await must(api.get('/node/live'))).body.project !== null; i++) {
      if (i > 500) throw new Error('node live was not released');
      await sleep(10);
    }
    await must(api.post('/switch/sw/port/gi1/0/1/detach_nic'));
    await must(api.del('/node/live/nic/eth0'));
    // A node and its nic, deleted; a name deleted and registered again; a project deleted.
    await makeNode(api, 'gone', ['e1']);
    await must(api.del('/node/gone/nic/e1'));
    await must(api.del('/node/gone'));
    await makeNode(api, 'again');
    await must(api.del('/node/again'));
    await must(api.put('/project/oldp'));
    await must(api.del('/project/oldp'));
    await sleep(20);
    cutoff = Date.now();
    await sleep(20);
    // After the cutoff: the name's new life, and a node deleted too recently.
    await makeNode(api, 'again');
    await makeNode(api, 'recent');
    await must(api.del('/node/recent'));
    for (const [kind, name] of [['node', 'live'], ['nic', 'live/eth0'], ['node', 'gone'], ['nic', 'gone/e1'], ['node', 'again'], ['node', 'recent'], ['project', 'oldp'], ['project', 'lab']]) {
      kept[`${kind}:${name}`] = await audit(kind, name);
    }
    goneFirstPosition = (await ts.world.runtime.engine.journal('node:gone', 10)[Symbol.asyncIterator]().next()).value.position;
  });

  after(async () => {
    await stopTestServer(ts);
    rmSync(archiveDir, { recursive: true, force: true });
  });

  it('removes the events of objects deleted before the cutoff, and only those, archiving each first', async () => {
    const retention = new Retention(ts.world, { days: 1, archiveDir, now: () => cutoff + DAY });
    const report = await retention.pass();
    const goneKeys = ['node:gone', 'nic:gone/e1', 'project:oldp'];
    const removed = goneKeys.reduce((n, k) => n + kept[k].length, 0) + 2; // and again's first life: registered, deleted
    expect(report.events).to.equal(removed);
    for (const k of goneKeys) {
      const [kind, name] = [k.slice(0, k.indexOf(':')), k.slice(k.indexOf(':') + 1)];
      expect(await audit(kind, name), k).to.deep.equal([]);
      await must(api.get(`/admin/actors/${kind}/${name}/journal`), 404);
    }
    // Live objects and the recent deletion: untouched, to the entry.
    for (const k of ['node:live', 'nic:live/eth0', 'node:recent', 'project:lab']) {
      const [kind, name] = [k.slice(0, k.indexOf(':')), k.slice(k.indexOf(':') + 1)];
      expect(await audit(kind, name), k).to.deep.equal(kept[k]);
    }
    // The reused name: its current life only.
    expect((await audit('node', 'again')).map((e) => e.event.type)).to.deep.equal(['NodeRegistered']);
    await must(api.get('/node/again'));
    // The live node's statuses, of its deleted nic included, still resolve.
    for (const id of statusIds) expect((await must(api.get(`/networking_action/${id}`))).body.status).to.equal('DONE');
    expect((await must(api.get('/node/live/networking_actions'))).body).to.have.length(2);

    // The archive: every removed entry, once, as the audit shows it.
    const files = readdirSync(archiveDir);
    expect(files).to.have.length(1);
    expect(files[0]).to.match(/^\d{4}-\d\d\.jsonl\.gz$/);
    const { entries, torn } = await readArchive(join(archiveDir, files[0]));
    expect(torn).to.equal(false);
    expect(entries).to.have.length(removed);
    for (const k of goneKeys) {
      const [kind, name] = [k.slice(0, k.indexOf(':')), k.slice(k.indexOf(':') + 1)];
      const archived = entries.filter((e) => e.kind === kind && e.name === name).map(({ position: _p, ...e }) => e);
      expect(archived, k).to.deep.equal([...kept[k]].reverse());
    }
    expect(JSON.stringify(entries)).not.to.include('obm-secret');

    // A second pass finds nothing more; the names are free as before.
    expect((await retention.pass()).events).to.equal(0);
    await must(api.put('/project/oldp'));
    expect((await audit('project', 'oldp')).map((e) => e.event.type)).to.deep.equal(['ProjectCreated']);
  });

  it('loses nothing to a crash between the archive and the removal: the next pass archives again, the reader reads each once', async () => {
    await makeNode(api, 'crash');
    await must(api.del('/node/crash'));
    const engine = ts.world.runtime.engine;
    const prune = engine.prune;
    engine.prune = () => Promise.reject(new Error('the process died here'));
    const retention = new Retention(ts.world, { days: 1, archiveDir, now: () => Date.now() + 2 * DAY });
    try {
      await retention.pass().then(() => expect.fail('the pass went on'), (err: Error) => expect(err.message).to.equal('the process died here'));
    } finally {
      engine.prune = prune;
    }
    const file = join(archiveDir, readdirSync(archiveDir)[0]);
    const archived = async () => (await readArchive(file)).entries.filter((e) => e.name === 'crash').map((e) => e.event.type);
    expect(await archived(), 'archived before anything was removed').to.deep.equal(['NodeRegistered', 'NodeDeleted']);
    expect((await audit('node', 'crash')).map((e) => e.event.type), 'still in the store').to.deep.equal(['NodeDeleted', 'NodeRegistered']);
    // crash's two, and the two of the node deleted after the first test's cutoff (before this one's)
    expect((await retention.pass()).events).to.equal(4);
    expect(await audit('node', 'crash')).to.deep.equal([]);
    expect(await archived()).to.deep.equal(['NodeRegistered', 'NodeDeleted']);
  });

  it('answers 410 to a stream resuming from before what was removed', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const u = new URL('/events', ts.url);
      const req = request(u, { headers: { authorization: basic(ADMIN), 'last-event-id': String(goneFirstPosition) } }, (res) => {
        resolve(res.statusCode ?? 0);
        res.destroy();
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).to.equal(410);
  });

  it('hilt admin audit --archive prints the archive with the audit\'s columns and filters', async () => {
    const cli = cliFor(ts.url);
    const file = join(archiveDir, readdirSync(archiveDir)[0]);
    const t = rows(await cli.ok('admin', 'audit', '--archive', file, '--kind', 'node', '--name', 'gone'));
    expect(t[0]).to.deep.equal(['At', 'By', 'Kind', 'Name', 'Call', 'Event', 'Details']);
    expect(t.slice(1).map((r) => [r[1], r[2], r[3], r[4], r[5]])).to.deep.equal([
      ['admin', 'node', 'gone', 'node_delete', 'NodeDeleted'],
      ['admin', 'node', 'gone', 'node_register', 'NodeRegistered'],
    ]);
    const nic = rows(await cli.ok('admin', 'audit', '--archive', file, '--kind', 'nic', '--name', 'gone', 'e1'));
    expect(nic.slice(1).map((r) => r[5])).to.deep.equal(['NicDeleted', 'NicRegistered']);
    // Pages, as the service's: --limit with --cursor, and --json.
    const page = JSON.parse(await cli.ok('admin', 'audit', '--archive', file, '--limit', '1', '--json'));
    expect(page.entries).to.have.length(1);
    expect(page.next).to.be.a('string');
    const next = JSON.parse(await cli.ok('admin', 'audit', '--archive', file, '--limit', '1', '--json', '--cursor', page.next));
    expect(next.entries[0]).not.to.deep.equal(page.entries[0]);
    const all = rows(await cli.ok('admin', 'audit', '--archive', file, '--all', '--limit', '2'));
    expect(all.length - 1).to.equal((await readArchive(file)).entries.length);
    expect(rows(await cli.ok('admin', 'audit', '--archive', file, '--since', '2999-01-01'))).to.have.length(1);
    expect((await cli.run('admin', 'audit', '--archive', file, '--since', 'yesterday')).code).to.equal(2);
    expect((await cli.run('admin', 'audit', '--archive', join(archiveDir, 'none.jsonl.gz'))).code).to.equal(2);
  });
});

/**
 * Retention and the read model's checkpoint (docs/checkpoint.md): a checkpoint taken while an
 * object lived, whose deletion retention removed since, is not used (its replay would not see the
 * deletion: the object would come back); and a pass that removed events has a new checkpoint
 * written, so that a crash right after it costs no rebuild.
 */
describe('journal retention and the read model\'s checkpoint', function () {
  this.timeout(60_000);
  let dataDir: string;
  let archiveDir: string;
  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'hilt-rc-'));
    archiveDir = mkdtempSync(join(tmpdir(), 'hilt-archive-'));
  });
  after(() => {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(archiveDir, { recursive: true, force: true });
  });

  /** A server on the one data folder whose log lines are kept, and a way to wait for one. */
  const lines: { msg: string; why?: string }[] = [];
  const waiting: { re: RegExp; found: () => void }[] = [];
  const logged = (re: RegExp) => new Promise<void>((found) => waiting.push({ re, found }));
  const start = () => startTestServer({
    checkpointEvents: 1_000_000, archiveDir,
    // A period of a millisecond: the server's own pass removes what was deleted before it.
    journalRetentionDays: 1 / DAY,
  }, {
    logger: {
      level: 'debug',
      stream: {
        write: (l: string) => {
          const line = JSON.parse(l) as { msg: string; why?: string };
          lines.push(line);
          for (const w of waiting.splice(0)) (w.re.test(line.msg) ? w.found : () => waiting.push(w))();
        },
      },
    },
  }, dataDir);
  const startedFrom = () => lines.filter((l) => /^(loaded the read model|rebuilt the read model)/.test(l.msg)).at(-1)!;
  const noGhost = async (ts: TestServer) => {
    expect((await must(ts.api.get('/nodes/all'))).body, 'GET /nodes/all').to.not.include('ghost');
    await must(ts.api.get('/node/ghost'), 404);
  };

  it('a start from a checkpoint older than a removed deletion rebuilds; the pass writes a new one, which a start uses', async () => {
    // 1. ghost lives; a clean stop writes the checkpoint (ghost alive in it).
    let ts = await start();
    await makeNode(ts.api, 'ghost');
    await must(ts.api.put('/project/keep'));
    await stopTestServer(ts, false);
    const lmdb = TEST_STORAGE === 'lmdb';
    const before = join(archiveDir, 'before.checkpoint');
    if (lmdb) copyFileSync(join(dataDir, CHECKPOINT_FILE), before);

    // 2. ghost is deleted; the pass removes its journal, and a checkpoint is written after it.
    ts = await start();
    await must(ts.api.del('/node/ghost'));
    await must(ts.api.put('/project/later'));
    const deleted = Date.now();
    while (Date.now() <= deleted + 1) await new Promise((r) => setImmediate(r));
    const written = logged(/^wrote the read model's checkpoint/);
    const report = await ts.retention.pass();
    expect(report.keys, 'ghost\'s journal removed').to.equal(1);
    await written;
    const after = join(archiveDir, 'after.checkpoint');
    if (lmdb) copyFileSync(join(dataDir, CHECKPOINT_FILE), after);
    await stopTestServer(ts, false);

    if (lmdb) {
      // 3. The process had died right after the removal and before that checkpoint: the older one is refused.
      copyFileSync(before, join(dataDir, CHECKPOINT_FILE));
      ts = await start();
      try {
        expect(startedFrom().msg).to.match(/^rebuilt/);
        expect(startedFrom().why).to.match(/journal retention removed events after it/);
        await noGhost(ts);
      } finally {
        await stopTestServer(ts, false);
      }
      // 4. It had died right after that checkpoint.
      copyFileSync(after, join(dataDir, CHECKPOINT_FILE));
    }
    ts = await start();
    try {
      expect(startedFrom().msg).to.match(/^loaded the read model from its checkpoint/);
      await noGhost(ts);
    } finally {
      await stopTestServer(ts, false);
    }
  });
});

/**
 * A stream reading the journal from far back while a pass removes events ahead of it: it must not
 * go on without them (the journal it reads no longer has them) but end, and its reconnect from the
 * last id it got is a 410; a client past what went resumes as ever.
 */
describe('journal retention and a stream still reading the journal', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let archiveDir: string;
  before(async () => {
    archiveDir = mkdtempSync(join(tmpdir(), 'hilt-archive-'));
    ts = await startTestServer({ archiveDir, journalRetentionDays: 1 / DAY });
  });
  after(async () => {
    await stopTestServer(ts);
    rmSync(archiveDir, { recursive: true, force: true });
  });

  /** GET /events from an id: its status, and once it ends (or goes live), its text. */
  const stream = (lastId: number) => new Promise<{ status: number; text: Promise<string> }>((resolve, reject) => {
    const req = request(new URL('/events', ts.url), { headers: { authorization: basic(ADMIN), 'last-event-id': String(lastId) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      resolve({
        status: res.statusCode ?? 0,
        text: new Promise((done) => {
          res.on('data', (d: string) => {
            text += d;
            if (text.includes(': live\n')) res.destroy();
          });
          res.on('close', () => done(text));
        }),
      });
    });
    req.on('error', reject);
    req.end();
  });

  it('ends a stream before what a pass removes, rather than skipping it; its reconnect is a 410', async () => {
    const engine = ts.world.runtime.engine;
    const start = (await engine.bounds()).last;
    await must(ts.api.put('/project/first'));
    await makeNode(ts.api, 'vanish');
    await must(ts.api.del('/node/vanish'));
    await must(ts.api.put('/project/later'));
    const deleted = Date.now();
    while (Date.now() <= deleted + 1) await sleep(1);

    // The stream reads the journal's first event after `start`, then waits there (the pass's
    // own reads of the journal do not).
    const feed = engine.feed.bind(engine);
    let streams = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let reached!: () => void;
    const paused = new Promise<void>((r) => (reached = r));
    engine.feed = async function* (after: number) {
      const gated = streams++ === 0;
      let n = 0;
      for await (const e of feed(after)) {
        yield e;
        if (gated && ++n === 1) {
          reached();
          await gate;
        }
      }
    };
    let text: string;
    try {
      const open = await stream(start);
      expect(open.status).to.equal(200);
      await paused;
      const report = await ts.retention.pass();
      expect(report.events, 'vanish\'s registration and deletion').to.equal(2);
      release();
      text = await open.text;
    } finally {
      release();
      engine.feed = feed;
    }
    expect(text, 'the first event was sent').to.match(/event: project\.created/);
    expect(text).to.include(': journal retention is removing events after this stream\'s position: connect again');
    expect(text, 'never went live without the removed events').to.not.include(': live');
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).to.have.length(1);

    const again = await stream(ids[0]);
    expect(again.status, 'the reconnect from the last id it got').to.equal(410);
    await again.text;
    // A client past what went resumes.
    const past = await stream((await engine.bounds()).first - 1);
    expect(past.status).to.equal(200);
    const metrics = (await must(ts.api.get('/metrics'))).text;
    expect(metrics).to.match(/hilt_event_streams_dropped_total\{reason="removed"\} 1/);
  });

  it('starts a stream with a since before what was removed at the oldest id kept, resumable, not at a position retention passed', async () => {
    // An object that lives on (its events stay, below what goes), then one deleted and removed.
    await must(ts.api.put('/project/since-kept'));
    await makeNode(ts.api, 'since-gone');
    await must(ts.api.del('/node/since-gone'));
    const deleted = Date.now();
    while (Date.now() <= deleted + 1) await sleep(1);
    expect((await ts.retention.pass()).events).to.be.at.least(2);
    await must(ts.api.put('/project/since-after'));
    const { first } = await ts.world.runtime.engine.bounds();
    // docs/events.md: the way back after a 410 is since, a time before the oldest kept.
    const text = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(new URL('/events?since=1970-01-01T00:00:00Z', ts.url), { headers: { authorization: basic(ADMIN) } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
          if (body.includes(': live\n')) res.destroy();
        });
        res.on('close', () => resolve({ status: res.statusCode ?? 0, text: body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(text.status).to.equal(200);
    expect(text.text, 'not ended as before what retention removes').to.not.include('journal retention is removing');
    expect(text.text).to.include(': live');
    const ids = [...text.text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids.length).to.be.greaterThan(0);
    // Every id it gave is one a reconnect resumes from (an id below the oldest kept is a 410).
    expect(Math.min(...ids)).to.be.at.least(first);
    expect(text.text).to.include('"name":"since-after"');
    const again = await stream(ids[0]);
    expect(again.status, 'a reconnect from its first id').to.equal(200);
    await again.text;
  });
});

/**
 * Retention works in bounded chunks (docs/operations.md: 500 events removed per transaction,
 * yielding between them): also for one deleted object with a long journal, read, archived and
 * removed a chunk at a time, not whole in one synchronous read and one transaction.
 */
describe('journal retention: a deleted object with a long journal', function () {
  this.timeout(120_000);
  let ts: TestServer;
  let archiveDir: string;
  before(async () => {
    ts = await startTestServer();
    archiveDir = mkdtempSync(join(tmpdir(), 'hilt-archive-'));
  });
  after(async () => {
    await stopTestServer(ts);
    rmSync(archiveDir, { recursive: true, force: true });
  });

  /**
   * A project deleted after n - 2 changes of its quota (a node leased and released for years, a
   * busy port: the same), written as its actor would have.
   */
  async function longJournal(key: string, n: number): Promise<PersistedEvent[]> {
    const at = Date.now();
    const stamp = (seq: number, data: object): PersistedEvent => ({ key, sequenceNumber: seq, createdAt: at, tags: [], data: { ...data, by: 'admin', at } });
    const events: PersistedEvent[] = [stamp(1, { type: 'ProjectCreated' })];
    for (let s = 2; s < n; s++) events.push(stamp(s, { type: 'ProjectQuotaSet', nodes: s, networks: null }));
    events.push(stamp(n, { type: 'ProjectDeleted' }));
    for (let i = 0; i < events.length; i += 10_000) await ts.world.runtime.engine.persist(events.slice(i, i + 10_000));
    return events;
  }

  it('keeps requests waiting no longer than a chunk while it removes it, and archives all of it', async () => {
    const engine = ts.world.runtime.engine;
    const N = 40_000;
    const key = 'project:old';
    const events = await longJournal(key, N + 1);

    // How long the event loop (every request) is held, while the pass runs.
    let worst = 0;
    let last = performance.now();
    const sampler = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last);
      last = now;
    }, 5);
    let report;
    try {
      report = await new Retention(ts.world, { days: 1, archiveDir, now: () => Date.now() + 3 * DAY }).pass();
    } finally {
      clearInterval(sampler);
    }
    expect(report).to.include({ keys: 1, events: N + 1 });
    expect(await engine.head(key)).to.equal(0);
    expect(await engine.latestSnapshot(key), 'the deletion\'s snapshot goes with the last chunk').to.equal(undefined);
    await must(ts.api.get('/projects'));
    // A chunk (500 events read, archived, removed) takes tens of ms at most; the whole journal at
    // once, over half a second on a quiet machine. The bound leaves room for a loaded one (CI runs
    // three lines of tests at once: 307 ms was seen there).
    expect(worst, 'the longest the event loop was held (ms)').to.be.below(450);
    const archived = (await readArchive(join(archiveDir, readdirSync(archiveDir)[0]))).entries.filter((e) => e.name === 'old');
    expect(archived.map((e) => e.sequenceNumber)).to.deep.equal(events.map((e) => e.sequenceNumber));
  });

  it('leaves a journal cut between chunks by a crash one that replays to its deletion, and removes the rest next time', async () => {
    const engine = ts.world.runtime.engine;
    const key = 'project:cut';
    await longJournal(key, 1_600);
    const prune = engine.prune;
    let calls = 0;
    engine.prune = (expired) => (++calls === 2 ? Promise.reject(new Error('the process died here')) : prune.call(engine, expired));
    const retention = new Retention(ts.world, { days: 1, archiveDir, now: () => Date.now() + 3 * DAY });
    try {
      await retention.pass().then(() => expect.fail('the pass went on'), (err: Error) => expect(err.message).to.equal('the process died here'));
    } finally {
      engine.prune = prune;
    }
    // The first chunk went; an actor waking (or a start rebuilding) reads the deletion's snapshot, not the rest of that life.
    const stored = await engine.recover(key);
    expect(stored.snapshot).to.include({ sequenceNumber: 1_600, data: null });
    expect(stored.events).to.deep.equal([]);
    expect(await engine.head(key)).to.equal(1_600);
    expect((await retention.pass()).events).to.equal(1_100);
    expect(await engine.head(key)).to.equal(0);
    expect(await engine.latestSnapshot(key)).to.equal(undefined);
  });

  it('lets a stop end the pass after the chunk under way, not after the whole journal; the next pass removes the rest', async () => {
    const engine = ts.world.runtime.engine;
    const key = 'project:stopped';
    await longJournal(key, 20_000);
    const prune = engine.prune;
    let chunks = 0;
    let closing: Promise<void> | undefined;
    const retention = new Retention(ts.world, { days: 1, archiveDir, now: () => Date.now() + 3 * DAY });
    // The service stops while the first chunk is being removed.
    engine.prune = (expired) => {
      if (++chunks === 1) closing = retention.close();
      return prune.call(engine, expired);
    };
    try {
      await retention.pass().catch(() => undefined);
      await closing;
    } finally {
      engine.prune = prune;
    }
    expect(chunks, 'chunks removed after the stop began').to.be.below(3);
    // What a start (or an actor waking) reads: the deletion's snapshot, nothing of the cut life.
    const stored = await engine.recover(key);
    expect(stored.snapshot).to.include({ sequenceNumber: 20_000, data: null });
    expect(stored.events).to.deep.equal([]);
    const left = 20_000 - chunks * 500;
    expect((await new Retention(ts.world, { days: 1, archiveDir, now: () => Date.now() + 3 * DAY }).pass()).events).to.equal(left);
    expect(await engine.head(key)).to.equal(0);
    const archived = (await readArchive(join(archiveDir, readdirSync(archiveDir)[0]))).entries.filter((e) => e.name === 'stopped');
    expect(archived).to.have.length(20_000);
  });

  it('leaves, when a stop cuts a pass between a deleted node and its nics, the node\'s deletion for the next pass, which removes them all', async () => {
    const engine = ts.world.runtime.engine;
    const clock = () => Date.now() + 3 * DAY;
    await makeNode(ts.api, 'cutn', ['e1']);
    await must(ts.api.del('/node/cutn/nic/e1'));
    // While its node lives, the nic's deletion stays (the node's statuses need it); the scan passes it.
    await new Retention(ts.world, { days: 1, archiveDir, now: clock }).pass();
    expect(await engine.head('nic:cutn/e1')).to.be.above(0);
    await must(ts.api.del('/node/cutn'));
    // The service stops as the pass reads the first of the two.
    const told: boolean[] = [];
    const retention = new Retention(ts.world, { days: 1, archiveDir, now: clock, onPass: (ok) => told.push(ok) });
    const events = engine.events;
    let closing: Promise<void> | undefined;
    engine.events = (key, ...rest) => {
      if (key === 'node:cutn' || key === 'nic:cutn/e1') closing ??= retention.close();
      return events.call(engine, key, ...rest);
    };
    try {
      expect(await retention.pass()).to.include({ stopped: true });
      await closing;
      // Neither a success (the metrics' last good pass) nor a failure.
      expect(told).to.deep.equal([]);
    } finally {
      engine.events = events;
    }
    await new Retention(ts.world, { days: 1, archiveDir, now: clock }).pass();
    expect(await engine.head('node:cutn'), 'the node').to.equal(0);
    expect(await engine.head('nic:cutn/e1'), 'its nic').to.equal(0);
  });
});


describe('journal retention and webhooks: nothing a webhook has not delivered is removed, or skipped', function () {
  this.timeout(60_000);
  const SECRET = 'whsec-retention-0123456789abcdef';
  let ts: TestServer;
  let api: Client;
  let archiveDir: string;
  const receivers: Receiver[] = [];

  before(async () => {
    addSecret(SECRET);
    ts = await startTestServer({ webhookRetryMinMs: 20, webhookRetryMaxMs: 50, webhookTimeoutMs: 5000, webhookFailAfterMs: 300 });
    api = ts.api;
    archiveDir = mkdtempSync(join(tmpdir(), 'hilt-archive-'));
  });
  after(async () => {
    await stopTestServer(ts);
    for (const r of receivers) await r.close();
    rmSync(archiveDir, { recursive: true, force: true });
  });

  const audit = async (name: string): Promise<string[]> => (await must(api.get(`/admin/audit?kind=node&name=${name}`))).body.entries.map((e: AuditEntry) => e.event.type);
  const show = async (id: string) => (await must(api.get(`/admin/webhooks/${id}`))).body;
  /** A webhook of node events to a receiver that is down, failing after a node is registered, deleted, and another registered. */
  const failingWebhook = async (gone: string, live: string) => {
    const rcv = await new Receiver().start();
    receivers.push(rcv);
    rcv.answer = () => 503;
    const id: string = (await must(api.post('/admin/webhooks', { url: rcv.url, secret: SECRET, types: ['node.*'] }))).body.id;
    const failed = committed(ts, `webhook:${id}`, 'WebhookFailing');
    await makeNode(api, gone);
    await must(api.del(`/node/${gone}`));
    await makeNode(api, live);
    await failed;
    return { id, rcv, got: () => rcv.requests.filter((r) => r.status === 200).map((r) => `${r.json.type} ${r.json.name}`) };
  };

  it('holds back for a failing webhook, which gets every event after its cursor once resumed; then removes them', async () => {
    const { id, rcv, got } = await failingWebhook('wr-gone', 'wr-live');
    // The period is over for every event; the webhook, failing on wr-gone's registration, holds them all.
    const retention = new Retention(ts.world, { days: 1, archiveDir, now: () => Date.now() + 2 * DAY });
    const held = await retention.pass();
    expect(held.events).to.equal(0);
    expect(held.heldBack).to.deep.equal({ webhook: id, position: Number((await show(id)).cursor) });
    expect(await audit('wr-gone')).to.deep.equal(['NodeDeleted', 'NodeRegistered']);
    rcv.answer = () => 200;
    await must(api.post(`/admin/webhooks/${id}/resume`));
    await rcv.until(() => got().includes('node.registered wr-live'));
    expect(got()).to.deep.equal(['node.registered wr-gone', 'node.deleted wr-gone', 'node.registered wr-live']);
    // Delivered: the next pass removes them. (The worker sends the next event once its cursor is
    // stored past the last one: with it sent, the cursor retention reads is past wr-gone.)
    await makeNode(api, 'wr-next');
    await rcv.until(() => got().includes('node.registered wr-next'));
    expect((await retention.pass()).events).to.equal(2);
    expect(await audit('wr-gone')).to.deep.equal([]);
  });

  it('marks a webhook failing when events after its cursor were removed all the same, never skipping them silently; a resume accepts the loss', async () => {
    const { id, rcv, got } = await failingWebhook('wl-gone', 'wl-live');
    // A pass that knows of no webhook (as one did before retention held back for them) removes wl-gone's events.
    const rm = Object.create(ts.world.rm, { webhooks: { value: new Map() } });
    const blind = Object.create(ts.world, { rm: { value: rm } }) as World;
    expect((await new Retention(blind, { days: 1, archiveDir, now: () => Date.now() + 2 * DAY }).pass()).events).to.be.above(0);
    expect(await audit('wl-gone')).to.deep.equal([]);
    rcv.answer = () => 200;
    const failedAgain = committed(ts, `webhook:${id}`, 'WebhookFailing');
    await must(api.post(`/admin/webhooks/${id}/resume`));
    await Promise.race([failedAgain, rcv.until(() => got().length > 0)]);
    expect(got(), 'delivered after the resume').to.deep.equal([]);
    const w = await show(id);
    expect(w.state).to.equal('failing');
    expect(w.failing_reason).to.match(/journal retention removed events after this webhook's cursor/);
    // The admin resumes knowingly: delivery goes on from the cursor with what the store still holds.
    await must(api.post(`/admin/webhooks/${id}/resume`));
    await rcv.until(() => got().includes('node.registered wl-live'));
    expect(got()).to.deep.equal(['node.registered wl-live']);
    expect((await show(id)).state).to.equal('delivering');
  });
});

/**
 * A node deleted and registered again, its nic too: when the first deletion expires, the pass
 * looks for that registration's nic deletions in the nic's journal, whose current life may be
 * long (years of network operations). That look must not hold requests up for the whole journal.
 */
describe('journal retention: a node registered again whose nic has a long journal', function () {
  this.timeout(180_000);
  let ts: TestServer;
  let archiveDir: string;
  before(async () => {
    ts = await startTestServer();
    archiveDir = mkdtempSync(join(tmpdir(), 'hilt-archive-'));
  });
  after(async () => {
    await stopTestServer(ts);
    rmSync(archiveDir, { recursive: true, force: true });
  });

  it('keeps requests waiting no longer than a chunk while it looks for the old registration\'s nic deletions', async () => {
    const engine = ts.world.runtime.engine;
    await makeNode(ts.api, 'rr', ['eth0']);
    await must(ts.api.del('/node/rr/nic/eth0'));
    await must(ts.api.del('/node/rr'));
    await sleep(20);
    const cutoff = Date.now();
    await sleep(20);
    await makeNode(ts.api, 'rr', ['eth0']);
    // The new life's operations, written as its actor would have (an outcome of no operation changes nothing).
    const key = 'nic:rr/eth0';
    const head = await engine.head(key);
    const N = 150_000;
    const at = Date.now();
    const events: PersistedEvent[] = [];
    for (let s = 1; s <= N; s++) events.push({ key, sequenceNumber: head + s, createdAt: at, tags: [], data: { type: 'NetworkActionFailed', seq: 1e9, error: 'x', by: 'switch', at } });
    for (let i = 0; i < events.length; i += 10_000) await engine.persist(events.slice(i, i + 10_000));

    let worst = 0;
    let last = performance.now();
    const sampler = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last);
      last = now;
    }, 5);
    let report;
    try {
      report = await new Retention(ts.world, { days: 1, archiveDir, now: () => cutoff + DAY }).pass();
    } finally {
      clearInterval(sampler);
    }
    // node rr's first life (registered, deleted) and its nic's (registered, deleted)
    expect(report).to.include({ keys: 2, events: 4 });
    expect(await engine.head(key)).to.equal(head + N);
    expect((await must(ts.api.get('/node/rr'))).body.nics.map((n: { label: string }) => n.label)).to.deep.equal(['eth0']);
    expect(worst, 'the longest the event loop was held (ms)').to.be.below(250);
  });
});

/**
 * A filtered stream is live and missed nothing, yet the last event it got is older than what a
 * pass removed (events it did not want): its client's reconnect must resume, not be answered 410.
 */
describe('journal retention and a filtered stream that is live', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let archiveDir: string;
  before(async () => {
    archiveDir = mkdtempSync(join(tmpdir(), 'hilt-archive-'));
    ts = await startTestServer({ archiveDir, journalRetentionDays: 1 / DAY, eventsHeartbeatMs: 100 });
  });
  after(async () => {
    await stopTestServer(ts);
    rmSync(archiveDir, { recursive: true, force: true });
  });

  it('moves the client\'s last id on with the heartbeats, so that its reconnect after a pass resumes', async () => {
    const url = `${ts.url}/events?kind=project`;
    const stream = new SseStream(url, { as: ADMIN });
    await stream.until(() => stream.comments.includes('live'), 5000);
    await must(ts.api.put('/project/fq'));
    await stream.count(1, 5000);
    // Events it does not want, deleted, then removed by a pass while it is live.
    await makeNode(ts.api, 'fq-node');
    await must(ts.api.del('/node/fq-node'));
    const deleted = Date.now();
    const { last } = await ts.world.runtime.engine.bounds();
    // The heartbeats carry the stream past the deletion's events, which it does not want. (A
    // pass before the stream's batch of them is written would find it behind them, as it is.)
    await stream.until(() => Number(stream.lastId) >= last, 5000);
    while (Date.now() <= deleted + 1) await sleep(1);
    const report = await ts.retention.pass();
    expect(report.events).to.be.above(0);
    await sleep(300);
    expect(stream.endedAt, 'a live stream is not ended by a pass').to.equal(0);
    stream.close();
    const again = new SseStream(url, { as: ADMIN, lastEventId: stream.lastId });
    expect(await again.answered(5000), again.body).to.equal(200);
    again.close();
  });
});

/**
 * Users stay while no user is live (a start with no user key at all would create the bootstrap
 * admin again), but only while: a pass that read a user's deletion then comes back to it once a
 * user lives again (created by an administrator of the identity provider, which needs no record).
 */
describe('journal retention: users deleted while no user was live', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let archiveDir: string;
  before(async () => {
    ts = await startTestServer();
    archiveDir = mkdtempSync(join(tmpdir(), 'hilt-archive-'));
  });
  after(async () => {
    await stopTestServer(ts);
    rmSync(archiveDir, { recursive: true, force: true });
  });

  const journal = async (key: string) => {
    const types: string[] = [];
    for await (const e of ts.world.runtime.engine.events(key)) types.push((e.data as { type: string }).type);
    return types;
  };

  it('removes their journals, archived, at the first pass after a user lives again', async () => {
    const users = ts.world.users;
    await users.ask('old', { type: 'user.create', by: 'admin', passwordHash: 'x', isAdmin: false });
    await users.ask('old', { type: 'user.delete', by: 'admin' });
    await users.ask(ADMIN.user, { type: 'user.delete', by: ADMIN.user });
    expect(ts.world.rm.users.size).to.equal(0);
    await sleep(20);
    const now = Date.now() + DAY;
    const retention = new Retention(ts.world, { days: 1, archiveDir, now: () => now });
    expect((await retention.pass()).events, 'no user is live: the users stay').to.equal(0);
    expect(await journal('user:old')).to.deep.equal(['UserCreated', 'UserDeleted']);
    // A user lives again, after the cutoff: the next pass removes what the last one kept.
    await users.ask('new', { type: 'user.create', by: 'oidc-admin', passwordHash: 'x', isAdmin: false });
    expect((await retention.pass()).events).to.equal(4);
    expect(await journal('user:old')).to.deep.equal([]);
    expect(await journal(`user:${ADMIN.user}`)).to.deep.equal([]);
    expect(await journal('user:new')).to.deep.equal(['UserCreated']);
    const { entries } = await readArchive(join(archiveDir, readdirSync(archiveDir)[0]));
    expect(entries.map((e) => `${e.name} ${e.event.type}`).sort()).to.deep.equal([`${ADMIN.user} UserCreated`, `${ADMIN.user} UserDeleted`, 'old UserCreated', 'old UserDeleted']);
    // Once: a later pass finds nothing left to remove.
    expect((await retention.pass()).events).to.equal(0);
  });
});

describe('journal retention in /metrics', function () {
  this.timeout(60_000);
  let ts: TestServer;
  before(async () => {
    ts = await startTestServer();
  });
  after(() => stopTestServer(ts));

  it('counts each pass by outcome, and gives the time of the last that succeeded', async () => {
    const scrape = async () => (await must(ts.api.get('/metrics'))).text as string;
    const series = (text: string, name: string) => text.split('\n').find((l) => l.startsWith(`${name} `))?.slice(name.length + 1);
    let text = await scrape();
    // At 0 from the start: an alert on the first failure needs a series to increase.
    expect(series(text, 'hilt_retention_passes_total{outcome="error"}')).to.equal('0');
    expect(series(text, 'hilt_retention_passes_total{outcome="ok"}')).to.equal('0');
    expect(series(text, 'hilt_retention_last_success_timestamp_seconds'), 'absent before a pass succeeded').to.equal(undefined);

    const engine = ts.world.runtime.engine;
    const mark = engine.mark;
    engine.mark = () => Promise.reject(new Error('the store said no'));
    try {
      await ts.retention.pass().then(() => expect.fail('the pass went on'), (err: Error) => expect(err.message).to.equal('the store said no'));
    } finally {
      engine.mark = mark;
    }
    text = await scrape();
    expect(series(text, 'hilt_retention_passes_total{outcome="error"}')).to.equal('1');
    expect(series(text, 'hilt_retention_last_success_timestamp_seconds')).to.equal(undefined);

    const before = Date.now() / 1000;
    await ts.retention.pass();
    text = await scrape();
    expect(series(text, 'hilt_retention_passes_total{outcome="ok"}')).to.equal('1');
    expect(Number(series(text, 'hilt_retention_last_success_timestamp_seconds'))).to.be.within(before, Date.now() / 1000);
  });
});
