/**
 * Juniper Junos on EX/QFX switches with ELS, `…/switches/junos` (a family HIL never had): SSH
 * password login to `user@host>`, `set cli screen-length 0`.
 *
 * Junos changes a candidate configuration: the session enters `configure private` (a candidate
 * of its own, discarded when the session ends; plain `configure` would share one that survives
 * it) and stays there while it stages the changes of queued operations; `commit and-quit` applies
 * them together, after which each port is read back from the committed configuration (`show
 * configuration | display set | match "<port>|interface-range"`). A refused commit is the operations' error:
 * the candidate is thrown away (`rollback 0`, `exit`) and nothing is left uncommitted.
 *
 * A port is a trunk (`interface-mode trunk`) whose `vlan members` are the VLANs it carries, the
 * untagged one also named by `native-vlan-id` (on ELS it must be a member too). VLANs are named:
 * the session reads the switch's VLANs once, uses a VLAN's own name where the switch has one
 * for its id, and otherwise creates `hilt-<id>` (`set vlans hilt-<id> vlan-id <id>`); none is
 * ever deleted. A factory port (family ethernet-switching, no mode: an access port of VLAN
 * `default`) is made an empty trunk before its first change. Junos has no separate startup
 * configuration: a commit is persistent.
 *
 * On ELS a port also joins a VLAN from the VLAN's side (`set vlans NAME interface ge-0/0/1.0`),
 * which its own configuration does not show: the port is read from the lines of the whole
 * configuration that name it, and such a membership counts among what it carries; it is taken
 * off by deleting that statement (`delete vlans NAME interface ge-0/0/1.0`).
 */
import { sshSwitchEntry } from './ssh/driver';
import type { PortReading, SwitchTable, TableContext } from './ssh/table';
import { parseVlanList } from './ssh/vlans';
import { SwitchError } from './types';
import { headerColumns, macRows, neighbor, normalizeMac } from './wiring';

/** A row of `show ethernet-switching table` whose flags (after the MAC, comma-separated) say `S`: a static MAC, configured by hand. */
const staticRow = (line: string) => {
  const tokens = line.trim().split(/\s+/);
  const at = tokens.findIndex((t) => normalizeMac(t) !== null);
  return at >= 0 && (tokens[at + 1] ?? '').split(',').includes('S');
};

/** One spelling of a Junos port, unit or not (`ge-0/0/1.0` → `ge-0/0/1`); null for anything else (`irb.1001`, `ae0`, `vme.0`). */
export const junosPort = (name: string) => /^((?:ge|xe|et|mge)-\d+\/\d+\/\d+(?::\d+)?)(?:\.\d+)?$/.exec(name.trim())?.[1] ?? null;

const port = (ctx: TableContext) => {
  if (!ctx.port) throw new SwitchError('no port given to a Junos template');
  return ctx.port;
};
const es = (ctx: TableContext) => `interfaces ${port(ctx)} unit 0 family ethernet-switching`;
const name = (vlan: number, ctx: TableContext) => ctx.vlans?.get(vlan) ?? `hilt-${vlan}`;

/** A VLAN the port is a member of from the VLAN's side: `set vlans <name> interface <iface>`, the interface as written there. */
interface VlanSide { vlan: number; name: string; iface: string }
/**
 * A Junos reading: the port's VLAN-side memberships beside what it carries. A planned reading
 * is the one it starts from spread with its changes (ssh/plan.ts), so it keeps them; should one
 * be lost, the statement is not deleted and the read-back after the change says so.
 */
type JunosReading = PortReading & { vlanSide?: VlanSide[] };
const sides = (ctx: TableContext) => (ctx.reading as JunosReading | undefined)?.vlanSide ?? [];
/** The lines that delete the port's VLAN-side memberships of `vlan` (of every VLAN: undefined), as the reading shows them. */
const sideDeletes = (ctx: TableContext, vlan?: number) => sides(ctx).filter((m) => vlan === undefined || m.vlan === vlan).map((m) => `delete vlans ${m.name} interface ${m.iface}`);
const sideMember = (ctx: TableContext, vlan: number) => {
  const allowed = ctx.reading?.mode === 'trunk' ? ctx.reading.allowed : [];
  return allowed !== 'all' && allowed.includes(vlan) && sides(ctx).some((m) => m.vlan === vlan);
};

/** A port's name in parts (`xe-0/1/2:3` → xe, 0, 1, 2, 3), or null. */
const portParts = (n: string) => {
  const m = /^(ge|xe|et|mge)-(\d+)\/(\d+)\/(\d+)(?::(\d+))?$/.exec(n);
  return m ? { type: m[1]!, at: [m[2], m[3], m[4], m[5] ?? '-1'].map(Number) } : null;
};
const before = (a: number[], b: number[]) => { const i = a.findIndex((x, k) => x !== b[k]); return i < 0 || a[i]! <= b[i]!; };

