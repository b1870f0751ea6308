/**
 * Arista EOS, `…/switches/arista_eos` (a family HIL never had): SSH password login, `enable`
 * when the account lands at `>`, `terminal length 0`, `write memory`.
 *
 * EOS has a "no untagged VLAN" of its own, so it needs no dummy VLAN: `switchport trunk native
 * vlan tag` makes the trunk tag its native VLAN too, i.e. accept and send nothing untagged
 * (shown as `Administrative Native VLAN tagging: enabled`). Setting a native VLAN id replaces it.
 *
 * EOS takes a VLAN on a trunk that does not exist, lists it on the port and forwards nothing on
 * it (VLAN 1 exists by default; all others only once configured): the session makes each VLAN
 * it puts on a port first (`vlan <id>`, `exit` in configuration mode, once per session; nothing
 * for one that exists) and never removes one.
 */
import { sshSwitchEntry } from './ssh/driver';
import { keyValues, leadingVlan, PortReading, samePort, SwitchTable } from './ssh/table';
import { headerColumns, neighbor } from './wiring';
import type { LldpNeighbor } from './types';
import { parseVlanList } from './ssh/vlans';
import { SwitchError } from './types';

/** `Et1`, `Ethernet1`, `ethernet 49/1` → `ethernet1`, `ethernet49/1`; `Po1` → `port-channel1`; anything else (`Router`, `CPU`, `Vlan10`) is no port. */
function eosPort(name: string): string | null {
  const eth = /^et(?:h(?:ernet)?)?\s*(\d+(?:\/\d+){0,2})$/i.exec(name.trim());
  if (eth) return `ethernet${eth[1]}`;
  const po = /^po(?:rt-channel)?\s*(\d+)$/i.exec(name.trim());
  return po ? `port-channel${po[1]}` : null;
}

/**
 * `show lldp neighbors detail`: `Interface Ethernet1 detected 1 LLDP neighbors:`, then per
 * neighbour a `Neighbor …` line and `Chassis ID     : …`, `Port ID     : "…"`, `System Name: "…"`.
 */
function eosLldp(output: string): Array<{ port: string; neighbor: LldpNeighbor }> {
  const out: Array<{ port: string; neighbor: LldpNeighbor }> = [];
  let port: string | undefined;
  let cur: Map<string, string> | undefined;
  const flush = () => {
    const n = cur && neighbor(cur.get('chassis id'), cur.get('port id'), cur.get('system name'));
    if (n && port) out.push({ port, neighbor: n });
    cur = undefined;
  };
  for (const line of output.split('\n')) {
    const iface = /^Interface (\S+) detected \d+ LLDP neighbors?:/i.exec(line.trim());
    if (iface) {
      flush();
      port = iface[1];
      continue;
    }
    if (/^Neighbor /i.test(line.trim())) {
      flush();
      cur = new Map();
      continue;
    }
    const kv = /^[\s-]*([A-Za-z][^:]*?)\s*:\s?(.*)$/.exec(line);
    if (cur && kv) {
      const key = kv[1]!.replace(/\s+/g, ' ').toLowerCase();
      if (!cur.has(key)) cur.set(key, kv[2]!.trim().replace(/^"(.*)"$/, '$1'));
    }
  }
  flush();
  return out;
}

export const ARISTA_EOS_TABLE: SwitchTable = {
  family: 'Arista EOS',
  nativeNeedsAllowed: true,
  dialect: {
    auth: ['password', 'keyboard-interactive'],
    enable: true,
    pagingOff: ['terminal length 0'],
    pager: /--More--\s*$/,
    // `% Invalid input`, `% Incomplete command`, `% Ambiguous command`
    errors: [/^% /],
    echoes: true,
  },
  configure: 'configure terminal',
  enterInterface: (port) => [`interface ${port}`],
  leave: ['end'],
  reset: () => ['switchport', 'switchport mode trunk', 'switchport trunk allowed vlan none', 'switchport trunk native vlan tag'],
  setNative: (vlan, old) => [
    ...(old !== null ? [`switchport trunk allowed vlan remove ${old}`] : []),
    `switchport trunk native vlan ${vlan}`,
    `switchport trunk allowed vlan add ${vlan}`,
  ],
  removeNative: (old) => [`switchport trunk allowed vlan remove ${old}`, 'switchport trunk native vlan tag'],
  addTagged: (vlan) => [`switchport trunk allowed vlan add ${vlan}`],
  removeTagged: (vlan) => [`switchport trunk allowed vlan remove ${vlan}`],
  show: (port) => `show interfaces ${port} switchport`,
  parse(output, port): PortReading {
    const kv = keyValues(output);
    if (!kv.has('name')) throw new SwitchError(`no "Name:" line for ${port}`);
    samePort(kv.get('name')!, port, eosPort);
    const mode = kv.get('administrative mode') ?? '';
    const allowed = kv.get('trunking vlans enabled');
    if (allowed === undefined) throw new SwitchError('no "Trunking VLANs Enabled:" line');
    const tagged = /^enabled/i.test(kv.get('administrative native vlan tagging') ?? '');
    return {
      mode: /^disabled/i.test(kv.get('switchport') ?? '') ? 'other' : /^trunk/i.test(mode) ? 'trunk' : /access/i.test(mode) ? 'access' : 'other',
      access: leadingVlan(kv.get('access mode vlan')),
      native: tagged ? null : leadingVlan(kv.get('trunking native mode vlan')),
      allowed: parseVlanList(allowed),
    };
  },
  save: { command: 'write memory', done: /Copy completed successfully/ },
  vlans: { create: (vlan) => [`vlan ${vlan}`, 'exit'] },
  adminState: {
    show: (port) => `show interfaces ${port} status`,
    // The Status column: `disabled` is a shut port (`errdisabled` is not: the switch shut it).
    // Cut at the header's columns: the Name column before it is the port's description, free text.
    parse(output, port) {
      const key = eosPort(port);
      const row = headerColumns(output, /^\s*Port\s+Name\s+Status\s/i).find((r) => eosPort(r[0] ?? '') === key);
      if (!row) throw new SwitchError(`no row for ${port}`);
      const status = row[2] ?? '';
      if (status === 'disabled') return false;
      if (/^(connected|notconnect|errdisabled|inactive|monitoring|sfpAbsent|xcvrAbsent)$/i.test(status)) return true;
      throw new SwitchError(`no status in "${row.join(' ')}"`);
    },
    set: (enabled) => [enabled ? 'no shutdown' : 'shutdown'],
  },
  wiring: {
    macTable: 'show mac address-table',
    lldp: 'show lldp neighbors detail',
    parseLldp: eosLldp,
    portKey: eosPort,
  },
};

export const aristaEos = sshSwitchEntry({
  name: 'arista_eos',
  table: ARISTA_EOS_TABLE,
  portName: /^Ethernet\d+(\/\d+){0,2}$/,
  portFormat: 'Ethernet1, Ethernet49/1 or Ethernet3/1/1',
});
