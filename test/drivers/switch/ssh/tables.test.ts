/**
 * The vendor tables at unit level: the exact commands each operation sends (from the port's
 * reading before it), and the parsing of read-back output as the switches print it (ranges,
 * wrapped lists, odd spacing, pager leftovers, "all").
 */
import { expect } from 'chai';
import { configCommands, planChange, PortOp, portVlans } from '../../../../drivers/switch/ssh/driver';
import type { PortReading, SwitchTable, TableContext } from '../../../../drivers/switch/ssh/table';
import { cleanOutput } from '../../../../drivers/switch/ssh/cli';
import { NEXUS_TABLE } from '../../../../drivers/switch/nexus';
import { ARISTA_EOS_TABLE } from '../../../../drivers/switch/arista-eos';
import { DELL_N3000_TABLE } from '../../../../drivers/switch/delln3000';
import { POWERCONNECT_TABLE } from '../../../../drivers/switch/powerconnect55xx';
import { SWITCH_DRIVERS } from '../../../../drivers/switch';
import { JUNOS_TABLE } from '../../../../drivers/switch/junos';
import { CUMULUS_NVUE_TABLE } from '../../../../drivers/switch/cumulus-nvue';
import { SONIC_TABLE } from '../../../../drivers/switch/sonic';
import { DELL_OS10_TABLE } from '../../../../drivers/switch/dellos10';

const FRESH: PortReading = { mode: 'access', access: 1, native: 1, allowed: 'all' };
const trunk = (native: number | null, ...allowed: number[]): PortReading => ({ mode: 'trunk', access: 1, native, allowed });

/** Every command the operation sends, or null when nothing is sent. */
function sent(table: SwitchTable, ctx: TableContext, port: string, op: PortOp, before: PortReading): string[] | null {
  const plan = planChange(table, ctx, op, before);
  return plan && configCommands(table, port, plan.lines);
}

