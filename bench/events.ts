/**
 * The event stream under load (issue 22): commit throughput (durable node registrations) with
 * 100 consumers following GET /events, as a ratio to the same run without consumers, and the
 * delay from commit to event received at the consumers (p50, p99). Rounds alternate without and
 * with consumers on one target process (bench/target.ts), so that both see the same store.
 *
 *   npm run bench:events   (BENCH_CONSUMERS, BENCH_SECONDS, BENCH_WRITE_CONNECTIONS, BENCH_ROUNDS change the load;
 *                           BENCH_TARGET_CPUS=0 with the bench under `taskset -c 1` keeps the service on a core of its own)
 *
 * The consumers are bench/consumers.cc, built here with the machine's g++ (once, into dist/bench):
 * one process, one thread, one epoll loop and one reused buffer for all of them, reading every
 * byte of every stream. They are the bench's load, not the service: on a real site they run
 * elsewhere, while here they share the two cores with the service and the load generator, so they
 * are made as cheap as a good load generator (a reader in Node cost about 1.4 µs of CPU per frame
 * read, mostly its per-read allocation and collection). Their CPU is still printed with each row.
 *
 * The service runs under V8's CPU profiler (BENCH_PROFILE=0: not): each round also prints the
 * share of the service's main thread spent in src/events/ (the streams' work, their socket
 * writes' system calls included) and what that share leaves of the throughput, (1 − share with
 * consumers) / (1 − share alone): on this machine a round's throughput swings by a fifth from one
 * round to the next, its own shares do not (bench/profile-share.ts).
 *
 * The delay runs from the event's `at` (stamped as its commit begins, before the flush) to the
 * moment the consumer has read its frame: it includes the durable commit itself, so it is an
 * upper bound of the delay from acknowledgement to delivery.
 */
import { execFileSync, spawn, ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { AUTH, registerRequests, run, startTarget } from './inventory';
import { monotonicUs, Share, sharesOf } from './profile-share';

const CONSUMERS = Number(process.env.BENCH_CONSUMERS ?? 100);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const WRITE_CONNECTIONS = Number(process.env.BENCH_WRITE_CONNECTIONS ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
/** consumers whose every delivery is timed (the others only count) */
const TIMED = 10;
const PROFILE = process.env.BENCH_PROFILE !== '0';

/** The consumers' program, built from its source when missing or older (g++ is on the machine and in CI). */
function consumersProgram(): string {
  const source = join(__dirname, '..', '..', 'bench', 'consumers.cc');
  const program = join(__dirname, 'consumers');
  if (!existsSync(program) || statSync(program).mtimeMs < statSync(source).mtimeMs) {
    execFileSync('g++', ['-O2', '-Wall', '-o', program, source], { stdio: 'inherit' });
  }
  return program;
}

/** CPU time (user + system, ms) the process has used so far, from /proc (Linux). */
function cpuMs(pid: number): number {
  const { user, system } = cpuSplitMs(pid);
  return user + system;
}

/** The same, user and system apart (system: the kernel's work in its calls, the socket writes' copies among it). */
function cpuSplitMs(pid: number): { user: number; system: number } {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command name.
  return { user: (Number(fields[11]) * 1000) / 100, system: (Number(fields[12]) * 1000) / 100 };
}

/** What the consumers saw: frames read by all of them, by the one that read fewest and most; the timed delays (ms). */
interface Report { received: number; least: number; most: number; p50: number; p99: number; max: number; n: number }

/** The consumers' process: its lines are "ready", then the report; it takes "measure 0|1" and "report". */
function startConsumers(url: string, program: string): Promise<{ child: ChildProcess; measure(on: boolean): void; report(): Promise<Report> }> {
  const { hostname, port } = new URL(url);
  const child = spawn(program, [hostname, port, String(CONSUMERS), String(TIMED), AUTH], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`consumers exited ${code}`))));
  exited.catch(() => undefined);
  const next = async () => {
    const l = await Promise.race([lines.next(), exited]);
    if (l.done) throw new Error('consumers: no more output');
    return l.value;
  };
  return next().then((ready) => {
    if (ready !== 'ready') throw new Error(`consumers: ${ready}`);
    return {
      child,
      measure: (on) => child.stdin!.write(`measure ${on ? 1 : 0}\n`),
      report: async () => {
        child.stdin!.write('report\n');
        return JSON.parse(await next()) as Report;
      },
    };
  });
}

