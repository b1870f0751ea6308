/**
 * Open vSwitch driver: HIL's type `…/switches/ovs`, one field `ovs_bridge`. Each registered
 * port is a Port row of that bridge; the OVSDB to talk to is the service's `HILT_OVS_DB` (a
 * socket path or `unix:PATH`; unset: ovs-vsctl's default socket). Every call is one `ovs-vsctl`
 * run with an argument list (never a shell) and `--timeout`, which bounds its own wait on the
 * database and on ovs-vswitchd. A session holds no connection (each run connects by itself);
 * opening one checks that the database answers and the bridge exists, and closing it kills a
 * run still going (the service closes a session at a call's deadline). No queue, no timer of
 * its own: the service's device queue runs one call per switch at a time and bounds each.
 *
 * How a port's VLANs map onto OVSDB's `tag`, `trunks`, `vlan_mode` and `protected` (every change
 * writes all four, so a port never keeps a combination the service did not choose):
 *
 * | service holds           | vlan_mode         | tag | trunks   | protected |
 * |-------------------------|-------------------|-----|----------|-----------|
 * | nothing                 | `trunk`           | —   | `[4095]` | true      |
 * | native N                | `access`          | N   | —        | false     |
 * | tagged T…               | `trunk`           | —   | T…       | false     |
 * | native N and tagged T…  | `native-untagged` | N   | T…       | false     |
 *
 * OVS's `trunks` means "every VLAN" when empty, in each mode but `access` (HIL's driver left
 * ports with only a native VLAN, and reset ports, on every VLAN). A port with no VLAN therefore
 * trunks the dead VLAN 4095 only (802.1Q reserves it): untagged frames are dropped (they would
 * be VLAN 0, not trunked). But ovs-vswitchd switches frames tagged 4095 like any VLAN's, so
 * every port with no VLAN would share it with every other one, across projects: such ports are
 * `protected`, and OVS forwards nothing between two protected ports. 0 and 4095 are not
 * usable VLANs here, nor is 4096. Reading back (`get Port <p> tag trunks vlan_mode protected`)
 * reverses the table (`protected` only matters beside VLAN 4095); what it cannot say (a trunk of
 * every VLAN, `native-tagged`, `dot1q-tunnel`, an access port without a tag, VLAN 4095 on a port
 * that is not protected or carries other VLANs too) is reported in `other`, so the drift audit
 * flags it. Each change
 * reads the port first and writes the whole result: applied twice, it changes nothing. Then it
 * reads the port again, in a run of its own (so from the database, not from its own
 * transaction): a port that does not carry what was written (another writer came between) fails
 * the call, and the service sets the port back, as after the SSH drivers' read-back.
 *
 * No `setEnabled` (HILT_INACTIVE_PORTS, docs/switch-ports.md): OVSDB has no administrative state
 * of a port to set without OpenFlow, and a port with no VLAN already trunks only the dead VLAN, so
 * this driver leaves a port's state as it is and the drift audit compares its VLANs only.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { SCHEMA_BASE } from '../schema';
import type { PortVlans, SwitchDriver, SwitchDriverEntry, SwitchInfo, SwitchSession } from './types';
import { SwitchError } from './types';
import { formatVlanList } from './vlans';

/** The VLAN that a port with no VLAN trunks (protected: no frame passes between two such ports). */
export const DEAD_VLAN = 4095;

/**
 * OVS port and bridge names: what a Linux network device may be called (1 to 15 characters,
 * IFNAMSIZ), limited to letters, digits, `_`, `.` and `-`, and not starting with `-` or `.`
 * (ovs-vsctl would read a leading `-` as an option). vswitchd makes a device of that name for
 * internal and tap ports, and a system port is one.
 */
export const OVS_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$/;

export interface OvsSwitchOptions {
  /** HILT_OVS_DB: the ovsdb-server socket, as a path or `unix:PATH`; unset: ovs-vsctl's default */
  db?: string;
  /** bound on each call (HILT_SWITCH_TIMEOUT_MS): ovs-vsctl's `--timeout` is half of it */
  timeoutMs: number;
  vsctlPath?: string;
}

/** `--db` value of a HILT_OVS_DB setting: a path (relative to the working folder) or `unix:PATH`. */
export function ovsdbRemote(setting: string | undefined): string | undefined {
  if (!setting) return undefined;
  const file = setting.startsWith('unix:') ? setting.slice('unix:'.length) : setting;
  if (!file) throw new Error(`HILT_OVS_DB "${setting}" names no socket`);
  return `unix:${path.resolve(file)}`;
}

