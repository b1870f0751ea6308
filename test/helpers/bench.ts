/**
 * Running a bench script as `npm run bench…` does (after the build), for the CI smoke runs in
 * test/bench/: what it printed and how it exited.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const DIST_BENCH = join(__dirname, '..', '..', 'bench');

export function runBench(script: string, env: Record<string, string>, args: string[] = [], nodeFlags: string[] = []): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeFlags, join(DIST_BENCH, script), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, out }));
  });
}
