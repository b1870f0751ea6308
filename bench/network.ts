/**
 * Network operations scenario (issue 3): connect/detach cycles on many nodes across several
 * mock switches. Reports completed operations per second (202 to DONE) and the latency from
 * acceptance to DONE (p50, p99, from the service's own timestamps), next to the bare fastify
 * route of the same process. Runs: no injected delay; then a 50 ms login delay per switch
 * session, with 1, 4 and 16 switches (batching and parallel switches should show).
 *
 * How a client learns an operation's outcome: by polling `GET /networking_action/<id>` as HIL's
 * clients do (every BENCH_POLL_MS, 1 ms by default), or, in the runs marked `events`, as a
 * modern client would: one `GET /events?type=networking_action.finished` stream shared by all
 * the bench's clients, each matching its operation's `status_id`. `seen` is the latency a client
 * observed, from sending its POST to knowing the outcome.
 *
 *   npm run bench:network      (BENCH_SECONDS, BENCH_NETWORK_NODES to change the load;
 *                               BENCH_NETWORK_RUNS=no-delay: only the runs without injected delays;
 *                               BENCH_OP_TRACE=1: each run's operations traced step by step inside
 *                               the service, hardware/op-trace.ts, and the steps printed)
 */
import { Agent, request } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StepFigures } from '../hardware/op-trace';
import { startTarget, run, AUTH, cpuMicros } from './inventory';
import { performance } from 'node:perf_hooks';
import { sleep } from '../lib/time';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
// Not BENCH_NODES: bench/inventory.ts (imported above) sets that one for its own target.
const NODES = Number(process.env.BENCH_NETWORK_NODES ?? 64);
/** how long a client waits between two status polls without injected delays */
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 1);
const M = 'http://schema.massopencloud.org/haas/v0/';

// Keep-alive sockets, capped: one per client loop is plenty.
const agent = new Agent({ keepAlive: true, maxSockets: 128 });

/** How the bench's clients learn an outcome: polls every `ms`, or one shared event stream. */
export type Wait = { poll: number } | 'events';

/**
 * One `GET /events?type=networking_action.finished` stream for all clients: outcome(id) resolves
 * with the status of the operation once its event arrived (it may arrive before the 202 does).
 */
async function outcomes(base: string): Promise<{ outcome(id: string): Promise<string>; close(): void }> {
  const seen = new Map<string, string>();
  const waiting = new Map<string, (status: string) => void>();
  const req = request(`${base}/events?type=networking_action.finished`, { headers: { authorization: AUTH, accept: 'text/event-stream' } });
  await new Promise<void>((resolve, reject) => {
    req.on('response', (res) => {
      if (res.statusCode !== 200) return reject(new Error(`GET /events: ${res.statusCode}`));
      res.setEncoding('utf8');
      let buf = '';
      res.on('data', (d: string) => {
        buf += d;
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line === ': live') resolve();
          if (!line.startsWith('data: ')) continue;
          const op = JSON.parse(line.slice(6)).data?.operation;
          if (!op?.status_id) continue;
          const w = waiting.get(op.status_id);
          if (w) {
            waiting.delete(op.status_id);
            w(op.status);
          } else {
            seen.set(op.status_id, op.status);
          }
        }
      });
      res.on('error', () => undefined);
    });
    req.on('error', reject);
    req.end();
  });
  return {
    outcome(id) {
      const s = seen.get(id);
      if (s !== undefined) {
        seen.delete(id);
        return Promise.resolve(s);
      }
      return new Promise((resolve) => waiting.set(id, resolve));
    },
    close: () => req.destroy(),
  };
}

