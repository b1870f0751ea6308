/**
 * A simulated switch for demos: `npm run sim:switch -- --vendor nexus --port 2201
 * [--user admin] [--password admin] [--delay-ms 0]`. It listens on 127.0.0.1 only, prints its
 * address and host key fingerprint, and runs until interrupted.
 */
import { startSim } from './sim';
import type { VendorName } from './vendors';

const VENDOR_NAMES: VendorName[] = ['nexus', 'powerconnect55xx', 'delln3000', 'arista_eos', 'dellos10', 'sonic', 'junos', 'cumulus_nvue'];

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

async function main(): Promise<void> {
  const vendor = arg('vendor', 'nexus') as VendorName;
  if (!VENDOR_NAMES.includes(vendor)) throw new Error(`--vendor must be one of ${VENDOR_NAMES.join(', ')}`);
  const sim = await startSim({
    vendor,
    port: Number(arg('port', '0')),
    username: arg('user', 'admin'),
    password: arg('password', 'admin'),
    commandDelayMs: Number(arg('delay-ms', '0')),
  });
  process.stdout.write(`${sim.vendor.name} simulator on ${sim.address} (user ${sim.username}), host key ${sim.hostKey}\n`);
  const stop = () => void sim.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