describe('switch tables: the commands of each operation', () => {
  describe('Cisco Nexus', () => {
    const ctx = { dummyVlan: 3999 };
    const p = 'Ethernet1/12';
    const s = (op: PortOp, before: PortReading) => sent(NEXUS_TABLE, ctx, p, op, before);

    it('makes a fresh port an explicit, empty trunk before its first change', () => {
      expect(s({ kind: 'setNative', vlan: 1001 }, FRESH)).to.deep.equal([
        'configure terminal', 'interface Ethernet1/12',
        'switchport', 'switchport mode trunk', 'switchport trunk allowed vlan none', 'switchport trunk native vlan 3999',
        'switchport trunk native vlan 1001', 'switchport trunk allowed vlan add 1001',
        'end',
      ]);
      expect(s({ kind: 'addTagged', vlan: 1002 }, { ...trunk(1), allowed: 'all' })).to.deep.equal([
        'configure terminal', 'interface Ethernet1/12',
        'switchport', 'switchport mode trunk', 'switchport trunk allowed vlan none', 'switchport trunk native vlan 3999',
        'switchport trunk allowed vlan add 1002',
        'end',
      ]);
    });

    it('replaces a native VLAN, taking the old one off the allowed list', () => {
      expect(s({ kind: 'setNative', vlan: 1003 }, trunk(1001, 1001, 1002))).to.deep.equal([
        'configure terminal', 'interface Ethernet1/12',
        'switchport trunk allowed vlan remove 1001', 'switchport trunk native vlan 1003', 'switchport trunk allowed vlan add 1003',
        'end',
      ]);
    });

    it('adds and removes tagged VLANs, removes the native one (to the dummy VLAN) and resets', () => {
      expect(s({ kind: 'addTagged', vlan: 1002 }, trunk(1001, 1001))).to.deep.equal(['configure terminal', 'interface Ethernet1/12', 'switchport trunk allowed vlan add 1002', 'end']);
      expect(s({ kind: 'removeTagged', vlan: 1002 }, trunk(1001, 1001, 1002))).to.deep.equal(['configure terminal', 'interface Ethernet1/12', 'switchport trunk allowed vlan remove 1002', 'end']);
      expect(s({ kind: 'removeNative' }, trunk(1001, 1001, 1002))).to.deep.equal([
        'configure terminal', 'interface Ethernet1/12', 'switchport trunk allowed vlan remove 1001', 'switchport trunk native vlan 3999', 'end',
      ]);
      expect(s({ kind: 'reset' }, trunk(1001, 1001, 1002))).to.deep.equal([
        'configure terminal', 'interface Ethernet1/12',
        'switchport', 'switchport mode trunk', 'switchport trunk allowed vlan none', 'switchport trunk native vlan 3999',
        'end',
      ]);
    });

    it('sends nothing when the port is already as asked (operations are repeated after a crash)', () => {
      expect(s({ kind: 'addTagged', vlan: 1002 }, trunk(null, 1002))).to.equal(null);
      expect(s({ kind: 'removeTagged', vlan: 1002 }, trunk(null))).to.equal(null);
      expect(s({ kind: 'setNative', vlan: 1001 }, trunk(1001, 1001))).to.equal(null);
      expect(s({ kind: 'removeNative' }, trunk(null, 1002))).to.equal(null);
      expect(s({ kind: 'reset' }, trunk(null))).to.equal(null);
    });

    it('expects the reading each change must leave', () => {
      expect(planChange(NEXUS_TABLE, ctx, { kind: 'setNative', vlan: 1003 }, trunk(1001, 1001, 1002))!.expected).to.deep.equal(trunk(1003, 1002, 1003));
      expect(planChange(NEXUS_TABLE, ctx, { kind: 'addTagged', vlan: 7 }, FRESH)!.expected).to.deep.equal({ mode: 'trunk', access: null, native: null, allowed: [7] });
    });
  });

  describe('Dell PowerConnect 55xx', () => {
    const s = (op: PortOp, before: PortReading) => sent(POWERCONNECT_TABLE, {}, 'gi1/0/11', op, before);
    it('sends HIL\'s commands, spelled out, with the old native VLAN removed and no implicit list', () => {
      expect(s({ kind: 'setNative', vlan: 1001 }, FRESH)).to.deep.equal([
        'configure', 'interface gi1/0/11',
        'switchport mode trunk', 'switchport trunk allowed vlan none', 'switchport trunk native vlan none',
        'switchport trunk allowed vlan add 1001', 'switchport trunk native vlan 1001',
        'end',
      ]);
      expect(s({ kind: 'setNative', vlan: 1003 }, trunk(1001, 1001))).to.deep.equal([
        'configure', 'interface gi1/0/11', 'switchport trunk allowed vlan remove 1001', 'switchport trunk allowed vlan add 1003', 'switchport trunk native vlan 1003', 'end',
      ]);
      expect(s({ kind: 'removeNative' }, trunk(1001, 1001))).to.deep.equal(['configure', 'interface gi1/0/11', 'switchport trunk allowed vlan remove 1001', 'switchport trunk native vlan none', 'end']);
      expect(s({ kind: 'addTagged', vlan: 1002 }, trunk(null))).to.deep.equal(['configure', 'interface gi1/0/11', 'switchport trunk allowed vlan add 1002', 'end']);
      expect(s({ kind: 'removeTagged', vlan: 1002 }, trunk(null, 1002))).to.deep.equal(['configure', 'interface gi1/0/11', 'switchport trunk allowed vlan remove 1002', 'end']);
      expect(s({ kind: 'reset' }, trunk(null, 1002))).to.deep.equal([
        'configure', 'interface gi1/0/11', 'switchport mode trunk', 'switchport trunk allowed vlan none', 'switchport trunk native vlan none', 'end',
      ]);
    });
  });

  describe('Dell N3000', () => {
    const ctx = { dummyVlan: 3999 };
    const s = (op: PortOp, before: PortReading) => sent(DELL_N3000_TABLE, ctx, 'te1/0/2', op, before);
    it('allows the dummy VLAN only for the instant of making it native (DNOS6 wants a native VLAN allowed)', () => {
      expect(s({ kind: 'removeNative' }, trunk(1001, 1001, 1002))).to.deep.equal([
        'configure', 'interface te1/0/2',
        'switchport trunk allowed vlan remove 1001', 'switchport trunk allowed vlan add 3999', 'switchport trunk native vlan 3999', 'switchport trunk allowed vlan remove 3999',
        'end',
      ]);
      expect(s({ kind: 'reset' }, trunk(1001, 1001))).to.deep.equal([
        'configure', 'interface te1/0/2',
        'switchport mode trunk', 'switchport trunk allowed vlan add 3999', 'switchport trunk native vlan 3999', 'switchport trunk allowed vlan remove 1-4093',
        'end',
      ]);
      expect(s({ kind: 'setNative', vlan: 1003 }, trunk(1001, 1001))).to.deep.equal([
        'configure', 'interface te1/0/2', 'switchport trunk allowed vlan remove 1001', 'switchport trunk allowed vlan add 1003', 'switchport trunk native vlan 1003', 'end',
      ]);
      expect(s({ kind: 'addTagged', vlan: 1002 }, trunk(null))).to.deep.equal(['configure', 'interface te1/0/2', 'switchport trunk allowed vlan add 1002', 'end']);
      expect(s({ kind: 'removeTagged', vlan: 1002 }, trunk(null, 1002))).to.deep.equal(['configure', 'interface te1/0/2', 'switchport trunk allowed vlan remove 1002', 'end']);
    });
    it('creates the dummy VLAN once per session', () => {
      expect(DELL_N3000_TABLE.setup!(ctx)).to.deep.equal(['vlan 3999', 'exit']);
    });
  });

  describe('Arista EOS', () => {
    const s = (op: PortOp, before: PortReading) => sent(ARISTA_EOS_TABLE, {}, 'Ethernet7', op, before);
    it('has no dummy VLAN: a trunk without native VLAN tags its native VLAN too', () => {
      expect(s({ kind: 'setNative', vlan: 1001 }, FRESH)).to.deep.equal([
        'configure terminal', 'interface Ethernet7',
        'switchport', 'switchport mode trunk', 'switchport trunk allowed vlan none', 'switchport trunk native vlan tag',
        'switchport trunk native vlan 1001', 'switchport trunk allowed vlan add 1001',
        'end',
      ]);
      expect(s({ kind: 'removeNative' }, trunk(1001, 1001))).to.deep.equal(['configure terminal', 'interface Ethernet7', 'switchport trunk allowed vlan remove 1001', 'switchport trunk native vlan tag', 'end']);
      expect(s({ kind: 'addTagged', vlan: 1002 }, trunk(null))).to.deep.equal(['configure terminal', 'interface Ethernet7', 'switchport trunk allowed vlan add 1002', 'end']);
      expect(s({ kind: 'removeTagged', vlan: 1002 }, trunk(null, 1002))).to.deep.equal(['configure terminal', 'interface Ethernet7', 'switchport trunk allowed vlan remove 1002', 'end']);
      expect(ARISTA_EOS_TABLE.save!.command).to.equal('write memory');
      // EOS forwards nothing on a VLAN it lacks: each VLAN a change puts on a port is made first
      expect(ARISTA_EOS_TABLE.vlans!.create(1002, {})).to.deep.equal(['vlan 1002', 'exit']);
      expect(configCommands(ARISTA_EOS_TABLE, 'Ethernet7', ['switchport trunk allowed vlan add 1002'], ARISTA_EOS_TABLE.vlans!.create(1002, {}))).to.deep.equal([
        'configure terminal', 'vlan 1002', 'exit', 'interface Ethernet7', 'switchport trunk allowed vlan add 1002', 'end',
      ]);
    });
  });

  it('registers the four types under HIL\'s identifiers and extension names', () => {
    const byName = Object.fromEntries(SWITCH_DRIVERS.map((e) => [e.type.replace(/.*\//, ''), e]));
    for (const n of ['nexus', 'powerconnect55xx', 'delln3000', 'arista_eos']) {
      expect(byName[n]!.type).to.equal(`http://schema.massopencloud.org/haas/v0/switches/${n}`);
      expect(byName[n]!.extension).to.equal(`hilt.switches.${n}`);
      expect(byName[n]!.sshHostKey).to.equal(true);
    }
    expect(byName.nexus!.portName.test('Ethernet1/12') && byName.nexus!.portName.test('ethernet1/0/10')).to.equal(true);
    expect(byName.nexus!.portName.test('ethernet 1/42')).to.equal(false);
    expect(byName.delln3000!.portName.test('gi1/0/11') && byName.powerconnect55xx!.portName.test('te1/3')).to.equal(true);
    expect(byName.arista_eos!.portName.test('Ethernet1') && byName.arista_eos!.portName.test('Ethernet49/1')).to.equal(true);
    expect(byName.arista_eos!.portName.test('Et1')).to.equal(false);
  });
});

describe('switch tables: reading a port back', () => {
  it('Nexus: a wrapped list, the dummy VLAN as no native VLAN, a fresh port as "all"', () => {
    const out = [
      'Name: Ethernet1/12',
      '  Switchport: Enabled',
      '  Switchport Monitor: Not enabled',
      '  Operational Mode: trunk',
      '  Access Mode VLAN: 1 (default)',
      '  Trunking Native Mode VLAN: 3999 (Vlan not created)',
      '  Trunking VLANs Allowed: 1001-1003,1005,1010-1012,1020,1030,1040,',
      '    1080,2000-2002',
      '  Pruning VLANs Enabled: 2-1001',
      '  Administrative private-vlan primary host-association: none',
    ].join('\n');
    const r = NEXUS_TABLE.parse(out, 'Ethernet1/12', { dummyVlan: 3999 });
    expect(r).to.deep.equal({ mode: 'trunk', access: 1, native: null, allowed: [1001, 1002, 1003, 1005, 1010, 1011, 1012, 1020, 1030, 1040, 1080, 2000, 2001, 2002] });
    const fresh = NEXUS_TABLE.parse('Name: Ethernet1/1\n  Switchport: Enabled\n  Operational Mode: access\n  Access Mode VLAN: 1 (default)\n  Trunking Native Mode VLAN: 1 (default)\n  Trunking VLANs Allowed: 1-4094\n', 'Ethernet1/1', { dummyVlan: 3999 });
    expect(fresh).to.deep.equal({ mode: 'access', access: 1, native: 1, allowed: 'all' });
    expect(portVlans(fresh)).to.deep.equal({ native: 1, tagged: [] });
    // A trunk of every VLAN is said so, not listed VLAN by VLAN (and never matches).
    expect(portVlans({ ...fresh, mode: 'trunk' })).to.deep.equal({ native: 1, tagged: [], other: ['trunk allows every VLAN'] });
  });

  it('reads an untagged VLAN off the allowed list as none only on the families where it carries nothing', () => {
    const trunk = { mode: 'trunk', access: null, native: 1001, allowed: [1002] } as const;
    // Junos ELS too: a native-vlan-id that is no member drops untagged frames.
    for (const t of [NEXUS_TABLE, DELL_N3000_TABLE, ARISTA_EOS_TABLE, POWERCONNECT_TABLE, JUNOS_TABLE]) {
      expect(t.nativeNeedsAllowed, t.family).to.equal(true);
      expect(portVlans({ ...trunk, allowed: [...trunk.allowed] }, t.nativeNeedsAllowed), t.family).to.deep.equal({ native: null, tagged: [1002] });
    }
    // Elsewhere (a Linux bridge's untagged VLAN) it still carries the port's untagged traffic.
    for (const t of [CUMULUS_NVUE_TABLE, SONIC_TABLE, DELL_OS10_TABLE]) {
      expect(portVlans({ ...trunk, allowed: [...trunk.allowed] }, t.nativeNeedsAllowed), t.family).to.deep.equal({ native: 1001, tagged: [1002] });
    }
  });

  it('Nexus: output that went through the pager (its erased prompt) reads the same', () => {
    const raw = 'Name: Ethernet1/3\r\n  Switchport: Enabled\r\n  Operational Mode: trunk\r\n\r        \r  Access Mode VLAN: 1 (default)\r\n'
      + '  Trunking Native Mode VLAN: 1001 (VLAN1001)\r\n\b\b\b\b\b\b\b\b        \b\b\b\b\b\b\b\b  Trunking VLANs Allowed: 1001,1005\r\n';
    expect(NEXUS_TABLE.parse(cleanOutput(raw), 'Ethernet1/3', { dummyVlan: 3999 })).to.deep.equal({ mode: 'trunk', access: 1, native: 1001, allowed: [1001, 1005] });
  });

  it('PowerConnect 55xx: continuation lines, spaces around ranges, (Inactive), up to "Classification rules:"', () => {
    const out = [
      'Name: gi1/0/3',
      'Switchport: enable',
      'Administrative Mode: trunk',
      'Operational Mode: down',
      'Access Mode VLAN: 1',
      'Access Multicast TV VLAN: none',
      'Trunking Native Mode VLAN: 3 (Inactive)',
      'Trunking VLANs Enabled: 3, 10,',
      '                        23 - 25',
      '                        2000 (Inactive)',
      'General PVID: 1',
      '',
      'Classification rules:',
    ].join('\n');
    expect(POWERCONNECT_TABLE.parse(out, 'gi1/0/3', {})).to.deep.equal({ mode: 'trunk', access: 1, native: 3, allowed: [3, 10, 23, 24, 25, 2000] });
    const none = out.replace('Trunking Native Mode VLAN: 3 (Inactive)', 'Trunking Native Mode VLAN: none').replace(/Trunking VLANs Enabled: [\s\S]*?General/, 'Trunking VLANs Enabled: none\nGeneral');
    expect(POWERCONNECT_TABLE.parse(none, 'gi1/0/3', {})).to.deep.equal({ mode: 'trunk', access: 1, native: null, allowed: [] });
  });

  it('N3000: "Port:", a wrapped list, "All", and the dummy VLAN as no native VLAN', () => {
    const out = [
      '',
      'Port: Gi1/0/6',
      'VLAN Membership Mode: Trunk Mode',
      'Member of VLANs : (3999),1-899,901-4093',
      'Access Mode VLAN: 1 (default)',
      'General Mode PVID: 900',
      'General Mode Tagged VLANs: 1,25-26,40-41,50-51,53,',
      '                           200,301-308',
      'Trunking Mode Native VLAN: 3999',
      'Trunking Mode Native VLAN Tagging: Disabled',
      'Trunking Mode VLANs Enabled: 1001-1003,1005,',
      '                             1010',
      'Private VLAN Host Association: none',
      'Protected: Disabled',
    ].join('\n');
    expect(DELL_N3000_TABLE.parse(out, 'gi1/0/6', { dummyVlan: 3999 })).to.deep.equal({ mode: 'trunk', access: 1, native: null, allowed: [1001, 1002, 1003, 1005, 1010] });
    const all = out.replace(/Trunking Mode VLANs Enabled: [\s\S]*?Private/, 'Trunking Mode VLANs Enabled: All\nPrivate').replace('Trunk Mode', 'Access Mode');
    expect(DELL_N3000_TABLE.parse(all, 'gi1/0/6', { dummyVlan: 3999 })).to.deep.equal({ mode: 'access', access: 1, native: null, allowed: 'all' });
  });

  it('EOS: "static access", ALL, NONE, and a tagged native VLAN as none', () => {
    const out = (mode: string, native: string, tagging: string, allowed: string) => [
      'Name: Et1', 'Switchport: Enabled', `Administrative Mode: ${mode}`, `Operational Mode: ${mode}`, 'MAC Address Learning: enabled',
      'Dot1q ethertype/TPID: 0x8100 (active)', 'Dot1q Vlan Tag Required (Administrative/Operational): No/No', 'Access Mode VLAN: 1 (default)',
      `Trunking Native Mode VLAN: ${native}`, `Administrative Native VLAN tagging: ${tagging}`, `Trunking VLANs Enabled: ${allowed}`,
      'Static Trunk Groups:', 'Dynamic Trunk Groups:', 'Source interface filtering: enabled', '',
    ].join('\n');
    expect(ARISTA_EOS_TABLE.parse(out('static access', '1 (default)', 'disabled', 'ALL'), 'Ethernet1', {})).to.deep.equal({ mode: 'access', access: 1, native: 1, allowed: 'all' });
    expect(ARISTA_EOS_TABLE.parse(out('trunk', '1 (default)', 'enabled', 'NONE'), 'Ethernet1', {})).to.deep.equal({ mode: 'trunk', access: 1, native: null, allowed: [] });
    expect(ARISTA_EOS_TABLE.parse(out('trunk', '1001 (VLAN1001)', 'disabled', '1001-1002,1005'), 'Ethernet1', {})).to.deep.equal({ mode: 'trunk', access: 1, native: 1001, allowed: [1001, 1002, 1005] });
  });

  it('refuses the settings of another port (a session out of step with its prompts reads the previous command\'s output)', () => {
    const nexus = 'Name: Ethernet1/2\n  Switchport: Enabled\n  Operational Mode: trunk\n  Trunking Native Mode VLAN: 1001 (VLAN1001)\n  Trunking VLANs Allowed: 1001\n';
    expect(() => NEXUS_TABLE.parse(nexus, 'Ethernet1/12', { dummyVlan: 3999 })).to.throw(/for port "Ethernet1\/2", not Ethernet1\/12/);
    expect(NEXUS_TABLE.parse(nexus, 'ethernet1/2', { dummyVlan: 3999 }).allowed).to.deep.equal([1001]);
    const eos = 'Name: Et2\nSwitchport: Enabled\nAdministrative Mode: trunk\nTrunking Native Mode VLAN: 1 (default)\nTrunking VLANs Enabled: 1001\n';
    expect(() => ARISTA_EOS_TABLE.parse(eos, 'Ethernet1', {})).to.throw(/for port "Et2", not Ethernet1/);
    expect(ARISTA_EOS_TABLE.parse(eos, 'Ethernet2', {}).allowed).to.deep.equal([1001]);
    const pc = 'Name: gi1/0/2\nSwitchport: enable\nAdministrative Mode: trunk\nTrunking Native Mode VLAN: none\nTrunking VLANs Enabled: 1001\n';
    expect(() => POWERCONNECT_TABLE.parse(pc, 'gi1/0/12', {})).to.throw(/for port "gi1\/0\/2", not gi1\/0\/12/);
    const n3000 = 'Port: Gi1/0/2\nVLAN Membership Mode: Trunk Mode\nTrunking Mode Native VLAN: 3999\nTrunking Mode VLANs Enabled: 1001\n';
    expect(() => DELL_N3000_TABLE.parse(n3000, 'gi1/0/1', { dummyVlan: 3999 })).to.throw(/for port "Gi1\/0\/2", not gi1\/0\/1/);
    expect(DELL_N3000_TABLE.parse(n3000, 'gi1/0/2', { dummyVlan: 3999 }).allowed).to.deep.equal([1001]);
  });

  it('refuses output it cannot read, saying what is missing', () => {
    expect(() => NEXUS_TABLE.parse('% Invalid interface format', 'Ethernet9/9', { dummyVlan: 3999 })).to.throw(/no "Name:" line/);
    expect(() => ARISTA_EOS_TABLE.parse('Name: Et1\nSwitchport: Enabled\n', 'Ethernet1', {})).to.throw(/Trunking VLANs Enabled/);
    expect(() => DELL_N3000_TABLE.parse('Port: Gi1/0/1\nTrunking Mode VLANs Enabled: 1,x\n', 'gi1/0/1', { dummyVlan: 3999 })).to.throw(/not a VLAN/);
  });
});
