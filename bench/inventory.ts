/**
 * Inventory load scenario (issue 2): node_register (durable writes), show_node and list of
 * free nodes over a 10,000-node inventory, each next to a bare fastify JSON route measured in
 * the same run. The figure is the ratio to that baseline (machines here are noisy).
 *
 *   npm run bench   (BENCH_NODES, BENCH_SECONDS, BENCH_CONNECTIONS, BENCH_WRITE_CONNECTIONS change the load;
 *                    BENCH_WARMUP_SECONDS the warm-ups, BENCH_ROUNDS the measured pairs: test/bench/speed.test.ts runs it tiny)
 *
 * How the baseline is kept fair (bench/README.md, Per-request speed, third round): the bare
 * route gets requests built the same way as hilt's (autocannon rebuilds a request per call when
 * its path changes, which costs the load generator on these 2 cores more than the server's work
 * on a static GET: that cost must count on both sides or on neither); both are warmed before
 * anything is measured; then bare and hilt rounds alternate, and the figure is the median of
 * the pairs' ratios, so that a disturbance (the neighbours' load, a collection) falls on one pair.
 */
import autocannon from 'autocannon';
import { spawn, ChildProcess, SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const NODES = Number(process.env.BENCH_NODES ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const WRITE_CONNECTIONS = Number(process.env.BENCH_WRITE_CONNECTIONS ?? 128);
/** each warm-up before a measured run */
export const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
/** measured pairs (a bare round, then hilt's) per scenario: the figure is their median */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
process.env.BENCH_NODES = String(NODES); // the target process builds its reference payload from it
export const AUTH = 'Basic ' + Buffer.from('admin:bench').toString('base64');
const OBM = JSON.stringify({ obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'bmc', user: 'u', password: 'p' } });

export interface Figure {
  name: string; rps: number; p50: number; p99: number; errors: number; non2xx: number;
  /** responses counted (autocannon's requests.total) */
  requests?: number;
  /** CPU time (user + system, every thread) the target process spent per request, µs; NaN where /proc is not there */
  cpuUs?: number;
}

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ: 100 on Linux). */
const USER_HZ = 100;

/** CPU time a process has used so far (user + system), µs; NaN where there is no /proc. */
export function cpuMicros(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1e6) / USER_HZ;
  } catch {
    return NaN;
  }
}

/**
 * One autocannon run. With `pid` (the target process), also the CPU it spent per request: on a
 * machine shared with other work, requests per second swing with the neighbours' load, while
 * the CPU a request costs the service swings much less.
 */
export async function run(name: string, opts: autocannon.Options, pid?: number): Promise<Figure> {
  const base: autocannon.Options = { url: opts.url, connections: CONNECTIONS, headers: { authorization: AUTH } };
  const cpu0 = pid === undefined ? NaN : cpuMicros(pid);
  // `amount` (a fixed number of requests) and `duration` exclude each other.
  const r = await autocannon({ ...base, ...(opts.amount ? {} : { duration: SECONDS }), ...opts });
  const cpuUs = pid === undefined ? undefined : (cpuMicros(pid) - cpu0) / r.requests.total;
  // requests.average averages whole-second buckets; total over elapsed time is exact.
  return { name, rps: r.requests.total / r.duration, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx, cpuUs, requests: r.requests.total };
}

export interface Target { hilt: string; bare: string; /** how long startService took in the target, ms */ startMs: number; pid: number; stop: () => Promise<void> }

/**
 * Node with `argv`. BENCH_TARGET_CPUS=LIST runs it on those cores alone (taskset), e.g. 0 with the
 * bench itself under `taskset -c 1`: the load generator (and the event bench's consumers) then
 * take no core time from the service, as on a site where clients run on other machines.
 */
export function spawnNode(argv: string[], options: SpawnOptions): ChildProcess {
  const cpus = process.env.BENCH_TARGET_CPUS;
  return cpus ? spawn('taskset', ['-c', cpus, process.execPath, ...argv], options) : spawn(process.execPath, argv, options);
}

/**
 * Start bench/target.js: a fresh hilt (empty LMDB, unless env says otherwise) and a bare fastify
 * route in one process. `target`: another build's (bench/alternate.ts compares two).
 */
