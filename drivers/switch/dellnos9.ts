/**
 * Dell OS9 (Dell Networking OS 9, e.g. the S3048-ON), HIL's `…/switches/dellnos9`: the OS9 REST
 * API. OS9 is VLAN-centric, so VLAN membership is changed and read through its CLI over REST
 * (`POST /api/running/dell/_operations/cli` with `<input><config-commands>` or
 * `<show-command>`, as HIL did), and the port itself (hybrid mode, switchport, shutdown) through
 * its interface resource (`/api/running/dell/interfaces/interface/tengig-1-3`, namespace
 * `http://www.dell.com/ns/dell:0.1/root`).
 *
 * A port hilt changes is a hybrid switchport (`portmode hybrid`, `switchport`): untagged in the
 * native network's VLAN, tagged in the others. A hybrid port with no untagged VLAN of the
 * service's is untagged in the switch's default VLAN (taken as VLAN 1, reported as no native
 * VLAN), which every other such port shares: hence HIL's ordering rules, which hilt enforces as a
 * 409 at the call (a tagged network only beside a native one, the native one detached last;
 * SwitchDriverEntry.nativeFirst), and ports shut while they carry nothing (setEnabled).
 *
 * Better than HIL: every refusal raised with the switch's message (an HTTP error, or a `% Error`
 * line in a CLI answer), VLAN lists expanded, each change read back; the VLANs are read whatever
 * the port's administrative state (HIL read none on a shut port). Saved (`write memory`) at the
 * end of each session that changed something, as HIL did at every disconnect.
 */
import { LLDP_REFUSED, RestReading, RestTable, TableContext, TableReply, TableRequest } from './http/driver';
import { restSwitchEntry } from './http/entry';
import { isGroupMac, neighbor, normalizeMac, wiringByPort } from './wiring';
import { child, descendants, el } from './http/xml';
import { parseVlanList } from './ssh/vlans';
import { LldpNeighbor, SwitchError } from './types';

export const DELL_NS = 'http://www.dell.com/ns/dell:0.1/root';
const CLI_PATH = '/api/running/dell/_operations/cli';
/** The VLAN every switchport without another untagged VLAN is untagged in. */
const DEFAULT_VLAN = 1;

/** interface_type (the CLI's name) → the interface resource's prefix and the short name the CLI prints. */
export const DELL_INTERFACE_TYPES: Record<string, { prefix: string; short: string }> = {
  GigabitEthernet: { prefix: 'gige-', short: 'Gi' },
  TenGigabitEthernet: { prefix: 'tengig-', short: 'Te' },
  TwentyfiveGigabitEthernet: { prefix: 'twentyfivegig-', short: 'Tf' },
  fortyGigE: { prefix: 'fortygig-', short: 'Fo' },
  peGigabitEthernet: { prefix: 'pegig-', short: 'pe' },
  FiftyGigabitEthernet: { prefix: 'fiftygig-', short: 'Fi' },
  HundredGigabitEthernet: { prefix: 'hundredgig-', short: 'Hu' },
};

export interface DellReading extends RestReading {
  switchport: boolean;
  hybrid: boolean;
  /** always read: the port's resource answers it with its mode */
  enabled: boolean;
}

const kind = (ctx: TableContext) => DELL_INTERFACE_TYPES[ctx.interfaceType]!;
/** `tengig-1-3`: the interface resource's name of a port */
export const dellName = (ctx: TableContext, port: string) => `${kind(ctx).prefix}${port.replace(/\//g, '-')}`;
export const dellUrl = (ctx: TableContext, port: string) => `/api/running/dell/interfaces/interface/${dellName(ctx, port)}`;

/** A CLI request: configuration lines, or one show command (without `show`, as OS9 takes it). */
export function cli(what: 'config-commands' | 'show-command' | 'exec-command', lines: string[]): TableRequest {
  return { method: 'POST', path: CLI_PATH, body: el('input', [el(what, lines.join('\r\n'))]), ...(what === 'show-command' ? { read: true } : {}) };
}

const member = (ctx: TableContext, port: string) => `${ctx.interfaceType} ${port}`;

/** The interface resource as hilt PUTs it: its mode, and its administrative state. */
function putInterface(ctx: TableContext, port: string, s: { hybrid: boolean; switchport: boolean; enabled: boolean }): TableRequest {
  return {
    method: 'PUT',
    path: dellUrl(ctx, port),
    body: el('interface', [el('name', dellName(ctx, port)), el('portmode', [el('hybrid', s.hybrid)]), ...(s.switchport ? [el('switchport')] : []), el('shutdown', !s.enabled)]),
  };
}

