/**
 * SONiC (community, and Dell Enterprise SONiC's Click CLI), `…/switches/sonic` (a family HIL
 * never had): SSH password login to the admin user's bash (`admin@sonic:~$`); every `config`
 * command runs with `sudo` (the admin account's sudo; a password it asks for is the login's),
 * and a tool's refusal is its exit status and its `Error: …` lines.
 *
 * A port is in no VLAN until added, and each membership is tagged or untagged (at most one
 * untagged): `config vlan member add [-u] <vlan> <port>` / `member del`; the port's reading is
 * its rows of `show vlan brief`. A VLAN must exist before a port joins it: the session reads the
 * switch's VLANs once and creates a missing one (`config vlan add <vlan>`); none is ever deleted.
 * CONFIG_DB changes are live; `config save -y` writes the startup file once per session.
 *
 * A PortChannel member is in no VLAN of its own (its PortChannel is, and `config vlan member
 * add` refuses it): `show vlan brief` does not list it, so the session first reads the port's
 * row of `show interfaces status`, whose Vlan cell names the PortChannel of a member.
 */
import { sshSwitchEntry } from './ssh/driver';
import type { PortReading, SwitchTable } from './ssh/table';
import { SwitchError } from './types';
import { fixedWidthTable, keyValueBlocks, neighbor } from './wiring';

/** lldpctl's `mac 52:54:…` / `ifname eth0` / `local …`: the value without its type word. */
const lldpId = (v: string | undefined) => v?.replace(/^(mac|ifname|local|ip|ifalias|name)\s+/i, '');

const port = (p: string | undefined) => {
  if (!p) throw new SwitchError('no port given to a SONiC template');
  return p;
};

/** The rows of a grid table (`+---+` rules, `|`-separated cells), as arrays of trimmed cells; the header row first. */
export function gridRows(output: string): string[][] {
  return output.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('|') && l.endsWith('|')).map((l) => l.slice(1, -1).split('|').map((c) => c.trim()));
}

/** `show vlan brief` → each VLAN's members: port → tagged/untagged. Columns are found by their header names (releases move them). */
export function vlanBrief(output: string): Map<number, Map<string, 'tagged' | 'untagged'>> {
  const rows = gridRows(output);
  const head = rows.shift();
  const col = (name: RegExp) => head?.findIndex((c) => name.test(c)) ?? -1;
  const [id, ports, tagging] = [col(/^VLAN ID$/i), col(/^Ports$/i), col(/^Port Tagging$/i)];
  if (id < 0 || ports < 0 || tagging < 0) throw new SwitchError('no "VLAN ID", "Ports" and "Port Tagging" columns in "show vlan brief"');
  const out = new Map<number, Map<string, 'tagged' | 'untagged'>>();
  let vlan: number | undefined;
  for (const r of rows) {
    if (r[id]) {
      if (!/^\d+$/.test(r[id]!)) throw new SwitchError(`"${r[id]}" is not a VLAN id`);
      vlan = Number(r[id]);
      out.set(vlan, new Map());
    }
    if (vlan === undefined || !r[ports]) continue;
    out.get(vlan)!.set(r[ports]!, /^untagged$/i.test(r[tagging] ?? '') ? 'untagged' : 'tagged');
  }
  return out;
}

/** The port's cell of a `show interfaces status` column (found by its header). */
function statusCell(output: string, p: string, header: RegExp, name: string): string {
  const { headers, rows } = fixedWidthTable(output);
  const col = headers.findIndex((h) => header.test(h));
  const row = rows.find((r) => r[0] === p);
  if (col < 0 || !row) throw new SwitchError(col < 0 ? `no "${name}" column` : `no row for ${p}`);
  return row[col] ?? '';
}

