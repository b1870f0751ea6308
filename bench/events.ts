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
import { connect } from 'node:net';
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
 * One consumer, on a raw socket: the request written by hand, the answer's bytes scanned for the
 * `\nid: ` that opens each frame (no HTTP parser, no text decoding, no copies but a few bytes
 * kept between reads). The consumers share this machine's two cores with the service and the load
 * generator (on a real site they run elsewhere), so the lighter they are, the more the figure is
 * the service's own cost. A timed one also reads each frame's `at` (24 bytes) and takes its delay.
 * Frames cross the socket whole or split anywhere by TCP; the chunked encoding's size lines lie
 * between frames (the service writes whole frames), where they cannot split an `at`.
 */
const ID = Buffer.from('\nid: ');
const AT = Buffer.from('"at":"');
const HEAD_END = Buffer.from('\r\n\r\n');
function consumer(url: string, measuring: { on: boolean }, timed: boolean): Promise<Consumer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const c: Consumer = { received: 0, delays: [], close: () => socket.destroy() };
    let head = true;
    /** bytes read and not yet scanned: a marker's start, or a frame whose `at` has not all come */
    let kept: Buffer = Buffer.alloc(0);
    socket.on('connect', () => socket.write(`GET /events?kind=node HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: ${AUTH}\r\nAccept: text/event-stream\r\n\r\n`));
    socket.on('data', (chunk: Buffer) => {
      const now = Date.now();
      let data: Buffer = kept.length ? Buffer.concat([kept, chunk]) : chunk;
      if (head) {
        const end = data.indexOf(HEAD_END);
        if (end < 0) {
          kept = data;
          return;
        }
        if (!data.subarray(0, 16).toString('latin1').startsWith('HTTP/1.1 200')) return reject(new Error(`GET /events: ${data.subarray(0, 40).toString('latin1')}`));
        head = false;
        resolve(c);
        // The blank line's "\n" makes the first frame's "id: " a marker like the others'.
        data = data.subarray(end + 3);
      }
      const timing = timed && measuring.on;
      let from = 0;
      let i: number;
      for (; (i = data.indexOf(ID, from)) >= 0; from = i + ID.length) {
        if (timing) {
          const at = data.indexOf(AT, i);
          if (at < 0 || at + AT.length + 24 > data.length) break;
          c.delays.push(now - Date.parse(data.toString('latin1', at + AT.length, at + AT.length + 24)));
        }
        c.received++;
      }
      kept = Buffer.from(data.subarray(i >= 0 ? i : Math.max(from, data.length - (ID.length - 1))));
    });
    socket.on('error', (err) => { if (!socket.destroyed) reject(err); });
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
  const rows: { r: number; round: string; rps: number; p50: number; p99: number; errors: number; cpuUs: number; others: string; report?: Report }[] = [];
  const round = async (r: number, withConsumers: boolean) => {
    const cs = withConsumers ? await startConsumers(target.hilt) : undefined;
    cs?.measure(true);
    const cpu0 = cpuMs(target.pid);
    const consumers0 = cs ? cpuMs(cs.child.pid!) : 0;
    const self0 = process.cpuUsage();
    const f = await run(`${r}: register ${withConsumers ? `+${CONSUMERS} consumers` : 'alone'}`, {
      url: target.hilt, connections: WRITE_CONNECTIONS, requests: registerRequests(`r${r}${withConsumers ? 'c' : 'a'}-`),
    });
    // Let the last frames arrive, then count.
    await new Promise((res) => setTimeout(res, 1000));
    // The service's own CPU per registration, delivery to the consumers included.
    const cpuUs = ((cpuMs(target.pid) - cpu0) * 1000) / (f.rps * SECONDS);
    // Where the machine's other CPU went meanwhile (all on the same cores): the load generator, the consumers.
    const self = process.cpuUsage(self0);
    const per = (ms: number) => ((ms * 1000) / (f.rps * SECONDS)).toFixed(0);
    const others = `load generator ${per((self.user + self.system) / 1000)}` + (cs ? `, consumers ${per(cpuMs(cs.child.pid!) - consumers0)}` : '');
    const report = await cs?.report();
    rows.push({ r, round: f.name, rps: f.rps, p50: f.p50, p99: f.p99, errors: f.errors + f.non2xx, cpuUs, others, report });
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
    console.log(`${x.round.padEnd(30)} ${x.rps.toFixed(0).padStart(7)} req/s (latency p50 ${x.p50} ms p99 ${x.p99} ms)  errors ${x.errors}  service CPU ${x.cpuUs.toFixed(0)} µs/registration (${x.others})${d}`);
  }
  const cpu = Array.from({ length: ROUNDS }, (_, r) => rows.find((x) => x.r === r && !x.report)!.cpuUs / rows.find((x) => x.r === r && x.report)!.cpuUs);
  console.log(`\nthroughput with consumers / alone, per round: ${ratios.map((x) => x.toFixed(2)).join(', ')}; median ${median(ratios).toFixed(2)} (target >= 0.90)`);
  console.log(`service CPU per registration alone / with consumers, per round: ${cpu.map((x) => x.toFixed(2)).join(', ')}; median ${median(cpu).toFixed(2)}`);
  console.log(`delay p99 per round: ${timed.map((t) => t.p99).join(', ')} ms; median ${median(timed.map((t) => t.p99))} ms (target <= 50 ms)`);
  if (rows.some((x) => x.errors)) process.exitCode = 1;
}

if (process.env.BENCH_CONSUMER_URL) void consumers(process.env.BENCH_CONSUMER_URL);
else void main();
