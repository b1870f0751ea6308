/**
 * The event stream under load (issue 22): commit throughput (durable node registrations) with
 * 100 consumers following GET /events, as a ratio to the same run without consumers, and the
 * delay from commit to event received at the consumers (p50, p99). Rounds alternate without and
 * with consumers on one target process (bench/target.ts), so that both see the same store.
 *
 *   npm run bench:events   (BENCH_CONSUMERS, BENCH_SECONDS, BENCH_WRITE_CONNECTIONS, BENCH_ROUNDS change the load)
 *
 * The consumers run in a child process of their own (bench/consumers.ts is this file with
 * BENCH_CONSUMER_URL set), so that their reading does not hold up the load generator's event
 * loop; on a machine of few cores they still take CPU from the service, as local consumers would.
 *
 * The delay runs from the event's `at` (stamped as its commit begins, before the flush) to the
 * moment the consumer has read its frame: it includes the durable commit itself, so it is an
 * upper bound of the delay from acknowledgement to delivery.
 */
import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { fork, ChildProcess } from 'node:child_process';
import { AUTH, registerRequests, run, startTarget } from './inventory';

const CONSUMERS = Number(process.env.BENCH_CONSUMERS ?? 100);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const WRITE_CONNECTIONS = Number(process.env.BENCH_WRITE_CONNECTIONS ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
/** consumers whose every delivery is timed (the others only count) */
const TIMED = 10;

interface Consumer { received: number; delays: number[]; close(): void }

/**
 * One consumer. An untimed one only counts frames, scanning the bytes for the `id: ` that opens
 * each (no text decoding, no copies): the consumers share this machine's cores with the service
 * and the load generator, so the lighter they are, the more the figure is the service's own cost.
 * A timed one also decodes each frame's `at` and takes its delay.
 */
const ID = Buffer.from('\nid: ');
function consumer(url: string, measuring: { on: boolean }, timed: boolean): Promise<Consumer> {
  return new Promise((resolve, reject) => {
    const c: Consumer = { received: 0, delays: [], close: () => req.destroy() };
    const req = request(`${url}/events?kind=node`, { headers: { authorization: AUTH, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`GET /events: ${res.statusCode}`));
      // Each frame ends with a blank line, so every frame but a stream's first is preceded by "\n";
      // the tail of the last chunk is kept so that a marker split between two chunks still counts.
      let tail = Buffer.from('\n');
      let text = '';
      res.on('data', (chunk: Buffer) => {
        const now = Date.now();
        const data = Buffer.concat([tail, chunk]);
        for (let i = data.indexOf(ID); i >= 0; i = data.indexOf(ID, i + ID.length)) c.received++;
        tail = data.subarray(Math.max(0, data.length - (ID.length - 1)));
        if (!timed || !measuring.on) return;
        text += chunk.toString('utf8');
        let i: number;
        while ((i = text.indexOf('\n\n')) >= 0) {
          const block = text.slice(0, i);
          text = text.slice(i + 2);
          const at = block.indexOf('"at":"');
          if (block.startsWith('id:') && at >= 0) c.delays.push(now - Date.parse(block.slice(at + 6, at + 30)));
        }
      });
      resolve(c);
    });
    req.on('error', (err) => { if (!req.destroyed) reject(err); });
    req.end();
  });
}

/** CPU time (user + system, ms) the process has used so far, from /proc (Linux). */
function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command name.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

/** The consumers' process: opens them, measures while told, reports its figures when asked. */
async function consumers(url: string): Promise<void> {
  const measuring = { on: false };
  const cs = await Promise.all(Array.from({ length: CONSUMERS }, (_, i) => consumer(url, measuring, i < TIMED)));
  process.send!({ ready: true });
  process.on('message', (m: { measure?: boolean; report?: boolean }) => {
    if (m.measure !== undefined) measuring.on = m.measure;
    if (m.report) {
      const delays = cs.flatMap((c) => c.delays);
      process.send!({ received: cs.reduce((n, c) => n + c.received, 0), p50: pct(delays, 50), p99: pct(delays, 99), max: delays.reduce((a, x) => Math.max(a, x), 0), n: delays.length }, () => {
        for (const c of cs) c.close();
        process.exit(0);
      });
    }
  });
}

