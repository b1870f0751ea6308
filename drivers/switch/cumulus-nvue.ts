/**
 * NVIDIA Cumulus Linux 5.x with NVUE, `…/switches/cumulus_nvue` (a family HIL never had): SSH
 * password login to bash (`cumulus@switch:mgmt:~$`); a refusal is the tool's exit status and
 * its `Error: …` / `Invalid config …` lines.
 *
 * `nv set` / `nv unset` change a pending revision; nothing reaches the switch before `nv config
 * apply -y`, which the session runs once for the changes of queued operations, then reads each
 * port back from the applied configuration (`nv show interface <port> bridge domain br_default
 * -o json`). The pending revision belongs to the user and outlives the session, so the session
 * detaches any left over before its first change, and after a refused apply or at logout with
 * changes unapplied (`nv config detach`). Every login as the user shares it, and the CLI has no
 * revision of one's own to stage in (only the REST API creates one and stages by its id): so
 * before the apply the session reads the pending changes (`nv config diff -o json`) and applies
 * nothing if they touch anything beyond its staged ports and the bridge VLANs it made. `nv config save` once per session that changed the
 * switch (recent releases save on apply already).
 *
 * Ports join the VLAN-aware bridge `br_default`, whose VLAN list must hold every VLAN a port
 * uses (`nv set bridge domain br_default vlan <id>`, sent with the change; no VLAN is ever taken
 * off it). Traps: a bridge port with no `vlan` setting carries every VLAN of the bridge, and
 * unsetting its last VLAN returns it to that; its untagged VLAN defaults to the bridge's (1).
 * So a port with nothing left leaves the bridge, and a port without a native VLAN says
 * `untagged none`.
 *
 * A bond member is no bridge port (its bond is), so its own bridge domain reads `{}`, as an
 * empty port's: the session first reads the applied configuration (`nv config show -o json`),
 * where each bond lists its members (`interface bond1 bond member swp1`).
 */
import { sshSwitchEntry } from './ssh/driver';
import type { PortReading, SwitchTable, TableContext } from './ssh/table';
import { parseVlanList } from './ssh/vlans';
import { SwitchError } from './types';
import { isGroupMac, normalizeMac } from './wiring';

/**
 * A JSON object from NVUE, or the reason it is not one. `-o json` prints `{}` for nothing; an
 * output without even that is refused where `{}` would say something (a port out of the bridge).
 */