/** The columns as ovs-vsctl prints them: `100` or `[]`; `[200, 300]` or `[]`; `trunk` or `[]`; `true` or `false`. */
export interface OvsColumns { tag: number | null; trunks: number[]; vlanMode: string | null; protected: boolean }

function parseSet(text: string): string[] {
  const t = text.trim();
  const inner = t.startsWith('[') && t.endsWith(']') ? t.slice(1, -1) : t;
  return inner.split(',').map((x) => x.trim().replace(/^"(.*)"$/, '$1')).filter(Boolean);
}

export function parseColumns(tag: string, trunks: string, vlanMode: string, protectedPort: string): OvsColumns {
  const ints = (xs: string[], what: string) => xs.map((x) => {
    if (!/^\d+$/.test(x)) throw new SwitchError(`unexpected ${what} "${x}" in OVSDB`);
    return Number(x);
  });
  const [t] = ints(parseSet(tag), 'tag');
  if (protectedPort !== 'true' && protectedPort !== 'false') throw new SwitchError(`unexpected protected "${protectedPort}" in OVSDB`);
  return {
    tag: t ?? null,
    trunks: ints(parseSet(trunks), 'trunk').sort((a, b) => a - b),
    vlanMode: parseSet(vlanMode)[0] ?? null,
    protected: protectedPort === 'true',
  };
}

/** What the port carries, in the service's terms (the table in the header, read backwards). */
export function toPortVlans(c: OvsColumns): PortVlans {
  const other: string[] = [];
  // OVS's default mode: access with a tag, else trunk.
  const mode = c.vlanMode ?? (c.tag !== null ? 'access' : 'trunk');
  const trunked = c.trunks.filter((v) => v !== DEAD_VLAN);
  let native: number | null = null;
  let tagged: number[] = [];
  switch (mode) {
    case 'access':
      if (c.tag === null) other.push('untagged frames on VLAN 0 (vlan_mode access without a tag)');
      native = c.tag;
      break;
    case 'native-untagged':
    case 'native-tagged':
      if (mode === 'native-tagged') other.push(`native VLAN ${c.tag ?? 0} sent tagged (vlan_mode native-tagged)`);
      native = c.tag;
      if (!c.trunks.length) other.push('trunks every VLAN (trunks empty)');
      tagged = trunked.filter((v) => v !== native);
      break;
    case 'trunk':
      if (c.tag !== null) other.push(`tag ${c.tag} ignored by OVS (vlan_mode trunk)`);
      if (!c.trunks.length) other.push('trunks every VLAN (trunks empty)');
      tagged = trunked;
      break;
    default:
      other.push(`vlan_mode ${mode}`);
      native = c.tag;
      tagged = trunked;
  }
  if (mode !== 'access' && c.trunks.includes(DEAD_VLAN)) {
    if (mode !== 'trunk' || c.trunks.length > 1) other.push(`trunks the dead VLAN ${DEAD_VLAN} beside other VLANs`);
    else if (!c.protected) other.push(`shares the dead VLAN ${DEAD_VLAN} with every other port that carries no VLAN (protected false)`);
  }
  if (native === 0) {
    other.push('untagged frames on VLAN 0 (tag 0)');
    native = null;
  }
  if (tagged.includes(0)) {
    other.push('untagged frames on VLAN 0 (trunks 0)');
    tagged = tagged.filter((v) => v !== 0);
  }
  return other.length ? { native, tagged, other } : { native, tagged };
}

/** `set Port` arguments that give the port exactly `v` (the table in the header). */
export function columnsFor(v: { native: number | null; tagged: number[] }): string[] {
  for (const vlan of [...(v.native === null ? [] : [v.native]), ...v.tagged]) checkVlan(vlan);
  const tagged = [...new Set(v.tagged)].filter((t) => t !== v.native).sort((a, b) => a - b);
  if (v.native === null && !tagged.length) return ['tag=[]', `trunks=[${DEAD_VLAN}]`, 'vlan_mode=trunk', 'protected=true'];
  if (v.native === null) return ['tag=[]', `trunks=[${tagged.join(',')}]`, 'vlan_mode=trunk', 'protected=false'];
  if (!tagged.length) return [`tag=${v.native}`, 'trunks=[]', 'vlan_mode=access', 'protected=false'];
  return [`tag=${v.native}`, `trunks=[${tagged.join(',')}]`, 'vlan_mode=native-untagged', 'protected=false'];
}

