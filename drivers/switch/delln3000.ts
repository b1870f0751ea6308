/**
 * Dell N3000 series (DNOS6), HIL's `…/switches/delln3000`: SSH password login (DNOS6 checks the
 * password in SSH) to `console>`, `enable`, `terminal length 0`.
 *
 * DNOS6 has no "no native VLAN" and refuses a native VLAN that is not allowed on the trunk,
 * so a port without one has the registration's `dummy_vlan` as native, allowed only for the
 * instant of setting it (HIL's sequence); the dummy VLAN is created once per session, as HIL
 * did at every login. Every VLAN used must exist on the switch: the session makes it first.
 * Commands on VLAN lists print a warning about large numbers of VLANs: not an error.
 */
import { sshSwitchEntry } from './ssh/driver';
import { dellAdminState, dellPort, keyValues, leadingVlan, PortReading, samePort, SwitchTable, TableContext } from './ssh/table';
import { fixedWidthTable, neighbor } from './wiring';
import { parseVlanList } from './ssh/vlans';
import { SwitchError } from './types';

const dummy = (ctx: TableContext) => ctx.dummyVlan!;

export const DELL_N3000_TABLE: SwitchTable = {
  family: 'Dell N3000 (DNOS6)',
  nativeNeedsAllowed: true,
  dialect: {
    auth: ['password', 'keyboard-interactive'],
    enable: true,
    pagingOff: ['terminal length 0'],
    pager: /--More-- or \(q\)uit\s*$/,
    // `% Invalid input detected at '^' marker.`, `VLAN  1234 ERROR: This VLAN does not exist.`,
    // `Could not configure pvid.`, `Interface not in Trunk Mode.`, `VLAN ID not found.`
    errors: [/^% /, /\bERROR\b/, /^Error/, /^Could not /, /^Interface not in /, /^VLAN ID not found/, /^Failed/],
    legacyAlgorithms: true,
    echoes: true,
  },
  configure: 'configure',
  enterInterface: (port) => [`interface ${port}`],
  leave: ['end'],
  setup: (ctx) => [`vlan ${dummy(ctx)}`, 'exit'],
  reset: (ctx) => [
    'switchport mode trunk',
    `switchport trunk allowed vlan add ${dummy(ctx)}`,
    `switchport trunk native vlan ${dummy(ctx)}`,
    'switchport trunk allowed vlan remove 1-4093',
  ],
  setNative: (vlan, old) => [
    ...(old !== null ? [`switchport trunk allowed vlan remove ${old}`] : []),
    `switchport trunk allowed vlan add ${vlan}`,
    `switchport trunk native vlan ${vlan}`,
  ],
  removeNative: (old, ctx) => [
    `switchport trunk allowed vlan remove ${old}`,
    `switchport trunk allowed vlan add ${dummy(ctx)}`,
    `switchport trunk native vlan ${dummy(ctx)}`,
    `switchport trunk allowed vlan remove ${dummy(ctx)}`,
  ],
  addTagged: (vlan) => [`switchport trunk allowed vlan add ${vlan}`],
  removeTagged: (vlan) => [`switchport trunk allowed vlan remove ${vlan}`],
  show: (port) => `show interfaces switchport ${port}`,
  parse(output, port, ctx): PortReading {
    const kv = keyValues(output);
    if (!kv.has('port')) throw new SwitchError(`no "Port:" line for ${port}`);
    samePort(kv.get('port')!, port, dellPort);
    const mode = kv.get('vlan membership mode') ?? '';
    const native = leadingVlan(kv.get('trunking mode native vlan'));
    const allowed = kv.get('trunking mode vlans enabled');
    if (allowed === undefined) throw new SwitchError('no "Trunking Mode VLANs Enabled:" line');
    return {
      mode: /^trunk/i.test(mode) ? 'trunk' : /^access/i.test(mode) ? 'access' : 'other',
      access: leadingVlan(kv.get('access mode vlan')),
      native: native === dummy(ctx) ? null : native,
      allowed: parseVlanList(allowed),
    };
  },
  save: { command: 'copy running-config startup-config', answers: [{ question: /\(y\/n\) ?$/, keys: 'y' }], done: /Configuration Saved/ },
  // A VLAN is made before a port uses it (once per session; nothing for one that exists), never removed.
  vlans: { create: (vlan) => [`vlan ${vlan}`, 'exit'] },
  adminState: dellAdminState,
  wiring: {
    // Rows of VLAN, MAC (`0001.F413.2A01`), type and port (`Gi1/0/1`; the switch's own on `Vl1`).
    macTable: 'show mac address-table',
    // DNOS6 has no `show lldp neighbors`: the summary of every port's remote devices,
    // Interface, RemID, Chassis ID, Port ID, System Name.
    lldp: 'show lldp remote-device all',
    parseLldp: (output) => fixedWidthTable(output).rows.flatMap((r) => {
      const n = neighbor(r[2], r[3], r[4]);
      return n && r[0] ? [{ port: r[0], neighbor: n }] : [];
    }),
    portKey: dellPort,
  },
};

export const dellN3000 = sshSwitchEntry({
  name: 'delln3000',
  table: DELL_N3000_TABLE,
  portName: /^(gi|te)\d+\/\d+(\/\d+)?$/,
  portFormat: 'gi1/0/11, te1/0/12, gi1/12 or te1/3',
  // DNOS6 VLANs are 1-4093; not 1, the default VLAN (HIL accepted 1-4093).
  dummyVlan: { min: 2, max: 4093 },
});
