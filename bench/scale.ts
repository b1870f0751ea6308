/**
 * The scale bench (issue 27): on seeded data folders of several sizes (bench/seed.ts; seeded
 * here when missing), the service is spawned as bench/target.ts does (a child process, logging
 * off, a bare fastify route beside it) and measured:
 * - cold start: from the spawn to the first correct `GET /node/<last>`, and the resident memory then;
 * - the cost-growth table: show_node, node_register, port_register, list free nodes, list a
 *   project's nodes, a network's attachments (each req/s as a ratio to the bare route of the
 *   same process in the same run: GET for reads, the same-shape PUT for writes), and connect→DONE
 *   (64 clients cycling connect/detach on reserved nodes, latency from the service's own stamps);
 * - at the largest size, a mixed workload (95 % reads of nodes, networks and statuses, 4 % writes,
 *   1 % network operations, 64 connections, a closed loop or paced by --rate): p99 of the reads
 *   after --warm-up seconds, and RSS sampled over the run.
 *
 *   npm run bench:scale -- --sizes 1000,10000,100000 --dir /var/tmp/hilt-scale [--seconds 5] [--soak-minutes 1]
 *   npm run bench:scale -- --folder DIR            (one folder seeded by bench:seed)
 *   npm run bench:scale -- --folder DIR --soak-only --soak-minutes 60 [--rate 500] [--every 5] [--warm-up 10]   (memory over a long run)
 *   npm run bench:scale -- --storage postgres [--pg-url URL]   (a server of its own otherwise)
 *   npm run bench:scale -- --folder DIR --storage postgres --pg-url URL --starts-only   (a seed's database)
 *   npm run bench:scale -- --folder DIR --show-only [--rounds 5]   (show_node against the same-shape bare GET, alternating pairs)
 */
import autocannon from 'autocannon';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import { Pool } from 'undici';
import { ADMIN, defaultCounts, folderBytes, nicName, nodeName, networkName, projectName, readManifest, reservedNodes, seed, switchName, type SeedManifest } from './seed';
import { newDatabase, startPostgres, type TestPostgres } from '../test/helpers/postgres';
import { paired, run as runLoad, scatterStep, showRequests, spawnNode } from './inventory';

const AUTH = 'Basic ' + Buffer.from(`${ADMIN.user}:${ADMIN.password}`).toString('base64');
const OBM = JSON.stringify({ obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'localhost', user: 'u', password: 'p' } });

export interface ScaleOptions {
  /** seeded folders, one per size */
  folders: { folder: string; nodes: number }[];
  storage: 'lmdb' | 'postgres';
  /** PostgreSQL: the database URL of each folder (seeded there) */
  pgUrls?: Map<string, string>;
  seconds: number;
  connections: number;
  /** mixed workload at the largest size: minutes (0: skipped) */
  soakMinutes: number;
  /** cold starts measured per size (the table shows the range) */
  starts: number;
  /** seconds the mixed workload runs before its figures are counted (default 10) */
  warmUpSeconds?: number;
  /** the mixed workload's requests a second in all (0 or absent: a closed loop) */
  rate?: number;
  log?: (line: string) => void;
}

interface Spawned { hilt: string; bare: string; pid: number; coldMs: number; cpuS: number; rssMiB: number; anonMiB: number; fileMiB: number; stop(): Promise<void> }

/** A process's resident memory (MiB): `file` is the part mapped from files (LMDB's data file), `anon` the heap and the rest. */
const memOf = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Math.round(Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024);
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
};
const rssMiB = (pid: number) => memOf(pid).rss;
/**
 * CPU seconds (user + system) a process has used: a start's CPU is steadier than its wall time
 * on a machine shared with other work. Clock ticks of 10 ms (USER_HZ is 100 on Linux).
 */
const cpuSeconds = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};

let warmed: Promise<void> | undefined;
/** One request to a listener of this process, once. */
function warmFetch(): Promise<void> {
  return (warmed ??= new Promise<void>((resolve, reject) => {
    const server = createServer((_req, res) => res.end('{}')).listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      const done = () => {
        server.close();
        server.closeAllConnections();
      };
      fetch(`http://127.0.0.1:${port}/`).then((r) => r.json()).then(() => (done(), resolve()), (err: Error) => (done(), reject(err)));
    });
  }));
}

