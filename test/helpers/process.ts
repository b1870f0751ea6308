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
import { freshDatabase } from './postgres';

const SERVER = join(__dirname, '..', '..', 'src', 'server.js');
const children = new Set<ChildProcess>();
/** data folder → its database (postgres) */
const databases = new Map<string, Promise<string>>();

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output(): string;
  /** resolves with the exit code or signal */
  exited: Promise<number | string>;
}

/** Start dist/src/server.js; resolves once its output says `ready` (default: it is active and ready). */
export async function startServerProcess(env: Record<string, string>, readyTimeoutMs = 15_000, ready: RegExp = /hilt is ready/): Promise<ServerProcess> {
  const port = await freePort();
  const merged: Record<string, string | undefined> = { ...process.env, HILT_HOST: '127.0.0.1', HILT_PORT: String(port), HILT_LOG_LEVEL: 'info', ...env };
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
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, sig) => {
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