function checkVlan(vlan: number): void {
  if (!Number.isInteger(vlan) || vlan < 1 || vlan >= DEAD_VLAN) {
    throw new SwitchError(`VLAN ${vlan} cannot be used on Open vSwitch (VLANs are 1 to 4094; ${DEAD_VLAN} marks a port with no VLAN)`);
  }
}

/** Does a port read as `actual` carry exactly `wanted` (its tagged VLANs beside the native one), and nothing else? */
function carries(actual: PortVlans, wanted: PortVlans): boolean {
  const tagged = new Set(wanted.tagged.filter((t) => t !== wanted.native));
  return !actual.other?.length && actual.native === wanted.native
    && actual.tagged.length === tagged.size && actual.tagged.every((t) => tagged.has(t));
}

/** `native 100, tagged 200,300` (and what else the port has). */
function described(v: PortVlans): string {
  const other = v.other?.length ? `, ${v.other.join(', ')}` : '';
  return `native ${v.native ?? 'none'}, tagged ${formatVlanList(v.tagged.filter((t) => t !== v.native))}${other}`;
}

export class OvsSwitchDriver implements SwitchDriver {
  private readonly db: string | undefined;
  private readonly vsctl: string;
  /** ovs-vsctl --timeout, in seconds */
  private readonly waitS: number;

  constructor(opts: OvsSwitchOptions) {
    this.db = ovsdbRemote(opts.db);
    this.vsctl = opts.vsctlPath ?? 'ovs-vsctl';
    this.waitS = Math.max(1, Math.floor(opts.timeoutMs / 2000));
  }

  /**
   * One ovs-vsctl run of `cmds` (one OVSDB transaction), killed when `signal` aborts; its
   * output lines. A run whose wait ran out ends with SIGALRM, reported as such.
   */
  run(cmds: string[][], signal: AbortSignal): Promise<string[]> {
    const args = [...(this.db ? [`--db=${this.db}`] : []), `--timeout=${this.waitS}`, ...cmds.flatMap((c) => ['--', ...c])];
    const shown = cmds.map((c) => c.join(' ')).join(' -- ');
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(new SwitchError(`ovs-vsctl ${shown}: not run (the call was ended)`));
      execFile(this.vsctl, args, { signal, killSignal: 'SIGKILL', encoding: 'utf8', maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
        if (!err) return resolve(stdout.split('\n').slice(0, -1));
        const e = err as NodeJS.ErrnoException & { code?: unknown; signal?: string | null };
        const why = signal.aborted ? 'ended (the call ran out of time or its session was closed)'
          : e.code === 'ENOENT' ? `${this.vsctl} not found (is Open vSwitch installed?)`
            : e.signal === 'SIGALRM' ? `gave up after ${this.waitS} s (--timeout) waiting for the database${this.db ? ` at ${this.db}` : ''} or for ovs-vswitchd`
              : (stderr || '').trim().replace(/^ovs-vsctl: /, '') || e.message;
        const failure = new SwitchError(`ovs-vsctl ${shown}: ${why}`) as SwitchError & { exitCode?: unknown };
        failure.exitCode = e.code;
        reject(failure);
      });
    });
  }

  async open(sw: SwitchInfo, signal: AbortSignal): Promise<SwitchSession> {
    const bridge = String(sw.fields.ovs_bridge);
    try {
      await this.run([['br-exists', bridge]], signal);
    } catch (err) {
      // br-exists answers 2 for a bridge that does not exist.
      if ((err as { exitCode?: unknown }).exitCode === 2) throw new SwitchError(`Open vSwitch bridge ${bridge} does not exist`);
      throw err;
    }
    return new OvsSession(this, bridge);
  }
}

class OvsSession implements SwitchSession {
  /** Aborted by close(): kills a run still going. */
  private readonly ended = new AbortController();
  /** `set Port` runs started (the contract's changesSent) */
  changesSent = 0;

  constructor(private readonly driver: OvsSwitchDriver, private readonly bridge: string) {}

  private run(cmds: string[][]): Promise<string[]> {
    return this.driver.run(cmds, this.ended.signal);
  }

  /** `err`, or what it means when ovs-vsctl's `port-to-br` found no port of that name. */
  private missing(port: string, err: unknown): unknown {
    return /no port named/.test((err as Error).message) ? new SwitchError(`port ${port} is not on Open vSwitch bridge ${this.bridge} (it does not exist)`) : err;
  }

