/**
 * POST /admin/backup: a consistent copy of the LMDB store, made while the service keeps serving
 * writes; a service started on the copy (the restore) serves every change acknowledged before
 * the backup began. On PostgreSQL the call says to use PostgreSQL's tools, and the runbook's
 * way (pg_dump -Fc, pg_restore into a new database, hilt started on it) restores the service.
 */
import { expect } from 'chai';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { startTestServer, stopTestServer, TestServer, must, makeUser, makeNode, obm, ADMIN } from '../../helpers/server';
import { keyFilePath } from '../../../src/secrets/at-rest';
import { parseExposition, value } from '../../helpers/prometheus';
import { findBin, testPostgres } from '../../helpers/postgres';
import { Receiver } from '../../helpers/receiver';
import { SseStream } from '../../helpers/sse';
import { until } from '../../helpers/wait';

describe('POST /admin/backup: online backup and restore', function () {
  this.timeout(120_000);
  let ts: TestServer;
  let dir: string;
  before(async () => {
    ts = await startTestServer();
    dir = mkdtempSync(join(tmpdir(), 'hilt-backup-'));
  });
  after(async () => {
    await stopTestServer(ts);
    rmSync(dir, { recursive: true, force: true });
  });

  it('copies under write load; the copy starts as a service and serves every change acknowledged before the backup began', async () => {
    const api = ts.api;
    // Some inventory first, so that the copy is more than a few pages.
    await Promise.all(Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < 100; i++) await must(api.put(`/node/pre-${w}-${i}`, { obm: obm() }));
    }));
    /** every acknowledged write: what it made, and when its answer came */
    const acked: { kind: 'project' | 'node' | 'metadata'; name: string; at: number }[] = [];
    const failures: string[] = [];
    let writing = true;
    const writers = Array.from({ length: 6 }, async (_, w) => {
      for (let i = 0; writing; i++) {
        const name = `w${w}-${i}`;
        const step = i % 3;
        const r = step === 0 ? await api.put(`/project/${name}`)
          : step === 1 ? await api.put(`/node/${name}`, { obm: obm() })
            : await api.put(`/node/w${w}-${i - 1}/metadata/rack`, { value: name });
        if (r.status !== 200) failures.push(`${name}: ${r.status} ${r.text}`);
        else acked.push({ kind: step === 0 ? 'project' : step === 1 ? 'node' : 'metadata', name, at: Date.now() });
      }
    });
    while (acked.length < 300) await new Promise((r) => setTimeout(r, 10));
    const path = join(dir, 'copy');
    // Every write acknowledged so far was acknowledged before the backup began (comparing times
    // would drop those of the same millisecond).
    const ackedBefore = acked.slice();
    const r = await must(api.post('/admin/backup', { path }));
    const answered = acked.length;
    // The service keeps serving: writes are acknowledged after the backup too.
    while (acked.length < answered + 100) await new Promise((res) => setTimeout(res, 10));
    writing = false;
    await Promise.all(writers);
    expect(failures).to.deep.equal([]);
    expect(r.body.path).to.equal(path);
    expect(Date.parse(r.body.finished_at)).to.be.at.least(Date.parse(r.body.started_at));
    // The copy holds credentials: the service's alone.
    expect(statSync(path).mode & 0o777).to.equal(0o700);
    expect(statSync(join(path, 'data.mdb')).mode & 0o777).to.equal(0o600);

    // The copy holds no key (docs/identity.md): its credentials need the service's own, kept apart.
    expect(existsSync(join(path, 'secret.key'))).to.equal(false);
    // Restore: a service started on the copy, with the key put back.
    copyFileSync(keyFilePath(ts.config), join(path, 'secret.key'));
    const restored = await startTestServer({}, {}, path);
    try {
      const projects = new Set((await must(restored.api.get('/projects'))).body as string[]);
      const nodes = new Set((await must(restored.api.get('/nodes/all'))).body as string[]);
      expect(nodes.size).to.be.at.least(800);
      let checked = 0;
      for (const a of ackedBefore) {
        if (a.kind === 'project') expect(projects.has(a.name), `project ${a.name}`).to.equal(true);
        else if (a.kind === 'node') expect(nodes.has(a.name), `node ${a.name}`).to.equal(true);
        else {
          const [w, i] = a.name.slice(1).split('-').map(Number);
          const shown = await must(restored.api.get(`/node/w${w}-${i - 1}`));
          expect(shown.body.metadata, `metadata of w${w}-${i - 1}`).to.deep.equal({ rack: a.name });
        }
        checked++;
      }
      expect(checked).to.be.at.least(300);
      // Nothing acknowledged after the copy finished is in it, and the copy is a store of its own.
      const late = acked.filter((a) => a.kind === 'project').slice(-1)[0];
      expect(projects.has(late.name)).to.equal(false);
      await must(restored.api.put('/project/after-restore'));
      expect((await must(api.get('/projects'))).body).to.not.include('after-restore');
      // The audit log came along.
      const audit = (await must(restored.api.get('/admin/audit?kind=project&limit=1'))).body;
      expect(audit.entries[0]).to.include({ kind: 'project', name: 'after-restore', by: 'admin' });
    } finally {
      await stopTestServer(restored, false);
    }
  });

  it('refuses a path that exists, a relative path, a missing parent; is for admins only; metrics count each outcome', async () => {
    const api = ts.api;
    const m0 = parseExposition((await must(api.get('/metrics'))).text);
    expect(value(m0, 'hilt_backups_total', { outcome: 'ok' })).to.equal(1);
    expect(value(m0, 'hilt_backup_last_success_timestamp_seconds')).to.be.within(Date.now() / 1000 - 120, Date.now() / 1000);
    const again = await api.post('/admin/backup', { path: join(dir, 'copy') });
    expect(again.status).to.equal(409);
    expect(again.body.type).to.equal('DuplicateError');
    expect((await api.post('/admin/backup', { path: 'relative/copy' })).status).to.equal(400);
    const orphan = await api.post('/admin/backup', { path: join(dir, 'no', 'such', 'parent') });
    expect(orphan.status).to.equal(400);
    expect(orphan.body.msg).to.match(/parent/);
    expect((await api.post('/admin/backup', {})).status).to.equal(400);
    // Paths that cannot be a new folder are the caller's mistake (400), quoted short.
    for (const [path, why] of [[join(dir, 'x'.repeat(300), 'copy'), /too long/], [join(dir, 'copy', 'data.mdb', 'inner'), /not a folder/]] as const) {
      const r = await api.post('/admin/backup', { path });
      expect(r.status, r.text).to.equal(400);
      expect(r.body.msg).to.match(why);
      expect(r.body.msg).to.not.include('x'.repeat(100));
    }
    await makeUser(api, 'backup-member', 'pw');
    expect((await api.with({ user: 'backup-member', password: 'pw' }).post('/admin/backup', { path: join(dir, 'member') })).status).to.equal(401);
    const m1 = parseExposition((await must(api.get('/metrics'))).text);
    expect(value(m1, 'hilt_backups_total', { outcome: 'error' })).to.equal(4);
    expect(value(m1, 'hilt_backups_total', { outcome: 'ok' })).to.equal(1);
  });

  it('refuses a path with a NUL byte as the caller\'s mistake (400), not the service\'s (503)', async () => {
    const r = await ts.api.post('/admin/backup', { path: join(dir, 'nul\u0000copy') });
    expect(r.status, r.text).to.equal(400);
    expect(r.body.type).to.equal('BadArgumentError');
  });

  it('a copy that fails midway (a full disk) leaves no folder behind: nothing that looks like a backup, and the same path works again', async () => {
    // The engine's LMDB environment, with its copy made to write half a file and fail as a full disk does.
    const root = (ts.world.runtime.engine as unknown as { root: { backup(path: string, compact: boolean): Promise<void> } }).root;
    const copy = root.backup;
    root.backup = async function (this: unknown, path: string, compact: boolean) {
      await copy.call(this, path, compact);
      truncateSync(join(path, 'data.mdb'), Math.floor(statSync(join(path, 'data.mdb')).size / 2));
      // What lmdb-js throws on a full disk (seen on a full tmpfs): the system's message, no code.
      throw new Error('No space left on device');
    };
    const path = join(dir, 'nightly');
    try {
      const r = await ts.api.post('/admin/backup', { path });
      expect(r.status, r.text).to.equal(503);
      expect(r.body.msg, 'the answer says why').to.match(/No space left on device/);
    } finally {
      root.backup = copy;
    }
    expect(existsSync(path), 'a half-written copy left where the backups are').to.equal(false);
    await must(ts.api.post('/admin/backup', { path }));
    expect(statSync(join(path, 'data.mdb')).size).to.be.above(0);
  });

  it('a copy under way is not at its path: a crash midway (kill -9, a power loss) leaves nothing there that looks like a backup', async () => {
    const root = (ts.world.runtime.engine as unknown as { root: { backup(path: string, compact: boolean): Promise<void> } }).root;
    const copy = root.backup;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let copying!: () => void;
    const copyStarted = new Promise<void>((r) => (copying = r));
    root.backup = async function (this: unknown, path: string, compact: boolean) {
      // Half a copy written, then the process is "killed": nothing more happens until released.
      await copy.call(this, path, compact);
      truncateSync(join(path, 'data.mdb'), Math.floor(statSync(join(path, 'data.mdb')).size / 2));
      copying();
      await held;
      mkdirSync(`${path}.again`);
      await copy.call(this, `${path}.again`, compact);
      renameSync(join(`${path}.again`, 'data.mdb'), join(path, 'data.mdb'));
      rmSync(`${path}.again`, { recursive: true, force: true });
    };
    const path = join(dir, 'under-way');
    let call: Promise<{ status: number; text: string; body: { type?: string; msg?: string } }> | undefined;
    try {
      call = ts.api.post('/admin/backup', { path });
      await copyStarted;
      expect(existsSync(join(path, 'data.mdb')), 'a half-written data.mdb at the backup\'s path').to.equal(false);
      // A second backup to the same path meanwhile is refused, saying why.
      const twice = await ts.api.post('/admin/backup', { path });
      expect(twice.status, twice.text).to.equal(409);
      expect(twice.body.msg).to.match(/under way|interrupted/);
      release();
      const r = await call;
      expect(r.status, r.text).to.equal(200);
    } finally {
      release();
      await call;
      root.backup = copy;
    }
    expect(existsSync(join(path, 'data.mdb'))).to.equal(true);
    expect(statSync(join(path, 'data.mdb')).mode & 0o777).to.equal(0o600);
    expect(readdirSync(dir).filter((n) => n.startsWith('under-way')), 'nothing but the copy').to.deep.equal(['under-way']);
  });

  it('refuses a path inside the data folder (400): a copy there is lost with the folder, and a restore moves it away', async () => {
    for (const path of [join(ts.config.dataDir, 'backup'), join(ts.config.dataDir, 'archive')]) {
      const r = await ts.api.post('/admin/backup', { path });
      expect(r.status, r.text).to.equal(400);
      expect(r.body.msg).to.match(/data folder/);
      expect(existsSync(path)).to.equal(false);
    }
  });

  it('a webhook restored from a backup shows the events it has left to deliver as its backlog, not the gap its positions went past', async () => {
    const rcv = await new Receiver().start();
    const fast = { webhookRetryMinMs: 20, webhookRetryMaxMs: 100 };
    const src = await startTestServer(fast);
    let srcOpen = true;
    let restored: TestServer | undefined;
    try {
      const { id } = (await must(src.api.post('/admin/webhooks', { url: rcv.url, secret: 'restore-webhook-secret-0123', types: ['project.created'] }))).body;
      await must(src.api.put('/project/delivered-before'));
      await rcv.until(() => rcv.delivered().length === 1);
      // Waiting at the backup: the receiver is down for these two.
      rcv.answer = () => 503;
      await must(src.api.put('/project/waiting-1'));
      await must(src.api.put('/project/waiting-2'));
      await rcv.until(() => rcv.requests.length > 1);
      const path = join(dir, 'with-webhook');
      await must(src.api.post('/admin/backup', { path }));
      copyFileSync(keyFilePath(src.config), join(path, 'secret.key'));
      await stopTestServer(src);
      srcOpen = false;
      restored = await startTestServer(fast, {}, path);
      const backlog = async () => Number((await must(restored!.api.get(`/admin/webhooks/${id}`))).body.backlog);
      expect(await backlog(), 'the two events waiting, and the commits between').to.be.within(2, 10);
      rcv.answer = () => 200;
      await rcv.until(() => rcv.delivered().length === 3);
      await until('the backlog to be delivered', async () => (await backlog()) === 0);
      await must(restored.api.put('/project/after-restore'));
      await rcv.until(() => rcv.delivered().length === 4);
      await until('the backlog to be delivered again', async () => (await backlog()) === 0);
    } finally {
      if (restored) await stopTestServer(restored, false);
      if (srcOpen) await stopTestServer(src);
      await rcv.close();
    }
  });

  it('a restored store started with no write since loads its checkpoint at the next start, rather than rebuild at every one', async () => {
    const src = await startTestServer();
    const path = join(dir, 'quiet');
    try {
      await makeNode(src.api, 'quiet-n1', ['eth0']);
      await must(src.api.put('/project/quiet-p'));
      await must(src.api.post('/admin/backup', { path }));
      copyFileSync(keyFilePath(src.config), join(path, 'secret.key'));
    } finally {
      await stopTestServer(src);
    }
    const lines: { msg: string; why?: string; level: number }[] = [];
    const logger = { level: 'info', stream: { write: (l: string) => void lines.push(JSON.parse(l)) } };
    const startedFrom = () => lines.filter((l) => /^(loaded the read model|rebuilt the read model)/.test(l.msg)).map((l) => l.msg.split(' ')[0]);
    for (let i = 0; i < 3; i++) {
      const restored = await startTestServer({}, { logger }, path);
      expect((await must(restored.api.get('/nodes/all'))).body).to.deep.equal(['quiet-n1']);
      expect((await must(restored.api.get('/projects'))).body).to.deep.equal(['quiet-p']);
      const { last, gap } = await restored.world.runtime.engine.bounds();
      expect(last, 'nothing written since the restore').to.equal(gap![1]);
      await stopTestServer(restored, false);
    }
    // The first start on the copy rebuilds (a backup holds no checkpoint); the next ones load the one it wrote.
    expect(startedFrom()).to.deep.equal(['rebuilt', 'loaded', 'loaded']);
    // The restore acts on the hardware the backup names (pending operations, ports, power-offs):
    // its first start says so, loudly, once; a service still running on the original must stop.
    const restores = lines.filter((l) => /restored from a backup/.test(l.msg));
    expect(restores.map((l) => l.level), 'one warning, at the first start on the copy').to.deep.equal([40]);
    expect(restores[0].msg).to.match(/switches/).and.to.match(/BMC/).and.to.match(/original/);
  });

  it('says that the memory engine has nothing to copy', async () => {
    const mem = await startTestServer({ storage: 'memory' });
    try {
      const r = await mem.api.post('/admin/backup', { path: join(dir, 'mem') });
      expect(r.status).to.equal(409);
      expect(r.body).to.deep.equal({ type: 'IllegalStateError', msg: 'the memory engine keeps nothing to back up: its data ends with the process' });
      // No success, no timestamp (0 would read as a backup decades old).
      expect((await must(mem.api.get('/metrics'))).text).to.not.include('hilt_backup_last_success_timestamp_seconds');
    } finally {
      await stopTestServer(mem);
    }
  });
});

