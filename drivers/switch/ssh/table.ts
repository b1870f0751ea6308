/**
 * A vendor's switch driver as a table: the command templates of each operation, how to read a
 * port back, how to save, and the dialect of its CLI (cli.ts). The machinery that runs a table
 * over an SSH session is driver.ts; a vendor file (drivers/switch/<vendor>.ts) is the table and
 * its registry entry, nothing else.
 */
import type { CliDialect } from './cli';
import type { VlanList } from './vlans';
import { SwitchError, type LldpNeighbor } from '../types';
import { fixedWidthTable } from '../wiring';

/** A port as the switch reads it back. */
export interface PortReading {
  /** `trunk`; `access` (one untagged VLAN); anything else (routed, down, private VLAN…) */
  mode: 'trunk' | 'access' | 'other';
  /** the access VLAN (access mode) */
  access: number | null;
  /**
   * the trunk's untagged VLAN, or null when there is none: `none`, the dummy VLAN of a switch
   * that has one, or a tagged native VLAN (EOS `switchport trunk native vlan tag`)
   */
  native: number | null;
  /** the trunk's allowed list as printed (it holds the native VLAN when that one carries traffic) */
  allowed: VlanList;
  /**
   * What the port carries that the fields above cannot say, in the switch's terms (a member of
   * a link aggregation carries the bundle's VLANs, whatever its own settings): said as
   * PortVlans.other, so that it never reads as an empty port. The session changes no such port.
   */
  other?: string[];
}

/** What a table's templates may use beside the port and VLAN. */
export interface TableContext {
  /** the registration's `dummy_vlan`, on switches that have one */
  dummyVlan?: number;
  /** the port the lines are for (CLIs without an interface mode name it in every line) */
  port?: string;
  /** the port's reading the lines start from (a clean trunk; for the reset, the port as read) */
  reading?: PortReading;
  /** the switch's VLANs by id, with their names, on tables that read them (`vlans.show`) */
  vlans?: ReadonlyMap<number, string>;
}

/**
 * VLANs that must exist before a port carries them: the lines that create one, sent in
 * configuration mode before the port's lines, once per session and VLAN; never removed (a VLAN
 * the service made may be one an operator uses too).
 */
export interface VlanTable {
  /** the command that lists the switch's VLANs, read once per session; absent: `create` is sent whatever the switch has (it must then be harmless for a VLAN that exists) */
  show?: string;
  /** its output → the VLANs by id, with their names */
  parse?(output: string): Map<number, string>;
  /** the lines that create `vlan` */
  create(vlan: number, ctx: TableContext): string[];
  /** the name `create` gives a VLAN (default: its id) */
  name?(vlan: number): string;
}

/**
 * A candidate configuration (Junos, NVUE): the change lines are staged, and nothing changes
 * before the commit, which the service asks for once for several queued operations.
 */
export interface CommitTable {
  /** the command that applies the staged lines and leaves configuration mode (Junos `commit and-quit`), and what it prints on success */
  command: string;
  done: RegExp;
  /**
   * A refusal that may come after the switch wrote part of the change (NVUE's `Failure during
   * apply`, past its checks): not one that left its configuration as it was. Absent: every
   * refusal left it so (a Junos commit is all or nothing).
   */
  partial?: RegExp;
  /** the commands that throw every staged line away (and leave configuration mode), and the questions they ask */
  discard: string[];
  /**
   * A look at the candidate just before the commit, where others can add to it (NVUE's pending
   * revision is the user's, shared by every login as that user): the command, and its output →
   * what the candidate holds beyond the session's staged ports and the VLANs it made for them.
   * Anything there, or an output it cannot read, and the commit is not run (the candidate is
   * discarded): the session never applies what it did not stage.
   */
  check?: { command: string; foreign(output: string, staged: { ports: string[]; vlans: number[] }): string[] };
  answers?: Array<{ question: RegExp; keys: string }>;
}

