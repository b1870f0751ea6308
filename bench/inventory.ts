/**
 * Inventory load scenario (issue 2): node_register (durable writes), show_node and list of
 * free nodes over a 10,000-node inventory, each next to a bare fastify JSON route measured in
 * the same run. The figure is the ratio to that baseline (machines here are noisy).
 *
 *   npm run bench   (BENCH_NODES, BENCH_SECONDS, BENCH_CONNECTIONS, BENCH_WRITE_CONNECTIONS change the load;
 *                    BENCH_WARMUP_SECONDS the warm-ups: test/bench/speed.test.ts runs it tiny)
 */
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const NODES = Number(process.env.BENCH_NODES ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const WRITE_CONNECTIONS = Number(process.env.BENCH_WRITE_CONNECTIONS ?? 128);
/** each warm-up before a measured run */
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
process.env.BENCH_NODES = String(NODES); // the target process builds its reference payload from it
export const AUTH = 'Basic ' + Buffer.from('admin:bench').toString('base64');
const OBM = JSON.stringify({ obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'bmc', user: 'u', password: 'p' } });

export interface Figure {
  name: string; rps: number; p50: number; p99: number; errors: number; non2xx: number;
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
  return { name, rps: r.requests.total / r.duration, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx, cpuUs };
}

export interface Target { hilt: string; bare: string; /** how long startService took in the target, ms */ startMs: number; pid: number; stop: () => Promise<void> }

/**
 * Start bench/target.js: a fresh hilt (empty LMDB, unless env says otherwise) and a bare fastify
 * route in one process. `target`: another build's (bench/alternate.ts compares two).
 */
export async function startTarget(env: Record<string, string> = {}, target = join(__dirname, 'target.js'), nodeFlags?: string[]): Promise<Target> {
  // The same V8 flags as `npm start` (package.json): a larger young generation means fewer
  // scavenges on the allocation-heavy request path.
  const flags = nodeFlags ?? (process.env.BENCH_NODE_FLAGS ?? '--max-semi-space-size=32').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...flags, target], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
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

function print(title: string, rows: (Figure & { target: string })[], base: number): void {
  console.log(`\n${title}\n`);
  console.log('scenario                          req/s    p50 ms  p99 ms  errors  ratio   target     cpu us/req');
  for (const r of rows) {
    const ratio = r.target === '' ? '' : (r.rps / base).toFixed(2);
    const cpu = r.cpuUs === undefined || Number.isNaN(r.cpuUs) ? '' : r.cpuUs.toFixed(0);
    console.log(`${r.name.padEnd(32)} ${r.rps.toFixed(0).padStart(7)} ${String(r.p50).padStart(8)} ${String(r.p99).padStart(7)} ${String(r.errors + r.non2xx).padStart(7)}  ${ratio.padStart(5)}   ${r.target.padEnd(9)}  ${cpu.padStart(10)}`);
  }
}

async function main(): Promise<void> {
  const failed: string[] = [];
  const check = (f: Figure) => { if (f.errors || f.non2xx) failed.push(f.name); return f; };

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
      const b1 = check(await run('bare fastify PUT route', { url: bareUrl, connections, requests: bareReq() }, t.pid));
      const reg = check(await run('node_register (durable)', { url: t.hilt, connections, requests: registerRequests('n') }, t.pid));
      const b2 = check(await run('bare fastify PUT route', { url: bareUrl, connections, requests: bareReq() }, t.pid));
      const get = check(await run('  bare fastify GET route', { url: t.bare, connections }, t.pid));
      print(`hilt writes: ${connections} connections, ${SECONDS} s per scenario (ratio to the bare PUT route)`,
        [{ ...b1, target: '' }, { ...b2, target: '' }, { ...reg, target: '>= 0.25' }, { ...get, target: 'reference' }], (b1.rps + b2.rps) / 2);
    } finally {
      t.stop();
    }
  }

  // 2. Reads over an inventory of exactly NODES nodes.
  const t = await startTarget();
  try {
    await run('seed', { url: t.hilt, amount: NODES, requests: registerRequests('n') });
    await run('warm-up', { url: t.bare, duration: WARMUP });
    await run('warm-up', { url: `${t.hilt}/nodes/free`, duration: WARMUP });
    const b1 = check(await run('bare fastify route', { url: t.bare }, t.pid));
    let i = 0;
    const show = check(await run('show_node', {
      url: t.hilt,
      requests: [{ method: 'GET', setupRequest: (req: any) => ({ ...req, path: `/node/n${(i = (i * 7919 + 1) % NODES)}` }) }],
    }, t.pid));
    const free = check(await run(`list free nodes (${NODES} free)`, { url: `${t.hilt}/nodes/free` }, t.pid));
    const sameBytes = check(await run('  reference: bare, same bytes', { url: `${t.bare}-list` }, t.pid));
    const b2 = check(await run('bare fastify route', { url: t.bare }, t.pid));
    print(`hilt reads: ${NODES} nodes, ${CONNECTIONS} connections, ${SECONDS} s per scenario`,
      [{ ...b1, target: '' }, { ...b2, target: '' }, { ...show, target: '>= 0.50' }, { ...free, target: '>= 0.50' }, { ...sameBytes, target: 'reference' }],
      (b1.rps + b2.rps) / 2);
  } finally {
    t.stop();
  }
  if (failed.length) throw new Error(`requests failed in: ${failed.join(', ')}; the figures are not valid`);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
