/**
 * A real PostgreSQL for the tests, started by the tests themselves: `initdb` into a temporary
 * folder, then `postgres` as a direct child process of the test process, listening on a unix
 * socket in that folder only (no TCP port: several test runs on one machine never collide).
 * Stopped by PID in the root after-hook (fast shutdown: the postmaster ends its backends).
 *
 * PostgreSQL refuses to run as root, and CI runs as root: then initdb and postgres run as the
 * unprivileged user `nobody` (the folder is handed to it). The binaries come from PATH or from
 * Debian's /usr/lib/postgresql/<version>/bin (the `postgresql` package, in .ci/apt-packages).
 *
 * Settings for speed on a shared 2-core machine: fsync off (the tests kill hilt, never
 * PostgreSQL, so the operating system keeps every committed write); every commit is still
 * synchronous from the client's point of view (synchronous_commit stays on).
 *
 * One server per test run (started on first use); each caller gets a database of its own.
 */
import { spawn, spawnSync, ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';

export interface PostgresOptions {
  /** fsync on: durable commits, as in production (the bench); off for the tests' speed */
  fsync?: boolean;
}

export interface TestPostgres {
  /** the socket folder */
  socketDir: string;
  port: number;
  /** a connection URL for database `db` */
  url(db: string): string;
  /** a new, empty database; returns its URL */
  createDatabase(prefix?: string): Promise<string>;
  /** the postmaster's PID */
  pid: number;
  /** fast shutdown, by PID; the folder is removed */
  stop(): Promise<void>;
}

const PORT = 5432;
const SUPERUSER = 'hilt';

/** A PostgreSQL program: from PATH, else from Debian's /usr/lib/postgresql/<version>/bin. */
export function findBin(name: string): string {
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir && existsSync(join(dir, name))) return join(dir, name);
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (existsSync(join(root, v, 'bin', name))) return join(root, v, 'bin', name);
  }
  throw new Error(`PostgreSQL's ${name} was not found (install Debian's postgresql package: .ci/apt-packages lists it)`);
}

/** uid and gid of `nobody` when running as root (PostgreSQL refuses root), else nothing. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(spawnSync('id', [flag, 'nobody'], { encoding: 'utf8' }).stdout.trim());
  const uid = id('-u');
  const gid = id('-g');
  if (!Number.isInteger(uid) || !Number.isInteger(gid) || uid === 0) throw new Error('no unprivileged user "nobody" to run PostgreSQL as');
  return { uid, gid };
}

let server: Promise<TestPostgres> | undefined;
let dbCount = 0;
/** every postmaster this process started and has not stopped */
const children = new Set<ChildProcess>();

function url(socketDir: string, db: string): string {
  return `postgresql://${SUPERUSER}@localhost:${PORT}/${db}?host=${encodeURIComponent(socketDir)}`;
}

/** Start a PostgreSQL of its own: initdb into a temporary folder, postgres as a direct child. */
export async function startPostgres(opts: PostgresOptions = {}): Promise<TestPostgres> {
  const initdb = findBin('initdb');
  const postgres = findBin('postgres');
  const user = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'hilt-pg-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  const init = spawnSync(initdb, ['-D', data, '-U', SUPERUSER, '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync'], {
    cwd: dir, encoding: 'utf8', ...(user ?? {}),
  });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const pg = spawn(postgres, [
    '-D', data, '-k', dir, '-p', String(PORT),
    '-c', 'listen_addresses=', ...(opts.fsync ? [] : ['-c', 'fsync=off', '-c', 'full_page_writes=off']),
    '-c', 'max_connections=300', '-c', 'shared_buffers=64MB', '-c', 'log_min_messages=fatal',
  ], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], ...(user ?? {}) });
  children.add(pg);
  let log = '';
  pg.stderr!.on('data', (d) => (log = (log + d).slice(-4000)));
  const exited = new Promise<void>((resolve) => pg.once('exit', () => {
    children.delete(pg);
    resolve();
  }));
  // Ready once a client gets in.
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (pg.exitCode !== null || pg.signalCode !== null) throw new Error(`postgres exited at start: ${log}`);
    const c = new Client({ connectionString: url(dir, 'postgres') });
    try {
      await c.connect();
      await c.end();
      break;
    } catch (err) {
      await c.end().catch(() => undefined);
      if (Date.now() > deadline) {
        pg.kill('SIGKILL');
        await exited;
        throw new Error(`postgres did not accept connections within 30 s: ${(err as Error).message}\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    socketDir: dir,
    port: PORT,
    pid: pg.pid!,
    url: (db) => url(dir, db),
    async createDatabase(prefix = 'hilt_test') {
      const name = `${prefix}_${process.pid}_${++dbCount}`;
      const c = new Client({ connectionString: url(dir, 'postgres') });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE ${name}`);
      } finally {
        await c.end();
      }
      return url(dir, name);
    },
    /** SIGINT is PostgreSQL's fast shutdown: it ends its backends, then itself. */
    async stop() {
      if (pg.exitCode === null && pg.signalCode === null) {
        pg.kill('SIGINT');
        const timer = setTimeout(() => pg.kill('SIGQUIT'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The test run's PostgreSQL, started on first use. */
export function testPostgres(): Promise<TestPostgres> {
  return (server ??= startPostgres());
}

/** A new, empty database on the run's PostgreSQL. */
export async function freshDatabase(prefix?: string): Promise<string> {
  return (await testPostgres()).createDatabase(prefix);
}

/** Work to do before the server stops (e.g. closing the services that use it). */
const beforeStop: (() => Promise<void>)[] = [];
export function beforePostgresStops(fn: () => Promise<void>): void {
  beforeStop.push(fn);
}

// Under mocha (the bench imports this module too): stop the run's server when the run ends.
if (typeof after === 'function') {
  // Closing every service still open, then the server, takes a while on a loaded machine.
  after(async function () {
    this.timeout(120_000);
    for (const fn of beforeStop) await fn().catch(() => undefined);
    const s = server;
    server = undefined;
    if (s) await (await s).stop();
  });
}
// If the process ends without that (an uncaught error), do not leave a server running.
process.once('exit', () => {
  for (const c of children) c.kill('SIGQUIT');
});

let created = 0;
/**
 * A new database for a bench: on a server of ours (its own name), or on the server of a URL
 * given on the command line (a name unique to this process).
 */
export async function newDatabase(prefix: string, pg: TestPostgres | string): Promise<string> {
  if (typeof pg !== 'string') return pg.createDatabase(prefix);
  const name = `${prefix}_${process.pid}_${++created}`;
  const c = new Client({ connectionString: pg });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const u = new URL(pg);
  u.pathname = `/${name}`;
  return u.toString();
}

/** One statement on its own connection: the rows it gives. */
export async function sql<T = Record<string, unknown>>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, params)).rows as T[];
  } finally {
    await c.end();
  }
}