export interface SwitchTable {
  /** The family in words, for messages: `Cisco Nexus (NX-OS)`. */
  readonly family: string;
  /**
   * A trunk's untagged VLAN carries nothing unless its allowed list has it too (NX-OS, DNOS6,
   * EOS, the PowerConnect): read back without it, it is no native VLAN (ssh/plan.ts portVlans).
   */
  readonly nativeNeedsAllowed?: boolean;
  readonly dialect: CliDialect;
  /** From the privileged prompt into configuration mode: `configure terminal`; absent: no such mode (a shell, whose commands change the switch one by one). */
  readonly configure?: string;
  /** A read as typed in configuration mode, on a CLI that stays there between changes (Junos: `run show …`). */
  fromConfig?(command: string): string;
  /** Into the port's configuration: `interface ethernet1/12`. */
  enterInterface(port: string): string[];
  /** Back to the privileged prompt from an interface: `end`. */
  readonly leave: readonly string[];
  /**
   * The port as a trunk that carries nothing: an explicit empty allowed list and no untagged
   * VLAN. Sent for port_revert, and before the first change of a port that is not such a trunk
   * yet (an access port, or a trunk with the implicit "all VLANs" list of a fresh port); its
   * `ctx.reading` is the port as read.
   */
  reset(ctx: TableContext): string[];
  /** Untag `vlan` on the trunk (and allow it); `old`, the native VLAN it replaces, leaves the allowed list. */
  setNative(vlan: number, old: number | null, ctx: TableContext): string[];
  /** No untagged VLAN any more; `old` leaves the allowed list. */
  removeNative(old: number, ctx: TableContext): string[];
  addTagged(vlan: number, ctx: TableContext): string[];
  removeTagged(vlan: number, ctx: TableContext): string[];
  /** Configuration commands run once per session before its first change (e.g. creating the dummy VLAN). */
  setup?(ctx: TableContext): string[];
  /** The command that shows one port's switchport settings. */
  show(port: string): string;
  /** Its output → the port's reading; throws (with what it could not read) on an output it does not understand. */
  parse(output: string, port: string, ctx: TableContext): PortReading;
  /** Saving the running configuration: the command, the questions it asks and their one-key answers, and what it prints on success; absent: the switch has no separate startup configuration. */
  readonly save?: { command: string; answers?: Array<{ question: RegExp; keys: string }>; done: RegExp };
  /** VLANs that must exist before a port carries them (see VlanTable). */
  readonly vlans?: VlanTable;
  /** A candidate configuration that takes effect at a commit (see CommitTable). */
  readonly commit?: CommitTable;
  /**
   * Link-aggregation membership, on families whose port reading does not show it (SONiC, NVUE: a
   * member is simply in no VLAN there): read before the port, a member reads as such
   * (PortReading.other) and is never changed.
   */
  readonly bundle?: BundleTable;
  /** The port's administrative state (ports shut while they carry nothing); absent: the family leaves ports as they are. */
  readonly adminState?: AdminStateTable;
  /** The switch's learned MACs and LLDP neighbours (wiring validation); absent: the family cannot tell. */
  readonly wiring?: WiringTable;
}

/** How a family tells that a port is a member of a link aggregation (see SwitchTable.bundle). */
export interface BundleTable {
  /** The command that shows it: `show interfaces status Ethernet0`. */
  show(port: string): string;
  /** Its output → the bundle the port is a member of, or null; throws (saying what it could not read) on an output it does not understand. */
  parse(output: string, port: string): string | null;
}

/** How a family shows and sets a port's administrative state. */
export interface AdminStateTable {
  /** The command that shows it: `show interface Ethernet1/3`. */
  show(port: string): string;
  /** Its output → is the port administratively up? Throws (saying what it could not read) on an output it does not understand. */
  parse(output: string, port: string): boolean;
  /** Interface configuration lines that bring the port up (`no shutdown`) or down (`shutdown`); `port` for CLIs that name it in every line. */
  set(enabled: boolean, port?: string): string[];
}

/**
 * How a family shows what it learned on its ports, each in one command for the whole switch
 * (drivers/switch/wiring.ts has the parsers families share).
 */
export interface WiringTable {
  /** Every learned MAC address: `show mac address-table`. */
  readonly macTable: string;
  /** Its output → MACs by port as printed; default: macRows (a row's MAC, then the first token portKey knows). */
  parseMacs?(output: string): Map<string, string[]>;
  /** Every port's LLDP neighbours: `show lldp neighbors detail`. */
  readonly lldp: string;
  /** Its output → each neighbour with its port as printed. */
  parseLldp(output: string): Array<{ port: string; neighbor: LldpNeighbor }>;
  /**
   * One spelling of a physical port for every way the family prints or takes it (`Eth1/3`,
   * `Ethernet1/3`, `ethernet 1/3` → `ethernet1/3`); null for what is not a port of the switch
   * (its CPU, a VLAN interface, a router MAC's `sup-eth1(R)`).
   */
  portKey(name: string): string | null;
}

