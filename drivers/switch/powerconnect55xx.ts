/**
 * Dell PowerConnect 55xx, HIL's `…/switches/powerconnect55xx`. Its SSH server accepts the
 * `none` method and then asks in-band `User Name:` and `Password:` (some firmware checks the
 * password in SSH instead: both are offered); no enable step; `terminal datadump` turns its
 * pager (`More: <space>,  Quit: q or CTRL+Z, One line: <return>`) off. Console log messages
 * start with `%FACILITY-S-NAME:` and are not errors; refusals start with `% ` and a word.
 * Every VLAN used must exist on the switch: the session makes it in `vlan database` first.
 */
import { sshSwitchEntry } from './ssh/driver';
import { dellAdminState, dellPort, keyValues, leadingVlan, PortReading, samePort, SwitchTable } from './ssh/table';
import { fixedWidthTable, neighbor } from './wiring';
import { parseVlanList } from './ssh/vlans';
import { SwitchError } from './types';

export const POWERCONNECT_TABLE: SwitchTable = {
  family: 'Dell PowerConnect 55xx',
  nativeNeedsAllowed: true,
  dialect: {
    auth: ['none', 'password', 'keyboard-interactive'],
    inband: { user: /User ?Name: ?$/i, password: /Password: ?$/i },
    enable: false,
    pagingOff: ['terminal datadump'],
    pager: /More: <space>,\s+Quit: q[^\n]*One line: <return>\s*$/,
    // `% Unrecognized command`, `% Wrong number of parameters or invalid range, size or characters entered`
    errors: [/^% [A-Za-z]/],
    legacyAlgorithms: true,
    echoes: true,
  },
  configure: 'configure',
  enterInterface: (port) => [`interface ${port}`],
  leave: ['end'],
  reset: () => ['switchport mode trunk', 'switchport trunk allowed vlan none', 'switchport trunk native vlan none'],
  setNative: (vlan, old) => [
    ...(old !== null ? [`switchport trunk allowed vlan remove ${old}`] : []),
    `switchport trunk allowed vlan add ${vlan}`,
    `switchport trunk native vlan ${vlan}`,
  ],
  removeNative: (old) => [`switchport trunk allowed vlan remove ${old}`, 'switchport trunk native vlan none'],
  addTagged: (vlan) => [`switchport trunk allowed vlan add ${vlan}`],
  removeTagged: (vlan) => [`switchport trunk allowed vlan remove ${vlan}`],
  show: (port) => `show interfaces switchport ${port}`,
  parse(output, port): PortReading {
    const kv = keyValues(output);
    if (!kv.has('name')) throw new SwitchError(`no "Name:" line for ${port}`);
    samePort(kv.get('name')!, port, dellPort);
    const mode = kv.get('administrative mode') ?? '';
    const allowed = kv.get('trunking vlans enabled') ?? kv.get('trunking vlans');
    if (allowed === undefined) throw new SwitchError('no "Trunking VLANs Enabled:" line');
    return {
      mode: /^disable/i.test(kv.get('switchport') ?? '') ? 'other' : /^trunk/i.test(mode) ? 'trunk' : /^access/i.test(mode) ? 'access' : 'other',
      access: leadingVlan(kv.get('access mode vlan')),
      native: leadingVlan(kv.get('trunking native mode vlan')),
      allowed: parseVlanList(allowed),
    };
  },
  save: {
    command: 'copy running-config startup-config',
    answers: [{ question: /\(Y\/N\)\[N\] \?\s*$/i, keys: 'Y' }],
    done: /Copy succeeded/,
  },
  // A VLAN is made before a port uses it (once per session; nothing for one that exists), never removed.
  vlans: { create: (vlan) => ['vlan database', `vlan ${vlan}`, 'exit'] },
  adminState: dellAdminState,
  wiring: {
    // Rows of VLAN, MAC (with colons), port and type; the switch's own MAC is `self` on port 0.
    macTable: 'show mac address-table',
    // The summary (no `detail` keyword here): Port, Device ID, Port ID, System Name, Capabilities, TTL.
    lldp: 'show lldp neighbors',
    parseLldp: (output) => fixedWidthTable(output).rows.flatMap((r) => {
      const n = neighbor(r[1], r[2], r[3]);
      return n && r[0] ? [{ port: r[0], neighbor: n }] : [];
    }),
    portKey: dellPort,
  },
};

export const powerconnect55xx = sshSwitchEntry({
  name: 'powerconnect55xx',
  table: POWERCONNECT_TABLE,
  portName: /^(gi|te)\d+\/\d+(\/\d+)?$/,
  portFormat: 'gi1/0/11, te1/0/12, gi1/12 or te1/3',
});