/**
 * Does an interface range's statement take the port in: `member <port>`, `member <pattern>`
 * (`*` for any number, `[1-5]` for a range of them: `ge-0/0/[1-5]`), `member-range <a> to <b>`?
 */
export function rangeHas(statement: string, p: string): boolean {
  const m = /^member (\S+)$/.exec(statement);
  if (m) {
    const pattern = m[1]!.replace(/^"|"$/g, '');
    const split = (x: string) => x.match(/\[[^\]]*\]|[^-/:[]+|[-/:]/g) ?? [];
    const a = split(pattern);
    const b = split(p);
    return a.length === b.length && a.every((seg, i) => {
      const r = /^\[(\d+)-(\d+)\]$/.exec(seg);
      if (seg === '*') return /^\d+$/.test(b[i]!);
      if (r) return /^\d+$/.test(b[i]!) && Number(b[i]) >= Number(r[1]) && Number(b[i]) <= Number(r[2]);
      return seg === b[i];
    });
  }
  const r = /^member-range (\S+) to (\S+)$/.exec(statement);
  const [lo, hi, at] = [portParts(r?.[1] ?? ''), portParts(r?.[2] ?? ''), portParts(p)];
  return !!(lo && hi && at && lo.type === at.type && hi.type === at.type && before(lo.at, at.at) && before(at.at, hi.at));
}

/** `set vlans <name> vlan-id <id>` lines → the VLANs by id, with their names. */
export function junosVlans(output: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const line of output.split('\n')) {
    const m = /^set vlans (\S+) vlan-id (\d+)\s*$/.exec(line.trim());
    if (m) out.set(Number(m[2]), m[1]!);
  }
  return out;
}

