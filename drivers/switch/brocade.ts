/**
 * Brocade VDX (Network OS), HIL's `…/switches/brocade`: the NOS REST API, XML in the namespace
 * `urn:brocade.com:mgmt:brocade-interface`, one switch registration per interface type as HIL
 * did (`interface_type`, e.g. TenGigabitEthernet), ports `101/0/10` quoted in the URL
 * (`…/interface/TenGigabitEthernet/%22101/0/10%22`).
 *
 * HIL's requests, with its bugs fixed: well-formed bodies (HIL's tagged add sent
 * `<vlan><add>V</vlan></vlan>`), every refusal raised with the switch's message (HIL only logged
 * them), VLAN lists expanded, each change read back. The native VLAN is `switchport trunk
 * native-vlan` sent untagged (`tag native-vlan` removed, as HIL did); a port that is not a trunk,
 * or whose allowed list is not explicit (absent or `all`), is made a trunk with an empty list
 * first. Ports are shut with the interface's `shutdown` leaf (POST to create, DELETE to remove).
 * Wiring: the `get-mac-address-table` and `get-lldp-neighbor-detail` operations, all pages.
 * NOS keeps its configuration by itself: there is no save.
 */
import { LLDP_REFUSED, RestReading, RestTable, TableContext, TableReply, TableRequest } from './http/driver';
import { restSwitchEntry } from './http/entry';
import { isGroupMac, neighbor, normalizeMac, wiringByPort } from './wiring';
import { at, child, descendants, el, XmlNode } from './http/xml';
import { parseVlanList } from './ssh/vlans';
import { LldpNeighbor, SwitchError } from './types';

export const BROCADE_NS = 'urn:brocade.com:mgmt:brocade-interface';
const MAC_NS = 'urn:brocade.com:mgmt:brocade-mac-address-table';
const LLDP_NS = 'urn:brocade.com:mgmt:brocade-lldp-ext';
/** Pages of a wiring table read at most (a page holds the switch's own count of rows). */
const MAX_PAGES = 200;

/** A table the switch still has more of after MAX_PAGES: a verdict on part of it could be wrong, so none is given. */
const tooLong = (what: string) => new SwitchError(`the switch's ${what} has more than ${MAX_PAGES} pages (or its paging does not end): not read`);

/** A page that says the table has more but gives no row to go on from. */
const cutShort = (what: string) => new SwitchError(`the switch's ${what} says it has more, but its page ends without a row to read on from: not read`);

/** A VDX port as read: the contract's reading plus what the reset needs. */
export interface BrocadeReading extends RestReading {
  switchport: boolean;
  mode: string | null;
  /** the native VLAN is sent tagged (`switchport trunk tag native-vlan`) */
  tagNative: boolean;
}

export const BROCADE_INTERFACE_TYPES = ['GigabitEthernet', 'TenGigabitEthernet', 'TwentyFiveGigabitEthernet', 'FortyGigabitEthernet', 'HundredGigabitEthernet'] as const;

/** `/rest/config/running/interface/<type>/%22<port>%22[/<suffix>]`, as HIL built it. */
export function brocadeUrl(ctx: TableContext, port: string, suffix = ''): string {
  return `/rest/config/running/interface/${ctx.interfaceType}/%22${port}%22${suffix ? `/${suffix}` : ''}`;
}

/** The document element of an answer, which must be `name` in `ns`. */
function doc(reply: TableReply, name: string, ns: string): XmlNode {
  const x = reply.xml;
  if (!x) throw new SwitchError(`expected <${name}> in ${ns}, the switch answered nothing`);
  if (x.name !== name || x.ns !== ns) throw new SwitchError(`expected <${name}> in ${ns}, the switch answered <${x.name}>${x.ns ? ` in ${x.ns}` : ''}`);
  return x;
}

function vlanList(text: string): number[] | 'all' {
  try {
    return parseVlanList(text.replace(/\s+/g, ''));
  } catch (err) {
    throw new SwitchError((err as Error).message);
  }
}

/** The trunk's allowed list: `<all>`, `<none>`, `<add>` lists (absent: not explicit, taken as every VLAN). */
function allowed(trunk: XmlNode): number[] | 'all' {
  const vlan = at(trunk, 'allowed/vlan', BROCADE_NS);
  if (!vlan || child(vlan, 'all') || child(vlan, 'except')) return 'all';
  if (child(vlan, 'none')) return [];
  const out = new Set<number>();
  for (const add of vlan.children.filter((c) => c.name === 'add')) {
    const list = vlanList(add.text);
    if (list === 'all') return 'all';
    for (const v of list) out.add(v);
  }
  return [...out].sort((a, b) => a - b);
}