/** The text a CLI answer printed (`<output><command>…`). */
function cliText(reply: TableReply): string {
  const x = reply.xml;
  if (!x || x.name !== 'output' || x.ns !== DELL_NS) throw new SwitchError(`expected <output> in ${DELL_NS}, the switch answered ${x ? `<${x.name}>` : 'nothing'}`);
  return descendants(x, 'command').map((c) => c.text).join('\n');
}

/** `show interfaces switchport …`: the `Vlan membership` lines by code (U, T, others), wrapped lists joined. */
export function membership(text: string): { name?: string; codes: Map<string, number[]> } {
  const codes = new Map<string, number[]>();
  let name: string | undefined;
  let inList = false;
  let last: string | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    const n = /^\s*Name:\s*(.+?)\s*$/.exec(line);
    if (n) name = n[1];
    if (/^\s*Vlan membership:/i.test(line)) {
      inList = true;
      continue;
    }
    if (!inList) continue;
    if (!line.trim()) {
      inList = false;
      continue;
    }
    const m = /^\s*([A-Za-z])\s+([\d,\-\s]+)$/.exec(line);
    const more = /^\s+([\d,\-\s]+)$/.exec(line);
    const code = m ? m[1]! : more && last ? last : undefined;
    if (!code) continue;
    let list: number[] | 'all';
    try {
      list = parseVlanList((m ? m[2]! : more![1]!).replace(/\s+/g, '').replace(/,$/, ''));
    } catch (err) {
      throw new SwitchError((err as Error).message);
    }
    if (list === 'all') throw new SwitchError(`membership ${code} covers every VLAN`);
    codes.set(code, [...(codes.get(code) ?? []), ...list]);
    last = code;
  }
  return { name, codes };
}

const CODE_WORDS: Record<string, string> = { x: 'Dot1x untagged', X: 'Dot1x tagged', G: 'GVRP tagged', M: 'trunk', i: 'internal untagged', I: 'internal tagged', v: 'VLT untagged', V: 'VLT tagged' };

