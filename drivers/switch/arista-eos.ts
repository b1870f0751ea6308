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
import { keyValues, leadingVlan, PortReading, SwitchTable } from './ssh/table';
import { parseVlanList } from './ssh/vlans';
import { SwitchError } from './types';

export const ARISTA_EOS_TABLE: SwitchTable = {
  family: 'Arista EOS',
  dialect: {
    auth: ['password', 'keyboard-interactive'],
    enable: true,
    pagingOff: ['terminal length 0'],
    pager: /--More--\s*$/,
    // `% Invalid input`, `% Incomplete command`, `% Ambiguous command`
    errors: [/^% /],
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
};

export const aristaEos = sshSwitchEntry({
  name: 'arista_eos',
  table: ARISTA_EOS_TABLE,
  portName: /^Ethernet\d+(\/\d+){0,2}$/,
  portFormat: 'Ethernet1, Ethernet49/1 or Ethernet3/1/1',
});
