/**
 * The REST switches of bench/switch-rest.ts, in a process of their own so that they do not share
 * the service's event loop: one simulated Brocade VDX and one Dell OS9 (test/sim/rest-switch) on
 * 127.0.0.1 over HTTPS, each answering every request after BENCH_REST_MS (a switch's REST service
 * takes milliseconds to tens of milliseconds per request; OS9's CLI over REST more). Prints one JSON
 * line, `{"switches": [{vendor, url, username, password, certPem, ports}]}`, then serves until SIGTERM.
 */
import { REST_VENDORS, startRestSim, AnyRestSim } from '../test/sim/rest-switch';

async function main(): Promise<void> {
  const latencyMs = Number(process.env.BENCH_REST_MS ?? 5);
  const sims: AnyRestSim[] = [];
  for (const vendor of REST_VENDORS) sims.push(await startRestSim(vendor, { username: 'bench', password: `bench-${vendor}`, tls: true, latencyMs }));
  const switches = sims.map((s) => ({ vendor: s.vendor.name, url: s.url, username: s.username, password: s.password, certPem: s.certPem, ports: [...s.ports.keys()].slice(0, 16) }));
  process.stdout.write(`${JSON.stringify({ switches })}\n`);
  process.on('SIGTERM', () => {
    void Promise.all(sims.map((s) => s.close())).then(() => process.exit(0));
  });
}

void main();
