/**
 * Dell SmartFabric OS10, `…/switches/dellos10` (a family HIL never had): SSH password login
 * straight to `OS10#` (no enable step), `terminal length 0`, `write memory`.
 *
 * In trunk mode the untagged VLAN is the port's `switchport access vlan`, and `switchport trunk
 * allowed vlan` adds to the tagged list; OS10 has a "no untagged VLAN" of its own (`no
 * switchport access vlan`), so it needs no dummy VLAN. A VLAN must exist before a port uses it:
 * `interface vlan <id>` (then `exit`) in configuration mode creates it, and does nothing to
 * one that exists. A factory port is an access port of VLAN 1: it is made an empty trunk
 * before its first change. The running configuration leaves the default VLAN 1 out (a trunk
 * without a `switchport access vlan` line is untagged in it) and says `no switchport access
 * vlan` of a port without an untagged VLAN.
 */
import { sshSwitchEntry } from './ssh/driver';
import type { PortReading, SwitchTable } from './ssh/table';
import { formatVlanList } from './vlans';
import { parseVlanList } from './ssh/vlans';
import { SwitchError } from './types';
import { headerColumns, neighbor } from './wiring';

/** One spelling of an OS10 port, however printed (`ethernet1/1/3`, `ethernet 1/1/3`, `Eth 1/1/3`); null for anything else (`port-channel1`, `vlan1`). */
export const os10Port = (name: string) => {
  const m = /^e(?:th(?:ernet)?)?\s*(\d+\/\d+\/\d+(?::\d+)?)$/i.exec(name.trim());
  return m ? `ethernet${m[1]}` : null;
};

/** The tagged VLANs of a reading: its allowed list without the untagged one. */
const taggedOf = (r: PortReading | undefined) => (r && r.allowed !== 'all' ? r.allowed.filter((v) => v !== r.native) : []);

export const DELL_OS10_TABLE: SwitchTable = {
  family: 'Dell OS10',
  dialect: {
    auth: ['password', 'keyboard-interactive'],
    enable: false,
    pagingOff: ['terminal length 0'],
    pager: /--more--\s*$/i,
    // `% Error: Unrecognized command.`, `% Error: Illegal parameter.`, `% Error: Vlan 1001 does not exist.`
    errors: [/^% Error/i, /^% /],
  },
  configure: 'configure terminal',
  enterInterface: (port) => [`interface ${port}`],
  leave: ['end'],
  reset: (ctx) => {
    // A list that covers every VLAN reads as "all", which names none to take off: take them all.
    const tagged = ctx.reading?.allowed === 'all' ? '1-4093' : formatVlanList(taggedOf(ctx.reading));
    return ['switchport mode trunk', ...(tagged !== 'none' ? [`no switchport trunk allowed vlan ${tagged}`] : []), 'no switchport access vlan'];
  },
  // The untagged VLAN of a trunk is its access VLAN: setting it replaces the old one.
  setNative: (vlan) => [`switchport access vlan ${vlan}`],
  removeNative: () => ['no switchport access vlan'],
  addTagged: (vlan) => [`switchport trunk allowed vlan ${vlan}`],
  removeTagged: (vlan) => [`no switchport trunk allowed vlan ${vlan}`],
  vlans: { create: (vlan) => [`interface vlan ${vlan}`, 'exit'] },
  show: (port) => `show running-configuration interface ${port}`,
  parse(output, port): PortReading {
    const lines = output.split('\n').map((l) => l.trim());
    if (!lines.some((l) => /^interface ethernet/i.test(l))) throw new SwitchError(`no "interface ${port}" in the running configuration`);
    const value = (re: RegExp) => lines.map((l) => re.exec(l)).find(Boolean)?.[1];
    const routed = lines.includes('no switchport');
    const trunk = /^trunk$/i.test(value(/^switchport mode (\S+)$/) ?? '');
    const accessText = value(/^switchport access vlan (\d+)$/);
    // The running configuration leaves the default out: no `switchport access vlan` line is the
    // default VLAN 1, in trunk mode as in access mode; a port without one says `no switchport access vlan`.
    const access = accessText !== undefined ? Number(accessText) : lines.includes('no switchport access vlan') ? null : 1;
    // a member of a port-channel (` channel-group 10 mode active`, ` no switchport`) carries the channel's VLANs
    const channel = value(/^channel-group (\d+)\b/);
    if (channel !== undefined) return { mode: 'other', access: null, native: null, allowed: [], other: [`member of port-channel${channel} (carries its VLANs)`] };
    if (routed) return { mode: 'other', access: null, native: null, allowed: [] };
    if (!trunk) return { mode: 'access', access, native: null, allowed: [] };
    // every line of the list (`switchport trunk allowed vlan` adds to it), not only the first
    const lists = lines.map((l) => /^switchport trunk allowed vlan (.+)$/.exec(l)?.[1]).filter((x): x is string => x !== undefined);
    const tagged = parseVlanList(lists.join(','));
    const allowed = tagged === 'all' ? tagged : [...new Set([...tagged, ...(access === null ? [] : [access])])].sort((a, b) => a - b);
    return { mode: 'trunk', access, native: access, allowed };
  },
  save: { command: 'write memory', done: /^(?![\s\S]*% )/ },
  adminState: {
    // the running configuration says ` shutdown` or ` no shutdown`
    show: (port) => `show running-configuration interface ${port}`,
    parse(output) {
      const lines = output.split('\n').map((l) => l.trim());
      if (lines.includes('shutdown')) return false;
      if (lines.includes('no shutdown')) return true;
      throw new SwitchError('no "shutdown" or "no shutdown" line');
    },
    set: (enabled) => [enabled ? 'no shutdown' : 'shutdown'],
  },
  wiring: {
    // VlanId, Mac Address, Type, Interface (`ethernet1/1/3`)
    macTable: 'show mac address-table',
    // Loc PortID, Rem Host Name, Rem Port Id, Rem Chassis Id
    lldp: 'show lldp neighbors',
    parseLldp: (output) => headerColumns(output, /Loc PortID\s+Rem Host Name/i).flatMap((r) => {
      const n = neighbor(r[3], r[2], r[1]);
      return n && r[0] ? [{ port: r[0], neighbor: n }] : [];
    }),
    portKey: os10Port,
  },
};

export const dellOs10 = sshSwitchEntry({
  name: 'dellos10',
  table: DELL_OS10_TABLE,
  portName: /^ethernet\d+\/\d+\/\d+(:\d+)?$/,
  portFormat: 'ethernet1/1/1 (or ethernet1/1/1:1 for a breakout)',
});
