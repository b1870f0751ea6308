/**
 * SSH switch sessions (issues 12 and 25): operations per second and per-operation latency against
 * simulated switches over real SSH, for one switch and for 8, with operations queued while a
 * session is open sharing it (batched) versus one session per operation. The service side is
 * the real path below the port actors: the switch sessions (device queue, one session per
 * switch, one commit per batch on a candidate configuration) and the vendor drivers (CLI session
 * class, table, read-back check, save at logout). The simulators run in a child process
 * (bench/switch-sims.ts).
 *
 * Each operation adds or removes a tagged VLAN on a port (each client has its own port), and
 * is checked by reading the port back. "One session per operation" is one client per switch
 * waiting for each operation and for the logout after it; "batched" keeps BENCH_IN_FLIGHT
 * operations queued per switch. The baseline of each family, measured in the same run, is one
 * switch of it with one session per operation. For Junos and NVUE the commits (applies) per
 * operation are counted too.
 *
 * Then the REST families, Brocade VDX and Dell OS9, each against its own baseline
 * (bench/switch-rest.ts), and the wiring check of one switch and of 100 (bench/wiring.ts);
 * BENCH_SWITCH_PARTS (`sessions,rest,wiring`) picks the parts to run.
 *
 *   npm run bench:switch    (BENCH_SECONDS, BENCH_IN_FLIGHT, BENCH_SWITCH_COMMAND_MS, BENCH_COMMIT_MS, BENCH_REST_MS, BENCH_SWITCH_PARTS)
 */
import { SwitchSessions } from '../hardware/switch-sessions';
import { CliSwitchDriver } from '../drivers/switch/ssh/driver';
import { NEXUS_TABLE } from '../drivers/switch/nexus';
import { DELL_OS10_TABLE } from '../drivers/switch/dellos10';
import { SONIC_TABLE } from '../drivers/switch/sonic';
import { JUNOS_TABLE } from '../drivers/switch/junos';
import { CUMULUS_NVUE_TABLE } from '../drivers/switch/cumulus-nvue';
import type { SwitchTable } from '../drivers/switch/ssh/table';
import type { SwitchInfo } from '../drivers/switch/types';
import { NO_TELEMETRY } from '../actors/telemetry';
import { sleep } from '../lib/time';
import { restSwitchBench } from './switch-rest';
import { Sim, startSims } from './switch-sims';
import { wiringBench } from './wiring';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 16);
const COMMAND_MS = Number(process.env.BENCH_SWITCH_COMMAND_MS ?? 2);
const COMMIT_MS = Number(process.env.BENCH_COMMIT_MS ?? 20);
const SWITCHES = 8;
/** how long each simulated REST switch takes to answer a request (bench/switch-rest.ts) */
const REST_MS = Number(process.env.BENCH_REST_MS ?? 5);
/** which parts to run: `sessions` (the VLAN operations below), `rest` (bench/switch-rest.ts), `wiring` (bench/wiring.ts) */
const PARTS = (process.env.BENCH_SWITCH_PARTS ?? 'sessions,rest,wiring').split(',');

interface Result { label: string; switches: number; ops: number; opsPerSec: number; p50: number; p99: number; errors: number; commits: number }

const TABLES: Record<string, SwitchTable> = { nexus: NEXUS_TABLE, dellos10: DELL_OS10_TABLE, sonic: SONIC_TABLE, junos: JUNOS_TABLE, cumulus_nvue: CUMULUS_NVUE_TABLE };

const pct = (xs: number[], p: number) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]! : NaN);

