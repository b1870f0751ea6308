/**
 * The two REST switch types as tests use them (Brocade VDX, Dell OS9): each with its simulator
 * (test/sim/rest-switch), registration fields, port names and a port name the type refuses.
 * Simulators started here are closed by the root after-hook.
 */
import { startRestSim, type AnyRestSim, type RestVendorName } from '../sim/rest-switch';
import type { RestSimOptions } from '../sim/rest-switch/server';
import { SWITCH_PASSWORDS } from './switch-sims';

const T = 'http://schema.massopencloud.org/haas/v0/switches/';

export interface RestCase {
  vendor: RestVendorName;
  type: string;
  /** the driver's name in metrics */
  driver: string;
  /** ports the simulator has, as the service registers them */
  ports: string[];
  /** a name of another format: port_register refuses it */
  badPort: string;
  interfaceType: string;
  /** the simulator serves HTTPS (its certificate given as ca_cert) */
  tls: boolean;
}

export const REST_CASES: RestCase[] = [
  { vendor: 'brocade', type: `${T}brocade`, driver: 'brocade', ports: ['101/0/1', '101/0/2', '101/0/3', '101/0/4'], badPort: 'te101/0/1', interfaceType: 'TenGigabitEthernet', tls: false },
  { vendor: 'dellnos9', type: `${T}dellnos9`, driver: 'dellnos9', ports: ['1/1', '1/2', '1/3', '1/4'], badPort: 'Te 1/3', interfaceType: 'TenGigabitEthernet', tls: true },
];

const open: AnyRestSim[] = [];

/** A started simulator with a password of its own (recorded in SWITCH_PASSWORDS). */
export async function restSimFor(c: RestCase, opts: Partial<RestSimOptions> = {}): Promise<AnyRestSim> {
  const password = opts.password ?? `sw-${c.vendor}-Pw${Math.random().toString(36).slice(2, 8)}`;
  SWITCH_PASSWORDS.add(password);
  const sim = await startRestSim(c.vendor, { username: 'hilt', tls: c.tls, interfaceType: c.interfaceType, ...opts, password });
  open.push(sim);
  return sim;
}

/** switch_register's body for the simulator (or with other fields). */
export function restRegistration(c: RestCase, sim: AnyRestSim, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: c.type, hostname: sim.url, username: sim.username, password: sim.password, interface_type: c.interfaceType,
    ...(sim.certPem ? { ca_cert: sim.certPem } : {}), ...over,
  };
}

// A minute on a loaded machine, not mocha's 20 s.
after(async function () {
  this.timeout(60_000);
  for (const s of open.splice(0)) await s.close().catch(() => undefined);
});
