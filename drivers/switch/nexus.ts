/**
 * Cisco Nexus (NX-OS), HIL's `…/switches/nexus`: SSH password login straight to the `switch#`
 * prompt (NX-OS checks the password in SSH and prints no login prompt), `terminal length 0`.
 *
 * HIL's sequences, with its shortcuts fixed: the old native VLAN leaves the allowed list, a
 * fresh trunk's implicit "all VLANs" list is replaced by an explicit one (the reset below)
 * before the first change, and a port without a native VLAN has the registration's
 * `dummy_vlan` as native (NX-OS has no "no native VLAN"; the dummy VLAN is kept off the
 * allowed list and carries nothing, as HIL's docs ask: `no vlan <dummy>` on the switch).
 */
import { sshSwitchEntry } from './ssh/driver';
import { keyValues, leadingVlan, PortReading, samePort, SwitchTable, TableContext } from './ssh/table';
import { keyValueBlocks, neighbor } from './wiring';
import { parseVlanList } from './ssh/vlans';
import { SwitchError } from './types';

const dummy = (ctx: TableContext) => ctx.dummyVlan!;

/** `Eth1/3`, `Ethernet1/3`, `ethernet 1/3` → `ethernet1/3`; `Po1` → `port-channel1`; anything else (`sup-eth1(R)`, `Vlan10`) is no port. */
function nexusPort(name: string): string | null {
  const eth = /^e(?:th(?:ernet)?)?\s*(\d+\/\d+(?:\/\d+)?)$/i.exec(name.trim());
  if (eth) return `ethernet${eth[1]}`;
  const po = /^po(?:rt-channel)?\s*(\d+)$/i.exec(name.trim());
  return po ? `port-channel${po[1]}` : null;
}

export const NEXUS_TABLE: SwitchTable = {
  family: 'Cisco Nexus (NX-OS)',
  nativeNeedsAllowed: true,
  dialect: {
    auth: ['password', 'keyboard-interactive'],
    enable: false,
    pagingOff: ['terminal length 0'],
    pager: /--More--\s*$/,
    // `% Invalid command at '^' marker.`, `% Invalid number, range is (1:4094) at '^' marker.`, `ERROR: …`
    errors: [/^% /, /^ERROR:/, /^Error:/],
    legacyAlgorithms: true,
    echoes: true,
  },
  configure: 'configure terminal',
  enterInterface: (port) => [`interface ${port}`],
  leave: ['end'],
  reset: (ctx) => ['switchport', 'switchport mode trunk', 'switchport trunk allowed vlan none', `switchport trunk native vlan ${dummy(ctx)}`],
  // The native VLAN is set before it is allowed, as HIL did.
  setNative: (vlan, old) => [
    ...(old !== null ? [`switchport trunk allowed vlan remove ${old}`] : []),
    `switchport trunk native vlan ${vlan}`,
    `switchport trunk allowed vlan add ${vlan}`,
  ],
  removeNative: (old, ctx) => [`switchport trunk allowed vlan remove ${old}`, `switchport trunk native vlan ${dummy(ctx)}`],
  addTagged: (vlan) => [`switchport trunk allowed vlan add ${vlan}`],
  removeTagged: (vlan) => [`switchport trunk allowed vlan remove ${vlan}`],
  show: (port) => `show interface ${port} switchport`,
  parse(output, port, ctx): PortReading {
    const kv = keyValues(output);
    if (!kv.has('name')) throw new SwitchError(`no "Name:" line for ${port}`);
    samePort(kv.get('name')!, port, nexusPort);
    const mode = kv.get('operational mode') ?? '';
    const native = leadingVlan(kv.get('trunking native mode vlan'));
    const allowed = kv.get('trunking vlans allowed');
    if (allowed === undefined) throw new SwitchError('no "Trunking VLANs Allowed:" line');
    return {
      mode: /^disabled/i.test(kv.get('switchport') ?? '') ? 'other' : /^trunk/i.test(mode) ? 'trunk' : /^access/i.test(mode) ? 'access' : 'other',
      access: leadingVlan(kv.get('access mode vlan')),
      native: native === dummy(ctx) ? null : native,
      allowed: parseVlanList(allowed),
    };
  },
  save: { command: 'copy running-config startup-config', done: /Copy complete/ },
  // A VLAN is made before a port uses it (once per session; nothing for one that exists), never removed.
  vlans: { create: (vlan) => [`vlan ${vlan}`, 'exit'] },
  adminState: {
    show: (port) => `show interface ${port}`,
    // `admin state is down, Dedicated Interface` (NX-OS 6 and later); older releases only say
    // `Ethernet1/3 is down (Administratively down)` on the first line.
    parse(output) {
      const admin = /^\s*admin state is (up|down)\b/im.exec(output);
      if (admin) return admin[1]!.toLowerCase() === 'up';
      const first = /^\s*\S+ is (up|down)\b(.*)$/im.exec(output);
      if (!first) throw new SwitchError('no "<port> is up/down" line');
      return !/Administratively down/i.test(first[2]!);
    },
    set: (enabled) => [enabled ? 'no shutdown' : 'shutdown'],
  },
  wiring: {
    macTable: 'show mac address-table',
    lldp: 'show lldp neighbors detail',
    // Blocks of `Chassis id:`, `Port id:`, `Local Port id: Eth1/5`, `System Name:`.
    parseLldp: (output) => keyValueBlocks(output, /^\s*Chassis id:\s*(.*?)\s*$/i).flatMap(({ head, fields }) => {
      const n = neighbor(head[1], fields.get('port id'), fields.get('system name'));
      const port = fields.get('local port id');
      return n && port ? [{ port, neighbor: n }] : [];
    }),
    portKey: nexusPort,
  },
};

export const nexus = sshSwitchEntry({
  name: 'nexus',
  table: NEXUS_TABLE,
  portName: /^[Ee]thernet\d+\/\d+(\/\d+)?$/,
  portFormat: 'Ethernet1/12 or Ethernet1/0/10 (or ethernet1/12)',
  // A real VLAN other than 1, the default VLAN (HIL accepted 0-4096).
  dummyVlan: { min: 2, max: 4094 },
});