/**
 * A log message a terminal with `terminal monitor` on prints between two lines of a command's
 * output: `%FACILITY-5-MNEMONIC:` (NX-OS, EOS), `%LINK-I-Up:` (PowerConnect), `<189> … %% …` (DNOS6).
 */
const LOG_LINE = /%[A-Z][A-Z0-9_]*-(?:[0-7]|[A-Z])-[A-Za-z0-9_]+:|^\s*<\d+>|%% /;

/**
 * `Key: value` lines of a `show … switchport` output. A line that holds no `Key:` and starts
 * with white space, or holds nothing but a VLAN list's digits, commas and hyphens (a list
 * wrapped flush at column 0, or with the comma leading the next line), continues the value
 * before it: long VLAN lists wrap, and a continuation dropped is a VLAN on the port that is
 * never read. Log messages are skipped, wherever they fall. Keys are matched without case and
 * without inner double spaces; the first of a repeated key counts.
 */
export function keyValues(output: string): Map<string, string> {
  const out = new Map<string, string>();
  let last: string | undefined;
  /** the key's first occurrence is the one being read (a repeat's continuation joins nothing) */
  let first = false;
  for (const line of output.split('\n')) {
    if (!line.trim()) {
      last = undefined;
      continue;
    }
    if (LOG_LINE.test(line)) continue;
    const m = /^\s*([A-Za-z][^:]*?)\s*:\s?(.*)$/.exec(line);
    if (m) {
      last = m[1]!.replace(/\s+/g, ' ').toLowerCase();
      first = !out.has(last);
      if (first) out.set(last, m[2]!.trim());
    } else if (last && (/^\s/.test(line) || /^[\d,-][\d,\s-]*$/.test(line))) {
      if (!first) continue;
      const prev = out.get(last)!;
      const next = line.trim();
      // Broken at a separator, the pieces join as they are; between two items, with a comma.
      out.set(last, /[,-]$/.test(prev) || /^[,-]/.test(next) || !prev ? `${prev}${next}` : `${prev},${next}`);
    }
  }
  return out;
}

/**
 * The output names the port asked about (by `key`, the family's one spelling of a port): another
 * port's settings, or output that is not this command's (a session out of step with its
 * prompts), must never pass for this port's.
 */
export function samePort(shown: string, port: string, key: (name: string) => string | null): void {
  const k = key(port);
  if (!k || key(shown) !== k) throw new SwitchError(`the output is for port "${shown}", not ${port}`);
}

/** The leading VLAN id of a value such as `1012 (VLAN1012)`, `1 (default)`; null for `none`, empty or words. */
export function leadingVlan(value: string | undefined): number | null {
  const m = /^\s*(\d+)/.exec(value ?? '');
  return m ? Number(m[1]) : null;
}

/** Dell's port names, as typed or printed (`gi1/0/3`, `Gi1/0/3`, `GigabitEthernet1/0/3`, `te1/3`) → `gi1/0/3`; anything else (`Vl1`, `Po1`, `0`) is no port. */
export function dellPort(name: string): string | null {
  const m = /^(gi(?:gabitethernet)?|te(?:ngigabitethernet)?)\s*(\d+\/\d+(?:\/\d+)?)$/i.exec(name.trim());
  return m ? `${m[1]!.slice(0, 2).toLowerCase()}${m[2]}` : null;
}

/**
 * Both Dell CLIs (PowerConnect 55xx, DNOS6): `show interfaces configuration <port>` prints a
 * table whose `Admin State` column (a two-line header) is `Up` or `Down`.
 */
export const dellAdminState: AdminStateTable = {
  show: (port) => `show interfaces configuration ${port}`,
  parse(output, port) {
    const { headers, rows } = fixedWidthTable(output);
    const col = headers.findIndex((h) => /admin/i.test(h));
    const row = rows.find((r) => dellPort(r[0] ?? '') === dellPort(port));
    if (col < 0 || !row) throw new SwitchError(col < 0 ? 'no "Admin State" column' : `no row for ${port}`);
    const v = row[col] ?? '';
    if (!/^(up|down)$/i.test(v)) throw new SwitchError(`Admin State "${v}" is neither Up nor Down`);
    return /^up$/i.test(v);
  },
  set: (enabled) => [enabled ? 'no shutdown' : 'shutdown'],
};