/** Spawn bench/target.js on the folder; cold start: spawn → a correct GET /node/<last>. */
async function spawnTarget(folder: string, m: SeedManifest, env: Record<string, string>): Promise<Spawned> {
  const flags = (process.env.BENCH_NODE_FLAGS ?? '--max-semi-space-size=32').split(' ').filter(Boolean);
  // This process's first fetch loads its HTTP client (30 ms or so): done before the clock starts,
  // so that the cold start counts the service's time, not the measurer's.
  await warmFetch();
  const t0 = performance.now();
  // BENCH_TARGET_CPUS pins the service (spawnNode).
  const child = spawnNode([...flags, join(__dirname, 'target.js')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env, ...env, BENCH_DATA_DIR: folder, BENCH_NODES: '1000', HILT_STORAGE: m.storage,
      HILT_VLAN_POOL: m.vlanPool.map(([a, b]) => `${a}-${b}`).join(','),
    },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const [hiltPort, barePort] = await new Promise<string[]>((resolve, reject) => {
    let out = '';
    // BENCH_TARGET_STDOUT=FILE keeps what the service prints (e.g. with --trace-gc in BENCH_NODE_FLAGS).
    const keep = process.env.BENCH_TARGET_STDOUT;
    child.stdout!.on('data', (d) => {
      if (keep) appendFileSync(keep, d);
      out += d;
      const r = /ready (\d+) (\d+)/.exec(out);
      if (r) resolve([r[1], r[2]]);
    });
    child.once('exit', () => reject(new Error(`target exited: ${out}`)));
  });
  const hilt = `http://127.0.0.1:${hiltPort}`;
  for (;;) {
    const r = await fetch(`${hilt}/node/${m.lastNode}`, { headers: { authorization: AUTH } }).catch(() => undefined);
    const body = r && r.status === 200 ? ((await r.json()) as { name?: string; nics?: unknown[] }) : undefined;
    if (body?.name === m.lastNode && body.nics?.length === m.nicsPerNode) break;
    await new Promise((res) => setTimeout(res, 5));
  }
  const coldMs = Math.round(performance.now() - t0);
  const cpuS = cpuSeconds(child.pid!);
  const mem = memOf(child.pid!);
  return {
    hilt, bare: `http://127.0.0.1:${barePort}`, pid: child.pid!, coldMs, cpuS, rssMiB: mem.rss, anonMiB: mem.anon, fileMiB: mem.file,
    stop: () => (child.kill('SIGTERM'), exited),
  };
}

interface Figure { rps: number; p50: number; p99: number; failed: number }

async function load(opts: autocannon.Options & { seconds: number }): Promise<Figure> {
  const r = await autocannon({ ...opts, duration: opts.seconds, headers: { authorization: AUTH, ...(opts.headers ?? {}) } });
  return { rps: r.requests.total / r.duration, p50: r.latency.p50, p99: r.latency.p99, failed: r.errors + r.timeouts + r.non2xx };
}

async function call(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(base + path, {
    method, headers: { authorization: AUTH, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : undefined };
}

const pct = (xs: number[], p: number) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] : NaN);

/** Nodes a client may cycle connect/detach on: reserved, nic 1 not attached by the seed (one per client, from the end). */
function opNodes(m: SeedManifest, n: number): number[] {
  const reserved = reservedNodes(m);
  return Array.from({ length: Math.min(n, reserved) }, (_, i) => reserved - 1 - i);
}
/** node i's project's first network (node i belongs to project i % projects) */
const networkOf = (m: SeedManifest, i: number) => networkName(i % m.projects);

/** 64 clients, each cycling connect/detach on nic 1 of its own node for `seconds`. */
async function connectToDone(t: Spawned, m: SeedManifest, seconds: number, clients = 64): Promise<{ opsPerSec: number; p50: number; p99: number; errors: number }> {
  const nodes = opNodes(m, clients);
  const since = Date.now();
  const end = since + seconds * 1000;
  let completed = 0;
  let errors = 0;
  await Promise.all(nodes.map(async (i) => {
    let connected = false;
    while (Date.now() < end) {
      const r = await call(t.hilt, 'POST', `/node/${nodeName(i)}/nic/${nicName(1)}/${connected ? 'detach_network' : 'connect_network'}`, { network: networkOf(m, i) });
      if (r.status !== 202) throw new Error(`connect/detach: ${r.status} ${JSON.stringify(r.json)}`);
      let status = 'PENDING';
      while (status === 'PENDING') {
        await new Promise((res) => setTimeout(res, 1));
        status = (await call(t.hilt, 'GET', `/networking_action/${r.json.status_id}`)).json.status;
      }
      if (status !== 'DONE') errors++;
      else connected = !connected;
      completed++;
    }
    // Leave it as seeded.
    if (connected) {
      const r = await call(t.hilt, 'POST', `/node/${nodeName(i)}/nic/${nicName(1)}/detach_network`, { network: networkOf(m, i) });
      let status = 'PENDING';
      while (r.status === 202 && status === 'PENDING') status = (await call(t.hilt, 'GET', `/networking_action/${r.json.status_id}`)).json.status;
    }
  }));
  const elapsed = (Date.now() - since) / 1000;
  const latencies: number[] = [];
  for (const i of nodes) {
    for (const a of (await call(t.hilt, 'GET', `/node/${nodeName(i)}/networking_actions`)).json) {
      if (a.finished_at && Date.parse(a.accepted_at) >= since) latencies.push(Date.parse(a.finished_at) - Date.parse(a.accepted_at));
    }
  }
  latencies.sort((a, b) => a - b);
  return { opsPerSec: completed / elapsed, p50: pct(latencies, 50), p99: pct(latencies, 99), errors };
}

interface SizeResult {
  nodes: number;
  bytes?: number;
  cold: number[];
  /** CPU seconds of each start, to its first correct answer */
  cpu: number[];
  rss: number[];
  /** of the RSS after the last start: anonymous (heap) and file-backed (the LMDB map) */
  anon: number;
  file: number;
  rows: Record<string, { ratio: number; rps: number; p99: number }>;
  connect: { opsPerSec: number; p50: number; p99: number; errors: number };
  bareGet: number;
}

/** The table's scenarios at one size. */
async function measureSize(folder: string, m: SeedManifest, o: ScaleOptions, env: Record<string, string>, run: number): Promise<SizeResult> {
  const log = o.log ?? console.log;
  const cold: number[] = [];
  const cpu: number[] = [];
  const rss: number[] = [];
  for (let k = 1; k < o.starts; k++) {
    const t = await spawnTarget(folder, m, env);
    cold.push(t.coldMs);
    cpu.push(t.cpuS);
    rss.push(t.rssMiB);
    await t.stop();
  }
  const t = await spawnTarget(folder, m, env);
  cold.push(t.coldMs);
  cpu.push(t.cpuS);
  rss.push(t.rssMiB);
  log(`${m.nodes} nodes: cold start ${cold.join(', ')} ms (CPU ${cpu.join(', ')} s), rss ${rss.join(', ')} MiB`);
  try {
    const s = o.seconds;
    const c = o.connections;
    const failed: string[] = [];
    const checked = (name: string, f: Figure) => {
      if (f.failed) failed.push(`${name} (${f.failed})`);
      return f;
    };
    await load({ url: `${t.bare}/bare`, connections: c, seconds: Math.min(1, s) });
    await load({ url: `${t.hilt}/node/${m.lastNode}`, connections: c, seconds: Math.min(1, s) });
    const bareGet1 = checked('bare GET', await load({ url: `${t.bare}/bare`, connections: c, seconds: s }));
    let r = 0;
    const step = scatterStep(m.nodes);
    const show = checked('show_node', await load({
      url: t.hilt, connections: c, seconds: s,
      requests: [{ method: 'GET', setupRequest: (req: any) => ({ ...req, path: `/node/${nodeName((r = (r + step) % m.nodes))}` }) }],
    }));
    const free = checked('list free nodes', await load({ url: `${t.hilt}/nodes/free`, connections: c, seconds: s }));
    let pr = 0;
    const projectNodes = checked('list project nodes', await load({
      url: t.hilt, connections: c, seconds: s,
      requests: [{ method: 'GET', setupRequest: (req: any) => ({ ...req, path: `/project/${projectName((pr = (pr + 1) % m.projects))}/nodes` }) }],
    }));
    let wr = 0;
    const attachments = checked('network attachments', await load({
      url: t.hilt, connections: c, seconds: s,
      requests: [{ method: 'GET', setupRequest: (req: any) => ({ ...req, path: `/network/${networkName((wr = (wr + 1) % m.networks))}/attachments` }) }],
    }));
    const bareGet2 = checked('bare GET', await load({ url: `${t.bare}/bare`, connections: c, seconds: s }));
    const bareGet = (bareGet1.rps + bareGet2.rps) / 2;
    // Writes, against the same-shape bare PUT.
    let seq = 0;
    const put = (path: () => string, body?: string) => [{
      method: 'PUT' as const, ...(body ? { body, headers: { 'content-type': 'application/json', authorization: AUTH } } : {}),
      setupRequest: (req: any) => ({ ...req, path: path() }),
    }];
    const barePut1 = checked('bare PUT', await load({ url: t.bare, connections: c, seconds: s, requests: put(() => `/bare/node/b${seq++}`, OBM) }));
    const reg = checked('node_register', await load({ url: t.hilt, connections: c, seconds: s, requests: put(() => `/node/r${run}-${seq++}`, OBM) }));
    // New ports spread over the switches (te ports: the seed registered gi ones).
    const port = checked('port_register', await load({
      url: t.hilt, connections: c, seconds: s,
      requests: put(() => { const k = seq++; return `/switch/${switchName(k % m.switches)}/port/te${run}/0/${Math.floor(k / m.switches)}`; }),
    }));
    const barePut2 = checked('bare PUT', await load({ url: t.bare, connections: c, seconds: s, requests: put(() => `/bare/node/b${seq++}`, OBM) }));
    const barePut = (barePut1.rps + barePut2.rps) / 2;
    const connect = await connectToDone(t, m, s);
    if (failed.length) throw new Error(`requests failed in ${failed.join(', ')}: the figures are not valid`);
    const row = (f: Figure, base: number) => ({ ratio: f.rps / base, rps: f.rps, p99: f.p99 });
    return {
      nodes: m.nodes, bytes: m.storage === 'lmdb' ? folderBytes(folder) : undefined, cold, cpu, rss, anon: t.anonMiB, file: t.fileMiB, bareGet, connect,
      rows: {
        show_node: row(show, bareGet), node_register: row(reg, barePut), port_register: row(port, barePut),
        'list free nodes': row(free, bareGet), "list a project's nodes": row(projectNodes, bareGet), 'network attachments': row(attachments, bareGet),
      },
    };
  } finally {
    await t.stop();
  }
}

interface MixedResult { seconds: number; warmUp: number; rate: number; reads: number; readP50: number; readP99: number; writes: number; writeP99: number; ops: number; refused: number; failed: number; rss: number[] }

/**
 * How the mixed workload runs: `rate` paces the clients to that many requests a second in all (0:
 * a closed loop, as fast as the service answers); for the first `warmUp` seconds the clients run
 * but nothing is counted (a start's first seconds compile the routes and fault in the pages of the
 * journals the reads touch: the figures are the steady state's). A soak's lines: every
 * `everyMinutes` the reads so far, the process's memory (anonymous and file-backed) and the data
 * folder's size, so that growth can be set against the data written meanwhile.
 */
interface MixedOptions { rate: number; warmUp: number }
interface SoakOptions { everyMinutes: number; folder?: string; log: (l: string) => void }

/**
 * What stops the service's event loop, from its own /metrics (prom-client's default metrics):
 * garbage-collection pauses by kind (count and seconds, cumulative) and the event loop's delay
 * (sampled every 10 ms from the last scrape on: prom-client resets it at each). A soak's line
 * gives both since the last line: where a read's tail latency comes from when it is not the
 * requests' own work.
 */
interface Pauses { gc: Map<string, { count: number; sum: number }>; lagP99: number; lagMax: number; gets: { count: number; within10: number } }

async function pauses(base: string): Promise<Pauses | undefined> {
  const r = await fetch(`${base}/metrics`, { headers: { authorization: AUTH } }).catch(() => undefined);
  if (!r || r.status !== 200) return undefined;
  const text = await r.text();
  const gc = new Map<string, { count: number; sum: number }>();
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_(sum|count)\{kind="(\w+)"\} ([\d.e+-]+)$/gm)) {
    const k = gc.get(m[2]) ?? { count: 0, sum: 0 };
    if (m[1] === 'sum') k.sum = Number(m[3]); else k.count = Number(m[3]);
    gc.set(m[2], k);
  }
  // The service's own view of its GETs (the soak's reads and these scrapes): how many took over
  // 10 ms from receiving the request to answering it, against the client's view.
  const gets = { count: 0, within10: 0 };
  for (const m of text.matchAll(/^hilt_http_request_duration_seconds_(bucket|count)\{([^}]*)\} (\d+)$/gm)) {
    if (!m[2].includes('method="GET"')) continue;
    if (m[1] === 'count') gets.count += Number(m[3]);
    else if (m[2].includes('le="0.01"')) gets.within10 += Number(m[3]);
  }
  const gauge = (name: string) => Number(new RegExp(`^${name} ([\\d.e+-]+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { gc, lagP99: gauge('nodejs_eventloop_lag_p99_seconds'), lagMax: gauge('nodejs_eventloop_lag_max_seconds'), gets };
}

function describePauses(a: Pauses, b: Pauses): string {
  const kinds = [...b.gc].map(([kind, x]) => {
    const was = a.gc.get(kind) ?? { count: 0, sum: 0 };
    return `${kind} ${x.count - was.count} (${((x.sum - was.sum) * 1000).toFixed(0)} ms)`;
  });
  const count = b.gets.count - a.gets.count;
  const over = count - (b.gets.within10 - a.gets.within10);
  return `; service: GETs over 10 ms ${count ? ((100 * over) / count).toFixed(2) : '-'} %; gc ${kinds.join(', ')}; loop delay p99 ${(b.lagP99 * 1000).toFixed(1)} ms, max ${(b.lagMax * 1000).toFixed(0)} ms`;
}

/**
 * The mixed workload: `connections` clients (a closed loop unless paced), each request drawn at random: 95 %
 * reads (show_node 60, show_network 10, a network's attachments 5, a node's operation statuses 20),
 * 4 % writes (a node's metadata label), 1 % network operations (connect/detach of nic 1 of a
 * reserved node of the client's own; a 409 because its previous one is still pending is counted
 * as refused, not failed). RSS is sampled every second once the warm-up is over.
 */
async function mixed(t: Spawned, m: SeedManifest, seconds: number, connections: number, run: MixedOptions, soak?: SoakOptions): Promise<MixedResult> {
  const pool = new Pool(t.hilt, { connections, pipelining: 1 });
  const reads: number[] = [];
  const writes: number[] = [];
  let ops = 0;
  let refused = 0;
  let failed = 0;
  const rss: number[] = [];
  let started = Infinity;
  let counted = false;
  let lastReport = 0;
  let lastPauses: Pauses | undefined;
  let sampler: NodeJS.Timeout | undefined;
  let reporter: NodeJS.Timeout | undefined;
  const report = async (soak: SoakOptions) => {
    const mem = memOf(t.pid);
    const now = await pauses(t.hilt);
    const gc = lastPauses && now ? describePauses(lastPauses, now) : '';
    lastPauses = now;
    const recent = reads.slice(lastReport).sort((a, b) => a - b);
    lastReport = reads.length;
    const folder = soak.folder ? `, folder ${(folderBytes(soak.folder) / 2 ** 20).toFixed(0)} MiB` : '';
    soak.log(`  ${((Date.now() - started) / 60_000).toFixed(1).padStart(5)} min: reads ${reads.length}, writes ${writes.length}, operations ${ops}, failed ${failed}; `
      + `read p99 ${pct(recent, 99).toFixed(1)} ms; RSS ${mem.rss} MiB (anon ${mem.anon}, file-backed ${mem.file})${folder}${gc}`);
  };
  // The warm-up over: count, sample RSS and (a soak) report from here on.
  const warm = setTimeout(async () => {
    counted = true;
    started = Date.now();
    sampler = setInterval(() => rss.push(rssMiB(t.pid)), 1000);
    if (!soak) return;
    lastPauses = await pauses(t.hilt);
    reporter = setInterval(() => void report(soak), soak.everyMinutes * 60_000);
  }, run.warmUp * 1000);
  const end = Date.now() + (run.warmUp + seconds) * 1000;
  // Paced: each client sends one request per `connections / rate` seconds, on its own schedule.
  const gap = run.rate ? (connections / run.rate) * 1000 : 0;
  const nodes = opNodes(m, connections);
  const reserved = reservedNodes(m);
  const rnd = (n: number) => Math.floor(Math.random() * n);
  const req = async (method: 'GET' | 'PUT' | 'POST', path: string, body?: unknown) => {
    const r = await pool.request({ method, path, headers: { authorization: AUTH, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
    await r.body.text();
    return r.statusCode;
  };
  await Promise.all(Array.from({ length: connections }, async (_, w) => {
    const own = nodes[w % nodes.length];
    // Where an earlier run on this folder left the client's nic (a soak ends mid-cycle).
    const nic = (await call(t.hilt, 'GET', `/node/${nodeName(own)}`)).json.nics?.find((n: { label: string }) => n.label === nicName(1));
    let connected = Object.values(nic?.networks ?? {}).includes(networkOf(m, own));
    let next = Date.now() + Math.random() * gap;
    while (Date.now() < end) {
      if (gap) {
        const wait = next - Date.now();
        next += gap;
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      const x = Math.random() * 100;
      const t0 = performance.now();
      if (x < 95) {
        const path = x < 60 ? `/node/${nodeName(rnd(m.nodes))}`
          : x < 70 ? `/network/${networkName(rnd(m.networks))}`
            : x < 75 ? `/network/${networkName(rnd(m.networks))}/attachments`
              : `/node/${nodeName(rnd(reserved))}/networking_actions`;
        const s = await req('GET', path);
        if (counted) reads.push(performance.now() - t0);
        if (s !== 200) failed++;
      } else if (x < 99) {
        const s = await req('PUT', `/node/${nodeName(rnd(m.nodes))}/metadata/bench`, { value: `v${rnd(1000)}` });
        if (counted) writes.push(performance.now() - t0);
        if (s >= 300) failed++;
      } else {
        const s = await req('POST', `/node/${nodeName(own)}/nic/${nicName(1)}/${connected ? 'detach_network' : 'connect_network'}`, { network: networkOf(m, own) });
        if (counted) ops++;
        if (s === 202) connected = !connected;
        else if (s !== 409) failed++;
        else if (counted) refused++;
      }
    }
  }));
  clearTimeout(warm);
  clearInterval(sampler);
  clearInterval(reporter);
  await pool.close();
  reads.sort((a, b) => a - b);
  writes.sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 10) / 10;
  return { seconds, warmUp: run.warmUp, rate: run.rate, reads: reads.length, readP50: round(pct(reads, 50)), readP99: round(pct(reads, 99)), writes: writes.length, writeP99: round(pct(writes, 99)), ops, refused, failed, rss };
}

export interface ScaleReport { sizes: SizeResult[]; mixed?: MixedResult & { nodes: number; bareGet: number } }

export async function scale(o: ScaleOptions): Promise<ScaleReport> {
  const log = o.log ?? console.log;
  const sizes: SizeResult[] = [];
  let run = Date.now() % 100_000;
  const envFor = (folder: string): Record<string, string> => (o.storage === 'postgres' ? { HILT_DATABASE_URL: o.pgUrls!.get(folder)! } : {});
  for (const { folder } of o.folders) {
    const m = readManifest(folder)!;
    sizes.push(await measureSize(folder, m, o, envFor(folder), run++));
  }
  const report: ScaleReport = { sizes };
  if (o.soakMinutes > 0) {
    const { folder } = o.folders[o.folders.length - 1];
    const m = readManifest(folder)!;
    const t = await spawnTarget(folder, m, envFor(folder));
    try {
      const bare = await load({ url: `${t.bare}/bare`, connections: o.connections, seconds: Math.min(o.seconds, 5) });
      log(`mixed workload: ${m.nodes} nodes, 64 connections, ${o.soakMinutes} min`);
      report.mixed = { ...(await mixed(t, m, o.soakMinutes * 60, 64, { rate: o.rate ?? 0, warmUp: o.warmUpSeconds ?? 10 })), nodes: m.nodes, bareGet: bare.rps };
    } finally {
      await t.stop();
    }
  }
  print(report, o, log);
  return report;
}

function print(r: ScaleReport, o: ScaleOptions, log: (l: string) => void): void {
  const cols = r.sizes.map((s) => `${s.nodes.toLocaleString('en')} nodes`);
  const w = 26;
  const line = (name: string, cells: string[]) => log(`${name.padEnd(40)}${cells.map((c) => c.padStart(w)).join('')}`);
  log(`\nhilt at scale (${o.storage}): ${o.connections} connections, ${o.seconds} s per scenario; ratios are req/s over the bare route of the same process (GET for reads, the same-shape PUT for writes)\n`);
  line('', cols);
  if (r.sizes.some((s) => s.bytes !== undefined)) line('data folder (MiB)', r.sizes.map((s) => (s.bytes === undefined ? '-' : (s.bytes / 2 ** 20).toFixed(0))));
  const range = (xs: number[]) => (Math.min(...xs) === Math.max(...xs) ? `${xs[0]}` : `${Math.min(...xs)}-${Math.max(...xs)}`);
  line('cold start (ms)', r.sizes.map((s) => range(s.cold)));
  line('  its CPU, user + system (s)', r.sizes.map((s) => range(s.cpu)));
  line('RSS after start (MiB)', r.sizes.map((s) => range(s.rss)));
  line('  of which anon / file-backed', r.sizes.map((s) => `${s.anon} / ${s.file}`));
  line('bare GET (req/s)', r.sizes.map((s) => s.bareGet.toFixed(0)));
  for (const name of Object.keys(r.sizes[0]?.rows ?? {})) {
    line(`${name} (ratio, p99 ms)`, r.sizes.map((s) => `${s.rows[name].ratio.toFixed(2)}× ${String(s.rows[name].p99).padStart(4)}`));
  }
  line('connect→DONE p50/p99 ms (64 clients)', r.sizes.map((s) => `${s.connect.p50}/${s.connect.p99}`));
  line('connect→DONE ops/s (ops/bare)', r.sizes.map((s) => `${s.connect.opsPerSec.toFixed(0)} (${(s.connect.opsPerSec / s.bareGet).toFixed(3)})`));
  const mx = r.mixed;
  if (mx) {
    log(`\nmixed workload at ${mx.nodes.toLocaleString('en')} nodes, 64 connections, ${mx.rate ? `paced at ${mx.rate} requests a second` : 'closed loop'}, ${(mx.seconds / 60).toFixed(1)} min counted after ${mx.warmUp} s of warm-up (bare GET ${mx.bareGet.toFixed(0)} req/s)`);
    log(`  reads ${mx.reads} (${(mx.reads / mx.seconds).toFixed(0)}/s): p50 ${mx.readP50} ms, p99 ${mx.readP99} ms`);
    log(`  writes ${mx.writes}: p99 ${mx.writeP99} ms; network operations ${mx.ops} (${mx.refused} refused while pending); failed ${mx.failed}`);
    const q = mx.rss;
    log(`  RSS (MiB) first ${q[0]}, min ${Math.min(...q)}, max ${Math.max(...q)}, last ${q[q.length - 1]} (${q.length} samples)`);
    if (mx.failed) throw new Error('requests failed in the mixed workload: the figures are not valid');
  }
  if (r.sizes.some((s) => s.connect.errors)) throw new Error('network operations ended in ERROR: the figures are not valid');
}


async function main(): Promise<void> {
  const p = new Command('bench:scale')
    .option('--sizes <list>', 'node counts, comma-separated', '1000,10000,100000')
    .option('--dir <dir>', 'where the seeded folders are kept (s<size>), seeded when missing', '/var/tmp/hilt-scale')
    .option('--folder <dir>', 'one folder seeded by bench:seed (instead of --sizes)')
    .option('--storage <engine>', 'lmdb or postgres', 'lmdb')
    .option('--pg-url <url>', 'a PostgreSQL server to create the databases on (default: one of its own)')
    .option('--seconds <s>', 'seconds per scenario', Number, 5)
    .option('--connections <n>', 'connections of the table\'s scenarios', Number, 32)
    .option('--starts <n>', 'cold starts per size', Number, 3)
    .option('--soak-minutes <m>', 'minutes of the mixed workload at the largest size (0: none)', Number, 0.5)
    .option('--starts-only', 'measure the cold starts and RSS only (no load; nothing written to the folders but the read model\'s checkpoint a clean stop writes)')
    .option('--soak-only', 'only the mixed workload (--soak-minutes) on the largest folder, with a line of memory every --every minutes')
    .option('--rate <n>', 'the mixed workload\'s requests a second in all (0: a closed loop)', Number, 0)
    .option('--warm-up <s>', 'seconds the mixed workload runs before it is counted', Number, 10)
    .option('--every <m>', 'minutes between the soak\'s lines', Number, 5)
    .option('--show-only', 'only show_node, in --rounds alternating pairs with the bare GET given same-shape requests (bench/inventory.ts says why)')
    .option('--rounds <n>', 'pairs of --show-only', Number, 5)
    .parse();
  const o = p.opts();
  const storage = o.storage as 'lmdb' | 'postgres';
  let pg: TestPostgres | undefined;
  const pgUrls = new Map<string, string>();
  try {
    if (storage === 'postgres' && !o.pgUrl) pg = await startPostgres({ fsync: true });
    const folders: { folder: string; nodes: number }[] = [];
    if (o.folder) {
      const m = readManifest(o.folder);
      if (!m) throw new Error(`${o.folder} has no ${'seed.json'}: seed it with npm run bench:seed`);
      // A PostgreSQL seed's data is in the database bench:seed was given (--pg-url names it).
      if (storage === 'postgres') {
        if (!o.pgUrl) throw new Error('--folder with --storage postgres needs --pg-url: the database the folder was seeded into');
        pgUrls.set(o.folder, o.pgUrl);
      }
      folders.push({ folder: o.folder, nodes: m.nodes });
    } else {
      for (const nodes of String(o.sizes).split(',').map(Number)) {
        // PostgreSQL folders hold the seed's record, the key and the mock switches; the data is in a database of this run.
        const folder = join(o.dir, storage === 'postgres' ? `pg-${process.pid}-s${nodes}` : `s${nodes}`);
        const pgUrl = storage === 'postgres' ? await newDatabase('hilt_scale', pg ?? o.pgUrl) : undefined;
        if (pgUrl) pgUrls.set(folder, pgUrl);
        if (!existsSync(join(folder, 'seed.json'))) await seed({ folder, counts: defaultCounts(nodes), storage, pgUrl });
        folders.push({ folder, nodes });
      }
    }
    if (o.startsOnly) {
      for (const { folder } of folders) {
        const m = readManifest(folder)!;
        const env: Record<string, string> = storage === 'postgres' ? { HILT_DATABASE_URL: pgUrls.get(folder)! } : {};
        for (let k = 0; k < o.starts; k++) {
          const t = await spawnTarget(folder, m, env);
          console.log(`${m.nodes} nodes: cold start ${t.coldMs} ms (CPU ${t.cpuS} s), rss ${t.rssMiB} MiB (anon ${t.anonMiB}, file-backed ${t.fileMiB})`);
          await t.stop();
        }
      }
      return;
    }
    if (o.showOnly) {
      for (const { folder } of folders) {
        const m = readManifest(folder)!;
        const t = await spawnTarget(folder, m, storage === 'postgres' ? { HILT_DATABASE_URL: pgUrls.get(folder)! } : {});
        try {
          const bare = showRequests(m.nodes, `${t.bare}/bare`);
          const show = showRequests(m.nodes);
          const load = (url: string, requests: typeof show) => ({ url, connections: o.connections, duration: o.seconds, requests });
          // Each node read once before the rounds: a service that has run a while has read them all.
          await runLoad('warm-up', { url: t.bare, connections: o.connections, amount: m.nodes, requests: bare });
          await runLoad('warm-up', { url: t.hilt, connections: o.connections, amount: m.nodes, requests: show });
          const p = await paired(['bare GET, same shape', 'show_node'], () => load(t.bare, bare), () => load(t.hilt, show), t.pid, o.rounds);
          if (p.bare.errors + p.bare.non2xx + p.hilt.errors + p.hilt.non2xx) throw new Error('requests failed: the figures are not valid');
          console.log(`${m.nodes} nodes, ${o.connections} connections, ${o.rounds} pairs of ${o.seconds} s: show_node ratio median ${p.ratio.toFixed(2)} (${p.ratios.map((x) => x.toFixed(2)).join(', ')}); `
            + `req/s ${p.hilt.rps.toFixed(0)} against ${p.bare.rps.toFixed(0)}; CPU per request ${p.hilt.cpuUs!.toFixed(0)} us against ${p.bare.cpuUs!.toFixed(0)}; p99 ${p.hilt.p99} ms`);
        } finally {
          await t.stop();
        }
      }
      return;
    }
    if (o.soakOnly) {
      const { folder } = folders[folders.length - 1];
      const m = readManifest(folder)!;
      const t = await spawnTarget(folder, m, storage === 'postgres' ? { HILT_DATABASE_URL: pgUrls.get(folder)! } : {});
      try {
        console.log(`soak: ${m.nodes} nodes, 64 connections, ${o.rate ? `${o.rate} requests a second` : 'closed loop'}, ${o.soakMinutes} min counted after ${o.warmUp} s of warm-up; after start: RSS ${t.rssMiB} MiB (anon ${t.anonMiB}, file-backed ${t.fileMiB})`);
        const r = await mixed(t, m, o.soakMinutes * 60, 64, { rate: o.rate, warmUp: o.warmUp }, { everyMinutes: o.every, folder: storage === 'lmdb' ? folder : undefined, log: console.log });
        console.log(`soak: reads ${r.reads} (p50 ${r.readP50} ms, p99 ${r.readP99} ms), writes ${r.writes} (p99 ${r.writeP99} ms), network operations ${r.ops} (${r.refused} refused while pending), failed ${r.failed}`);
        const q = r.rss;
        console.log(`soak: RSS (MiB) first ${q[0]}, min ${Math.min(...q)}, max ${Math.max(...q)}, last ${q[q.length - 1]} (${q.length} samples)`);
      } finally {
        await t.stop();
      }
      return;
    }
    await scale({ folders, storage, pgUrls, seconds: o.seconds, connections: o.connections, soakMinutes: o.soakMinutes, starts: o.starts, rate: o.rate, warmUpSeconds: o.warmUp });
  } finally {
    await pg?.stop();
  }
}

if (require.main === module) {
  main().then(() => process.exit(0), (err) => {
    console.error(err);
    process.exit(1);
  });
}