/** `clients` loops per switch, each cycling add/remove of a VLAN on its own port, for SECONDS. */
async function scenario(label: string, sims: Sim[], clientsPerSwitch: number): Promise<Result> {
  const vendor = sims[0]!.vendor;
  const driver = new CliSwitchDriver(TABLES[vendor]!, { save: true, readyTimeoutMs: 30_000 });
  let commits = 0;
  const telemetry = { ...NO_TELEMETRY, driverCall: (_k: string, _d: string, call: string, _s: number, ok: boolean) => { if (call === 'commit' && ok) commits++; } };
  const sessions = new SwitchSessions(() => driver, 30_000, undefined, telemetry);
  const infos: SwitchInfo[] = sims.map((s, i) => ({
    name: `bench${i}`, type: vendor, fields: { hostname: s.address, username: s.username, password: s.password, ...(vendor === 'nexus' ? { dummy_vlan: 3999 } : {}) },
  }));
  const latencies: number[] = [];
  let errors = 0;
  const end = Date.now() + SECONDS * 1000;
  const start = Date.now();
  await Promise.all(infos.flatMap((info, i) => Array.from({ length: clientsPerSwitch }, async (_, c) => {
    const port = sims[i]!.ports[c]!;
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
  return { label, switches: infos.length, ops: latencies.length, opsPerSec: latencies.length / elapsed, p50: pct(latencies, 50), p99: pct(latencies, 99), errors, commits };
}

async function main(): Promise<void> {
  if (PARTS.includes('sessions')) await sessionsBench();
  if (PARTS.includes('rest')) await restSwitchBench({ seconds: SECONDS, inFlight: IN_FLIGHT, latencyMs: REST_MS });
  if (PARTS.includes('wiring')) await wiringBench();
}

async function sessionsBench(): Promise<void> {
  const { sims: all, stop } = await startSims(SWITCHES, { BENCH_SWITCH_COMMAND_MS: String(COMMAND_MS), BENCH_COMMIT_MS: String(COMMIT_MS) });
  const sims = all.filter((s) => s.vendor === 'nexus');
  const row = (r: Result, ratio: string, target: string) => process.stdout.write(
    `${r.label.padEnd(32)}${String(r.switches).padStart(9)}${r.opsPerSec.toFixed(0).padStart(8)}${(1000 / r.opsPerSec * r.switches).toFixed(1).padStart(12)}`
    + `${String(r.p50).padStart(9)}${String(r.p99).padStart(9)}${String(r.errors).padStart(8)}   ${ratio.padEnd(8)}${target}\n`,
  );
  const head = () => process.stdout.write(`${'scenario'.padEnd(32)}${'switches'.padStart(9)}${'ops/s'.padStart(8)}${'ms/op/sw'.padStart(12)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'errors'.padStart(8)}   ratio   target\n`);
  try {
    process.stdout.write(`SSH switch sessions: simulated Nexus switches over SSH on 127.0.0.1 (${COMMAND_MS} ms per command), ${SECONDS} s per scenario, ${IN_FLIGHT} operations in flight per switch when batched\n\n`);
    // Warm up (JIT, the simulators' first logins).
    await scenario('warm-up', sims.slice(0, 1), 1);
    const one = await scenario('one session per operation', sims.slice(0, 1), 1);
    const batched = await scenario('batched', sims.slice(0, 1), IN_FLIGHT);
    const eightOne = await scenario('one session per operation', sims, 1);
    const eight = await scenario('batched', sims, IN_FLIGHT);
    head();
    row(one, '1.00', 'baseline');
    row(batched, (one.opsPerSec / batched.opsPerSec).toFixed(2), 'cost per operation <= 0.33 of the baseline');
    row(eightOne, (eightOne.opsPerSec / one.opsPerSec).toFixed(2), 'reference (throughput / baseline)');
    row(eight, (eight.opsPerSec / batched.opsPerSec).toFixed(2), 'throughput >= 6 x one batched switch');

    process.stdout.write(`\nData-centre families: one simulated switch each (${COMMAND_MS} ms per command, ${COMMIT_MS} ms more per commit/apply), each family's own baseline\n\n`);
    head();
    const commitRows: string[] = [];
    for (const vendor of ['dellos10', 'sonic', 'junos', 'cumulus_nvue']) {
      const sim = all.filter((s) => s.vendor === vendor);
      await scenario('warm-up', sim, 1);
      const base = await scenario(`${vendor}: one per operation`, sim, 1);
      const b = await scenario(`${vendor}: batched`, sim, IN_FLIGHT);
      row(base, '1.00', 'baseline');
      row(b, (base.opsPerSec / b.opsPerSec).toFixed(2), 'cost per operation <= 0.33 of the baseline');
      if (vendor === 'junos' || vendor === 'cumulus_nvue') {
        commitRows.push(`${vendor.padEnd(14)} commits per operation: one per operation ${(base.commits / Math.max(1, base.ops)).toFixed(2)}, batched ${(b.commits / Math.max(1, b.ops)).toFixed(3)} (${b.commits} commits for ${b.ops} operations)`);
      }
    }
    process.stdout.write(`\n${commitRows.join('\n')}\n`);
  } finally {
    stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
