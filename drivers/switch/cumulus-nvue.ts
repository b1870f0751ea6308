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
 * changes unapplied (`nv config detach`). `nv config save` once per session that changed the
 * switch (recent releases save on apply already).
 *
 * Ports join the VLAN-aware bridge `br_default`, whose VLAN list must hold every VLAN a port
 * uses (`nv set bridge domain br_default vlan <id>`, sent with the change; no VLAN is ever taken
 * off it). Traps: a bridge port with no `vlan` setting carries every VLAN of the bridge, and
 * unsetting its last VLAN returns it to that; its untagged VLAN defaults to the bridge's (1).
 * So a port with nothing left leaves the bridge, and a port without a native VLAN says
 * `untagged none`.
 */
import { sshSwitchEntry } from './ssh/driver';
import type { PortReading, SwitchTable, TableContext } from './ssh/table';
import { parseVlanList } from './ssh/vlans';
import { SwitchError } from './types';

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
    let doc: unknown;
    try {
      doc = JSON.parse(output.trim() || '{}');
    } catch {
      throw new SwitchError(`not JSON: ${output.trim().slice(0, 80)}`);
    }
    if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new SwitchError('not a JSON object');
    const d = doc as { untagged?: unknown; vlan?: Record<string, unknown> };
    // not in the bridge: it carries nothing
    if (!Object.keys(d).length) return { mode: 'trunk', access: null, native: null, allowed: [] };
    const keys = Object.keys(d.vlan ?? { all: {} });
    const allowed = keys.includes('all') ? 'all' : parseVlanList(keys.join(','));
    const u = d.untagged ?? 1;
    const native = u === 'none' ? null : typeof u === 'number' || /^\d+$/.test(String(u)) ? Number(u) : null;
    if (native === null && u !== 'none') throw new SwitchError(`untagged "${String(u)}" is not a VLAN id`);
    return { mode: 'trunk', access: null, native, allowed };
  },
  commit: { command: 'nv config apply -y', done: /applied/, discard: ['nv config detach'] },
  save: { command: 'nv config save', done: /(?:)/ },
};

export const cumulusNvue = sshSwitchEntry({
  name: 'cumulus_nvue',
  table: CUMULUS_NVUE_TABLE,
  portName: /^swp\d+(s\d+)?$/,
  portFormat: 'swp1 (or swp1s0 for a breakout)',
});