export const DELL_OS9_TABLE: RestTable<DellReading> = {
  family: 'Dell OS9 (S-series)',
  mediaType: 'application/xml',
  probe: { method: 'GET', path: '/api' },
  read: (port, ctx) => [
    { method: 'GET', path: `${dellUrl(ctx, port)}?with-defaults` },
    { ...cli('show-command', [`interfaces switchport ${member(ctx, port)}`]), tolerate: [400, 500] },
  ],
  parse([ifReply, showReply], port) {
    const x = ifReply!.xml;
    if (!x || x.name !== 'interface' || x.ns !== DELL_NS) throw new SwitchError(`expected <interface> in ${DELL_NS}, the switch answered ${x ? `<${x.name}>` : 'nothing'}`);
    const switchport = child(x, 'switchport', DELL_NS) !== undefined;
    const hybrid = child(child(x, 'portmode', DELL_NS), 'hybrid', DELL_NS)?.text === 'true';
    // OS9 ports are shut by default: a reading without the leaf is a shut port.
    const enabled = child(x, 'shutdown', DELL_NS)?.text === 'false';
    const other: string[] = [];
    if (!switchport) return { ready: false, switchport, hybrid, native: null, tagged: [], enabled, other: ['not a switchport'] };
    if (showReply!.status >= 300) {
      const said = showReply!.xml ? descendants(showReply!.xml, 'error-message').map((m) => m.text).join(' / ') : showReply!.text;
      throw new SwitchError(`"show interfaces switchport" was refused (HTTP ${showReply!.status}): ${said.replace(/\s+/g, ' ').trim()}`);
    }
    const { name, codes } = membership(cliText(showReply!));
    if (!name) throw new SwitchError(`no "Name:" line for ${port} in "show interfaces switchport"`);
    const untagged = codes.get('U') ?? [];
    if (untagged.length > 1) other.push(`untagged in several VLANs (${untagged.join(', ')})`);
    const native = untagged.length === 1 && untagged[0] !== DEFAULT_VLAN ? untagged[0]! : null;
    for (const [code, vlans] of codes) if (code !== 'U' && code !== 'T') other.push(`${CODE_WORDS[code] ?? code} in ${vlans.join(',')}`);
    const tagged = [...new Set(codes.get('T') ?? [])].sort((a, b) => a - b);
    return { ready: hybrid, switchport, hybrid, native, tagged, enabled, other };
  },
  reset(port, before, ctx) {
    if (!before.switchport || !before.hybrid) {
      // Hybrid mode is set on a port that is not a switchport yet (which drops its VLANs).
      const out = before.switchport ? [putInterface(ctx, port, { hybrid: false, switchport: false, enabled: before.enabled })] : [];
      return [...out, putInterface(ctx, port, { hybrid: true, switchport: true, enabled: before.enabled })];
    }
    const tagged = before.tagged === 'all' ? [] : before.tagged;
    const lines = [
      ...tagged.flatMap((v) => [`interface vlan ${v}`, ` no tagged ${member(ctx, port)}`]),
      ...(before.native !== null ? [`interface vlan ${before.native}`, ` no untagged ${member(ctx, port)}`] : []),
    ];
    return lines.length ? [cli('config-commands', lines)] : [];
  },
  // OS9 refuses a second untagged VLAN: the old one goes first.
  setNative: (port, vlan, old, ctx) => [cli('config-commands', [
    ...(old !== null ? [`interface vlan ${old}`, ` no untagged ${member(ctx, port)}`] : []),
    `interface vlan ${vlan}`, ` untagged ${member(ctx, port)}`,
  ])],
  removeNative: (port, old, ctx) => [cli('config-commands', [`interface vlan ${old}`, ` no untagged ${member(ctx, port)}`])],
  addTagged: (port, vlan, ctx) => [cli('config-commands', [`interface vlan ${vlan}`, ` tagged ${member(ctx, port)}`])],
  removeTagged: (port, vlan, ctx) => [cli('config-commands', [`interface vlan ${vlan}`, ` no tagged ${member(ctx, port)}`])],
  setEnabled: (port, enabled, before, ctx) => [putInterface(ctx, port, { hybrid: before.hybrid, switchport: before.switchport, enabled })],
  errorText(reply) {
    const messages = reply.xml ? descendants(reply.xml, 'error-message').map((m) => m.text).filter(Boolean) : [];
    return messages.length ? messages.join(' / ') : undefined;
  },
  refusal(reply) {
    if (!reply.xml) return undefined;
    const lines = descendants(reply.xml, 'command').flatMap((c) => c.text.split('\n')).filter((l) => /^\s*% ?Error/i.test(l));
    return lines.length ? lines.join(' / ') : undefined;
  },
  async wiring(ports, send, ctx) {
    const short = kind(ctx).short.toLowerCase();
    /** `Te 1/3` (or `TenGigabitEthernet 1/3`) of this switch's interface type → `1/3` */
    const portOf = (type: string, name: string) => {
      const t = type.toLowerCase();
      return t === short || t === ctx.interfaceType.toLowerCase() ? name : null;
    };
    const macs = new Map<string, string[]>();
    for (const line of cliText(await send(cli('show-command', ['mac-address-table']))).split('\n')) {
      // ` 1512    00:01:e8:8b:5d:8f   Dynamic   Te 1/3   Active`
      const m = /^\s*\*?\s*\d+\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+(?:\/\d+)+)\s*(\S*)/.exec(line);
      if (!m || m[2]!.toLowerCase() !== 'dynamic') continue;
      const mac = normalizeMac(m[1]!);
      const port = portOf(m[3]!, m[4]!);
      if (mac && port && !isGroupMac(mac)) macs.set(port, [...(macs.get(port) ?? []), mac]);
    }
    const lldp: Array<{ port: string; neighbor: LldpNeighbor }> = [];
    let block: { port: string | null; fields: Map<string, string> } | undefined;
    const flush = () => {
      const n = block?.port ? neighbor(block.fields.get('remote chassis id'), block.fields.get('remote port id'), block.fields.get('remote system name')) : null;
      if (block?.port && n) lldp.push({ port: block.port, neighbor: n });
    };
    // A switch that refuses the command (LLDP not enabled) has no neighbours to read.
    const lldpReply = await send({ ...cli('show-command', ['lldp neighbors detail']), tolerate: LLDP_REFUSED });
    for (const line of (lldpReply.status >= 300 ? '' : cliText(lldpReply)).split('\n')) {
      const head = /^\s*Local Interface\s+(\S+)\s+(\d+(?:\/\d+)+)\s+has/i.exec(line);
      if (head) {
        flush();
        block = { port: portOf(head[1]!, head[2]!), fields: new Map() };
        continue;
      }
      // A rule of dashes ends one neighbour of the port: a port may have several.
      if (block && /^\s*-{5,}\s*$/.test(line)) {
        flush();
        block = { port: block.port, fields: new Map() };
        continue;
      }
      const kv = /^\s*([A-Za-z][A-Za-z ]*?)\s*:\s*(.*?)\s*$/.exec(line);
      if (block && kv && !block.fields.has(kv[1]!.toLowerCase())) block.fields.set(kv[1]!.toLowerCase(), kv[2]!);
    }
    flush();
    return wiringByPort(ports, macs, lldp, (name) => name);
  },
  save: cli('exec-command', ['write memory']),
};

export const dellNos9 = restSwitchEntry({
  name: 'dellnos9',
  table: DELL_OS9_TABLE,
  interfaceTypes: Object.keys(DELL_INTERFACE_TYPES),
  example: 'https://127.0.0.1:8888',
  nativeFirst: true,
});