export async function startTarget(env: Record<string, string> = {}, target = join(__dirname, 'target.js'), nodeFlags?: string[]): Promise<Target> {
  // The same V8 flags as `npm start` (package.json): a larger young generation means fewer
  // scavenges on the allocation-heavy request path.
  const flags = nodeFlags ?? (process.env.BENCH_NODE_FLAGS ?? '--max-semi-space-size=32').split(' ').filter(Boolean);
  const child = spawnNode([...flags, target], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const [hiltPort, barePort, startMs] = await new Promise<string[]>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /ready (\d+) (\d+) (\d+)/.exec(out);
      if (m) resolve([m[1], m[2], m[3]]);
    });
    child.once('exit', () => reject(new Error(`target exited: ${out}`)));
  });
  return {
    hilt: `http://127.0.0.1:${hiltPort}`, bare: `http://127.0.0.1:${barePort}/bare`, startMs: Number(startMs), pid: child.pid!,
    // Resolves once the target has exited (its store closed, a lease released).
    stop: () => (child.kill('SIGTERM'), exited),
  };
}

export function registerRequests(prefix: string, base = '') {
  let seq = 0;
  return [{
    method: 'PUT' as const,
    body: OBM,
    headers: { 'content-type': 'application/json', authorization: AUTH },
    setupRequest: (req: any) => ({ ...req, path: `${base}/node/${prefix}${seq++}` }),
  }];
}

/**
 * A step that visits every index of 0 … n-1 once in n steps, in a scattered order: a prime that
 * does not divide n. (The earlier `i = (i * 7919 + 1) % n` came back to its start after 250
 * indexes of 10,000 and 2,500 of 100,000: a hot set, not the inventory.)
 */
export function scatterStep(n: number): number {
  return [7919, 7927, 7933].find((p) => n % p !== 0)!;
}

/**
 * GET /node/n<i> over `nodes` nodes, every node once per `nodes` requests, in a scattered order.
 * With `bare`, the same-shape request to the bare route (`/bare?node=n<i>`: the route ignores the
 * query) built the same way, so that the load generator pays as much per request for both.
 */