export const SONIC_TABLE: SwitchTable = {
  family: 'SONiC',
  dialect: {
    auth: ['password', 'keyboard-interactive'],
    enable: false,
    pagingOff: [],
    // these commands print no pager over SSH
    pager: /(?!)/,
    // click's `Error: Vlan1001 does not exist`, `Usage: …`; `Root privileges are required for this operation`
    errors: [/^Error:/, /^Usage:/, /^Root privileges are required/],
    exitStatus: true,
    passwordQuestion: /\[sudo\] password for [^:\r\n]*: ?$/,
  },
  enterInterface: () => [],
  leave: [],
  reset: (ctx) => (ctx.reading && ctx.reading.allowed !== 'all' ? ctx.reading.allowed : []).map((v) => `sudo config vlan member del ${v} ${port(ctx.port)}`),
  // at most one untagged VLAN per port: the old one leaves first
  setNative: (vlan, old, ctx) => [
    ...(old !== null ? [`sudo config vlan member del ${old} ${port(ctx.port)}`] : []),
    `sudo config vlan member add -u ${vlan} ${port(ctx.port)}`,
  ],
  removeNative: (old, ctx) => [`sudo config vlan member del ${old} ${port(ctx.port)}`],
  addTagged: (vlan, ctx) => [`sudo config vlan member add ${vlan} ${port(ctx.port)}`],
  removeTagged: (vlan, ctx) => [`sudo config vlan member del ${vlan} ${port(ctx.port)}`],
  vlans: {
    show: 'show vlan brief',
    parse: (output) => new Map([...vlanBrief(output).keys()].map((v) => [v, `Vlan${v}`])),
    create: (vlan) => [`sudo config vlan add ${vlan}`],
    name: (vlan) => `Vlan${vlan}`,
  },
  show: () => 'show vlan brief',
  parse(output, p): PortReading {
    let native: number | null = null;
    const allowed: number[] = [];
    for (const [vlan, members] of vlanBrief(output)) {
      const tagging = members.get(p);
      if (!tagging) continue;
      allowed.push(vlan);
      if (tagging === 'untagged') {
        if (native !== null) throw new SwitchError(`${p} is an untagged member of both VLAN ${native} and VLAN ${vlan}`);
        native = vlan;
      }
    }
    return { mode: 'trunk', access: null, native, allowed: allowed.sort((a, b) => a - b) };
  },
  save: { command: 'sudo config save -y', done: /config_db\.json/ },
  bundle: {
    show: (p) => `show interfaces status ${p}`,
    // the Vlan cell: `trunk` (in a VLAN), `routed`, or a member's PortChannel (`PortChannel0001`)
    parse: (output, p) => {
      const v = statusCell(output, p, /^vlan$/i, 'Vlan');
      return /^PortChannel\S*$/i.test(v) ? v : null;
    },
  },
  adminState: {
    // Interface, Lanes, Speed, MTU, FEC, Alias, Vlan, Oper, Admin, …
    show: (p) => `show interfaces status ${p}`,
    parse(output, p) {
      const v = statusCell(output, p, /^admin$/i, 'Admin');
      if (!/^(up|down)$/i.test(v)) throw new SwitchError(`Admin "${v}" is neither up nor down`);
      return /^up$/i.test(v);
    },
    set: (enabled, p) => [`sudo config interface ${enabled ? 'startup' : 'shutdown'} ${port(p)}`],
  },
  wiring: {
    // No., Vlan, MacAddress, Port, Type; then `Total number of entries N`
    macTable: 'show mac',
    // lldpctl's blocks: `Interface: Ethernet0, via: LLDP, …`, `ChassisID: mac …`, `SysName:`, `PortID: mac …`
    lldp: 'show lldp neighbors',
    parseLldp: (output) => keyValueBlocks(output, /^Interface:\s*([^,\s]+)/).flatMap(({ head, fields }) => {
      const n = neighbor(lldpId(fields.get('chassisid')), lldpId(fields.get('portid')), fields.get('sysname'));
      return n ? [{ port: head[1]!, neighbor: n }] : [];
    }),
    portKey: (name) => (/^Ethernet\d+$/.test(name.trim()) ? name.trim() : null),
  },
};

export const sonic = sshSwitchEntry({
  name: 'sonic',
  table: SONIC_TABLE,
  portName: /^Ethernet\d+$/,
  portFormat: 'Ethernet0, Ethernet4 (the SONiC name, not the front-panel alias)',
});