  /** The port's columns, after checking that it is a port of this switch's bridge. */
  private async read(port: string): Promise<OvsColumns> {
    // The bridge's own internal port (the host's interface on it): no node's, never a tenant's VLAN.
    if (port === this.bridge) throw new SwitchError(`port ${port} is Open vSwitch bridge ${this.bridge}'s own interface (the host's), not a node's port: nothing is read or set on it`);
    let lines: string[];
    try {
      lines = await this.run([['port-to-br', port], ['get', 'Port', port, 'tag', 'trunks', 'vlan_mode', 'protected']]);
    } catch (err) {
      throw this.missing(port, err);
    }
    if (lines.length !== 5) throw new SwitchError(`unexpected answer from ovs-vsctl about port ${port}: ${JSON.stringify(lines)}`);
    if (lines[0] !== this.bridge) throw new SwitchError(`port ${port} is on Open vSwitch bridge ${lines[0]}, not on this switch's bridge ${this.bridge}`);
    return parseColumns(lines[1], lines[2], lines[3], lines[4]);
  }

  /**
   * Read the port, apply `f` to what it carries, write the whole result (nothing when it is
   * already so) and read it back; `what` names the change in a mismatch's words.
   */
  private async change(port: string, what: string, f: (v: PortVlans) => PortVlans): Promise<void> {
    const now = toPortVlans(await this.read(port));
    const next = f(now);
    if (carries(now, next)) return;
    await this.set(port, what, next);
  }

  /** Write `v` on the port, then read it back. */
  private async set(port: string, what: string, v: PortVlans): Promise<void> {
    const columns = columnsFor(v);
    this.changesSent++;
    // `port-to-br` in the same transaction: a Port record that names no port is read by
    // ovs-vsctl as a UUID prefix, so a port deleted since the read would have the set change
    // another port, whose UUID starts with its name (`1001`, `beef`).
    try {
      await this.run([['port-to-br', port], ['set', 'Port', port, ...columns]]);
    } catch (err) {
      throw this.missing(port, err);
    }
    const after = toPortVlans(await this.read(port));
    if (!carries(after, v)) {
      throw new SwitchError(`port ${port} does not read back as asked after "${what}": expected ${described(v)}, OVSDB has ${described(after)}`);
    }
  }

  setNative(port: string, vlan: number): Promise<void> {
    checkVlan(vlan);
    return this.change(port, `set the native VLAN to ${vlan}`, (v) => ({ native: vlan, tagged: v.tagged }));
  }

  removeNative(port: string): Promise<void> {
    return this.change(port, 'remove the native VLAN', (v) => ({ native: null, tagged: v.tagged }));
  }

  addTagged(port: string, vlan: number): Promise<void> {
    checkVlan(vlan);
    return this.change(port, `add tagged VLAN ${vlan}`, (v) => ({ native: v.native, tagged: [...v.tagged, vlan] }));
  }

  removeTagged(port: string, vlan: number): Promise<void> {
    return this.change(port, `remove tagged VLAN ${vlan}`, (v) => ({ native: v.native, tagged: v.tagged.filter((t) => t !== vlan) }));
  }

  async resetPort(port: string): Promise<void> {
    await this.read(port);
    await this.set(port, 'reset the port', { native: null, tagged: [] });
  }

  async getPortVlans(port: string): Promise<PortVlans> {
    return toPortVlans(await this.read(port));
  }

  async close(): Promise<void> {
    this.ended.abort();
  }
}

export const ovs: SwitchDriverEntry<OvsSwitchDriver> = {
  type: `${SCHEMA_BASE}/v0/switches/ovs`,
  extension: 'hilt.switches.ovs',
  fields: {
    type: 'object',
    additionalProperties: false,
    required: ['ovs_bridge'],
    properties: { ovs_bridge: { type: 'string' } },
  },
  check: (fields) => (OVS_NAME.test(String(fields.ovs_bridge))
    ? null
    : `ovs_bridge "${String(fields.ovs_bridge)}" is not an Open vSwitch bridge name (1 to 15 of A-Z a-z 0-9 _ . -, not starting with - or .)`),
  portName: OVS_NAME,
  create: ({ settings: config }) => new OvsSwitchDriver({ db: config.ovsDb, timeoutMs: config.switchTimeoutMs }),
};
