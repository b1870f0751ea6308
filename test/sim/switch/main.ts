/**
 * A simulated switch for demos: `npm run sim:switch -- --vendor nexus --port 2201
 * [--user admin] [--password admin] [--delay-ms 0]`. It listens on 127.0.0.1 only, prints its
 * address and host key fingerprint, and runs until interrupted.
 *
 * The REST switches: `--vendor brocade|dellnos9 [--tls] [--interface-type TenGigabitEthernet]`
 * (plus --port, --user, --password, --delay-ms) print the URL to register as `hostname` (and,
 * with --tls, the certificate to give as `ca_cert`).
 */
import { startSim } from './sim';
import type { VendorName } from './vendors';
import { REST_VENDORS, RestVendorName, startRestSim } from '../rest-switch';

const VENDOR_NAMES: VendorName[] = ['nexus', 'powerconnect55xx', 'delln3000', 'arista_eos', 'dellos10', 'sonic', 'junos', 'cumulus_nvue'];

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

async function main(): Promise<void> {
  const vendor = arg('vendor', 'nexus') as VendorName;
  if ((REST_VENDORS as string[]).includes(vendor)) return restMain(vendor as unknown as RestVendorName);
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

/** A REST switch simulator (test/sim/rest-switch) for a demo. */
async function restMain(vendor: RestVendorName): Promise<void> {
  const sim = await startRestSim(vendor, {
    port: Number(arg('port', '0')),
    username: arg('user', 'admin')!,
    password: arg('password', 'admin')!,
    tls: process.argv.includes('--tls'),
    latencyMs: Number(arg('delay-ms', '0')),
    interfaceType: arg('interface-type'),
  });
  const ports = [...sim.ports.keys()];
  process.stdout.write(`${vendor} REST simulator on ${sim.url} (user ${sim.username}), interface type ${sim.vendor.interfaceType}, ports ${ports[0]} … ${ports[ports.length - 1]}\n`);
  if (sim.certPem) process.stdout.write(`its certificate (ca_cert):\n${sim.certPem}`);
  const stop = () => void sim.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
