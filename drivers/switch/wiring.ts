/**
 * Reading a switch's own tables for wiring validation, whatever the driver: MAC addresses in
 * the service's one spelling, the rows of a learned-MAC table and of a fixed-width table (LLDP
 * summaries), and `Key: value` blocks (LLDP details). Parsers are tolerant of column widths and
 * order: a MAC table row is recognised by its MAC, its port by the family's port names.
 */
import type { LldpNeighbor, PortWiring } from './types';

/**
 * A MAC address as the service writes it (`aa:bb:cc:dd:ee:ff`), from any spelling switches and
 * operators use (`AABB.CCDD.EEFF`, `aa-bb-cc-dd-ee-ff`, `aa:bb:cc:dd:ee:ff`, `aabbccddeeff`);
 * null for anything else.
 */
export function normalizeMac(text: string): string | null {
  const t = text.trim().toLowerCase();
  let hex: string | undefined;
  if (/^[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}$/.test(t)) hex = t.replace(/\./g, '');
  else if (/^[0-9a-f]{2}([:-])[0-9a-f]{2}(\1[0-9a-f]{2}){4}$/.test(t)) hex = t.replace(/[:-]/g, '');
  else if (/^[0-9a-f]{12}$/.test(t)) hex = t;
  return hex ? hex.match(/../g)!.join(':') : null;
}

/** A group (multicast or broadcast) address: never a nic's own. */
export const isGroupMac = (mac: string) => (parseInt(mac.slice(0, 2), 16) & 1) === 1;

/** Rows of a MAC table that are not learned from traffic (the switch's own, static or system entries). */
const NOT_LEARNED = /\b(static|self|management|system|igmp|cpu)\b/i;

/**
 * The learned MACs of a `show mac address-table` output: every row holding a unicast MAC, of a
 * type learned from traffic, on a port that `portOf` recognises (the first such token after the
 * MAC; rows on the switch's CPU or a router interface have none). Returns port (as printed) → MACs.
 */
export function macRows(output: string, portOf: (token: string) => string | null): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of output.split('\n')) {
    const tokens = line.trim().split(/\s+/);
    const at = tokens.findIndex((t) => normalizeMac(t) !== null);
    // The entry's type follows its MAC in every family; before it may be a VLAN's name (Junos), any text.
    if (at < 0 || NOT_LEARNED.test(tokens.slice(at + 1).join(' '))) continue;
    const mac = normalizeMac(tokens[at]!)!;
    if (isGroupMac(mac)) continue;
    const port = tokens.slice(at + 1).map(portOf).find((p) => p !== null);
    if (!port) continue;
    const list = out.get(port) ?? [];
    if (!list.includes(mac)) list.push(mac);
    out.set(port, list);
  }
  return out;
}

/**
 * A fixed-width table under its rule of dashes (`-------- ----- ----`, groups separated by
 * spaces or `+`): each row as its cells, cut at the columns' starts and trimmed, and each
 * column's header (the lines just above the rule, cut the same way and joined: `Admin State`
 * over two lines). Rows end at the first blank line after them. Empty when there is no rule.
 */
export function fixedWidthTable(output: string): { headers: string[]; rows: string[][] } {
  const lines = output.split('\n');
  const rule = lines.findIndex((l) => /^\s*-{2,}([ +]+-{2,})+\s*$/.test(l));
  if (rule < 0) return { headers: [], rows: [] };
  const starts: number[] = [];
  for (const m of lines[rule]!.matchAll(/-+/g)) starts.push(m.index!);
  const cut = (line: string) => starts.map((s, i) => line.slice(i === 0 ? 0 : s, starts[i + 1] ?? line.length).trim());
  let top = rule;
  while (top > 0 && lines[top - 1]!.trim()) top--;
  const head = lines.slice(top, rule).map(cut);
  const headers = starts.map((_, i) => head.map((h) => h[i]).filter(Boolean).join(' '));
  const rows: string[][] = [];
  for (const line of lines.slice(rule + 1)) {
    if (!line.trim()) {
      if (rows.length) break;
      continue;
    }
    rows.push(cut(line));
  }
  return { headers, rows };
}

