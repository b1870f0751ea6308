/**
 * Journal retention under churn (issue 27 item 4): rounds of nodes created and deleted, on LMDB,
 * once without retention (HILT_JOURNAL_RETENTION_DAYS=0: the journal keeps everything) and once
 * with it, printing the data file's size after each round: growing without, bounded with. With
 * retention, a pass runs after each round with a clock moved past the period (what the service
 * does hourly once the period has passed), and a read route's latency is measured while it runs
 * against the same reads with nothing else running (p99, same run).
 *
 *   npm run bench:churn                                    (4 rounds of 60,000 nodes)
 *   npm run bench:churn -- --nodes 2000 --rounds 2         (BENCH_CHURN_NODES, BENCH_CHURN_ROUNDS)
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULTS } from '../src/config';
import { startService, Service } from '../src/service';
import { Retention } from '../src/retention';

const MOCK_OBM = 'http://schema.massopencloud.org/haas/v0/obm/mock';
const PASSWORD = 'bench-churn';
const DAY = 86_400_000;
/** asks in flight while creating and deleting */
const IN_FLIGHT = 256;
/** concurrent readers of GET /node/<node> */
const READERS = 8;

export interface ChurnOptions { nodes: number; rounds: number; log?: (line: string) => void }

export interface RoundFigure {
  round: number;
  /** data.mdb's size after the round (and its pass, with retention), bytes */
  sizeBytes: number;
  /** pages in use within it, bytes */
  usedBytes: number;
  /** events the round's pass removed (0 without retention) */
  removed: number;
  /** how long the pass took, ms */
  passMs: number;
}

export interface ChurnFigures {
  without: RoundFigure[];
  with: RoundFigure[];
  /** read latency (ms) with nothing else running, and while a pass runs: p50 and p99 */
  idle: { p50: number; p99: number; n: number };
  pruning: { p50: number; p99: number; n: number };
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Run `n` asks, IN_FLIGHT at a time. */
async function inBatches(n: number, ask: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < n; i += IN_FLIGHT) await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, n - i) }, (_, j) => ask(i + j)));
}

/** GET /node/<node> from READERS clients in a loop until `until` settles: each call's latency, ms. */
async function readWhile(svc: Service, node: string, until: Promise<unknown>): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: READERS });
  const auth = `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`;
  const url = new URL(`/node/${node}`, svc.url);
  let done = false;
  void until.finally(() => (done = true));
  const times: number[] = [];
  const one = () => new Promise<void>((resolve, reject) => {
    const t0 = performance.now();
    request(url, { agent, headers: { authorization: auth } }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`GET ${url.pathname}: ${res.statusCode}`));
        times.push(performance.now() - t0);
        resolve();
      });
    }).on('error', reject).end();
  });
  await Promise.all(Array.from({ length: READERS }, async () => {
    while (!done) await one();
  }));
  agent.destroy();
  return times;
}

async function run(opts: ChurnOptions, retention: boolean, latencies?: { idle: number[]; pruning: number[] }): Promise<RoundFigure[]> {
  const dir = mkdtempSync(join(tmpdir(), 'hilt-bench-churn-'));
  // The service's own passes are off: the bench runs them, with a clock past the period.
  const svc = await startService({ ...DEFAULTS, host: '127.0.0.1', port: 0, dataDir: dir, adminUser: 'admin', adminPassword: PASSWORD, logLevel: 'silent', journalRetentionDays: 0 });
  const figures: RoundFigure[] = [];
  try {
    const obm = svc.drivers.obm.registry.validate({ type: MOCK_OBM, host: 'bmc.example', user: 'u', password: 'bench-obm' });
    if (typeof obm === 'string') throw new Error(obm);
    const nodes = svc.world.nodes;
    await nodes.ask('kept', { type: 'node.register', by: 'admin', obm });
    const pass = new Retention(svc.world, { days: 1, archiveDir: join(dir, 'archive'), now: () => Date.now() + 2 * DAY });
    for (let round = 1; round <= opts.rounds; round++) {
      const name = (i: number) => `r${round}-n${i}`;
      await inBatches(opts.nodes, (i) => nodes.ask(name(i), { type: 'node.register', by: 'admin', obm }));
      await inBatches(opts.nodes, (i) => nodes.ask(name(i), { type: 'node.delete', by: 'admin' }));
      let removed = 0;
      let passMs = 0;
      if (retention) {
        const t0 = performance.now();
        const running = pass.pass();
        const during = await readWhile(svc, 'kept', running);
        removed = (await running).events;
        passMs = performance.now() - t0;
        // The same reads for as long, with nothing else running.
        const idle = await readWhile(svc, 'kept', new Promise((r) => setTimeout(r, Math.max(500, passMs))));
        // (a loop: spreading hundreds of thousands of figures would overflow the stack)
        for (const t of during) latencies?.pruning.push(t);
        for (const t of idle) latencies?.idle.push(t);
      }
      const stats = await svc.world.runtime.engine.stats!();
      const figure = { round, sizeBytes: statSync(join(dir, 'data.mdb')).size, usedBytes: stats.usedBytes ?? 0, removed, passMs };
      figures.push(figure);
      opts.log?.(`${retention ? 'with' : 'without'} retention, round ${round}: data.mdb ${mib(figure.sizeBytes)} MiB (${mib(figure.usedBytes)} in use)${retention ? `, pass removed ${removed} events in ${(passMs / 1000).toFixed(1)} s` : ''}`);
    }
  } finally {
    await svc.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}

const mib = (b: number) => (b / 1024 / 1024).toFixed(1);

export async function churn(opts: ChurnOptions): Promise<ChurnFigures> {
  const without = await run(opts, false);
  const lat = { idle: [] as number[], pruning: [] as number[] };
  const withR = await run(opts, true, lat);
  const summary = (t: number[]) => {
    const s = [...t].sort((a, b) => a - b);
    return { p50: percentile(s, 50), p99: percentile(s, 99), n: s.length };
  };
  return { without, with: withR, idle: summary(lat.idle), pruning: summary(lat.pruning) };
}

function arg(name: string, env: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? process.argv[i + 1] : process.env[env];
  const n = v === undefined ? dflt : Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} (${env}) must be a positive integer`);
  return n;
}

async function main(): Promise<void> {
  const opts = { nodes: arg('nodes', 'BENCH_CHURN_NODES', 60_000), rounds: arg('rounds', 'BENCH_CHURN_ROUNDS', 4), log: (l: string) => console.error(l) };
  const f = await churn(opts);
  console.log(`\njournal retention under churn: ${opts.rounds} rounds of ${opts.nodes} nodes registered and deleted (LMDB)\n`);
  console.log('round  data.mdb MiB, retention 0  data.mdb MiB, retention on  events removed  pass s');
  for (let i = 0; i < opts.rounds; i++) {
    const a = f.without[i];
    const b = f.with[i];
    console.log(`${String(a.round).padStart(5)}  ${mib(a.sizeBytes).padStart(24)}  ${mib(b.sizeBytes).padStart(25)}  ${String(b.removed).padStart(14)}  ${(b.passMs / 1000).toFixed(1).padStart(6)}`);
  }
  const ms = (x: number) => x.toFixed(2);
  console.log(`\nGET /node/<node>, ${READERS} clients: idle p50 ${ms(f.idle.p50)} ms, p99 ${ms(f.idle.p99)} ms (${f.idle.n} calls); during a pass p50 ${ms(f.pruning.p50)} ms, p99 ${ms(f.pruning.p99)} ms (${f.pruning.n} calls); p99 ratio ${(f.pruning.p99 / f.idle.p99).toFixed(2)}`);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
