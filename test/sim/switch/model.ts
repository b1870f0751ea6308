/**
 * What a simulated switch holds, whatever its vendor: its VLANs, and each port's switchport
 * settings as its CLI configures them. The vendors' CLIs (vendors.ts) read and change it.
 */

export interface SimPort {
  /** a layer-2 port (`no switchport` on NX-OS and EOS makes it routed) */
  switchport: boolean;
  mode: 'access' | 'trunk';
  access: number;
  /** the trunk's untagged VLAN; `none` (PowerConnect) or `tag` (EOS: the native VLAN is tagged too) */
  native: number | 'none' | 'tag';
  /** the trunk's allowed list; `all` until an explicit list is configured */
  allowed: Set<number> | 'all';
  /** administratively down (`shutdown`); a shut port learns no MAC and has no LLDP neighbour */
  shutdown: boolean;
  /** the operator's `description` of the port, if any (EOS prints it in its status table) */
  description?: string;
  /** a member of this link aggregation (Junos `ae0`, OS10 port-channel `10`, SONiC `PortChannel0001`, NVUE bond `bond1`), set by a test: it carries the bundle's VLANs, not its own */
  lag?: string;
}

/** A port's LLDP neighbour as a simulator prints it. */
export interface SimNeighbor { chassisId: string; portId: string; systemName?: string }

/** `aabb.ccdd.eeff` of any MAC spelling (the simulators print it in each vendor's own). */
export function macHex(mac: string): string {
  const hex = mac.toLowerCase().replace(/[^0-9a-f]/g, '');
  if (hex.length !== 12) throw new Error(`not a MAC address: ${mac}`);
  return hex;
}

/** The VLANs a port carries as the switch forwards them: untagged, and tagged beside it. */
export interface CarriedVlans {
  native: number | null;
  tagged: number[];
}

export const ALL_VLANS = 4094;

/** `2-5,7` → [2,3,4,5,7]; throws on anything else (the caller prints the vendor's error). */
export function vlanRange(text: string, max = ALL_VLANS): number[] {
  const out: number[] = [];
  for (const part of text.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) throw new Error(`bad VLAN range ${part}`);
    const lo = Number(m[1]);
    const hi = Number(m[2] ?? m[1]);
    if (lo < 1 || hi > max || lo > hi) throw new Error(`VLAN range ${part} out of 1-${max}`);
    for (let v = lo; v <= hi; v++) out.push(v);
  }
  return out;
}

/** [1,2,3,5] → `1-3,5` */
export function ranges(list: Iterable<number>): string {
  const xs = [...list].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < xs.length; ) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === xs[j]! + 1) j++;
    parts.push(j > i ? `${xs[i]}-${xs[j]}` : `${xs[i]}`);
    i = j + 1;
  }
  return parts.join(',');
}

/**
 * What a port carries: a trunk carries its allowed VLANs tagged, and its native VLAN untagged
 * when that one is allowed (an untagged VLAN off the allowed list carries nothing, as on NX-OS,
 * DNOS6 and EOS); an access port carries its access VLAN untagged; a routed port nothing.
 */
export function carried(p: SimPort, max = ALL_VLANS): CarriedVlans {
  if (!p.switchport) return { native: null, tagged: [] };
  if (p.mode === 'access') return { native: p.access, tagged: [] };
  const allowed = p.allowed === 'all' ? Array.from({ length: max }, (_, i) => i + 1) : [...p.allowed].sort((a, b) => a - b);
  const native = typeof p.native === 'number' && allowed.includes(p.native) ? p.native : null;
  return { native, tagged: allowed.filter((v) => v !== native) };
}