function call(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(base + path, { method, agent, headers: { authorization: AUTH, ...(payload ? { 'content-length': Buffer.byteLength(payload) } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

export async function ok(base: string, method: string, path: string, body?: unknown) {
  const r = await call(base, method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

const pct = (xs: number[], p: number) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] : NaN);

interface Result {
  label: string; switches: number; clients: number; wait: string; opsPerSec: number; p50: number; p99: number; errors: number; bareRps: number;
  /** latency the clients observed, from sending the POST to knowing the outcome (ms) */
  seenP50: number; seenP99: number;
  /** CPU time of the service process per completed operation, ms (its polls included); NaN without /proc */
  cpuMsPerOp: number;
  /** with BENCH_OP_TRACE: the steps of the operations inside the service */
  trace?: { operations: number; steps: StepFigures[] };
}

interface Delays { label: string; opMs: number; sessionMs: number }
export const NO_DELAY: Delays = { label: 'no injected delay', opMs: 0, sessionMs: 0 };

/** `clients` nodes cycle connect/detach (each client owns one node); all NODES nodes are set up. */
export async function scenario(switches: number, delays: Delays, clients = NODES, wait: Wait = { poll: POLL_MS }): Promise<Result> {
  const traceDir = process.env.BENCH_OP_TRACE ? mkdtempSync(join(tmpdir(), 'hilt-op-trace-')) : undefined;
  const traceFile = traceDir && join(traceDir, 'trace.json');
  const t = await startTarget({
    HILT_MOCK_SWITCH_DELAY_MS: String(delays.opMs), HILT_MOCK_SWITCH_SESSION_DELAY_MS: String(delays.sessionMs), ...(traceFile ? { BENCH_OP_TRACE: traceFile } : {}),
  });
  let result: Result | undefined;
  const delayed = delays.opMs + delays.sessionMs > 0;
  try {
    const h = t.hilt;
    await ok(h, 'PUT', '/project/bp');
    await ok(h, 'PUT', '/network/bw', { owner: 'bp', access: 'bp', net_id: '' });
    for (let s = 0; s < switches; s++) {
      await ok(h, 'PUT', `/switch/bs${s}`, { type: `${M}switches/mock`, hostname: 'h', username: 'u', password: 'p' });
    }
    await Promise.all(Array.from({ length: NODES }, async (_, i) => {
      const sw = `bs${i % switches}`;
      await ok(h, 'PUT', `/node/bn${i}`, { obm: { type: `${M}obm/mock`, host: 'h', user: 'u', password: 'p' } });
      await ok(h, 'PUT', `/node/bn${i}/nic/eth0`, { macaddr: 'm' });
      await ok(h, 'PUT', `/switch/${sw}/port/gi1/0/${i}`);
      await ok(h, 'POST', `/switch/${sw}/port/gi1/0/${i}/connect_nic`, { node: `bn${i}`, nic: 'eth0' });
      await ok(h, 'POST', '/project/bp/connect_node', { node: `bn${i}` });
    }));

    const stream = wait === 'events' ? await outcomes(h) : undefined;
    const pollMs = wait === 'events' ? 0 : delayed ? 10 : wait.poll;
    const seen: number[] = [];
    let errors = 0;
    let completed = 0;
    const cpu0 = cpuMicros(t.pid);
    const start = Date.now();
    const end = start + SECONDS * 1000;
    await Promise.all(Array.from({ length: clients }, async (_, i) => {
      let connected = false;
      while (Date.now() < end) {
        const path = `/node/bn${i}/nic/eth0/${connected ? 'detach_network' : 'connect_network'}`;
        const sent = performance.now();
        const { status_id } = await ok(h, 'POST', path, { network: 'bw' });
        let status = 'PENDING';
        if (stream) status = await stream.outcome(status_id);
        while (status === 'PENDING') {
          await sleep(pollMs);
          status = (await ok(h, 'GET', `/networking_action/${status_id}`)).status;
        }
        seen.push(performance.now() - sent);
        if (status !== 'DONE') errors++;
        else connected = !connected;
        completed++;
      }
    }));
    const elapsed = (Date.now() - start) / 1000;
    const cpuMsPerOp = (cpuMicros(t.pid) - cpu0) / 1000 / completed;
    stream?.close();
    seen.sort((a, b) => a - b);

    const latencies: number[] = [];
    for (let i = 0; i < clients; i++) {
      for (const a of await ok(h, 'GET', `/node/bn${i}/networking_actions`)) {
        if (a.finished_at) latencies.push(Date.parse(a.finished_at) - Date.parse(a.accepted_at));
      }
    }
    latencies.sort((a, b) => a - b);
    const bare = await run('bare', { url: t.bare, duration: Math.min(2, SECONDS) });
    result = {
      label: delays.label, switches, clients, wait: wait === 'events' ? 'events' : `poll ${pollMs} ms`, opsPerSec: completed / elapsed, p50: pct(latencies, 50), p99: pct(latencies, 99), errors, bareRps: bare.rps, cpuMsPerOp,
      seenP50: Math.round(pct(seen, 50)), seenP99: Math.round(pct(seen, 99)),
    };
    return result;
  } finally {
    await t.stop();
    if (traceDir) {
      if (result) result.trace = JSON.parse(readFileSync(traceFile!, 'utf8'));
      rmSync(traceDir, { recursive: true, force: true });
    }
  }
}

async function main(): Promise<void> {
  const results: Result[] = [];
  // Latency of one operation on an otherwise idle service, then under load.
  results.push(await scenario(4, NO_DELAY, 1));
  results.push(await scenario(4, NO_DELAY));
  // The same, as clients that do not poll every millisecond: every 10 ms, and one event stream.
  results.push(await scenario(4, NO_DELAY, NODES, { poll: 10 }));
  results.push(await scenario(4, NO_DELAY, NODES, 'events'));
  const withDelays = process.env.BENCH_NETWORK_RUNS !== 'no-delay';
  // A slow switch: operations on one switch are serialized, different switches work in parallel.
  if (withDelays) for (const k of [1, 4, 16]) results.push(await scenario(k, { label: '50 ms per operation', opMs: 50, sessionMs: 0 }));
  // A slow login (SSH): operations queued meanwhile share the session (batching).
  if (withDelays) for (const k of [1, 4, 16]) results.push(await scenario(k, { label: '50 ms per session', opMs: 0, sessionMs: 50 }));
  console.log(`\nhilt network operations: ${NODES} nodes on mock switches, each client cycling connect/detach on its own node, ${SECONDS} s per run\n`);
  console.log('run                   switches clients  wait          ops/s  accept->DONE p50 ms  p99 ms  seen p50/p99 ms  errors  bare route req/s  ops/bare  cpu ms/op');
  for (const r of results) {
    console.log(`${r.label.padEnd(22)} ${String(r.switches).padStart(7)} ${String(r.clients).padStart(7)}  ${r.wait.padEnd(11)} ${r.opsPerSec.toFixed(0).padStart(7)} ${String(r.p50).padStart(20)} ${String(r.p99).padStart(7)} ${`${r.seenP50}/${r.seenP99}`.padStart(16)} ${String(r.errors).padStart(7)} ${r.bareRps.toFixed(0).padStart(17)}  ${(r.opsPerSec / r.bareRps).toFixed(3).padStart(8)}  ${Number.isNaN(r.cpuMsPerOp) ? '' : r.cpuMsPerOp.toFixed(2).padStart(9)}`);
  }
  for (const r of results.filter((x) => x.trace)) {
    console.log(`\nsteps inside the service, ms: ${r.label}, ${r.clients} client(s), ${r.wait} (${r.trace!.operations} operations)`);
    for (const f of r.trace!.steps) {
      console.log(`  ${f.from.padStart(14)} -> ${f.to.padEnd(14)}  p50 ${f.p50.toFixed(2).padStart(7)}  p90 ${f.p90.toFixed(2).padStart(7)}  p99 ${f.p99.toFixed(2).padStart(7)}  mean ${f.mean.toFixed(2).padStart(7)}`);
    }
  }
  console.log('\ntargets: accept->DONE p50 <= 2 ms, p99 <= 10 ms with 64 clients (issue 27); with a 50 ms delay, ops/s grows with switches');
  if (results.some((r) => r.errors)) throw new Error('some operations ended in ERROR: the figures are not valid');
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