function jsonObject(output: string, emptyIsNothing = true): Record<string, unknown> {
  if (!output.trim() && !emptyIsNothing) throw new SwitchError('no JSON at all (not even {})');
  let doc: unknown;
  try {
    doc = JSON.parse(output.trim() || '{}');
  } catch {
    throw new SwitchError(`not JSON: ${output.trim().slice(0, 80)}`);
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new SwitchError('not a JSON object');
  return doc as Record<string, unknown>;
}

/** `swp1-4`, `swp1-2,5-6`, `swp1s0-3`, `swp3` → each name (NVUE writes ranges in the keys of its configuration). */
export function nvueNames(text: string): string[] {
  const out: string[] = [];
  let prefix = '';
  for (const part of text.split(',').map((x) => x.trim())) {
    const m = /^(.*?)(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) {
      out.push(part);
      continue;
    }
    if (m[1]) prefix = m[1];
    const lo = Number(m[2]);
    const hi = Math.min(Number(m[3] ?? m[2]), lo + 4095);
    for (let i = lo; i <= hi; i++) out.push(`${prefix}${i}`);
  }
  return out;
}

/** `nv config show -o json` (a header, then the `set` tree; its layout unverified, so read tolerantly) → the bond that has `port` as a member, or null. */
export function nvueBondOf(output: string, port: string): string | null {
  let doc: unknown;
  try {
    doc = JSON.parse(output.trim());
  } catch {
    throw new SwitchError(`not JSON: ${output.trim().slice(0, 80)}`);
  }
  const trees = (Array.isArray(doc) ? doc : [doc]).map((x) => (x && typeof x === 'object' ? ((x as { set?: unknown }).set ?? x) : undefined));
  const sets = trees.filter((t): t is { interface?: Record<string, { bond?: { member?: Record<string, unknown> } }> } => !!t && typeof t === 'object' && 'interface' in t);
  // a configuration without interfaces is not one this parser knows: never read as "no bond"
  if (!sets.length) throw new SwitchError('no "interface" in the applied configuration');
  for (const t of sets) {
    for (const [name, i] of Object.entries(t.interface ?? {})) {
      const members = Object.keys(i?.bond?.member ?? {});
      if (members.some((m) => nvueNames(m).includes(port))) return name;
    }
  }
  return null;
}

/**
 * `nv config diff -o json` (the pending revision against the applied one: a list of `set` /
 * `unset` trees) → what it changes beyond the staged ports and the bridge VLANs the session made.
 */
export function nvueForeign(output: string, staged: { ports: string[]; vlans: number[] }): string[] {
  let doc: unknown;
  try {
    doc = JSON.parse(output.trim() || '[]');
  } catch {
    throw new SwitchError(`not JSON: ${output.trim().slice(0, 80)}`);
  }
  const isObject = (x: unknown): x is Record<string, unknown> => !!x && typeof x === 'object' && !Array.isArray(x);
  const keys = (x: unknown) => (isObject(x) ? Object.keys(x) : []);
  const out: string[] = [];
  for (const part of Array.isArray(doc) ? doc : [doc]) {
    if (!isObject(part)) throw new SwitchError('not a list of set/unset changes');
    for (const [verb, tree] of Object.entries(part)) {
      if (verb === 'header') continue;
      if (!isObject(tree)) {
        out.push(verb);
        continue;
      }
      for (const [top, sub] of Object.entries(tree)) {
        if (top === 'interface' && isObject(sub)) {
          for (const n of Object.keys(sub).flatMap(nvueNames)) if (!staged.ports.includes(n)) out.push(`${verb} interface ${n}`);
          continue;
        }
        // the bridge's VLAN list only, and only the VLANs the staged changes make
        const domain = isObject(sub) ? sub.domain : undefined;
        const br = isObject(domain) ? domain.br_default : undefined;
        if (top !== 'bridge' || keys(sub).join() !== 'domain' || keys(domain).join() !== 'br_default' || keys(br).join() !== 'vlan') {
          out.push(`${verb} ${top}`);
          continue;
        }
        for (const k of keys((br as Record<string, unknown>).vlan)) {
          const list = /^[\d,-]+$/.test(k) ? parseVlanList(k) : 'all';
          if (list === 'all' || list.some((v) => !staged.vlans.includes(v))) out.push(`${verb} bridge domain br_default vlan ${k}`);
        }
      }
    }
  }
  return [...new Set(out)];
}

const swp = (name: string) => (/^swp\d+(s\d+)?$/.test(name.trim()) ? name.trim() : null);

const bd = (ctx: TableContext) => {
  if (!ctx.port) throw new SwitchError('no port given to an NVUE template');
  return `interface ${ctx.port} bridge domain br_default`;
};
/** What the port carries beside `vlan`, from the reading the lines start from. */
const others = (ctx: TableContext, vlan: number) => (ctx.reading && ctx.reading.allowed !== 'all' ? ctx.reading.allowed.filter((v) => v !== vlan) : []);

export const CUMULUS_NVUE_TABLE: SwitchTable = {
  family: 'NVIDIA Cumulus Linux (NVUE)',
  dialect: {
    auth: ['password', 'keyboard-interactive'],
    enable: false,
    pagingOff: [],
    // `-o json` output has no pager
    pager: /(?!)/,
    errors: [/^Error:/, /^Invalid config/, /Failure during apply/, /Unable to restart services/],
    exitStatus: true,
    // `sudo lldpctl` (the LLDP daemon's own tool) where the account's sudo asks
    passwordQuestion: /\[sudo\] password for [^:\r\n]*: ?$/,
  },
  enterInterface: () => [],
  leave: [],
  setup: () => ['nv config detach'],
  reset: (ctx) => [`nv unset ${bd(ctx)}`],
  setNative: (vlan, old, ctx) => [
    ...(old !== null ? [`nv unset ${bd(ctx)} vlan ${old}`] : []),
    `nv set ${bd(ctx)} vlan ${vlan}`,
    `nv set ${bd(ctx)} untagged ${vlan}`,
  ],
  removeNative: (old, ctx) => (others(ctx, old).length ? [`nv set ${bd(ctx)} untagged none`, `nv unset ${bd(ctx)} vlan ${old}`] : [`nv unset ${bd(ctx)}`]),
  addTagged: (vlan, ctx) => [`nv set ${bd(ctx)} vlan ${vlan}`, ...(ctx.reading?.native == null ? [`nv set ${bd(ctx)} untagged none`] : [])],
  removeTagged: (vlan, ctx) => (others(ctx, vlan).length ? [`nv unset ${bd(ctx)} vlan ${vlan}`] : [`nv unset ${bd(ctx)}`]),
  // setting a VLAN the bridge has already changes nothing
  vlans: { create: (vlan) => [`nv set bridge domain br_default vlan ${vlan}`] },
  show: (port) => `nv show interface ${port} bridge domain br_default -o json`,
  parse(output): PortReading {
    // An empty output is no port out of the bridge: read so, a reset would send nothing.
    const d = jsonObject(output, false) as { untagged?: unknown; vlan?: Record<string, unknown> };
    // not in the bridge: it carries nothing
    if (!Object.keys(d).length) return { mode: 'trunk', access: null, native: null, allowed: [] };
    const keys = Object.keys(d.vlan ?? { all: {} });
    const allowed = keys.includes('all') ? 'all' : parseVlanList(keys.join(','));
    const u = d.untagged ?? 1;
    const native = u === 'none' ? null : typeof u === 'number' || /^\d+$/.test(String(u)) ? Number(u) : null;
    if (native === null && u !== 'none') throw new SwitchError(`untagged "${String(u)}" is not a VLAN id`);
    return { mode: 'trunk', access: null, native, allowed };
  },
  // `Invalid config` is the apply's checks refusing the revision before it is written; a
  // failure past them (a service that did not restart) leaves the switch applied in part
  commit: {
    command: 'nv config apply -y', done: /applied/, partial: /Failure during apply|Unable to restart services/, discard: ['nv config detach'],
    // the pending revision is the user's, shared with every other login as that user
    check: { command: 'nv config diff -o json', foreign: nvueForeign },
  },
  save: { command: 'nv config save', done: /(?:)/ },
  bundle: { show: () => 'nv config show -o json', parse: nvueBondOf },
  adminState: {
    // `"state": {"down": {}}` once `link state down` is applied (or `"admin-status": "down"`)
    show: (port) => `nv show interface ${port} link -o json`,
    parse(output) {
      const d = jsonObject(output) as { state?: Record<string, unknown>; 'admin-status'?: string };
      const state = Object.keys(d.state ?? {});
      if (state.includes('down')) return false;
      if (state.includes('up')) return true;
      if (d['admin-status'] === 'up' || d['admin-status'] === 'down') return d['admin-status'] === 'up';
      throw new SwitchError('no "state" or "admin-status"');
    },
    set: (enabled, port) => [`nv set interface ${port} link state ${enabled ? 'up' : 'down'}`],
  },
  wiring: {
    // entries with `mac`, `interface`, `vlan`, `entry-type` (the bridge's own are `permanent`)
    macTable: 'nv show bridge domain br_default mac-table -o json',
    parseMacs(output) {
      const out = new Map<string, string[]>();
      for (const e of Object.values(jsonObject(output))) {
        const { mac, interface: port, 'entry-type': type } = (e ?? {}) as { mac?: string; interface?: string; 'entry-type'?: string };
        const m = normalizeMac(String(mac ?? ''));
        if (!m || !port || !swp(port) || isGroupMac(m) || /permanent|static/i.test(type ?? '')) continue;
        out.set(port, [...new Set([...(out.get(port) ?? []), m])]);
      }
      return out;
    },
    // lldpd's own view (Cumulus runs lldpd), one `lldp.<port>.<field>=value` line per field
    lldp: 'sudo lldpctl -f keyvalue',
    parseLldp(output) {
      // Every neighbour of a port prints the same keys; each starts with its `via` (or `rid`) line.
      const blocks: Array<[string, Map<string, string>]> = [];
      const last = new Map<string, Map<string, string>>();
      for (const line of output.split('\n')) {
        const m = /^lldp\.([^.=]+)\.([^=]+)=(.*)$/.exec(line.trim());
        if (!m) continue;
        const [, port, key] = m as unknown as [string, string, string];
        let f = last.get(port);
        if (!f || ((key === 'via' || key === 'rid') && f.has(key))) {
          f = new Map<string, string>();
          last.set(port, f);
          blocks.push([port, f]);
        }
        if (!f.has(key)) f.set(key, m[3]!.trim());
      }
      return blocks.flatMap(([port, f]) => {
        const chassisId = f.get('chassis.mac') ?? f.get('chassis.local') ?? f.get('chassis.ip');
        const portId = f.get('port.mac') ?? f.get('port.ifname') ?? f.get('port.local');
        const systemName = f.get('chassis.name');
        return chassisId && portId ? [{ port, neighbor: systemName ? { chassisId, portId, systemName } : { chassisId, portId } }] : [];
      });
    },
    portKey: swp,
  },
};

export const cumulusNvue = sshSwitchEntry({
  name: 'cumulus_nvue',
  table: CUMULUS_NVUE_TABLE,
  portName: /^swp\d+(s\d+)?$/,
  portFormat: 'swp1 (or swp1s0 for a breakout)',
});
