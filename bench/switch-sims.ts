/**
 * The switches of bench/switch.ts, in a process of their own so that they do not share the
 * service's event loop: BENCH_SWITCHES simulated Nexus switches on 127.0.0.1, each answering
 * every command after BENCH_SWITCH_COMMAND_MS (a real switch's CLI takes milliseconds to tens
 * of milliseconds per command). Prints one JSON line, `{"switches": [{address, username,
 * password}]}`, then serves until SIGTERM.
 */
import { startSim, SwitchSim } from '../test/sim/switch/sim';

async function main(): Promise<void> {
  const count = Number(process.env.BENCH_SWITCHES ?? 8);
  const commandDelayMs = Number(process.env.BENCH_SWITCH_COMMAND_MS ?? 2);
  const sims: SwitchSim[] = [];
  for (let i = 0; i < count; i++) {
    sims.push(await startSim({ vendor: 'nexus', username: 'bench', password: `bench-${i}`, commandDelayMs, vlans: '1-4093' }));
  }
  process.stdout.write(`${JSON.stringify({ switches: sims.map((s) => ({ address: s.address, username: s.username, password: s.password })) })}\n`);
  process.on('SIGTERM', () => {
    void Promise.all(sims.map((s) => s.close())).then(() => process.exit(0));
  });
}

void main();
