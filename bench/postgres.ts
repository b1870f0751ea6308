/**
 * LMDB and PostgreSQL side by side, in one run (issue 16): node_register (durable) and show_node
 * on each engine (ratios to the bare fastify route of the same target process), the start time of
 * an inventory of BENCH_NODES nodes from each engine, and the failover time on PostgreSQL: from
 * the kill of the active process to the first write the new active accepts (median of
 * BENCH_FAILOVERS), after kill -9 and after SIGSTOP (a machine gone: its session stays open, so
 * the standby waits for the lease's TTL).
 *
 *   npm run bench:postgres   (BENCH_NODES, BENCH_SECONDS, BENCH_FAILOVERS, BENCH_WARMUP_SECONDS change the load)
 *
 * PostgreSQL: the bench starts its own (initdb into a temporary folder, postgres as a child
 * process on a unix socket, fsync on: commits are durable as in production), or uses
 * BENCH_DATABASE_URL's server (a database is created per phase there).
 */
import { spawn, ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run, startTarget, registerRequests, showRequests, Figure, AUTH, WARMUP } from './inventory';
import { newDatabase, startPostgres } from '../test/helpers/postgres';
import { sleep } from '../lib/time';
import { freePort } from '../test/helpers/ports';

const NODES = Number(process.env.BENCH_NODES ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const FAILOVERS = Number(process.env.BENCH_FAILOVERS ?? 10);
const PAUSES = Number(process.env.BENCH_PAUSES ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const WRITE_CONNECTIONS = Number(process.env.BENCH_WRITE_CONNECTIONS ?? 128);
const SERVER = join(__dirname, '..', 'src', 'server.js');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

interface Engine { name: 'lmdb' | 'postgres'; env(): Promise<Record<string, string>> }


interface Row { writes32: number; writes128: number; show: number; start: number; bare32: number; bare128: number; bareGet: number; fig: Record<string, Figure> }

/** Durable registrations at `connections`, between two runs of the identical bare PUT route. */
async function writes(env: Record<string, string>, connections: number): Promise<{ reg: Figure; bare: number }> {
  const t = await startTarget(env);
  try {
    const bareUrl = t.bare.replace(/\/bare$/, '');
    const bareReq = () => registerRequests('b', '/bare');
    await run('warm-up', { url: bareUrl, duration: WARMUP, connections, requests: bareReq() });
    await run('warm-up', { url: t.hilt, duration: WARMUP, connections, requests: registerRequests('w') });
    const b1 = await run('bare PUT', { url: bareUrl, connections, requests: bareReq() });
    const reg = await run('node_register', { url: t.hilt, connections, requests: registerRequests('n') });
    const b2 = await run('bare PUT', { url: bareUrl, connections, requests: bareReq() });
    return { reg, bare: (b1.rps + b2.rps) / 2 };
  } finally {
    await t.stop();
  }
}

/** show_node over NODES nodes; then the start time of a new target on that same store (median of 3). */
async function readsAndStart(env: Record<string, string>): Promise<{ show: Figure; bare: number; startMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'hilt-bench-store-'));
  const storeEnv = { ...env, BENCH_DATA_DIR: dir };
  try {
    const t = await startTarget(storeEnv);
    let show: Figure;
    let bare: number;
    try {
      await run('seed', { url: t.hilt, amount: NODES, connections: Math.min(64, NODES), requests: registerRequests('n') });
      await run('warm-up', { url: t.bare, duration: WARMUP, connections: CONNECTIONS });
      await run('warm-up', { url: `${t.hilt}/node/n1`, duration: WARMUP, connections: CONNECTIONS });
      const b1 = await run('bare', { url: t.bare, connections: CONNECTIONS });
      show = await run('show_node', { url: t.hilt, connections: CONNECTIONS, requests: showRequests(NODES) });
      const b2 = await run('bare', { url: t.bare, connections: CONNECTIONS });
      bare = (b1.rps + b2.rps) / 2;
    } finally {
      await t.stop();
    }
    const starts: number[] = [];
    for (let k = 0; k < 3; k++) {
      const again = await startTarget(storeEnv);
      starts.push(again.startMs);
      await again.stop();
    }
    return { show, bare, startMs: median(starts) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- failover: real server processes --------------------------------------------------------

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) {
    c.kill('SIGCONT');
    c.kill('SIGKILL');
  }
});


interface Proc { child: ChildProcess; url: string; exited: Promise<void> }

async function startServer(env: Record<string, string>, ready: RegExp): Promise<Proc> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--max-semi-space-size=32', SERVER], {
    env: { ...process.env, HILT_HOST: '127.0.0.1', HILT_PORT: String(port), HILT_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => {
    children.delete(child);
    resolve();
  }));
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const deadline = Date.now() + 120_000;
  while (!ready.test(out)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`server did not start:\n${out}`);
    await sleep(20);
  }
  // Keep only a little of its output (it logs every request).
  child.stdout!.removeAllListeners('data');
  child.stdout!.resume();
  return { child, url: `http://127.0.0.1:${port}`, exited };
}

async function put(url: string, path: string): Promise<number> {
  const r = await fetch(url + path, { method: 'PUT', headers: { authorization: AUTH } }).catch(() => undefined);
  await r?.arrayBuffer().catch(() => undefined);
  return r?.status ?? 0;
}

