/**
 * A small folder's restart (issue 27): spawn `dist/src/server.js` on a seeded LMDB folder, time
 * it to its first correct answer (`GET /node/<last>` with every nic, as the kill loop and
 * `bench:scale --starts-only` define a start) and read the process's CPU then and once its
 * background warm-up is done; then time the command line (`hilt --help`, `hilt node show`)
 * against it. With `--before DIR` (another build's folder holding `dist/`, e.g. a worktree of
 * main) the two builds alternate, run for run, so a neighbour's load weighs on both alike.
 *
 *   npm run bench:seed -- --folder /tmp/s500 --nodes 500
 *   node dist/bench/restart.js --folder /tmp/s500 --runs 7 [--before /path/to/other/build]
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import { sleep } from '../lib/time';
import { freePort } from '../test/helpers/ports';
import { ADMIN, readManifest, type SeedManifest } from './seed';

const AUTH = 'Basic ' + Buffer.from(`${ADMIN.user}:${ADMIN.password}`).toString('base64');

/** CPU seconds (user + system) the process has used, from /proc (ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

export interface RestartFigure { firstAnswerMs: number; cpuS: number; settledCpuS: number; helpMs: number; showMs: number }

/** One start of `root`'s build on the folder, and the command line against it. */
export async function restartOnce(root: string, folder: string, m: SeedManifest, settleMs = 2500): Promise<RestartFigure> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [join(root, 'dist/src/server.js')], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      ...process.env, HILT_DATA_DIR: folder, HILT_HOST: '127.0.0.1', HILT_PORT: String(port), HILT_LOG_LEVEL: 'error',
      HILT_STORAGE: 'lmdb', HILT_ADMIN_USER: ADMIN.user, HILT_ADMIN_PASSWORD: ADMIN.password,
      HILT_VLAN_POOL: m.vlanPool.map(([a, b]) => `${a}-${b}`).join(','),
    },
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    const base = `http://127.0.0.1:${port}`;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the service exited while starting:\n${stderr}`);
      if (performance.now() - t0 > 120_000) throw new Error('the service did not answer within 120 s');
      const r = await fetch(`${base}/node/${m.lastNode}`, { headers: { authorization: AUTH } }).catch(() => undefined);
      const body = r && r.status === 200 ? ((await r.json()) as { name?: string; nics?: unknown[] }) : undefined;
      if (body?.name === m.lastNode && body.nics?.length === m.nicsPerNode) break;
      await sleep(2);
    }
    const firstAnswerMs = Math.round(performance.now() - t0);
    const cpuS = cpuSeconds(child.pid!);
    await sleep(settleMs);
    const settledCpuS = cpuSeconds(child.pid!);
    const cli = (...args: string[]) => {
      const t = performance.now();
      const r = spawnSync(process.execPath, [join(root, 'dist/src/cli/index.js'), ...args], {
        env: { ...process.env, HIL_ENDPOINT: base, HIL_USERNAME: ADMIN.user, HIL_PASSWORD: ADMIN.password }, encoding: 'utf8',
      });
      if (r.status !== 0) throw new Error(`hilt ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
      return Math.round(performance.now() - t);
    };
    return { firstAnswerMs, cpuS, settledCpuS, helpMs: cli('--help'), showMs: cli('node', 'show', m.lastNode) };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

async function main(): Promise<void> {
  const o = new Command('bench:restart')
    .requiredOption('--folder <dir>', 'an LMDB folder seeded by bench:seed')
    .option('--runs <n>', 'starts per build', Number, 5)
    .option('--before <dir>', 'another build (a folder holding dist/) to alternate with this one')
    .parse()
    .opts();
  const m = readManifest(o.folder);
  if (!m || m.storage !== 'lmdb') throw new Error(`${o.folder}: not an LMDB folder seeded by bench:seed`);
  const builds = [{ name: 'this build', root: resolve(__dirname, '..', '..') }];
  if (o.before) builds.unshift({ name: 'before', root: resolve(o.before) });
  const figures = new Map<string, RestartFigure[]>(builds.map((b) => [b.name, []]));
  for (let k = 0; k < o.runs; k++) {
    // Alternate which build goes first, so neither always follows the other's exit.
    for (const b of k % 2 ? [...builds].reverse() : builds) {
      const f = await restartOnce(b.root, o.folder, m);
      figures.get(b.name)!.push(f);
      console.log(`${b.name.padEnd(10)} first answer ${String(f.firstAnswerMs).padStart(5)} ms, CPU ${f.cpuS.toFixed(2)} s (${f.settledCpuS.toFixed(2)} s once warmed up); hilt --help ${f.helpMs} ms, hilt node show ${f.showMs} ms`);
    }
  }
  console.log(`medians, ${o.runs} starts each, ${o.folder} (${m.nodes} nodes):`);
  for (const [name, fs] of figures) {
    const of = (k: keyof RestartFigure) => median(fs.map((f) => f[k]));
    console.log(`${name.padEnd(10)} first answer ${of('firstAnswerMs')} ms (min ${Math.min(...fs.map((f) => f.firstAnswerMs))}), CPU ${of('cpuS').toFixed(2)} s, once warmed up ${of('settledCpuS').toFixed(2)} s; hilt --help ${of('helpMs')} ms, hilt node show ${of('showMs')} ms`);
  }
}

if (require.main === module) {
  main().then(() => process.exit(0), (err) => {
    console.error(err);
    process.exit(1);
  });
}
