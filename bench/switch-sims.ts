/**
 * The switches of bench/switch.ts, in a process of their own so that they do not share the
 * service's event loop: BENCH_SWITCHES simulated Nexus switches, and one of each data-centre
 * family (Dell OS10, SONiC, Junos, Cumulus NVUE; none with BENCH_SWITCH_FABRICS=0), on
 * 127.0.0.1, each answering every command after BENCH_SWITCH_COMMAND_MS (a real switch's CLI
 * takes milliseconds to tens of milliseconds per command) and taking BENCH_COMMIT_MS more for a
 * commit/apply. Prints one JSON line, `{"switches": [{vendor, address, username, password,
 * ports}]}`, then serves until SIGTERM or the end of its stdin; each line `logins` read on its
 * stdin is answered with a line `[n, …]`, every switch's logins so far (the sessions opened), in
 * the same order. With BENCH_SWITCH_LEARN=1 every port p of Nexus switch i has learned
 * `benchMac(i, p)` and has an LLDP neighbour of that chassis id (what the wiring check reads).
 *
 * `startSims` is the parent's side: it runs this file as a child process.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { startSim, SwitchSim } from '../test/sim/switch/sim';
import type { VendorName } from '../test/sim/switch/vendors';

const FABRICS: VendorName[] = ['dellos10', 'sonic', 'junos', 'cumulus_nvue'];

export interface Sim { vendor: string; address: string; username: string; password: string; ports: string[] }

/** The MAC of the nic cabled to port `p` (0-based) of switch `i`: locally administered, one per port. */
export function benchMac(i: number, p: number): string {
  return ['02', 'be', i >> 8, i & 255, p >> 8, p & 255].map((x) => (typeof x === 'string' ? x : x.toString(16).padStart(2, '0'))).join(':');
}

/** Start `count` Nexus simulators (and the fabrics) in a child process (env: the settings above). */
export async function startSims(count: number, env: Record<string, string> = {}): Promise<{
  sims: Sim[]; pid: number; logins: () => Promise<number[]>; stop: () => void;
}> {
  const child = spawn(process.execPath, [join(__dirname, 'switch-sims.js')], {
    env: { ...process.env, ...env, BENCH_SWITCHES: String(count) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting: Array<{ resolve: (line: string) => void; reject: (err: Error) => void }> = [];
  let gone: Error | undefined;
  createInterface({ input: child.stdout! }).on('line', (line) => waiting.shift()?.resolve(line));
  child.once('exit', (code) => {
    gone = new Error(`the simulators exited (${code})`);
    for (const w of waiting.splice(0)) w.reject(gone);
  });
  const next = () => new Promise<string>((resolve, reject) => (gone ? reject(gone) : waiting.push({ resolve, reject })));
  const hello = JSON.parse(await next()) as { switches: Sim[] };
  return {
    sims: hello.switches,
    pid: child.pid!,
    logins: async () => {
      const answer = next();
      child.stdin!.write('logins\n');
      return JSON.parse(await answer) as number[];
    },
    stop: () => child.kill('SIGTERM'),
  };
}

async function main(): Promise<void> {
  const count = Number(process.env.BENCH_SWITCHES ?? 8);
  const commandDelayMs = Number(process.env.BENCH_SWITCH_COMMAND_MS ?? 2);
  const commitDelayMs = Number(process.env.BENCH_COMMIT_MS ?? 20);
  const learn = process.env.BENCH_SWITCH_LEARN === '1';
  const sims: SwitchSim[] = [];
  for (let i = 0; i < count; i++) {
    const sim = await startSim({ vendor: 'nexus', username: 'bench', password: `bench-${i}`, commandDelayMs, vlans: '1-4093' });
    if (learn) {
      sim.vendor.portNames.forEach((port, p) => {
        sim.learn(port, benchMac(i, p), 1);
        sim.neighbor(port, { chassisId: benchMac(i, p), portId: 'eth0', systemName: `wn${i}-${p}` });
      });
    }
    sims.push(sim);
  }
  if (process.env.BENCH_SWITCH_FABRICS !== '0') {
    for (const vendor of FABRICS) sims.push(await startSim({ vendor, username: 'bench', password: `bench-${vendor}`, commandDelayMs, commitDelayMs }));
  }
  const switches = sims.map((s) => ({ vendor: s.opts.vendor, address: s.address, username: s.username, password: s.password, ports: [...s.ports.keys()] }));
  process.stdout.write(`${JSON.stringify({ switches })}\n`);
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line.trim() === 'logins') process.stdout.write(`${JSON.stringify(sims.map((s) => s.logins))}\n`);
  });
  // SIGTERM, or the parent gone (its end of stdin closed).
  const stop = () => void Promise.all(sims.map((s) => s.close())).then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.stdin.on('end', stop);
}

if (require.main === module) void main();