interface Report { received: number; p50: number; p99: number; max: number; n: number }

function startConsumers(url: string): Promise<{ child: ChildProcess; measure(on: boolean): void; report(): Promise<Report> }> {
  const child = fork(__filename, [], { env: { ...process.env, BENCH_CONSUMER_URL: url } });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve({
      child,
      measure: (on) => child.send({ measure: on }),
      report: () => new Promise<Report>((r) => { child.once('message', (m) => r(m as Report)); child.send({ report: true }); }),
    }));
    child.once('exit', (code) => reject(new Error(`consumers exited ${code}`)));
  });
}

async function main(): Promise<void> {
  const target = await startTarget();
  const rows: { r: number; round: string; rps: number; errors: number; cpuUs: number; report?: Report }[] = [];
  const round = async (r: number, withConsumers: boolean) => {
    const cs = withConsumers ? await startConsumers(target.hilt) : undefined;
    cs?.measure(true);
    const cpu0 = cpuMs(target.pid);
    const f = await run(`${r}: register ${withConsumers ? `+${CONSUMERS} consumers` : 'alone'}`, {
      url: target.hilt, connections: WRITE_CONNECTIONS, requests: registerRequests(`r${r}${withConsumers ? 'c' : 'a'}-`),
    });
    // Let the last frames arrive, then count.
    await new Promise((res) => setTimeout(res, 1000));
    // The service's own CPU per registration, delivery to the consumers included.
    const cpuUs = ((cpuMs(target.pid) - cpu0) * 1000) / (f.rps * SECONDS);
    const report = await cs?.report();
    rows.push({ r, round: f.name, rps: f.rps, errors: f.errors + f.non2xx, cpuUs, report });
  };
  try {
    // A first round warms the target up (compiled code, the store's first pages); not counted.
    await run('warm-up', { url: target.hilt, connections: WRITE_CONNECTIONS, requests: registerRequests('w-') });
    // Each round runs both, in turn first (a loaded machine drifts between runs).
    for (let r = 0; r < ROUNDS; r++) {
      for (const withConsumers of r % 2 ? [true, false] : [false, true]) await round(r, withConsumers);
    }
  } finally {
    await target.stop();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const ratios = Array.from({ length: ROUNDS }, (_, r) => rows.find((x) => x.r === r && x.report)!.rps / rows.find((x) => x.r === r && !x.report)!.rps);
  const timed = rows.filter((x) => x.report).map((x) => x.report!);
  console.log(`\nevent stream: ${CONSUMERS} consumers, ${WRITE_CONNECTIONS} writers, ${SECONDS} s per run, ${ROUNDS} rounds\n`);
  for (const x of rows) {
    const d = x.report ? `  delay p50 ${x.report.p50} ms p99 ${x.report.p99} ms max ${x.report.max} ms (${x.report.n} timed), ${x.report.received} received` : '';
    console.log(`${x.round.padEnd(30)} ${x.rps.toFixed(0).padStart(7)} req/s  errors ${x.errors}  service CPU ${x.cpuUs.toFixed(0)} µs/registration${d}`);
  }
  const cpu = Array.from({ length: ROUNDS }, (_, r) => rows.find((x) => x.r === r && !x.report)!.cpuUs / rows.find((x) => x.r === r && x.report)!.cpuUs);
  console.log(`\nthroughput with consumers / alone, per round: ${ratios.map((x) => x.toFixed(2)).join(', ')}; median ${median(ratios).toFixed(2)} (target >= 0.90)`);
  console.log(`service CPU per registration alone / with consumers, per round: ${cpu.map((x) => x.toFixed(2)).join(', ')}; median ${median(cpu).toFixed(2)}`);
  console.log(`delay p99 per round: ${timed.map((t) => t.p99).join(', ')} ms; median ${median(timed.map((t) => t.p99))} ms (target <= 50 ms)`);
  if (rows.some((x) => x.errors)) process.exitCode = 1;
}

if (process.env.BENCH_CONSUMER_URL) void consumers(process.env.BENCH_CONSUMER_URL);
else void main();
