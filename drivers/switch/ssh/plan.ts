/**
 * A table driver's changes planned (table.ts): the lines of each operation from the port's
 * reading, the reading they must leave, and readings in the service's terms. Pure functions,
 * asserted line by line by the unit tests.
 *
 * A port is never left with an implicit "all VLANs" allowed list: a fresh trunk allows every
 * VLAN on NX-OS, DNOS6 and EOS, and an access port carries its access VLAN, so before the
 * first change of a port that is not an explicit trunk the table's reset is sent (a trunk
 * with an empty allowed list and no untagged VLAN), and a reading of "all" never passes a
 * check.
 */
import type { PortVlans } from '../types';
import type { PortReading, SwitchTable, TableContext } from './table';
import { formatVlanList } from '../vlans';
import type { VlanList } from './vlans';
import type { PortOp } from '../ops';
export type { PortOp } from '../ops';
export { opText } from '../ops';

const EMPTY_TRUNK: PortReading = { mode: 'trunk', access: null, native: null, allowed: [] };

export const sameList = (a: VlanList, b: VlanList) => a !== 'all' && b !== 'all' && a.length === b.length && a.every((v, i) => v === b[i]);
const withVlan = (l: VlanList, v: number): VlanList => (l === 'all' ? l : [...new Set([...l, v])].sort((x, y) => x - y));
const withoutVlan = (l: VlanList, v: number | null): VlanList => (l === 'all' || v === null ? l : l.filter((x) => x !== v));

/** A reading in words: `trunk, native 1001, allowed 1001-1003`. */
export function describe(r: PortReading): string {
  if (r.mode === 'access') return `access port on VLAN ${r.access ?? 'none'}`;
  if (r.mode === 'other') return 'not a switch port';
  return `trunk, native ${r.native ?? 'none'}, allowed ${r.allowed === 'all' ? 'ALL VLANs' : formatVlanList(r.allowed)}`;
}

/** Said of a trunk whose allowed list is "all" (never set by the service), as `other`. */
export const EVERY_VLAN = 'trunk allows every VLAN';

/**
 * What the service calls the port's VLANs: the untagged one (if the trunk allows it), and the tagged ones beside it. A
 * trunk that allows every VLAN is said so in `other`, not as 4093 tagged VLANs (as the OVS
 * driver reports an empty trunk list).
 */
export function portVlans(r: PortReading, nativeNeedsAllowed = false): PortVlans {
  if (r.other?.length) return { ...portVlans({ ...r, other: undefined }, nativeNeedsAllowed), other: [...r.other] };
  if (r.mode === 'access') return { native: r.access, tagged: [] };
  if (r.mode !== 'trunk') return { native: null, tagged: [] };
  if (r.allowed === 'all') return { native: r.native, tagged: [], other: [EVERY_VLAN] };
  // Where an untagged VLAN off the allowed list carries nothing (NX-OS, DNOS6, EOS, the
  // PowerConnect: SwitchTable.nativeNeedsAllowed), it reads as none, so that the drift audit
  // sees an operator's `allowed vlan remove` of it.
  const native = r.native !== null && (!nativeNeedsAllowed || r.allowed.includes(r.native)) ? r.native : null;
  return { native, tagged: r.allowed.filter((v) => v !== native) };
}


/** A change: the configuration lines that make it, the reading it must leave, and the VLANs it puts on the port. */
export interface Plan { lines: string[]; expected: PortReading; vlans: number[] }


/** The table's lines for `op` on a clean trunk read as `b`, or null when the port is already as asked. */
function opPlan(table: SwitchTable, c: TableContext, op: PortOp, b: PortReading): Plan | null {
  const has = (v: number) => b.allowed !== 'all' && b.allowed.includes(v);
  const ctx = { ...c, reading: b };
  switch (op.kind) {
    case 'setNative':
      return b.native === op.vlan && has(op.vlan) ? null : {
        lines: table.setNative(op.vlan, b.native === op.vlan ? null : b.native, ctx),
        expected: { ...b, native: op.vlan, allowed: withVlan(withoutVlan(b.allowed, b.native), op.vlan) },
        vlans: [op.vlan],
      };
    case 'removeNative':
      return b.native === null ? null : {
        lines: table.removeNative(b.native, ctx),
        expected: { ...b, native: null, allowed: withoutVlan(b.allowed, b.native) },
        vlans: [],
      };
    case 'addTagged': {
      if (has(op.vlan)) return null;
      // The port's untagged VLAN off its allowed list (it carries nothing) would carry this one
      // untagged once allowed: it is taken off first, and the read-back must show it gone.
      const dangling = b.native === op.vlan;
      const from = dangling ? { ...b, native: null } : b;
      return {
        lines: [...(dangling ? table.removeNative(op.vlan, ctx) : []), ...table.addTagged(op.vlan, { ...c, reading: from })],
        expected: { ...from, allowed: withVlan(b.allowed, op.vlan) },
        vlans: [op.vlan],
      };
    }
    case 'removeTagged':
      return !has(op.vlan) ? null : { lines: table.removeTagged(op.vlan, ctx), expected: { ...b, allowed: withoutVlan(b.allowed, op.vlan) }, vlans: [] };
    case 'reset':
      return b.native === null && sameList(b.allowed, []) ? null : { lines: table.reset(ctx), expected: EMPTY_TRUNK, vlans: [] };
  }
}

/**
 * The configuration lines of `op` on a port read as `before`, and the reading they must
 * leave; null when the port is already as asked. A port that is not an explicit trunk yet (an
 * access port, a fresh trunk that allows every VLAN) is reset first.
 */
export function planChange(table: SwitchTable, ctx: TableContext, op: PortOp, before: PortReading): Plan | null {
  const clean = before.mode === 'trunk' && before.allowed !== 'all';
  const p = opPlan(table, ctx, op, clean ? before : EMPTY_TRUNK);
  if (clean) return p;
  return { lines: [...table.reset({ ...ctx, reading: before }), ...(p?.lines ?? [])], expected: p?.expected ?? EMPTY_TRUNK, vlans: p?.vlans ?? [] };
}

/**
 * Every command a change of `port` sends, in order: into configuration mode (unless the session
 * is there already), the lines that create the VLANs it needs, the port, the lines, back to the
 * privileged prompt.
 */
export function configCommands(table: SwitchTable, port: string, lines: string[], create: string[] = [], inConfig = false): string[] {
  return [...(table.configure && !inConfig ? [table.configure] : []), ...create, ...table.enterInterface(port), ...lines, ...table.leave];
}

