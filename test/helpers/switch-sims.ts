/**
 * The four SSH switch types as tests use them: each with its simulator, registration fields,
 * port names, and a port name the type refuses. Simulators started here are closed by the
 * root after-hook.
 */
import { startSim, SimOptions, SwitchSim } from '../sim/switch/sim';
import { CallOpts, Client, Res } from './server';
import type { VendorName } from '../sim/switch/vendors';

const T = 'http://schema.massopencloud.org/haas/v0/switches/';

export interface VendorCase {
  vendor: VendorName;
  type: string;
  /** ports the simulator has, as the service registers them */
  ports: string[];
  /** a name of another vendor's format: port_register refuses it */
  badPort: string;
  /** registration fields beside hostname, username and password */
  extra: Record<string, unknown>;
}

export const VENDOR_CASES: VendorCase[] = [
  { vendor: 'nexus', type: `${T}nexus`, ports: ['Ethernet1/1', 'Ethernet1/2', 'Ethernet1/3', 'Ethernet1/4'], badPort: 'gi1/0/1', extra: { dummy_vlan: '3999' } },
  { vendor: 'powerconnect55xx', type: `${T}powerconnect55xx`, ports: ['gi1/0/1', 'gi1/0/2', 'gi1/0/3', 'te1/0/1'], badPort: 'Ethernet1/1', extra: {} },
  { vendor: 'delln3000', type: `${T}delln3000`, ports: ['gi1/0/1', 'gi1/0/2', 'gi1/0/3', 'te1/0/1'], badPort: 'ethernet 1/0/1', extra: { dummy_vlan: 3999 } },
  { vendor: 'arista_eos', type: `${T}arista_eos`, ports: ['Ethernet1', 'Ethernet2', 'Ethernet3', 'Ethernet4'], badPort: 'Et1', extra: {} },
];

/**
 * The data-centre families (issue 25), each with its simulator: `saves` is the command that
 * saves (none where a commit is persistent), `commits` whether changes wait for a commit/apply,
 * `fresh` what a factory port carries.
 */
export interface FabricCase extends VendorCase {
  save: string | null;
  commits: boolean;
  fresh: { native: number | null; tagged: number[] };
}

export const FABRIC_CASES: FabricCase[] = [
  { vendor: 'dellos10', type: `${T}dellos10`, ports: ['ethernet1/1/1', 'ethernet1/1/2', 'ethernet1/1/3', 'ethernet1/1/49:1'], badPort: 'Ethernet1/1', extra: {}, save: 'write memory', commits: false, fresh: { native: 1, tagged: [] } },
  { vendor: 'sonic', type: `${T}sonic`, ports: ['Ethernet0', 'Ethernet4', 'Ethernet8', 'Ethernet12'], badPort: 'etp1', extra: {}, save: 'sudo config save -y', commits: false, fresh: { native: null, tagged: [] } },
  { vendor: 'junos', type: `${T}junos`, ports: ['ge-0/0/1', 'ge-0/0/2', 'xe-0/1/0', 'et-0/2/0'], badPort: 'ge-0/0/1.0', extra: {}, save: null, commits: true, fresh: { native: 1, tagged: [] } },
  { vendor: 'cumulus_nvue', type: `${T}cumulus_nvue`, ports: ['swp1', 'swp2', 'swp3', 'swp49s0'], badPort: 'eth0', extra: {}, save: 'nv config save', commits: true, fresh: { native: 1, tagged: [] } },
];

/** Every SSH family with its simulator: HIL's and EOS, then the data-centre ones. */
export const SSH_CASES: VendorCase[] = [...VENDOR_CASES, ...FABRIC_CASES];

/** Every switch password used by these tests: none may ever appear in an answer or a log line. */
export const SWITCH_PASSWORDS = new Set<string>();

const open: SwitchSim[] = [];

/** A started simulator with a password of its own (recorded in SWITCH_PASSWORDS). */
export async function simFor(c: VendorCase, opts: Partial<SimOptions> = {}): Promise<SwitchSim> {
  const password = opts.password ?? `sw-${c.vendor}-Pw${Math.random().toString(36).slice(2, 8)}`;
  SWITCH_PASSWORDS.add(password);
  const sim = await startSim({ vendor: c.vendor, username: 'hilt', ...opts, password });
  open.push(sim);
  return sim;
}

/** switch_register's body for the simulator (or another password, or another address). */
export function registration(c: VendorCase, sim: SwitchSim, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: c.type, hostname: sim.address, username: sim.username, password: sim.password, ...c.extra, ...over };
}

/** A client that keeps the text of every answer, for the password scan. */
export class RecordingClient extends Client {
  constructor(url: string, readonly texts: string[]) {
    super(url);
  }

  override async call(method: string, path: string, opts: CallOpts = {}): Promise<Res> {
    const r = await super.call(method, path, opts);
    this.texts.push(r.text);
    return r;
  }
}

after(async function () {
  this.timeout(60_000);
  for (const s of open) await s.close().catch(() => undefined);
});