/**
 * A table whose columns start where its header's words do (`Local Interface    Chassis Id …`,
 * names of several words separated by single spaces, columns by two or more): each row after
 * the header (and a rule of dashes under it, if any) cut at those starts and trimmed. Empty
 * when no line matches `header`.
 */
export function headerColumns(output: string, header: RegExp): string[][] {
  const lines = output.split('\n');
  const at = lines.findIndex((l) => header.test(l));
  if (at < 0) return [];
  const starts = [...lines[at]!.matchAll(/\S+(?: \S+)*/g)].map((m) => m.index!);
  return lines.slice(at + 1).filter((l) => l.trim() && !/^[\s-]+$/.test(l)).map((l) => starts.map((s, i) => l.slice(i === 0 ? 0 : s, starts[i + 1] ?? l.length).trim()));
}

/**
 * `Key: value` blocks (LLDP details): a new block starts at each line that `starts` matches;
 * keys are lowercased, inner spaces collapsed, values trimmed and unquoted.
 */
export function keyValueBlocks(output: string, starts: RegExp): Array<{ head: RegExpExecArray; fields: Map<string, string> }> {
  const blocks: Array<{ head: RegExpExecArray; fields: Map<string, string> }> = [];
  for (const line of output.split('\n')) {
    const head = starts.exec(line);
    if (head) {
      blocks.push({ head, fields: new Map() });
      continue;
    }
    const m = /^[\s-]*([A-Za-z][^:]*?)\s*:\s?(.*)$/.exec(line);
    const block = blocks[blocks.length - 1];
    if (!m || !block) continue;
    const key = m[1]!.replace(/\s+/g, ' ').toLowerCase();
    if (!block.fields.has(key)) block.fields.set(key, m[2]!.trim().replace(/^"(.*)"$/, '$1'));
  }
  return blocks;
}

/** An LLDP field that says nothing (`not advertised`, `N/A`, empty). */
export function lldpValue(v: string | undefined): string | undefined {
  const t = v?.trim();
  return !t || /^(not advertised|n\/a|none|-+)$/i.test(t) ? undefined : t;
}

/** A neighbour from its three fields, or null without a chassis id and a port id. */
export function neighbor(chassisId: string | undefined, portId: string | undefined, systemName: string | undefined): LldpNeighbor | null {
  const c = lldpValue(chassisId);
  const p = lldpValue(portId);
  if (!c || !p) return null;
  const s = lldpValue(systemName);
  return s ? { chassisId: c, portId: p, systemName: s } : { chassisId: c, portId: p };
}

/**
 * The wiring of `ports` (the names the service registered) from what the switch printed: MACs
 * and neighbours by port as printed, matched through `key` (one spelling for every way the
 * family writes a port: `Eth1/3`, `Ethernet1/3`). Requested ports are listed under their own
 * names (empty when the switch knows nothing of them); other ports the switch learned
 * anything on, under the name it printed.
 */
export function wiringByPort(
  ports: string[],
  macs: Map<string, string[]>,
  lldp: Array<{ port: string; neighbor: LldpNeighbor }>,
  key: (name: string) => string | null,
): Map<string, PortWiring> {
  const byKey = new Map<string, string>();
  const out = new Map<string, PortWiring>();
  for (const p of ports) {
    byKey.set(key(p) ?? p, p);
    out.set(p, { macs: [], lldp: [] });
  }
  const entry = (printed: string): PortWiring => {
    const k = key(printed) ?? printed;
    const name = byKey.get(k) ?? printed;
    byKey.set(k, name);
    let w = out.get(name);
    if (!w) out.set(name, (w = { macs: [], lldp: [] }));
    return w;
  };
  for (const [printed, list] of macs) {
    const w = entry(printed);
    w.macs = [...new Set([...w.macs, ...list])].sort();
  }
  for (const { port, neighbor: n } of lldp) entry(port).lldp.push(n);
  return out;
}
