/**
 * SSH switch sessions (issue 12): operations per second and per-operation latency against
 * simulated switches over real SSH, for one switch and for 8, with operations queued while a
 * session is open sharing it (batched) versus one session per operation. The service side is
 * the real path below the port actors: the switch sessions (device queue, one session per
 * switch) and the Nexus driver (CLI session class, table, read-back check, save at logout).
 * The simulators run in a child process (bench/switch-sims.ts).
 *
 * Each operation adds or removes a tagged VLAN on a port (each client has its own port), and
 * is checked by reading the port back. "One session per operation" is one client per switch
 * waiting for each operation and for the logout after it; "batched" keeps BENCH_IN_FLIGHT
 * operations queued per switch. The baseline, measured in the same run, is one switch with
 * one session per operation.
 *
 *   npm run bench:switch    (BENCH_SECONDS, BENCH_IN_FLIGHT, BENCH_SWITCH_COMMAND_MS)
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { SwitchSessions } from '../hardware/switch-sessions';
import { CliSwitchDriver } from '../drivers/switch/ssh/driver';
import { NEXUS_TABLE } from '../drivers/switch/nexus';
import type { SwitchInfo } from '../drivers/switch/types';
import { sleep } from '../lib/time';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 16);
const COMMAND_MS = Number(process.env.BENCH_SWITCH_COMMAND_MS ?? 2);
const SWITCHES = 8;

interface Sim { address: string; username: string; password: string }
interface Result { label: string; switches: number; ops: number; opsPerSec: number; p50: number; p99: number; errors: number }

const pct = (xs: number[], p: number) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]! : NaN);

async function startSims(): Promise<{ sims: Sim[]; stop: () => void }> {
  const child = spawn(process.execPath, [join(__dirname, 'switch-sims.js')], {
    env: { ...process.env, BENCH_SWITCHES: String(SWITCHES), BENCH_SWITCH_COMMAND_MS: String(COMMAND_MS) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the simulators exited (${code})`)));
  });
  return { sims: (JSON.parse(line) as { switches: Sim[] }).switches, stop: () => child.kill('SIGTERM') };
}

/** `clients` loops per switch, each cycling add/remove of a VLAN on its own port, for SECONDS. */
async function scenario(label: string, sims: Sim[], clientsPerSwitch: number): Promise<Result> {
  const driver = new CliSwitchDriver(NEXUS_TABLE, { save: true, readyTimeoutMs: 30_000 });
  const sessions = new SwitchSessions(() => driver, 30_000);
  const infos: SwitchInfo[] = sims.map((s, i) => ({
    name: `bench${i}`, type: 'nexus', fields: { hostname: s.address, username: s.username, password: s.password, dummy_vlan: 3999 },
  }));
  const latencies: number[] = [];
  let errors = 0;
  const end = Date.now() + SECONDS * 1000;
  const start = Date.now();
  await Promise.all(infos.flatMap((info) => Array.from({ length: clientsPerSwitch }, async (_, c) => {
    const port = `Ethernet1/${c + 1}`;
    for (let n = 0; Date.now() < end; n++) {
      const t0 = Date.now();
      try {
        await sessions.submit(info, (s) => (n % 2 ? s.removeTagged(port, 1000 + c) : s.addTagged(port, 1000 + c)));
        latencies.push(Date.now() - t0);
      } catch (err) {
        errors++;
        if (errors < 5) process.stderr.write(`${(err as Error).message}\n`);
      }
    }
  })));
  const elapsed = (Date.now() - start) / 1000;
  await sleep(200); // the last logouts
  latencies.sort((a, b) => a - b);
  return { label, switches: infos.length, ops: latencies.length, opsPerSec: latencies.length / elapsed, p50: pct(latencies, 50), p99: pct(latencies, 99), errors };
}

async function main(): Promise<void> {
  const { sims, stop } = await startSims();
  try {
    process.stdout.write(`SSH switch sessions: simulated Nexus switches over SSH on 127.0.0.1 (${COMMAND_MS} ms per command), ${SECONDS} s per scenario, ${IN_FLIGHT} operations in flight per switch when batched\n\n`);
    // Warm up (JIT, the simulators' first logins).
    await scenario('warm-up', sims.slice(0, 1), 1);
    const one = await scenario('one session per operation', sims.slice(0, 1), 1);
    const batched = await scenario('batched', sims.slice(0, 1), IN_FLIGHT);
    const eightOne = await scenario('one session per operation', sims, 1);
    const eight = await scenario('batched', sims, IN_FLIGHT);
    const row = (r: Result, ratio: string, target: string) => process.stdout.write(
      `${r.label.padEnd(28)}${String(r.switches).padStart(9)}${r.opsPerSec.toFixed(0).padStart(8)}${(1000 / r.opsPerSec * r.switches).toFixed(1).padStart(12)}`
      + `${String(r.p50).padStart(9)}${String(r.p99).padStart(9)}${String(r.errors).padStart(8)}   ${ratio.padEnd(8)}${target}\n`,
    );
    process.stdout.write(`${'scenario'.padEnd(28)}${'switches'.padStart(9)}${'ops/s'.padStart(8)}${'ms/op/sw'.padStart(12)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'errors'.padStart(8)}   ratio   target\n`);
    row(one, '1.00', 'baseline');
    row(batched, (one.opsPerSec / batched.opsPerSec).toFixed(2), 'cost per operation <= 0.33 of the baseline');
    row(eightOne, (eightOne.opsPerSec / one.opsPerSec).toFixed(2), 'reference (throughput / baseline)');
    row(eight, (eight.opsPerSec / batched.opsPerSec).toFixed(2), 'throughput >= 6 x one batched switch');
  } finally {
    stop();
  }
}

void main();