export function showRequests(nodes: number, bare?: string) {
  let i = 0;
  const step = scatterStep(nodes);
  const path = bare ? (n: number) => `${new URL(bare).pathname}?node=n${n}` : (n: number) => `/node/n${n}`;
  return [{ method: 'GET' as const, setupRequest: (req: any) => ({ ...req, path: path((i = (i + step) % nodes)) }) }];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The medians of `rounds` alternating pairs (the bare route's round, then hilt's). */
export interface Paired { bare: Figure; hilt: Figure; ratio: number; ratios: number[] }

/**
 * Bare and hilt rounds in turn, `rounds` pairs; each figure is the median over its rounds (req/s,
 * latencies, CPU per request), and the ratio the median of the pairs' ratios.
 */
export async function paired(names: [string, string], bare: () => autocannon.Options, hilt: () => autocannon.Options, pid: number, rounds = ROUNDS): Promise<Paired> {
  const b: Figure[] = [];
  const h: Figure[] = [];
  for (let r = 0; r < rounds; r++) {
    b.push(await run(names[0], bare(), pid));
    h.push(await run(names[1], hilt(), pid));
  }
  const med = (fs: Figure[], name: string): Figure => ({
    name, rps: median(fs.map((f) => f.rps)), p50: median(fs.map((f) => f.p50)), p99: median(fs.map((f) => f.p99)),
    errors: fs.reduce((n, f) => n + f.errors, 0), non2xx: fs.reduce((n, f) => n + f.non2xx, 0), cpuUs: median(fs.map((f) => f.cpuUs ?? NaN)),
  });
  const ratios = h.map((f, k) => f.rps / b[k].rps);
  return { bare: med(b, names[0]), hilt: med(h, names[1]), ratio: median(ratios), ratios };
}

/** `ratio`: the row's ratio to its baseline (none for a baseline's own row). */
type Row = Figure & { target: string; ratio?: number };

function print(title: string, rows: Row[]): void {
  console.log(`\n${title}\n`);
  console.log('scenario                          req/s    p50 ms  p99 ms  errors  ratio   target     cpu us/req');
  for (const r of rows) {
    const ratio = r.ratio === undefined ? '' : r.ratio.toFixed(2);
    const cpu = r.cpuUs === undefined || Number.isNaN(r.cpuUs) ? '' : r.cpuUs.toFixed(0);
    console.log(`${r.name.padEnd(32)} ${r.rps.toFixed(0).padStart(7)} ${String(r.p50).padStart(8)} ${String(r.p99).padStart(7)} ${String(r.errors + r.non2xx).padStart(7)}  ${ratio.padStart(5)}   ${r.target.padEnd(9)}  ${cpu.padStart(10)}`);
  }
}

async function main(): Promise<void> {
  const failed: string[] = [];
  const check = (f: Figure) => { if (f.errors || f.non2xx) failed.push(f.name); return f; };
  const ratios = (p: Paired) => p.ratios.map((x) => x.toFixed(2)).join(', ');

  // 1. Durable writes on a fresh service: each registration is acknowledged after its LMDB
  // flush. A writer waits for its flush, so throughput grows with concurrent writers (they
  // share commits): measured at the read scenarios' concurrency and at WRITE_CONNECTIONS.
  for (const connections of new Set([CONNECTIONS, WRITE_CONNECTIONS])) {
    const t = await startTarget();
    try {
      // The baseline gets the identical PUT requests: generating them costs the load generator
      // (one core here) far more than a static GET, and that must not count against hilt.
      const bareUrl = t.bare.replace(/\/bare$/, '');
      const bareReq = () => registerRequests('b', '/bare');
      await run('warm-up', { url: bareUrl, duration: WARMUP, connections, requests: bareReq() });
      await run('warm-up', { url: t.hilt, duration: WARMUP, connections, requests: registerRequests('w') });
      const reg = registerRequests('n');
      const p = await paired(['bare fastify PUT route', 'node_register (durable)'],
        () => ({ url: bareUrl, connections, requests: bareReq() }), () => ({ url: t.hilt, connections, requests: reg }), t.pid);
      const get = check(await run('  bare fastify GET route', { url: t.bare, connections }, t.pid));
      print(`hilt writes: ${connections} connections, ${SECONDS} s per round, ${ROUNDS} rounds (medians; ratio to the bare PUT route of the same pair: ${ratios(p)})`,
        [{ ...check(p.bare), target: '' }, { ...check(p.hilt), target: '>= 0.50', ratio: p.ratio }, { ...get, target: 'reference' }]);
    } finally {
      await t.stop();
    }
  }

  // 2. Reads over an inventory of exactly NODES nodes.
  const t = await startTarget();
  try {
    await run('seed', { url: t.hilt, amount: NODES, requests: registerRequests('n') });
    const bareShow = showRequests(NODES, t.bare);
    const show = showRequests(NODES);
    await run('warm-up', { url: t.bare, duration: WARMUP, requests: bareShow });
    await run('warm-up', { url: t.hilt, duration: WARMUP, requests: show });
    await run('warm-up', { url: `${t.hilt}/nodes/free`, duration: WARMUP });
    const p = await paired(['bare fastify route, same shape', 'show_node'], () => ({ url: t.bare, requests: bareShow }), () => ({ url: t.hilt, requests: show }), t.pid);
    const bareGet = check(await run('bare fastify route, static GET', { url: t.bare }, t.pid));
    const free = check(await run(`list free nodes (${NODES} free)`, { url: `${t.hilt}/nodes/free` }, t.pid));
    const sameBytes = check(await run('  reference: bare, same bytes', { url: `${t.bare}-list` }, t.pid));
    print(`hilt reads: ${NODES} nodes, ${CONNECTIONS} connections, ${SECONDS} s per round, ${ROUNDS} rounds of show_node (medians; ratio to the same-shape bare GET of the same pair: ${ratios(p)})`,
      [{ ...check(p.bare), target: '' }, { ...check(p.hilt), target: '>= 0.90', ratio: p.ratio }, { ...bareGet, target: '' },
        { ...free, target: '>= 0.50', ratio: free.rps / bareGet.rps }, { ...sameBytes, target: 'reference', ratio: sameBytes.rps / bareGet.rps }]);
    // The earlier rounds' figure (a static GET costs the load generator less than a request built per call).
    console.log(`\nshow_node against the static bare GET (the earlier rounds' baseline): ${(p.hilt.rps / bareGet.rps).toFixed(2)}`);
  } finally {
    await t.stop();
  }
  if (failed.length) throw new Error(`requests failed in: ${failed.join(', ')}; the figures are not valid`);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
