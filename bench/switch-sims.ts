/**
 * The switches of bench/switch.ts, in a process of their own so that they do not share the
 * service's event loop: BENCH_SWITCHES simulated Nexus switches, and one of each data-centre
 * family (Dell OS10, SONiC, Junos, Cumulus NVUE), on 127.0.0.1, each answering every command
 * after BENCH_SWITCH_COMMAND_MS (a real switch's CLI takes milliseconds to tens of
 * milliseconds per command) and taking BENCH_COMMIT_MS more for a commit/apply. Prints one JSON
 * line, `{"switches": [{vendor, address, username, password, ports}]}`, then serves until SIGTERM.
 */
import { startSim, SwitchSim } from '../test/sim/switch/sim';
import type { VendorName } from '../test/sim/switch/vendors';

const FABRICS: VendorName[] = ['dellos10', 'sonic', 'junos', 'cumulus_nvue'];

async function main(): Promise<void> {
  const count = Number(process.env.BENCH_SWITCHES ?? 8);
  const commandDelayMs = Number(process.env.BENCH_SWITCH_COMMAND_MS ?? 2);
  const commitDelayMs = Number(process.env.BENCH_COMMIT_MS ?? 20);
  const sims: SwitchSim[] = [];
  for (let i = 0; i < count; i++) {
    sims.push(await startSim({ vendor: 'nexus', username: 'bench', password: `bench-${i}`, commandDelayMs, vlans: '1-4093' }));
  }
  for (const vendor of FABRICS) sims.push(await startSim({ vendor, username: 'bench', password: `bench-${vendor}`, commandDelayMs, commitDelayMs }));
  const switches = sims.map((s) => ({ vendor: s.opts.vendor, address: s.address, username: s.username, password: s.password, ports: [...s.ports.keys()].slice(0, 16) }));
  process.stdout.write(`${JSON.stringify({ switches })}\n`);
  process.on('SIGTERM', () => {
    void Promise.all(sims.map((s) => s.close())).then(() => process.exit(0));
  });
}

void main();
