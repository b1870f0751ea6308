/**
 * VLAN lists as switch CLIs print and take them: `2-5,7`, `10, 2000`, `23 - 25`, lists wrapped
 * over several lines, `none`, `ALL`, and junk after an id such as `(Inactive)` or
 * `(Vlan not created)`. HIL read `2-5` as the two VLANs 2 and 5; every range is expanded here.
 */

/** VLAN ids a switch can carry. */
export const VLAN_MIN = 1;
export const VLAN_MAX = 4094;

/**
 * Every VLAN: a list the switch spells as a word (`ALL`, `All`), or one that covers 1 to 4093
 * (NX-OS and IOS print an implicit "all" as `1-4094`, DNOS6 as `All` or `1-4093`).
 */
export type VlanList = number[] | 'all';

export class VlanListError extends Error {
  override name = 'VlanListError';
}

/** Parses a VLAN list as a switch prints it; throws VlanListError for anything it does not understand. */
export function parseVlanList(text: string): VlanList {
  const clean = text.replace(/\([^)]*\)/g, ' ').replace(/\s*-\s*/g, '-').trim();
  if (clean === '' || /^none$/i.test(clean)) return [];
  if (/^all$/i.test(clean)) return 'all';
  // A list that starts or ends in a separator was cut (a wrapped line lost): VLANs would go unread.
  if (/^[,-]|[,-]$/.test(clean)) throw new VlanListError(`"${text.trim()}" is cut short (it starts or ends in a separator)`);
  const out = new Set<number>();
  for (const token of clean.split(/[\s,]+/).filter(Boolean)) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(token);
    if (!m) throw new VlanListError(`"${token}" is not a VLAN id or range`);
    const lo = Number(m[1]);
    const hi = Number(m[2] ?? m[1]);
    if (lo < VLAN_MIN || hi > VLAN_MAX || lo > hi) throw new VlanListError(`"${token}" is not a VLAN range within ${VLAN_MIN}-${VLAN_MAX}`);
    for (let v = lo; v <= hi; v++) out.add(v);
  }
  const list = [...out].sort((a, b) => a - b);
  return coversAll(list) ? 'all' : list;
}

function coversAll(list: number[]): boolean {
  if (list.length < 4093) return false;
  for (let v = 1; v <= 4093; v++) if (list[v - 1] !== v) return false;
  return true;
}