/** Median time from taking the active away (kill -9, or SIGSTOP) to the first write the standby accepts. */
async function failovers(databaseUrl: string, keyFile: string, how: 'SIGKILL' | 'SIGSTOP', rounds: number): Promise<number[]> {
  const root = mkdtempSync(join(tmpdir(), 'hilt-bench-failover-'));
  let n = 0;
  const env = () => ({
    HILT_STORAGE: 'postgres', HILT_DATABASE_URL: databaseUrl, HILT_DATA_DIR: join(root, `p${++n}`), HILT_INSTANCE_NAME: `p${n}`,
    HILT_ADMIN_PASSWORD: 'bench', HILT_HEADNODE_DRIVER: 'mock',
    // One key for the pair and the seed: the credentials in the database are sealed under it,
    // and a process with another key refuses to activate.
    HILT_SECRET_KEY_FILE: keyFile,
  });
  const times: number[] = [];
  try {
    let active = await startServer(env(), /hilt is ready/);
    let standby = await startServer(env(), /hilt is a standby/);
    for (let round = 0; round < rounds; round++) {
      const t0 = performance.now();
      active.child.kill(how);
      for (let i = 0; ; i++) {
        if ((await put(standby.url, `/project/failover-${how}-${round}-${i}`)) === 200) break;
        if (performance.now() - t0 > 120_000) throw new Error('no failover within 120 s');
        await sleep(5);
      }
      times.push(Math.round(performance.now() - t0));
      if (how === 'SIGSTOP') active.child.kill('SIGKILL');
      active.child.kill('SIGCONT');
      await active.exited;
      active = standby;
      standby = await startServer(env(), /hilt is a standby/);
    }
    for (const p of [active, standby]) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return times;
}

/** Seeds a database whose credentials are sealed under `keyFile`, the key the failover pair then shares. */
async function seed(databaseUrl: string, keyFile: string): Promise<void> {
  const t = await startTarget({ HILT_STORAGE: 'postgres', HILT_DATABASE_URL: databaseUrl, HILT_SECRET_KEY_FILE: keyFile });
  try {
    await run('seed', { url: t.hilt, amount: NODES, connections: Math.min(64, NODES), requests: registerRequests('n') });
  } finally {
    await t.stop();
  }
}

async function main(): Promise<void> {
  const external = process.env.BENCH_DATABASE_URL;
  const pg = external ?? (await startPostgres({ fsync: true }));
  const engines: Engine[] = [
    { name: 'lmdb', env: async () => ({ HILT_STORAGE: 'lmdb' }) },
    { name: 'postgres', env: async () => ({ HILT_STORAGE: 'postgres', HILT_DATABASE_URL: await newDatabase('hilt_bench', pg) }) },
  ];
  try {
    const rows: Record<string, Row> = {};
    for (const e of engines) {
      const w32 = await writes(await e.env(), CONNECTIONS);
      const w128 = await writes(await e.env(), WRITE_CONNECTIONS);
      const r = await readsAndStart(await e.env());
      rows[e.name] = {
        writes32: w32.reg.rps / w32.bare, writes128: w128.reg.rps / w128.bare, show: r.show.rps / r.bare, start: r.startMs,
        bare32: w32.bare, bare128: w128.bare, bareGet: r.bare, fig: { w32: w32.reg, w128: w128.reg, show: r.show },
      };
      const bad = Object.values(rows[e.name].fig).filter((f) => f.errors || f.non2xx);
      if (bad.length) throw new Error(`${e.name}: requests failed; the figures are not valid`);
    }
    // Failover on an inventory of NODES nodes: the new active rebuilds it before it serves.
    const db = await newDatabase('hilt_bench', pg);
    const keyDir = mkdtempSync(join(tmpdir(), 'hilt-bench-key-'));
    const keyFile = join(keyDir, 'secret.key');
    await seed(db, keyFile);
    const killed = await failovers(db, keyFile, 'SIGKILL', FAILOVERS);
    const paused = await failovers(db, keyFile, 'SIGSTOP', PAUSES);
    rmSync(keyDir, { recursive: true, force: true });

    const line = (name: string, f: (r: Row) => string) => console.log(`${name.padEnd(40)} ${f(rows.lmdb).padStart(22)} ${f(rows.postgres).padStart(22)}`);
    const ratio = (fig: keyof Row['fig'], base: 'bare32' | 'bare128' | 'bareGet') => (r: Row) => `${r.fig[fig].rps.toFixed(0)} req/s  p50 ${r.fig[fig].p50} ms  ${(r.fig[fig].rps / r[base]).toFixed(2)}`;
    console.log(`\nLMDB and PostgreSQL side by side: ${SECONDS} s per scenario, ${NODES} nodes; ratio: to the bare route of the same target process\n`);
    console.log(`${'scenario'.padEnd(40)} ${'lmdb'.padStart(22)} ${'postgres'.padStart(22)}`);
    line(`node_register (durable), ${CONNECTIONS} conn.`, ratio('w32', 'bare32'));
    line(`node_register (durable), ${WRITE_CONNECTIONS} conn.`, ratio('w128', 'bare128'));
    line(`show_node (${NODES} nodes), ${CONNECTIONS} conn.`, ratio('show', 'bareGet'));
    line(`start with ${NODES} nodes (median of 3)`, (r) => `${r.start} ms`);
    console.log(`${`failover after kill -9 (median of ${FAILOVERS})`.padEnd(40)} ${'-'.padStart(22)} ${`${median(killed)} ms`.padStart(22)}`);
    console.log(`${`failover after SIGSTOP (median of ${PAUSES})`.padEnd(40)} ${'-'.padStart(22)} ${`${median(paused)} ms`.padStart(22)}`);
    console.log(`\nfailover after kill -9, each (ms): ${killed.join(', ')}`);
    console.log(`failover after SIGSTOP, each (ms): ${paused.join(', ')} (lease TTL 5000 ms)`);
  } finally {
    if (typeof pg !== 'string') await pg.stop();
  }
}

if (require.main === module) {
  main().then(() => process.exit(0), (err) => {
    console.error(err);
    process.exit(1);
  });
}