describe('backup and restore on PostgreSQL', function () {
  this.timeout(120_000);
  const pgTool = (name: string, args: string[], env: Record<string, string> = {}) => {
    const r = spawnSync(findBin(name), args, { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
    expect(r.status, `${name}: ${r.stderr}`).to.equal(0);
  };

  it('the nightly unit leaves no dump behind when pg_dump fails, and a whole one when it succeeds', async () => {
    // Its ExecStart as systemd runs it: %% is %, $$ is $; the folder and the program are the test's.
    const unit = readFileSync(join(__dirname, '../../../../deploy/hilt-backup-postgres.service'), 'utf8');
    const line = unit.split('\n').find((l) => l.startsWith('ExecStart='))!;
    const script = /^ExecStart=\/bin\/sh -c '(.*)'$/.exec(line)![1].replace(/%%/g, '%').replace(/\$\$/g, '$');
    const ts = await startTestServer({ storage: 'postgres' });
    const dir = mkdtempSync(join(tmpdir(), 'hilt-pgunit-'));
    try {
      const run = (env: Record<string, string>) => spawnSync('/bin/sh', ['-c', script.replace(/\/var\/backups\/hilt/g, dir).replace('/usr/bin/pg_dump', findBin('pg_dump'))],
        { encoding: 'utf8', timeout: 60_000, env: { ...process.env, PGCONNECT_TIMEOUT: '5', ...env } });
      // The database cannot be reached (a port nothing listens on): the unit fails, and leaves nothing.
      const down = run({ PGHOST: '127.0.0.1', PGPORT: '1', PGUSER: 'hilt', PGDATABASE: 'hilt' });
      expect(down.status, down.stderr).to.not.equal(0);
      expect(readdirSync(dir), 'a dump file left by a failed pg_dump').to.deep.equal([]);
      const url = new URL(ts.config.databaseUrl!);
      const ok = run({ PGHOST: url.searchParams.get('host')!, PGPORT: url.port, PGUSER: url.username, PGDATABASE: url.pathname.slice(1) });
      expect(ok.status, ok.stderr).to.equal(0);
      const files = readdirSync(dir);
      expect(files).to.have.length(1);
      expect(files[0]).to.match(/^hilt-\d{8}-\d{4}\.dump$/);
      expect(statSync(join(dir, files[0])).size).to.be.above(0);
    } finally {
      await stopTestServer(ts);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers the online backup 409, saying what to do instead; pg_dump -Fc and pg_restore give a database hilt starts on', async () => {
    const ts = await startTestServer({ storage: 'postgres' });
    const dir = mkdtempSync(join(tmpdir(), 'hilt-pgdump-'));
    let restored: TestServer | undefined;
    try {
      const api = ts.api;
      await must(api.put('/project/before-dump'));
      await makeNode(api, 'n1', ['eth0']);
      const r = await api.post('/admin/backup', { path: join(dir, 'copy') });
      expect(r.status).to.equal(409);
      expect(r.body.type).to.equal('IllegalStateError');
      expect(r.body.msg).to.equal('on PostgreSQL, hilt makes no copy of its own: back up the database with PostgreSQL\'s tools (pg_dump -Fc, or the backup tooling of your PostgreSQL), and restore by starting hilt on the restored database (docs/operations.md, Backup and restore)');
      const m = parseExposition((await must(api.get('/metrics'))).text);
      expect(value(m, 'hilt_backups_total', { outcome: 'error' }), 'a nightly call of it would be seen failing').to.equal(1);

      // The runbook's backup (deploy/hilt-backup-postgres.service: the database named by libpq's
      // variables), while the service runs; a change after it is not in the copy.
      const dump = join(dir, 'hilt.dump');
      const url = new URL(ts.config.databaseUrl!);
      pgTool('pg_dump', ['-Fc', '-f', dump], { PGHOST: url.searchParams.get('host')!, PGPORT: url.port, PGUSER: url.username, PGDATABASE: url.pathname.slice(1) });
      await must(api.put('/project/after-dump'));
      // Its restore: a new database, then hilt started on it.
      const target = await (await testPostgres()).createDatabase('hilt_restored');
      // A damaged dump (cut short: a disk that filled) restores nothing rather than a part:
      // the runbook's pg_restore stops at the first error and runs in one transaction.
      const RESTORE = ['--no-owner', '--exit-on-error', '--single-transaction'];
      const cut = join(dir, 'cut.dump');
      copyFileSync(dump, cut);
      truncateSync(cut, Math.floor(statSync(cut).size * 0.95));
      const half = await (await testPostgres()).createDatabase('hilt_half');
      const bad = spawnSync(findBin('pg_restore'), [...RESTORE, '-d', half, cut], { encoding: 'utf8', timeout: 60_000 });
      expect(bad.status, 'pg_restore of a damaged dump').to.not.equal(0);
      const tables = spawnSync(findBin('psql'), ['-At', '-d', half, '-c', "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'hilt%'"], { encoding: 'utf8', timeout: 60_000 });
      expect(tables.stdout.trim(), `tables a failed restore left: ${tables.stderr}`).to.equal('0');
      pgTool('pg_restore', [...RESTORE, '-d', target, dump]);
      // The runbook's next step: event ids go on past a gap, never one the old database gave after the dump.
      // (the old database's newest id, the change after the dump included)
      const oldLast = (await ts.world.runtime.engine.bounds()).last;
      // The runbook's command (docs/operations.md), word for word.
      const ops = readFileSync(join(__dirname, '../../../../docs/operations.md'), 'utf8');
      const setval = /psql -h db\.example -U hilt -d hilt_restored -c "(SELECT setval\('hilt_events_pos_seq'.*)"$/m.exec(ops)![1];
      pgTool('psql', ['-v', 'ON_ERROR_STOP=1', '-d', target, '-c', setval]);
      // The dump holds no key: the restored service is given the service's own (docs/identity.md).
      restored = await startTestServer({ storage: 'postgres', databaseUrl: target, secretKeyFile: keyFilePath(ts.config) });
      expect((await must(restored.api.get('/projects'))).body).to.deep.equal(['before-dump']);
      expect((await must(restored.api.get('/node/n1'))).body.nics).to.have.length(1);
      await must(restored.api.put('/project/after-restore'));
      expect((await must(api.get('/projects'))).body).to.deep.equal(['before-dump', 'after-dump']);
      const firstRestore = (await restored.world.runtime.engine.bounds()).last;
      expect(firstRestore).to.be.above(oldLast + 2 ** 32 - 1);
      await stopTestServer(restored);
      restored = undefined;
      // The same dump restored again: its ids go on above every one the first restore gave.
      const again = await (await testPostgres()).createDatabase('hilt_restored_again');
      pgTool('pg_restore', [...RESTORE, '-d', again, dump]);
      pgTool('psql', ['-v', 'ON_ERROR_STOP=1', '-d', again, '-c', setval]);
      restored = await startTestServer({ storage: 'postgres', databaseUrl: again, secretKeyFile: keyFilePath(ts.config) });
      await must(restored.api.put('/project/after-second-restore'));
      const [e] = (await must(restored.api.get('/admin/audit?kind=project&limit=1'))).body.entries;
      expect(e.name).to.equal('after-second-restore');
      expect((await restored.world.runtime.engine.bounds()).last).to.be.above(firstRestore);
      // A client of the first restore comes back: told its id is gone, not resumed after it.
      const back = new SseStream(`${restored.url}/events`, { as: ADMIN, lastEventId: String(firstRestore) });
      expect(await back.answered()).to.equal(410);
      await back.ended;
    } finally {
      if (restored) await stopTestServer(restored);
      await stopTestServer(ts);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('after the runbook\'s restore, an id of the lost changes answers 410 also once the restored database is written past it, and a webhook\'s backlog is not the gap', async () => {
    const rcv = await new Receiver().start();
    const fast = { storage: 'postgres' as const, webhookRetryMinMs: 20, webhookRetryMaxMs: 100 };
    const ts = await startTestServer(fast);
    const dir = mkdtempSync(join(tmpdir(), 'hilt-pggap-'));
    let restored: TestServer | undefined;
    let tsOpen = true;
    try {
      const api = ts.api;
      const { id } = (await must(api.post('/admin/webhooks', { url: rcv.url, secret: 'restore-webhook-secret-0123', types: ['project.created'] }))).body;
      await must(api.put('/project/delivered-before'));
      await rcv.until(() => rcv.delivered().length === 1);
      // Waiting at the dump: the receiver is down for this one.
      rcv.answer = () => 503;
      await must(api.put('/project/waiting'));
      const dump = join(dir, 'hilt.dump');
      pgTool('pg_dump', ['-Fc', '-f', dump, '-d', ts.config.databaseUrl!]);
      // The lost changes: a client of the stream saw them.
      await must(api.put('/project/lost'));
      const s = new SseStream(`${ts.url}/events?after=0&kind=project`, { as: ADMIN });
      await s.count(3);
      s.close();
      const lostId = s.events.find((e) => e.data.name === 'lost')!.id;
      // Its data folder kept: the restored service is given the service's key (docs/identity.md).
      await stopTestServer(ts, false);
      tsOpen = false;
      // The runbook (docs/operations.md): pg_restore into a new database, its setval, start.
      const target = await (await testPostgres()).createDatabase('hilt_restored');
      pgTool('pg_restore', ['--no-owner', '--exit-on-error', '--single-transaction', '-d', target, dump]);
      const ops = readFileSync(join(__dirname, '../../../../docs/operations.md'), 'utf8');
      const setval = /psql -h db\.example -U hilt -d hilt_restored -c "(SELECT setval\('hilt_events_pos_seq'.*)"$/m.exec(ops)![1];
      pgTool('psql', ['-v', 'ON_ERROR_STOP=1', '-d', target, '-c', setval]);
      restored = await startTestServer({ ...fast, databaseUrl: target, secretKeyFile: keyFilePath(ts.config) });
      // The restored database written to: its new ids are above the lost one.
      await must(restored.api.put('/project/after-restore'));
      for (const opts of [{ lastEventId: lostId }, { query: `&after=${lostId}` }]) {
        const gone = new SseStream(`${restored.url}/events?kind=project${opts.query ?? ''}`, { as: ADMIN, lastEventId: opts.lastEventId });
        expect(await gone.answered(), gone.events.map((e) => `${e.id} ${e.data.name}`).join(', ')).to.equal(410);
        await gone.ended;
        const oldest = Number(JSON.parse(gone.body).oldest);
        expect(oldest).to.be.above(Number(lostId));
        const fresh = new SseStream(`${restored.url}/events?kind=project&after=${oldest - 1}`, { as: ADMIN });
        await fresh.count(1);
        expect(fresh.events.map((e) => e.data.name)).to.deep.equal(['after-restore']);
        fresh.close();
      }
      // The webhook goes on from its cursor of the dump: its backlog counts events, not the gap.
      const backlog = async () => Number((await must(restored!.api.get(`/admin/webhooks/${id}`))).body.backlog);
      expect(await backlog(), 'the event waiting, the one after the restore, and the commits between').to.be.within(2, 10);
      rcv.answer = () => 200;
      await rcv.until(() => rcv.delivered().length === 3);
      await until('the backlog to be delivered', async () => (await backlog()) === 0);
      // The store knows the run of ids the restore went on past (GET /admin/webhooks reads it too).
      const { gap } = await restored.world.runtime.engine.bounds();
      expect(gap).to.be.an('array');
      expect(gap![0]).to.be.at.most(Number(lostId));
      expect(gap![1]).to.be.at.least(Number(lostId));
    } finally {
      if (restored) await stopTestServer(restored);
      if (tsOpen) await stopTestServer(ts);
      await rcv.close();
      rmSync(ts.dataDir, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