async function main(): Promise<void> {
  const program = consumersProgram();
  const profiles = mkdtempSync(join(tmpdir(), 'hilt-bench-profile-'));
  const flags = (process.env.BENCH_NODE_FLAGS ?? '--max-semi-space-size=32').split(' ').filter(Boolean);
  const target = await startTarget({}, undefined, PROFILE ? [...flags, '--cpu-prof', `--cpu-prof-dir=${profiles}`] : flags);
  const rows: { r: number; round: string; rps: number; p50: number; p99: number; errors: number; cpuUs: number; systemUs: number; othersUs: number; others: string; report?: Report; window: [number, number]; share?: Share }[] = [];
  const round = async (r: number, withConsumers: boolean) => {
    const cs = withConsumers ? await startConsumers(target.hilt, program) : undefined;
    cs?.measure(true);
    const cpu0 = cpuSplitMs(target.pid);
    const consumers0 = cs ? cpuMs(cs.child.pid!) : 0;
    const self0 = process.cpuUsage();
    const from = monotonicUs();
    const f = await run(`${r}: register ${withConsumers ? `+${CONSUMERS} consumers` : 'alone'}`, {
      url: target.hilt, connections: WRITE_CONNECTIONS, duration: SECONDS, requests: registerRequests(`r${r}${withConsumers ? 'c' : 'a'}-`),
    });
    const window: [number, number] = [from, monotonicUs()];
    // Let the last frames arrive, then count.
    await new Promise((res) => setTimeout(res, 1000));
    const registrations = f.requests!;
    const per = (ms: number) => (ms * 1000) / registrations;
    // The service's own CPU per registration, delivery to the consumers included.
    const cpu1 = cpuSplitMs(target.pid);
    const cpuUs = per(cpu1.user + cpu1.system - cpu0.user - cpu0.system);
    const systemUs = per(cpu1.system - cpu0.system);
    // Where the machine's other CPU went meanwhile (all on the same cores): the load generator, the consumers.
    const self = process.cpuUsage(self0);
    const loadUs = per((self.user + self.system) / 1000);
    const consumersUs = cs ? per(cpuMs(cs.child.pid!) - consumers0) : 0;
    const others = `load generator ${loadUs.toFixed(0)}` + (cs ? `, consumers ${consumersUs.toFixed(0)}` : '');
    const report = await cs?.report();
    let errors = f.errors + f.non2xx;
    // Every consumer saw every registration of its round (some may have committed after the load generator stopped counting).
    if (report && (report.least !== report.most || report.least < registrations)) {
      console.error(`${f.name}: consumers received ${report.least} to ${report.most} events each, ${registrations} registrations answered`);
      errors++;
    }
    rows.push({ r, round: f.name, rps: f.rps, p50: f.p50, p99: f.p99, errors, cpuUs, systemUs, othersUs: loadUs + consumersUs, others, report, window });
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
    if (PROFILE) {
      // The profile is written as the service exits.
      const file = readdirSync(profiles).find((f) => f.endsWith('.cpuprofile'));
      if (file) sharesOf(join(profiles, file), '/src/events/', rows.map((x) => x.window)).forEach((s, i) => (rows[i].share = s));
    }
    rmSync(profiles, { recursive: true, force: true });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const ratios = Array.from({ length: ROUNDS }, (_, r) => rows.find((x) => x.r === r && x.report)!.rps / rows.find((x) => x.r === r && !x.report)!.rps);
  const timed = rows.filter((x) => x.report).map((x) => x.report!);
  console.log(`\nevent stream: ${CONSUMERS} consumers, ${WRITE_CONNECTIONS} writers, ${SECONDS} s per run, ${ROUNDS} rounds\n`);
  for (const x of rows) {
    const d = x.report ? `  delay p50 ${x.report.p50} ms p99 ${x.report.p99} ms max ${x.report.max} ms (${x.report.n} timed), ${x.report.received} received (${x.report.least} each)` : '';
    const share = x.share ? `  streams' share of the main thread ${(x.share.share * 100).toFixed(1)} % (the collector's ${(x.share.gcShare * 100).toFixed(1)} %)` : '';
    console.log(`${x.round.padEnd(30)} ${x.rps.toFixed(0).padStart(7)} req/s (latency p50 ${x.p50} ms p99 ${x.p99} ms)  errors ${x.errors}  service CPU ${x.cpuUs.toFixed(0)} µs/registration, system ${x.systemUs.toFixed(0)} (${x.others})${share}${d}`);
  }
  const cpu = Array.from({ length: ROUNDS }, (_, r) => rows.find((x) => x.r === r && !x.report)!.cpuUs / rows.find((x) => x.r === r && x.report)!.cpuUs);
  console.log(`\nthroughput with consumers / alone, per round: ${ratios.map((x) => x.toFixed(2)).join(', ')}; median ${median(ratios).toFixed(2)} (target >= 0.90)`);
  console.log(`service CPU per registration alone / with consumers, per round: ${cpu.map((x) => x.toFixed(2)).join(', ')}; median ${median(cpu).toFixed(2)}`);
  const all = Array.from({ length: ROUNDS }, (_, r) => {
    const [a, c] = [rows.find((x) => x.r === r && !x.report)!, rows.find((x) => x.r === r && x.report)!];
    return (a.cpuUs + a.othersUs) / (c.cpuUs + c.othersUs);
  });
  console.log(`CPU per registration of the service, load generator and consumers together, alone / with consumers, per round: ${all.map((x) => x.toFixed(2)).join(', ')}; median ${median(all).toFixed(2)}`);
  if (rows.every((x) => x.share)) {
    const pair = (r: number) => [rows.find((x) => x.r === r && !x.report)!.share!.share, rows.find((x) => x.r === r && x.report)!.share!.share];
    const shares = Array.from({ length: ROUNDS }, (_, r) => pair(r)[1]);
    const left = Array.from({ length: ROUNDS }, (_, r) => (1 - pair(r)[1]) / (1 - pair(r)[0]));
    console.log(`the streams' share of the service's main thread with consumers, per round: ${shares.map((x) => (x * 100).toFixed(1)).join(', ')} %; median ${(median(shares) * 100).toFixed(1)} %`);
    const gc = (withConsumers: boolean) => median(rows.filter((x) => !!x.report === withConsumers).map((x) => x.share!.gcShare * 100)).toFixed(1);
    console.log(`the garbage collector's share of the main thread, median: alone ${gc(false)} %, with consumers ${gc(true)} %`);
    console.log(`throughput that share leaves, (1 - share with) / (1 - share alone), per round: ${left.map((x) => x.toFixed(3)).join(', ')}; median ${median(left).toFixed(3)} (target >= 0.90)`);
  }
  console.log(`delay p99 per round: ${timed.map((t) => t.p99).join(', ')} ms; median ${median(timed.map((t) => t.p99))} ms (target <= 50 ms)`);
  if (rows.some((x) => x.errors)) process.exitCode = 1;
}

void main();