const trunkVlans = (vlans: string) => el('vlan', [vlans]);

/** Is `word` (`Te`, `TenGigabitEthernet`) the name, or a short name, of the interface type `type` (lowercased)? */
const ofType = (word: string, type: string) => word.length >= 2 && type.startsWith(word.toLowerCase());

export const BROCADE_TABLE: RestTable<BrocadeReading> = {
  family: 'Brocade VDX (Network OS)',
  mediaType: 'application/vnd.configuration.resource+xml',
  probe: { method: 'GET', path: '/rest' },
  // The shutdown leaf is a request of its own: a VLAN change's reading leaves it out.
  read: (port, ctx, adminState) => [
    { method: 'GET', path: brocadeUrl(ctx, port, 'switchport/mode'), tolerate: [404] },
    { method: 'GET', path: brocadeUrl(ctx, port, 'switchport/trunk'), tolerate: [404] },
    ...(adminState ? [{ method: 'GET' as const, path: brocadeUrl(ctx, port, 'shutdown'), tolerate: [404] }] : []),
  ],
  parse([modeReply, trunkReply, shutReply]) {
    const switchport = modeReply!.status !== 404;
    const mode = switchport ? at(doc(modeReply!, 'mode', BROCADE_NS), 'vlan-mode', BROCADE_NS)?.text ?? null : null;
    const enabled = shutReply === undefined ? undefined : shutReply.status === 404 || doc(shutReply, 'shutdown', BROCADE_NS).text === 'false';
    const other: string[] = [];
    if (!switchport) other.push('not a switch port');
    else if (mode !== 'trunk') other.push(`${mode ?? 'no'} mode`);
    if (mode !== 'trunk' || trunkReply!.status === 404) {
      return { ready: false, switchport, mode, tagNative: false, native: null, tagged: [], enabled, other };
    }
    const trunk = doc(trunkReply!, 'trunk', BROCADE_NS);
    const nativeText = child(trunk, 'native-vlan', BROCADE_NS)?.text;
    const native = nativeText === undefined ? null : Number(nativeText);
    if (native !== null && !(Number.isInteger(native) && native >= 1 && native <= 4094)) throw new SwitchError(`native-vlan "${nativeText}" is not a VLAN id`);
    const tagNative = at(trunk, 'tag/native-vlan', BROCADE_NS) !== undefined;
    if (tagNative && native !== null) other.push(`native VLAN ${native} sent tagged`);
    const list = allowed(trunk);
    return { ready: true, switchport, mode, tagNative, native, tagged: list === 'all' ? list : list.filter((v) => v !== native), enabled, other };
  },
  reset(port, before, ctx) {
    const out: TableRequest[] = [];
    // Creating what exists answers 409, deleting what is gone 404: the port is as asked.
    if (!before.switchport) out.push({ method: 'POST', path: brocadeUrl(ctx, port), body: el('switchport'), tolerate: [409] });
    if (before.mode !== 'trunk') out.push({ method: 'PUT', path: brocadeUrl(ctx, port, 'switchport/mode'), body: el('mode', [el('vlan-mode', 'trunk')]) });
    if (before.tagged === 'all' || before.tagged.length || !before.ready) {
      out.push({ method: 'PUT', path: brocadeUrl(ctx, port, 'switchport/trunk/allowed/vlan'), body: trunkVlans(el('none', 'true')) });
    }
    if (before.native !== null) out.push({ method: 'DELETE', path: brocadeUrl(ctx, port, 'switchport/trunk/native-vlan'), tolerate: [404] });
    if (before.tagNative) out.push({ method: 'DELETE', path: brocadeUrl(ctx, port, 'switchport/trunk/tag/native-vlan'), tolerate: [404] });
    return out;
  },
  setNative: (port, vlan, _old, ctx) => [
    { method: 'DELETE', path: brocadeUrl(ctx, port, 'switchport/trunk/tag/native-vlan'), tolerate: [404] },
    { method: 'PUT', path: brocadeUrl(ctx, port, 'switchport/trunk'), body: el('trunk', [el('native-vlan', vlan)]) },
  ],
  removeNative: (port, _old, ctx) => [{ method: 'DELETE', path: brocadeUrl(ctx, port, 'switchport/trunk/native-vlan'), tolerate: [404] }],
  addTagged: (port, vlan, ctx) => [{ method: 'PUT', path: brocadeUrl(ctx, port, 'switchport/trunk/allowed/vlan'), body: trunkVlans(el('add', vlan)) }],
  removeTagged: (port, vlan, ctx) => [{ method: 'PUT', path: brocadeUrl(ctx, port, 'switchport/trunk/allowed/vlan'), body: trunkVlans(el('remove', vlan)) }],
  setEnabled: (port, enabled, _before, ctx) => (enabled
    ? [{ method: 'DELETE', path: brocadeUrl(ctx, port, 'shutdown'), tolerate: [404] }]
    : [{ method: 'POST', path: brocadeUrl(ctx, port), body: el('shutdown', 'true'), tolerate: [409] }]),
  errorText(reply) {
    const messages = reply.xml ? descendants(reply.xml, 'error-message').map((m) => m.text).filter(Boolean) : [];
    return messages.length ? messages.join(' / ') : undefined;
  },
  async wiring(ports, send, ctx) {
    const type = ctx.interfaceType.toLowerCase();
    const macs = new Map<string, string[]>();
    let last: string | undefined;
    for (let page = 0; ; page++) {
      if (page === MAX_PAGES) throw tooLong('MAC address table');
      const input = last ? [el('last-mac-address-details', [el('last-mac-address', last)])] : [];
      const out = doc(await send({ method: 'POST', path: '/rest/operational-state/get-mac-address-table', body: el('get-mac-address-table', input), read: true }), 'output', MAC_NS);
      const rows = out.children.filter((c) => c.name === 'mac-address-table');
      for (const row of rows) {
        const mac = normalizeMac(child(row, 'mac-address')?.text ?? '');
        const iface = child(row, 'forwarding-interface');
        if (!mac || isGroupMac(mac) || child(row, 'mac-type')?.text.toLowerCase() !== 'dynamic') continue;
        if (child(iface, 'interface-type')?.text.toLowerCase() !== type) continue;
        const port = child(iface, 'interface-name')?.text;
        if (port) macs.set(port, [...(macs.get(port) ?? []), mac]);
      }
      if (child(out, 'has-more')?.text !== 'true') break;
      // More to come, but no row to ask for the next page after: the rest would go unread.
      last = child(rows[rows.length - 1], 'mac-address')?.text;
      if (!last) throw cutShort('MAC address table');
    }
    const lldp: Array<{ port: string; neighbor: LldpNeighbor }> = [];
    let lastIndex: string | undefined;
    for (let page = 0; ; page++) {
      if (page === MAX_PAGES) throw tooLong('LLDP neighbour table');
      const input = lastIndex ? [el('last-rcvd-ifindex', lastIndex)] : [];
      const reply = await send({ method: 'POST', path: '/rest/operational-state/get-lldp-neighbor-detail', body: el('get-lldp-neighbor-detail', input), read: true, tolerate: LLDP_REFUSED });
      // Refused at once (LLDP not enabled): no neighbours. Refused midway, the table would be cut short.
      if (reply.status >= 300 && page === 0) break;
      if (reply.status >= 300) throw new SwitchError(`the LLDP neighbour table was refused at page ${page + 1} (HTTP ${reply.status}): not read`);
      const out = doc(reply, 'output', LLDP_NS);
      const rows = out.children.filter((c) => c.name === 'lldp-neighbor-detail');
      for (const row of rows) {
        // `Te 101/0/10`: the type's short name, then the port. A row of another interface type
        // (`Fo 101/0/10`) is another port of the same number: not this registration's.
        const words = (child(row, 'local-interface-name')?.text ?? '').split(/\s+/);
        const port = words.pop();
        if (words.length && !ofType(words.join(''), type)) continue;
        const n = neighbor(child(row, 'remote-chassis-id')?.text, child(row, 'remote-interface-name')?.text ?? child(row, 'remote-interface-mac')?.text, child(row, 'remote-system-name')?.text);
        if (port && n) lldp.push({ port, neighbor: n });
      }
      if (child(out, 'has-more')?.text !== 'true') break;
      lastIndex = child(rows[rows.length - 1], 'local-interface-ifindex')?.text;
      if (!lastIndex) throw cutShort('LLDP neighbour table');
    }
    return wiringByPort(ports, macs, lldp, (name) => name);
  },
};

export const brocade = restSwitchEntry({
  name: 'brocade',
  table: BROCADE_TABLE,
  interfaceTypes: BROCADE_INTERFACE_TYPES,
  example: 'https://127.0.0.1:8443',
  nativeFirst: true,
});
