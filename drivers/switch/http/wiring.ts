/** The REST switches' wiring tables in the contract's shape (SwitchSession.readWiring). */
import type { LldpNeighbor, PortWiring } from '../types';

/** A MAC address as the service writes it (`aa:bb:cc:dd:ee:ff`), from `aabb.ccdd.eeff`, `aa-bb-…`, `aa:bb:…`; null otherwise. */
export function macAddress(text: string): string | null {
  const t = text.trim().toLowerCase();
  const hex = /^[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}$/.test(t) || /^[0-9a-f]{2}([:-])[0-9a-f]{2}(\1[0-9a-f]{2}){4}$/.test(t) || /^[0-9a-f]{12}$/.test(t)
    ? t.replace(/[.:-]/g, '') : null;
  return hex ? hex.match(/../g)!.join(':') : null;
}

/** A neighbour from its fields, or null without a chassis id and a port id. */
export function lldpNeighbor(chassisId: string | undefined, portId: string | undefined, systemName: string | undefined): LldpNeighbor | null {
  const value = (v: string | undefined) => (v && !/^(not advertised|n\/a|none|-+)$/i.test(v.trim()) ? v.trim() : undefined);
  const c = value(chassisId);
  const p = value(portId);
  if (!c || !p) return null;
  const s = value(systemName);
  return s ? { chassisId: c, portId: p, systemName: s } : { chassisId: c, portId: p };
}

/**
 * `ports` (each with empty lists when the switch knows nothing of it) plus every other port the
 * switch learned something on, from learned MACs and neighbours by port name.
 */
export function wiringOf(ports: string[], macs: Array<{ port: string; mac: string }>, lldp: Array<{ port: string; neighbor: LldpNeighbor }>): Map<string, PortWiring> {
  const out = new Map<string, PortWiring>(ports.map((p) => [p, { macs: [], lldp: [] }]));
  const entry = (port: string) => {
    let w = out.get(port);
    if (!w) out.set(port, (w = { macs: [], lldp: [] }));
    return w;
  };
  for (const { port, mac } of macs) {
    const w = entry(port);
    if (!w.macs.includes(mac)) w.macs = [...w.macs, mac].sort();
  }
  for (const { port, neighbor } of lldp) entry(port).lldp.push(neighbor);
  return out;
}
