/**
 * The REST switch families in `npm run bench:switch` (issue 24): Brocade VDX and Dell OS9 over
 * HTTPS against their simulators (bench/rest-switch-sims.ts, a child process), through the
 * service's own switch path below the port actors (the switch sessions: device queue, one session
 * per switch, batching) and each family's driver (one keep-alive connection per session, each
 * change read first and back after, OS9's `write memory` at the end of a session).
 *
 * Each operation adds or removes a tagged VLAN on a port, each client on a port of its own.
 * "One connection per operation": one client per switch, waiting for its operation and the
 * session's end, so each operation pays a TLS connection, the login probe, its requests and (OS9)
 * a save; this is the family's baseline. "Batched": BENCH_IN_FLIGHT operations kept queued, those
 * queued while a session is open sharing its connection (and its save).
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { SwitchSessions } from '../hardware/switch-sessions';
import { RestSwitchDriver, RestTable } from '../drivers/switch/http/driver';
import { BROCADE_TABLE } from '../drivers/switch/brocade';
import { DELL_OS9_TABLE } from '../drivers/switch/dellnos9';
import type { SwitchInfo } from '../drivers/switch/types';
import { sleep } from '../lib/time';

interface RestSim { vendor: 'brocade' | 'dellnos9'; url: string; username: string; password: string; certPem: string; ports: string[] }
export interface RestResult { label: string; ops: number; opsPerSec: number; p50: number; p99: number; errors: number; connections: number }

const pct = (xs: number[], p: number) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]! : NaN);

async function startSims(latencyMs: number): Promise<{ sims: RestSim[]; stop: () => void }> {
  const child = spawn(process.execPath, [join(__dirname, 'rest-switch-sims.js')], {
    env: { ...process.env, BENCH_REST_MS: String(latencyMs) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the REST simulators exited (${code})`)));
  });
  return { sims: (JSON.parse(line) as { switches: RestSim[] }).switches, stop: () => child.kill('SIGTERM') };
}

/** `clients` loops on the switch, each cycling add/remove of a VLAN on its own port, for `seconds`. */
async function scenario(label: string, sim: RestSim, clients: number, seconds: number): Promise<RestResult> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const table: RestTable<any> = sim.vendor === 'brocade' ? BROCADE_TABLE : DELL_OS9_TABLE;
  const driver = new RestSwitchDriver(table, { requestTimeoutMs: 30_000, save: true });
  let connections = 0;
  const counting = { open: (sw: SwitchInfo, signal: AbortSignal) => { connections++; return driver.open(sw, signal); } };
  const sessions = new SwitchSessions(() => counting, 30_000);
  const info: SwitchInfo = {
    name: `bench-${sim.vendor}`, type: sim.vendor,
    fields: { hostname: sim.url, username: sim.username, password: sim.password, interface_type: 'TenGigabitEthernet', ca_cert: sim.certPem },
  };
  const latencies: number[] = [];
  let errors = 0;
  const start = Date.now();
  const end = start + seconds * 1000;
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    const port = sim.ports[c]!;
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
  }));
  const elapsed = (Date.now() - start) / 1000;
  await sleep(200); // the last session's end
  latencies.sort((a, b) => a - b);
  return { label, ops: latencies.length, opsPerSec: latencies.length / elapsed, p50: pct(latencies, 50), p99: pct(latencies, 99), errors, connections };
}

/** Both REST families, each against its own baseline; prints its table. */
export async function restSwitchBench(opts: { seconds: number; inFlight: number; latencyMs: number }): Promise<void> {
  const { sims, stop } = await startSims(opts.latencyMs);
  const row = (r: RestResult, ratio: string, target: string) => process.stdout.write(
    `${r.label.padEnd(40)}${r.opsPerSec.toFixed(0).padStart(8)}${(1000 / r.opsPerSec).toFixed(1).padStart(10)}${String(r.p50).padStart(9)}${String(r.p99).padStart(9)}`
    + `${String(r.errors).padStart(8)}${(r.ops / Math.max(1, r.connections)).toFixed(1).padStart(10)}   ${ratio.padEnd(8)}${target}\n`,
  );
  try {
    process.stdout.write(`\nREST switches: one simulated Brocade VDX and one Dell OS9 over HTTPS on 127.0.0.1 (${opts.latencyMs} ms per request), ${opts.seconds} s per scenario, ${opts.inFlight} operations in flight when batched\n\n`);
    process.stdout.write(`${'scenario'.padEnd(40)}${'ops/s'.padStart(8)}${'ms/op'.padStart(10)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'errors'.padStart(8)}${'ops/conn'.padStart(10)}   ratio   target\n`);
    for (const sim of sims) {
      await scenario('warm-up', sim, 1, 1);
      const one = await scenario(`${sim.vendor}: one connection per operation`, sim, 1, opts.seconds);
      const batched = await scenario(`${sim.vendor}: batched`, sim, opts.inFlight, opts.seconds);
      row(one, '1.00', 'baseline');
      row(batched, (one.opsPerSec / batched.opsPerSec).toFixed(2), 'cost per operation / the baseline\'s');
    }
  } finally {
    stop();
  }
}

// `node dist/bench/switch-rest.js`: the REST families alone.
if (require.main === module) {
  void restSwitchBench({ seconds: Number(process.env.BENCH_SECONDS ?? 5), inFlight: Number(process.env.BENCH_IN_FLIGHT ?? 16), latencyMs: Number(process.env.BENCH_REST_MS ?? 5) });
}
