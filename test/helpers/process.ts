/**
 * The service as a real child process (dist/src/server.js), for tests that must kill it.
 * Children are killed by PID in an after-hook: this machine's PID 1 does not reap orphans.
 * With HILT_STORAGE=postgres (the test run's or the caller's) and no HILT_DATABASE_URL, each
 * data folder gets a database of its own on the tests' PostgreSQL: a process restarted on its
 * folder finds its data again.
 */
import { spawn, ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { addCredentials, recordProcessOutput } from './secrets';
import { freshDatabase } from './postgres';
import { freePort } from './ports';

export { freePort };

const SERVER = join(__dirname, '..', '..', 'src', 'server.js');
const children = new Set<ChildProcess>();



export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output(): string;
  /** resolves with the exit code or signal */
  exited: Promise<number | string>;
}

/** data folder → its database (postgres) */
const databases = new Map<string, Promise<string>>();

export interface ProcessOptions {
  readyTimeoutMs?: number;
  /**
   * Keep at most this many characters of output (the first ones, then the newest): for long
   * runs that log every request. Every chunk is scanned for secrets as it arrives either way.
   */
  maxOutput?: number;
}

/** Start dist/src/server.js; resolves once its output says `ready` (default: it is active and ready). */
export async function startServerProcess(env: Record<string, string>, opts: number | ProcessOptions = {}, ready: RegExp = /hilt is ready/): Promise<ServerProcess> {
  const { readyTimeoutMs = 15_000, maxOutput = Infinity } = typeof opts === 'number' ? { readyTimeoutMs: opts } : opts;
  const port = await freePort();
  if (env.HILT_ADMIN_PASSWORD) addCredentials(env.HILT_ADMIN_USER ?? 'admin', env.HILT_ADMIN_PASSWORD);
  // Login throttling out of the way, as in test servers (test/helpers/server.ts).
  const merged: Record<string, string | undefined> = { ...process.env, HILT_HOST: '127.0.0.1', HILT_PORT: String(port), HILT_LOG_LEVEL: 'info', HILT_LOGIN_MAX_FAILURES: '1000000', ...env };
  if (merged.HILT_STORAGE === 'postgres' && !merged.HILT_DATABASE_URL) {
    const dir = merged.HILT_DATA_DIR ?? '';
    if (!databases.has(dir)) databases.set(dir, freshDatabase());
    merged.HILT_DATABASE_URL = await databases.get(dir)!;
  }
  const child = spawn(process.execPath, [SERVER], {
    env: merged,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  // The end of the previous chunk goes with the next one into the scan: a secret split between
  // two chunks is still found.
  let tail = '';
  const take = (d: Buffer) => {
    const text = d.toString('utf8');
    recordProcessOutput(tail + text, 'a server process\'s output');
    tail = text.slice(-256);
    out += text;
    if (out.length > maxOutput) out = out.slice(0, maxOutput / 2) + '\n…\n' + out.slice(-maxOutput / 2);
  };
  child.stdout!.on('data', take);
  child.stderr!.on('data', take);
  const exited = new Promise<number | string>((resolve) => child.once('close', (code, sig) => {
    children.delete(child);
    resolve(code ?? sig ?? 'unknown');
  }));
  const deadline = Date.now() + readyTimeoutMs;
  while (!ready.test(out)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`server did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { child, url: `http://127.0.0.1:${port}`, output: () => out, exited };
}

after(() => {
  for (const c of children) c.kill('SIGKILL');
});