export const JUNOS_TABLE: SwitchTable = {
  family: 'Juniper Junos (ELS)',
  // On ELS a `native-vlan-id` that is not also among the `vlan members` carries nothing (the
  // port drops untagged frames): read back so, the drift audit sees an operator's delete of it.
  nativeNeedsAllowed: true,
  dialect: {
    auth: ['password', 'keyboard-interactive'],
    enable: false,
    pagingOff: ['set cli screen-length 0'],
    pager: /---\(more(?: \d+%)?\)---\s*$/,
    // `syntax error.` under a caret line, `unknown command.`, `error: configuration check-out failed`,
    // `error: configuration database locked by: …`; `warning: statement not found` is no error.
    // A line refused by the parser has the caret under it whatever its words (`Value 4095 is not
    // within range (1..4094) at '4095'` has no `error:`): the caret line alone is a refusal.
    errors: [/^error:/i, /^syntax error/, /^unknown command/, /^missing argument/, /^invalid (?:value|interface|numeric)/i, /^Value .* is not within range/i, /^\^$/],
  },
  configure: 'configure private',
  fromConfig: (command) => `run ${command}`,
  enterInterface: () => [],
  leave: [],
  // an access port without members falls back to VLAN `default`: a port stays a trunk
  reset: (ctx) => [`delete ${es(ctx)} vlan members`, ...sideDeletes(ctx), `delete interfaces ${port(ctx)} native-vlan-id`, `set ${es(ctx)} interface-mode trunk`],
  setNative: (vlan, old, ctx) => [
    ...(old !== null ? [`delete ${es(ctx)} vlan members ${name(old, ctx)}`, ...sideDeletes(ctx, old)] : []),
    // a member from the VLAN's side already (still: a planned reading keeps a statement deleted since): not made one twice
    ...(sideMember(ctx, vlan) ? [] : [`set ${es(ctx)} vlan members ${name(vlan, ctx)}`]),
    `set interfaces ${port(ctx)} native-vlan-id ${vlan}`,
  ],
  removeNative: (old, ctx) => [`delete interfaces ${port(ctx)} native-vlan-id`, `delete ${es(ctx)} vlan members ${name(old, ctx)}`, ...sideDeletes(ctx, old)],
  addTagged: (vlan, ctx) => [`set ${es(ctx)} vlan members ${name(vlan, ctx)}`],
  removeTagged: (vlan, ctx) => [`delete ${es(ctx)} vlan members ${name(vlan, ctx)}`, ...sideDeletes(ctx, vlan)],
  vlans: {
    show: 'show configuration vlans | display set',
    parse: junosVlans,
    create: (vlan) => [`set vlans hilt-${vlan} vlan-id ${vlan}`],
    name: (vlan) => `hilt-${vlan}`,
  },
  // Every line of the configuration that names the port: its own (`set interfaces <port> …`),
  // and those under `vlans` that make it a member from the VLAN's side, which its own do not
  // show; and the interface ranges' (a range may take the port in without naming it).
  show: (p) => `show configuration | display set | match "${p}|interface-range"`,
  parse(output, p, ctx): PortReading {
    const named = output.split('\n').map((l) => l.trim());
    const prefix = `set interfaces ${p} `;
    const lines = named.filter((l) => l.startsWith(prefix)).map((l) => l.slice(prefix.length));
    // a member of an aggregated interface carries the bundle's VLANs (`ae0`'s), not its own
    const bundle = lines.map((l) => /^(?:gig)?ether-options 802\.3ad (\S+)/.exec(l)?.[1]).find(Boolean);
    if (bundle) return { mode: 'other', access: null, native: null, allowed: [], other: [`member of ${bundle} (carries its VLANs)`] };
    // a member of an interface range carries the range's settings, which do not name the port
    const range = named.map((l) => /^set interfaces interface-range (\S+) (member(?:-range)? .*)$/.exec(l)).find((m) => m && rangeHas(m[2]!, p))?.[1];
    if (range) return { mode: 'other', access: null, native: null, allowed: [], other: [`member of interface-range ${range} (carries its VLANs)`] };
    const ids = new Map([...(ctx.vlans ?? new Map<number, string>())].map(([id, n]) => [n, id]));
    const idOf = (v: string) => {
      if (ids.has(v)) return ids.get(v)!;
      if (v === 'default') return 1;
      throw new SwitchError(`VLAN "${v}" is not defined on the switch`);
    };
    const vlanSide: VlanSide[] = [];
    for (const l of named) {
      const m = /^set vlans (\S+) interface (\S+)(?:\s|$)/.exec(l);
      if (!m || junosPort(m[2]!) !== p || vlanSide.some((x) => x.name === m[1] && x.iface === m[2])) continue;
      vlanSide.push({ vlan: idOf(m[1]!), name: m[1]!, iface: m[2]! });
    }
    const side = vlanSide.length ? { vlanSide } : {};
    const esLines = lines.filter((l) => l.startsWith('unit 0 family ethernet-switching')).map((l) => l.slice('unit 0 family ethernet-switching'.length).trim());
    if (!esLines.length && !vlanSide.length) return { mode: 'other', access: null, native: null, allowed: [] };
    const members: number[] = [];
    let all = false;
    for (const l of esLines) {
      const m = /^vlan members (\S+)$/.exec(l);
      if (!m) continue;
      const v = m[1]!;
      if (v === 'all') all = true;
      else if (ids.has(v)) members.push(ids.get(v)!);
      else if (/^\d+(-\d+)?$/.test(v)) {
        // a range may cover every VLAN (`1-4094`): that is `all`, not a list
        const list = parseVlanList(v);
        if (list === 'all') all = true;
        else members.push(...list);
      }
      else members.push(idOf(v));
    }
    members.push(...vlanSide.map((m) => m.vlan));
    const trunk = esLines.includes('interface-mode trunk');
    const nativeText = lines.map((l) => /^native-vlan-id (\d+)$/.exec(l)).find(Boolean)?.[1];
    if (!trunk) return { mode: 'access', access: members[0] ?? 1, native: null, allowed: [], ...side };
    return { mode: 'trunk', access: null, native: nativeText === undefined ? null : Number(nativeText), allowed: all ? 'all' : [...new Set(members)].sort((a, b) => a - b), ...side };
  },
  adminState: {
    // `set interfaces <port> disable` in the committed configuration is a port shut
    show: (p) => `show configuration interfaces ${p} | display set`,
    parse: (output, p) => !output.split('\n').some((l) => l.trim() === `set interfaces ${p} disable`),
    set: (enabled, p) => [enabled ? `delete interfaces ${p} disable` : `set interfaces ${p} disable`],
  },
  wiring: {
    // rows of VLAN name, MAC, flags, age, logical interface (`ge-0/0/1.0`)
    macTable: 'show ethernet-switching table',
    // A static entry says what an operator configured, not which nic is on the cable.
    parseMacs: (output) => macRows(output.split('\n').filter((l) => !staticRow(l)).join('\n'), (t) => (junosPort(t) ? t : null)),
    // Local Interface, Parent Interface, Chassis Id, Port info, System Name
    lldp: 'show lldp neighbors',
    parseLldp: (output) => headerColumns(output, /Local Interface\s+Parent Interface/i).flatMap((r) => {
      const n = neighbor(r[2], r[3], r[4]);
      return n && r[0] ? [{ port: r[0], neighbor: n }] : [];
    }),
    portKey: junosPort,
  },
  commit: {
    command: 'commit and-quit',
    done: /commit complete/,
    discard: ['rollback 0', 'exit'],
    answers: [{ question: /Exit with uncommitted changes\? \[yes,no\] \(yes\) ?$/, keys: 'yes\n' }],
  },
};

export const junos = sshSwitchEntry({
  name: 'junos',
  table: JUNOS_TABLE,
  portName: /^(ge|xe|et|mge)-\d+\/\d+\/\d+(:\d+)?$/,
  portFormat: 'ge-0/0/1, xe-0/0/1 or et-0/0/1 (xe-0/0/1:0 for a channel)',
});
