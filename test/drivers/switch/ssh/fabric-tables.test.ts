/**
 * The data-centre families' tables at unit level: the exact commands of each operation (VLAN
 * creation included) from the port's reading before it, and the parsing of read-back output in
 * the shapes the switches print: OS10's running configuration with ranges, SONiC's grid (members
 * on continuation rows, columns found by name), Junos' set-form configuration (VLAN names,
 * numbers, ranges, `all`, `default`), NVUE's JSON (`{}`, `all`, `none`); each family's
 * administrative state, learned MACs and LLDP neighbours in its own shapes.
 */
import { expect } from 'chai';
import { configCommands, EVERY_VLAN, planChange, PortOp, portVlans } from '../../../../drivers/switch/ssh/driver';
import type { PortReading, SwitchTable, TableContext } from '../../../../drivers/switch/ssh/table';
import { DELL_OS10_TABLE, os10Port } from '../../../../drivers/switch/dellos10';
import { SONIC_TABLE, vlanBrief } from '../../../../drivers/switch/sonic';
import { JUNOS_TABLE, junosPort, junosVlans, rangeHas } from '../../../../drivers/switch/junos';
import { CUMULUS_NVUE_TABLE } from '../../../../drivers/switch/cumulus-nvue';
import { SWITCH_DRIVERS } from '../../../../drivers/switch';
import { macRows, wiringByPort } from '../../../../drivers/switch/wiring';

const trunk = (native: number | null, ...allowed: number[]): PortReading => ({ mode: 'trunk', access: null, native, allowed });

/** Every command the operation sends (the VLANs it needs created first, as a session that has not made them yet does), or null. */
function sent(table: SwitchTable, ctx: TableContext, port: string, op: PortOp, before: PortReading, inConfig = false): string[] | null {
  const plan = planChange(table, { ...ctx, port }, op, before);
  if (!plan) return null;
  const create = plan.vlans.filter((v) => !ctx.vlans?.has(v)).flatMap((v) => table.vlans?.create(v, ctx) ?? []);
  return configCommands(table, port, plan.lines, create, inConfig);
}

describe('fabric tables: the commands of each operation', () => {
  it('registers the four families with their type names and port formats', () => {
    const by = (n: string) => SWITCH_DRIVERS.find((e) => e.type.endsWith(`/switches/${n}`))!;
    const ok = (n: string, good: string[], bad: string[]) => {
      for (const p of good) expect(by(n).portName.test(p), `${n} ${p}`).to.equal(true);
      for (const p of bad) expect(by(n).portName.test(p), `${n} ${p}`).to.equal(false);
    };
    ok('dellos10', ['ethernet1/1/1', 'ethernet1/1/49:1'], ['Ethernet1/1', 'ethernet 1/1/1', 'eth1/1/1']);
    ok('sonic', ['Ethernet0', 'Ethernet124'], ['etp1', 'Ethernet1/1', 'ethernet0']);
    ok('junos', ['ge-0/0/1', 'xe-0/0/1', 'et-0/0/1', 'xe-0/0/1:0'], ['ge-0/0/1.0', 'ge0/0/1', 'Ethernet1']);
    ok('cumulus_nvue', ['swp1', 'swp1s0'], ['eth0', 'swp', 'swp1s']);
  });

  describe('Dell OS10', () => {
    const p = 'ethernet1/1/3';
    const s = (op: PortOp, before: PortReading) => sent(DELL_OS10_TABLE, {}, p, op, before);
    const factory: PortReading = { mode: 'access', access: 1, native: null, allowed: [] };

    it('makes the VLAN, then a factory port an empty trunk, before its first change', () => {
      expect(s({ kind: 'setNative', vlan: 1001 }, factory)).to.deep.equal([
        'configure terminal', 'interface vlan 1001', 'exit', 'interface ethernet1/1/3',
        'switchport mode trunk', 'no switchport access vlan', 'switchport access vlan 1001', 'end',
      ]);
    });

    it('adds and removes tagged VLANs, sets, replaces and removes the untagged one, and resets', () => {
      expect(s({ kind: 'addTagged', vlan: 1002 }, trunk(1001, 1001))).to.deep.equal([
        'configure terminal', 'interface vlan 1002', 'exit', 'interface ethernet1/1/3', 'switchport trunk allowed vlan 1002', 'end',
      ]);
      expect(s({ kind: 'removeTagged', vlan: 1002 }, trunk(1001, 1001, 1002))).to.deep.equal(['configure terminal', 'interface ethernet1/1/3', 'no switchport trunk allowed vlan 1002', 'end']);
      expect(s({ kind: 'setNative', vlan: 1003 }, trunk(1001, 1001))).to.deep.equal(['configure terminal', 'interface vlan 1003', 'exit', 'interface ethernet1/1/3', 'switchport access vlan 1003', 'end']);
      expect(s({ kind: 'removeNative' }, trunk(1001, 1001, 1002))).to.deep.equal(['configure terminal', 'interface ethernet1/1/3', 'no switchport access vlan', 'end']);
      expect(s({ kind: 'reset' }, trunk(1001, 1001, 1002, 1004, 1005))).to.deep.equal([
        'configure terminal', 'interface ethernet1/1/3', 'switchport mode trunk', 'no switchport trunk allowed vlan 1002,1004-1005', 'no switchport access vlan', 'end',
      ]);
      expect(s({ kind: 'addTagged', vlan: 1002 }, trunk(null, 1002))).to.equal(null);
    });

    it('reads the running configuration: ranges expanded, the access VLAN as the trunk\'s untagged one', () => {
      const out = ['!', 'interface ethernet1/1/3', ' no shutdown', ' switchport mode trunk', ' switchport access vlan 1001', ' switchport trunk allowed vlan 1002,1004-1005', ' flowcontrol receive on'].join('\n');
      const r = DELL_OS10_TABLE.parse(out, p, {});
      expect(r).to.deep.equal({ mode: 'trunk', access: 1001, native: 1001, allowed: [1001, 1002, 1004, 1005] });
      expect(portVlans(r)).to.deep.equal({ native: 1001, tagged: [1002, 1004, 1005] });
      expect(DELL_OS10_TABLE.parse('!\ninterface ethernet1/1/3\n no shutdown\n switchport access vlan 1', p, {})).to.deep.include({ mode: 'access', access: 1 });
      // the default VLAN 1 is left out of the running configuration, in trunk mode too
      expect(DELL_OS10_TABLE.parse('!\ninterface ethernet1/1/3\n switchport mode trunk', p, {})).to.deep.equal({ mode: 'trunk', access: 1, native: 1, allowed: [1] });
      expect(DELL_OS10_TABLE.parse('!\ninterface ethernet1/1/3\n switchport mode trunk\n no switchport access vlan', p, {})).to.deep.equal(trunk(null));
      expect(DELL_OS10_TABLE.parse('!\ninterface ethernet1/1/3\n no shutdown', p, {})).to.deep.include({ mode: 'access', access: 1 });
      expect(DELL_OS10_TABLE.parse('!\ninterface ethernet1/1/3\n no switchport', p, {}).mode).to.equal('other');
      expect(() => DELL_OS10_TABLE.parse('% Error: Illegal parameter.', p, {})).to.throw(/no "interface/);
    });

    it('reads a member of a port-channel as carrying the channel\'s VLANs, never as an empty port', () => {
      const out = ['!', 'interface ethernet1/1/3', ' no shutdown', ' channel-group 10 mode active', ' no switchport', ' flowcontrol receive on'].join('\n');
      const r = DELL_OS10_TABLE.parse(out, p, {});
      expect(r.mode).to.equal('other');
      expect(portVlans(r).other).to.deep.equal(['member of port-channel10 (carries its VLANs)']);
    });

    it('reads every `switchport trunk allowed vlan` line of the port (each adds to the list)', () => {
      const out = ['!', 'interface ethernet1/1/3', ' switchport mode trunk', ' no switchport access vlan', ' switchport trunk allowed vlan 1002,1004-1005', ' switchport trunk allowed vlan 2001'].join('\n');
      expect(DELL_OS10_TABLE.parse(out, p, {})).to.deep.equal(trunk(null, 1002, 1004, 1005, 2001));
    });
  });

  describe('SONiC', () => {
    const p = 'Ethernet8';
    const known: TableContext = { vlans: new Map([[1001, 'Vlan1001'], [1002, 'Vlan1002']]) };
    const s = (op: PortOp, before: PortReading, ctx: TableContext = known) => sent(SONIC_TABLE, ctx, p, op, before);

    it('adds, replaces and removes memberships with sudo, creating a VLAN the switch lacks', () => {
      expect(s({ kind: 'setNative', vlan: 1003 }, trunk(null))).to.deep.equal(['sudo config vlan add 1003', 'sudo config vlan member add -u 1003 Ethernet8']);
      expect(s({ kind: 'setNative', vlan: 1002 }, trunk(1001, 1001))).to.deep.equal(['sudo config vlan member del 1001 Ethernet8', 'sudo config vlan member add -u 1002 Ethernet8']);
      expect(s({ kind: 'addTagged', vlan: 1002 }, trunk(1001, 1001))).to.deep.equal(['sudo config vlan member add 1002 Ethernet8']);
      expect(s({ kind: 'removeTagged', vlan: 1002 }, trunk(1001, 1001, 1002))).to.deep.equal(['sudo config vlan member del 1002 Ethernet8']);
      expect(s({ kind: 'removeNative' }, trunk(1001, 1001, 1002))).to.deep.equal(['sudo config vlan member del 1001 Ethernet8']);
      expect(s({ kind: 'reset' }, trunk(1001, 1001, 1002))).to.deep.equal(['sudo config vlan member del 1001 Ethernet8', 'sudo config vlan member del 1002 Ethernet8']);
      expect(s({ kind: 'reset' }, trunk(null))).to.equal(null);
    });

    it('reads show vlan brief: continuation rows, columns by name whatever their order', () => {
      const out = [
        '+-----------+--------------+-----------+----------------+-------------+-----------------------+',
        '|   VLAN ID | IP Address   | Ports     | Port Tagging   | Proxy ARP   | DHCP Helper Address   |',
        '+===========+==============+===========+================+=============+=======================+',
        '|      1001 |              | Ethernet0 | untagged       | disabled    |                       |',
        '|           |              | Ethernet8 | tagged         |             |                       |',
        '+-----------+--------------+-----------+----------------+-------------+-----------------------+',
        '|      1002 |              | Ethernet8 | untagged       | disabled    |                       |',
        '+-----------+--------------+-----------+----------------+-------------+-----------------------+',
        '|      1003 |              |           |                | disabled    |                       |',
        '+-----------+--------------+-----------+----------------+-------------+-----------------------+',
      ].join('\n');
      expect(SONIC_TABLE.parse(out, p, {})).to.deep.equal(trunk(1002, 1001, 1002));
      expect(SONIC_TABLE.parse(out, 'Ethernet0', {})).to.deep.equal(trunk(1001, 1001));
      expect(SONIC_TABLE.parse(out, 'Ethernet4', {})).to.deep.equal(trunk(null));
      expect([...vlanBrief(out).keys()]).to.deep.equal([1001, 1002, 1003]);
      // another release: DHCP columns first, the tagging column named the same
      const moved = ['+----+------+-----+-----+', '| DHCP Helper Address | VLAN ID | Port Tagging | Ports |', '+====+', '|  | 2000 | tagged | Ethernet8 |', '+----+'].join('\n');
      expect(SONIC_TABLE.parse(moved, p, {})).to.deep.equal(trunk(null, 2000));
      expect(() => SONIC_TABLE.parse('Error: something', p, {})).to.throw(/no "VLAN ID"/);
    });

    it('tells a PortChannel member by the Vlan cell of show interfaces status (show vlan brief does not list it)', () => {
      // tabulate's simple format: right-aligned cells under a dashed rule
      const status = (vlan: string) => {
        const rows = [['Interface', 'Lanes', 'Speed', 'MTU', 'FEC', 'Alias', 'Vlan', 'Oper', 'Admin', 'Type', 'Asym PFC'], ['Ethernet8', '9,10,11,12', '100G', '9100', 'rs', 'etp3', vlan, 'down', 'up', 'N/A', 'N/A']];
        const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
        const line = (r: string[]) => r.map((c, i) => c.padStart(w[i]!)).join('  ');
        return [line(rows[0]!), w.map((x) => '-'.repeat(x)).join('  '), line(rows[1]!)].join('\n');
      };
      const b = SONIC_TABLE.bundle!;
      expect(b.show(p)).to.equal('show interfaces status Ethernet8');
      expect(b.parse(status('PortChannel0001'), p)).to.equal('PortChannel0001');
      expect(b.parse(status('trunk'), p)).to.equal(null);
      expect(b.parse(status('routed'), p)).to.equal(null);
      expect(() => b.parse(status('trunk'), 'Ethernet4')).to.throw(/no row for Ethernet4/);
      expect(() => b.parse('Error: Invalid interface name Ethernet8', p)).to.throw(/no "Vlan" column/);
    });
  });

  describe('Juniper Junos', () => {
    const p = 'ge-0/0/1';
    const es = 'set interfaces ge-0/0/1 unit 0 family ethernet-switching';
    const ctx: TableContext = { vlans: new Map([[1, 'default'], [1001, 'hilt-1001'], [1002, 'tenant-blue']]) };
    const s = (op: PortOp, before: PortReading, inConfig = false) => sent(JUNOS_TABLE, ctx, p, op, before, inConfig);

    it('stages set/delete lines in a private candidate, naming VLANs as the switch does and defining missing ones', () => {
      const factory: PortReading = { mode: 'access', access: 1, native: null, allowed: [] };
      expect(s({ kind: 'setNative', vlan: 1003 }, factory)).to.deep.equal([
        'configure private',
        'set vlans hilt-1003 vlan-id 1003',
        'delete interfaces ge-0/0/1 unit 0 family ethernet-switching vlan members',
        'delete interfaces ge-0/0/1 native-vlan-id',
        `${es} interface-mode trunk`,
        `${es} vlan members hilt-1003`,
        'set interfaces ge-0/0/1 native-vlan-id 1003',
      ]);
      // a VLAN the switch has under another name is used by that name; already in configuration mode: no `configure`
      expect(s({ kind: 'addTagged', vlan: 1002 }, trunk(1001, 1001), true)).to.deep.equal([`${es} vlan members tenant-blue`]);
      expect(s({ kind: 'setNative', vlan: 1002 }, trunk(1001, 1001), true)).to.deep.equal([
        'delete interfaces ge-0/0/1 unit 0 family ethernet-switching vlan members hilt-1001', `${es} vlan members tenant-blue`, 'set interfaces ge-0/0/1 native-vlan-id 1002',
      ]);
      expect(s({ kind: 'removeNative' }, trunk(1001, 1001, 1002), true)).to.deep.equal([
        'delete interfaces ge-0/0/1 native-vlan-id', 'delete interfaces ge-0/0/1 unit 0 family ethernet-switching vlan members hilt-1001',
      ]);
      expect(s({ kind: 'removeTagged', vlan: 1002 }, trunk(null, 1002), true)).to.deep.equal(['delete interfaces ge-0/0/1 unit 0 family ethernet-switching vlan members tenant-blue']);
      // a native-vlan-id left without its member: the VLAN added tagged must not come back untagged
      const dangling = { mode: 'trunk' as const, access: null, native: 1001, allowed: [1002] };
      expect(s({ kind: 'addTagged', vlan: 1001 }, dangling, true)).to.deep.equal([
        'delete interfaces ge-0/0/1 native-vlan-id', 'delete interfaces ge-0/0/1 unit 0 family ethernet-switching vlan members hilt-1001', `${es} vlan members hilt-1001`,
      ]);
      expect(planChange(JUNOS_TABLE, { ...ctx, port: p }, { kind: 'addTagged', vlan: 1001 }, dangling)!.expected).to.deep.equal(trunk(null, 1001, 1002));
      expect(JUNOS_TABLE.commit).to.deep.include({ command: 'commit and-quit', discard: ['rollback 0', 'exit'] });
      expect(JUNOS_TABLE.save).to.equal(undefined);
    });

    it('takes a caret line for a refusal whatever the words under it; a warning is none', () => {
      const refused = (l: string) => JUNOS_TABLE.dialect.errors.some((re) => re.test(l.trim()));
      expect(refused('                                          ^')).to.equal(true);
      expect(refused("Value 4095 is not within range (1..4094) at '4095'")).to.equal(true);
      expect(refused('error: configuration check-out failed')).to.equal(true);
      expect(refused('warning: statement not found')).to.equal(false);
      expect(refused('commit complete')).to.equal(false);
    });

    it('reads set-form configuration: names, numbers, ranges, all, default; a factory port is an access port of VLAN default', () => {
      const out = [
        'set interfaces ge-0/0/1 native-vlan-id 1001',
        `${es} interface-mode trunk`,
        `${es} vlan members hilt-1001`,
        `${es} vlan members tenant-blue`,
        `${es} vlan members 1005-1006`,
        'set interfaces ge-0/0/10 unit 0 family ethernet-switching vlan members hilt-1001',
      ].join('\n');
      expect(JUNOS_TABLE.parse(out, p, ctx)).to.deep.equal(trunk(1001, 1001, 1002, 1005, 1006));
      expect(JUNOS_TABLE.parse(`${es}\n`, p, ctx)).to.deep.equal({ mode: 'access', access: 1, native: null, allowed: [] });
      expect(JUNOS_TABLE.parse(`${es} interface-mode trunk\n${es} vlan members all`, p, ctx).allowed).to.equal('all');
      // every VLAN spelled as a range is "all" too, reported as such
      const range = JUNOS_TABLE.parse(`${es} interface-mode trunk\n${es} vlan members 1-4094`, p, ctx);
      expect(range.allowed).to.equal('all');
      expect(portVlans(range)).to.deep.equal({ native: null, tagged: [], other: [EVERY_VLAN] });
      expect(JUNOS_TABLE.parse('', p, ctx).mode).to.equal('other');
      // on ELS a native-vlan-id that is no member carries nothing: it reads as no native VLAN
      const dropped = JUNOS_TABLE.parse(`set interfaces ge-0/0/1 native-vlan-id 1001\n${es} interface-mode trunk\n${es} vlan members tenant-blue`, p, ctx);
      expect(portVlans(dropped, JUNOS_TABLE.nativeNeedsAllowed)).to.deep.equal({ native: null, tagged: [1002] });
      expect(() => JUNOS_TABLE.parse(`${es} interface-mode trunk\n${es} vlan members nosuch`, p, ctx)).to.throw(/VLAN "nosuch" is not defined/);
      expect(junosVlans('set vlans default vlan-id 1\nset vlans tenant-blue vlan-id 1002\nset vlans tenant-blue description x')).to.deep.equal(new Map([[1, 'default'], [1002, 'tenant-blue']]));
    });

    it('reads the whole configuration\'s lines that name the port: a membership from the VLAN\'s side counts, and is taken off by deleting it', () => {
      expect(JUNOS_TABLE.show(p)).to.equal('show configuration | display set | match "ge-0/0/1|interface-range"');
      const out = [
        `${es} interface-mode trunk`,
        `${es} vlan members hilt-1001`,
        'set vlans tenant-blue interface ge-0/0/1.0',
        // another port, and another unit of another port, are not this one's
        'set vlans hilt-1001 interface ge-0/0/10.0',
        'set protocols lldp interface ge-0/0/1',
      ].join('\n');
      const r = JUNOS_TABLE.parse(out, p, ctx);
      expect(portVlans(r)).to.deep.equal({ native: null, tagged: [1001, 1002] });
      expect(r).to.deep.include({ mode: 'trunk', allowed: [1001, 1002] });
      // the lines, from the reading the session has
      expect(s({ kind: 'removeTagged', vlan: 1002 }, r, true)).to.deep.equal([
        'delete interfaces ge-0/0/1 unit 0 family ethernet-switching vlan members tenant-blue', 'delete vlans tenant-blue interface ge-0/0/1.0',
      ]);
      expect(s({ kind: 'reset' }, r, true)).to.deep.equal([
        'delete interfaces ge-0/0/1 unit 0 family ethernet-switching vlan members', 'delete vlans tenant-blue interface ge-0/0/1.0',
        'delete interfaces ge-0/0/1 native-vlan-id', `${es} interface-mode trunk`,
      ]);
      // untagged: not made a member twice; it leaves with its statement
      expect(s({ kind: 'setNative', vlan: 1002 }, r, true)).to.deep.equal(['set interfaces ge-0/0/1 native-vlan-id 1002']);
      const untagged = planChange(JUNOS_TABLE, { ...ctx, port: p }, { kind: 'setNative', vlan: 1002 }, r)!.expected;
      expect(s({ kind: 'removeNative' }, untagged, true)).to.deep.equal([
        'delete interfaces ge-0/0/1 native-vlan-id', 'delete interfaces ge-0/0/1 unit 0 family ethernet-switching vlan members tenant-blue', 'delete vlans tenant-blue interface ge-0/0/1.0',
      ]);
      // on an access port (the factory one included) it is the port's VLAN, and a change resets the port first
      const access = JUNOS_TABLE.parse(`${es}\nset vlans tenant-blue interface ge-0/0/1.0`, p, ctx);
      expect(access).to.deep.include({ mode: 'access', access: 1002 });
      expect(s({ kind: 'addTagged', vlan: 1001 }, access, true)).to.deep.equal([
        'delete interfaces ge-0/0/1 unit 0 family ethernet-switching vlan members', 'delete vlans tenant-blue interface ge-0/0/1.0',
        'delete interfaces ge-0/0/1 native-vlan-id', `${es} interface-mode trunk`, `${es} vlan members hilt-1001`,
      ]);
      expect(() => JUNOS_TABLE.parse(`${es} interface-mode trunk\nset vlans nosuch interface ge-0/0/1.0`, p, ctx)).to.throw(/VLAN "nosuch" is not defined/);
    });

    it('reads a member of an interface range as carrying the range\'s VLANs, never as an empty port', () => {
      const r = JUNOS_TABLE.parse('set interfaces interface-range servers member ge-0/0/1\nset interfaces interface-range servers unit 0 family ethernet-switching vlan members hilt-1001', p, ctx);
      expect(portVlans(r)).to.deep.equal({ native: null, tagged: [], other: ['member of interface-range servers (carries its VLANs)'] });
      expect(JUNOS_TABLE.parse('set interfaces interface-range servers member ge-0/0/10', p, ctx).mode).to.equal('other');
      expect(JUNOS_TABLE.parse('set interfaces interface-range servers member ge-0/0/10', p, ctx).other).to.equal(undefined);
      expect(JUNOS_TABLE.parse('set interfaces interface-range servers member-range ge-0/0/0 to ge-0/0/5', p, ctx).other).to.deep.equal(['member of interface-range servers (carries its VLANs)']);
      for (const [stmt, port, yes] of [
        ['member ge-0/0/1', 'ge-0/0/1', true], ['member ge-0/0/1', 'ge-0/0/10', false],
        ['member ge-0/0/*', 'ge-0/0/17', true], ['member ge-0/*/*', 'xe-0/1/0', false], ['member "ge-0/0/[1-5]"', 'ge-0/0/5', true], ['member "ge-0/0/[1-5]"', 'ge-0/0/15', false],
        ['member-range ge-0/0/0 to ge-0/0/5', 'ge-0/0/5', true], ['member-range ge-0/0/0 to ge-0/0/5', 'ge-0/0/6', false], ['member-range ge-0/0/40 to ge-1/0/3', 'ge-0/1/0', true],
        ['member-range ge-0/0/0 to ge-0/0/5', 'xe-0/0/1', false], ['member-range xe-0/0/0:0 to xe-0/0/0:3', 'xe-0/0/0:2', true],
      ] as const) expect(rangeHas(stmt, port), `${stmt} / ${port}`).to.equal(yes);
    });

    it('reads a member of an aggregated interface as carrying the bundle\'s VLANs, never as an empty port', () => {
      for (const opt of ['ether-options', 'gigether-options']) {
        const r = JUNOS_TABLE.parse(`set interfaces ge-0/0/1 ${opt} 802.3ad ae0`, p, ctx);
        expect(r.mode).to.equal('other');
        expect(portVlans(r)).to.deep.equal({ native: null, tagged: [], other: ['member of ae0 (carries its VLANs)'] });
      }
    });
  });

  describe('Cumulus NVUE', () => {
    const p = 'swp3';
    const bd = 'interface swp3 bridge domain br_default';
    const s = (op: PortOp, before: PortReading) => sent(CUMULUS_NVUE_TABLE, {}, p, op, before);

    it('sets and unsets into the pending revision, the VLAN added to the bridge first; a port left with nothing leaves the bridge', () => {
      expect(s({ kind: 'setNative', vlan: 1001 }, trunk(null))).to.deep.equal([
        'nv set bridge domain br_default vlan 1001', `nv set ${bd} vlan 1001`, `nv set ${bd} untagged 1001`,
      ]);
      // a bridge port of every VLAN (the factory trap) leaves the bridge first
      expect(s({ kind: 'addTagged', vlan: 1002 }, { mode: 'trunk', access: null, native: 1, allowed: 'all' })).to.deep.equal([
        'nv set bridge domain br_default vlan 1002', `nv unset ${bd}`, `nv set ${bd} vlan 1002`, `nv set ${bd} untagged none`,
      ]);
      expect(s({ kind: 'addTagged', vlan: 1002 }, trunk(1001, 1001))).to.deep.equal(['nv set bridge domain br_default vlan 1002', `nv set ${bd} vlan 1002`]);
      expect(s({ kind: 'setNative', vlan: 1003 }, trunk(1001, 1001, 1002))).to.deep.equal([
        'nv set bridge domain br_default vlan 1003', `nv unset ${bd} vlan 1001`, `nv set ${bd} vlan 1003`, `nv set ${bd} untagged 1003`,
      ]);
      expect(s({ kind: 'removeNative' }, trunk(1001, 1001, 1002))).to.deep.equal([`nv set ${bd} untagged none`, `nv unset ${bd} vlan 1001`]);
      expect(s({ kind: 'removeNative' }, trunk(1001, 1001))).to.deep.equal([`nv unset ${bd}`]);
      expect(s({ kind: 'removeTagged', vlan: 1002 }, trunk(null, 1002))).to.deep.equal([`nv unset ${bd}`]);
      expect(s({ kind: 'removeTagged', vlan: 1002 }, trunk(1001, 1001, 1002))).to.deep.equal([`nv unset ${bd} vlan 1002`]);
      expect(s({ kind: 'reset' }, trunk(1001, 1001))).to.deep.equal([`nv unset ${bd}`]);
      expect(CUMULUS_NVUE_TABLE.setup!({})).to.deep.equal(['nv config detach']);
      expect(CUMULUS_NVUE_TABLE.commit).to.deep.include({ command: 'nv config apply -y', discard: ['nv config detach'] });
    });

    it('reads the JSON: {} is out of the bridge, all is every VLAN, none no untagged VLAN, the bridge\'s 1 by default', () => {
      expect(CUMULUS_NVUE_TABLE.parse('{}', p, {})).to.deep.equal(trunk(null));
      expect(CUMULUS_NVUE_TABLE.parse('{"learning": "on", "untagged": 1001, "vlan": {"1001": {}, "1002": {}}}', p, {})).to.deep.equal(trunk(1001, 1001, 1002));
      expect(CUMULUS_NVUE_TABLE.parse('{"untagged": "none", "vlan": {"1005-1007": {}}}', p, {})).to.deep.equal(trunk(null, 1005, 1006, 1007));
      expect(CUMULUS_NVUE_TABLE.parse('{"learning": "on", "vlan": {"all": {}}}', p, {})).to.deep.equal({ mode: 'trunk', access: null, native: 1, allowed: 'all' });
      expect(portVlans(CUMULUS_NVUE_TABLE.parse('{"stp": {}}', p, {}))).to.deep.equal({ native: 1, tagged: [], other: ['trunk allows every VLAN'] });
      expect(() => CUMULUS_NVUE_TABLE.parse('Error: The requested item does not exist.', p, {})).to.throw(/not JSON/);
      // nothing at all is no reading, never a port out of the bridge (a reset would send nothing)
      expect(() => CUMULUS_NVUE_TABLE.parse('\n', p, {})).to.throw(/no JSON/);
    });

    it('tells a bond member from the applied configuration, member ranges included; an unknown layout is an error, never "no bond"', () => {
      const config = (interfaces: unknown) => JSON.stringify([{ header: { model: 'VX', 'rev-id': 1.0 } }, { set: { bridge: { domain: { br_default: {} } }, interface: interfaces } }]);
      const b = CUMULUS_NVUE_TABLE.bundle!;
      expect(b.show(p)).to.equal('nv config show -o json');
      expect(b.parse(config({ bond1: { bond: { member: { swp3: {} } }, type: 'bond' }, swp1: { type: 'swp' } }), p)).to.equal('bond1');
      expect(b.parse(config({ bond2: { bond: { member: { 'swp1-4': {} } } } }), p)).to.equal('bond2');
      expect(b.parse(config({ bond2: { bond: { member: { 'swp1,swp5-6': {} } } } }), p)).to.equal(null);
      expect(b.parse(config({ bond3: { bond: { member: { 'swp49s0-3': {} } } } }), 'swp49s2')).to.equal('bond3');
      expect(b.parse(config({ swp3: { bridge: { domain: { br_default: {} } } } }), p)).to.equal(null);
      // the set tree alone, as another release may print it
      expect(b.parse(JSON.stringify({ interface: { bond1: { bond: { member: { swp3: {} } } } } }), p)).to.equal('bond1');
      expect(() => b.parse(JSON.stringify([{ header: {} }]), p)).to.throw(/no "interface"/);
      expect(() => b.parse('Error: Permission denied', p)).to.throw(/not JSON/);
    });

    it('finds in the pending revision what the session did not stage: other interfaces, other bridge VLANs, anything else', () => {
      const check = CUMULUS_NVUE_TABLE.commit!.check!;
      expect(check.command).to.equal('nv config diff -o json');
      const staged = { ports: ['swp3', 'swp4'], vlans: [1001, 1002] };
      const diff = (...parts: unknown[]) => JSON.stringify(parts);
      const ours = { interface: { swp3: { bridge: { domain: { br_default: { vlan: { '1001': {} }, untagged: 1001 } } } }, swp4: { link: { state: { down: {} } } } }, bridge: { domain: { br_default: { vlan: { '1001-1002': {} } } } } };
      expect(check.foreign(diff({ set: ours }, { unset: { interface: { swp3: { bridge: { domain: { br_default: { vlan: { '1003': {} } } } } } } } }), staged)).to.deep.equal([]);
      expect(check.foreign('[]', staged)).to.deep.equal([]);
      expect(check.foreign('', staged)).to.deep.equal([]);
      expect(check.foreign(diff({ set: { ...ours, interface: { ...ours.interface, 'swp5-6': {} } } }), staged)).to.deep.equal(['set interface swp5', 'set interface swp6']);
      expect(check.foreign(diff({ set: { bridge: { domain: { br_default: { vlan: { '2000': {} } } } } } }), staged)).to.deep.equal(['set bridge domain br_default vlan 2000']);
      expect(check.foreign(diff({ unset: { bridge: { domain: { br_default: { vlan: { '1002': {} }, stp: {} } } } } }), staged)).to.deep.equal(['unset bridge']);
      expect(check.foreign(diff({ set: { system: { hostname: 'x' } } }), staged)).to.deep.equal(['set system']);
      expect(() => check.foreign('Error: Permission denied', staged)).to.throw(/not JSON/);
      expect(() => check.foreign('["set"]', staged)).to.throw(/not a list of set\/unset/);
    });
  });

  describe('administrative state and wiring, in each family\'s shapes', () => {
    const wiringOf = (t: SwitchTable, macs: string, lldp: string, ports: string[]) => {
      const w = t.wiring!;
      return wiringByPort(ports, w.parseMacs ? w.parseMacs(macs) : macRows(macs, (x) => (w.portKey(x) ? x : null)), w.parseLldp(lldp), (p) => w.portKey(p));
    };

    it('Dell OS10: shutdown in the running configuration; show mac address-table; show lldp neighbors', () => {
      const a = DELL_OS10_TABLE.adminState!;
      expect(a.parse('!\ninterface ethernet1/1/3\n shutdown\n switchport mode trunk', 'ethernet1/1/3')).to.equal(false);
      expect(a.parse('!\ninterface ethernet1/1/3\n no shutdown', 'ethernet1/1/3')).to.equal(true);
      expect(() => a.parse('!\ninterface ethernet1/1/3', 'ethernet1/1/3')).to.throw(/no "shutdown"/);
      expect(a.set(false)).to.deep.equal(['shutdown']);
      const macs = ['VlanId  Mac Address         Type      Interface', '1001    52:54:00:12:34:56   dynamic   ethernet1/1/3', '1       14:18:77:aa:bb:cc   static    port-channel1'].join('\n');
      const lldp = [
        'Loc PortID          Rem Host Name         Rem Port Id                   Rem Chassis Id',
        '----------------------------------------------------------------------------------',
        'ethernet1/1/4       node-b                52:54:00:12:34:57             52:54:00:aa:bb:01',
      ].join('\n');
      const w = wiringOf(DELL_OS10_TABLE, macs, lldp, ['ethernet1/1/3', 'ethernet1/1/4']);
      expect(w.get('ethernet1/1/3')).to.deep.equal({ macs: ['52:54:00:12:34:56'], lldp: [] });
      expect(w.get('ethernet1/1/4')).to.deep.equal({ macs: [], lldp: [{ chassisId: '52:54:00:aa:bb:01', portId: '52:54:00:12:34:57', systemName: 'node-b' }] });
      expect(os10Port('Eth 1/1/3')).to.equal('ethernet1/1/3');
    });

    it('SONiC: the Admin column of show interfaces status; show mac (upper case); lldpctl\'s blocks', () => {
      const a = SONIC_TABLE.adminState!;
      // columns right-aligned under a rule of dashes, two spaces apart (tabulate's `simple`)
      const status = (admin: string) => {
        const rows = [['Interface', 'Lanes', 'Speed', 'MTU', 'FEC', 'Alias', 'Vlan', 'Oper', 'Admin', 'Type', 'Asym PFC'], ['Ethernet8', '9,10,11,12', '100G', '9100', 'rs', 'etp3', 'trunk', 'down', admin, 'N/A', 'N/A']];
        const width = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
        const line = (r: string[]) => r.map((c, i) => c.padStart(width[i]!)).join('  ');
        return [line(rows[0]!), width.map((w) => '-'.repeat(w)).join('  '), line(rows[1]!)].join('\n');
      };
      expect(a.parse(status('down'), 'Ethernet8')).to.equal(false);
      expect(a.parse(status('up'), 'Ethernet8')).to.equal(true);
      expect(() => a.parse(status('up'), 'Ethernet4')).to.throw(/no row for Ethernet4/);
      expect(a.set(false, 'Ethernet8')).to.deep.equal(['sudo config interface shutdown Ethernet8']);
      expect(a.set(true, 'Ethernet8')).to.deep.equal(['sudo config interface startup Ethernet8']);
      const macs = ['  No.    Vlan  MacAddress         Port       Type', '-----  ------  -----------------  ---------  -------', '    1    1001  52:54:00:12:34:56  Ethernet8  Dynamic', 'Total number of entries 1'].join('\n');
      const rule = '-'.repeat(79);
      const lldp = [rule, 'LLDP neighbors:', rule, 'Interface:    Ethernet4, via: LLDP, RID: 1, Time: 0 day, 00:01:02', '  Chassis:', '    ChassisID:    mac 52:54:00:aa:bb:01',
        '    SysName:      node-b', '  Port:', '    PortID:       ifname eno1', rule].join('\n');
      const w = wiringOf(SONIC_TABLE, macs, lldp, ['Ethernet8', 'Ethernet4']);
      expect(w.get('Ethernet8')).to.deep.equal({ macs: ['52:54:00:12:34:56'], lldp: [] });
      expect(w.get('Ethernet4')).to.deep.equal({ macs: [], lldp: [{ chassisId: '52:54:00:aa:bb:01', portId: 'eno1', systemName: 'node-b' }] });
    });

    it('Junos: disable in the configuration, staged; show ethernet-switching table (the unit on the port); show lldp neighbors', () => {
      const a = JUNOS_TABLE.adminState!;
      expect(a.parse('set interfaces ge-0/0/1 disable\nset interfaces ge-0/0/1 unit 0 family ethernet-switching', 'ge-0/0/1')).to.equal(false);
      expect(a.parse('set interfaces ge-0/0/10 disable\nset interfaces ge-0/0/1 unit 0 family ethernet-switching', 'ge-0/0/1')).to.equal(true);
      expect(a.set(false, 'ge-0/0/1')).to.deep.equal(['set interfaces ge-0/0/1 disable']);
      expect(a.set(true, 'ge-0/0/1')).to.deep.equal(['delete interfaces ge-0/0/1 disable']);
      const macs = [
        'MAC flags (S - static MAC, D - dynamic MAC, L - locally learned, P - Persistent static',
        '',
        'Ethernet switching table : 2 entries, 2 learned',
        '   Vlan                MAC                 MAC         Age    Logical',
        '   name                address             flags              interface',
        '   hilt-1001           52:54:00:12:34:56   D             -   ge-0/0/1.0',
        '   hilt-1001           52:54:00:12:34:99   D             -   ae0.0',
      ].join('\n');
      const lldp = ['Local Interface    Parent Interface    Chassis Id          Port info          System Name', 'ge-0/0/2           -                   52:54:00:aa:bb:01   eno1               node-b'].join('\n');
      const w = wiringOf(JUNOS_TABLE, macs, lldp, ['ge-0/0/1', 'ge-0/0/2']);
      expect(w.get('ge-0/0/1')).to.deep.equal({ macs: ['52:54:00:12:34:56'], lldp: [] });
      expect(w.get('ge-0/0/2')).to.deep.equal({ macs: [], lldp: [{ chassisId: '52:54:00:aa:bb:01', portId: 'eno1', systemName: 'node-b' }] });
      expect(junosPort('xe-0/0/1:0.0')).to.equal('xe-0/0/1:0');
      expect(junosPort('irb.1001')).to.equal(null);
    });

    it('Junos: a VLAN named by the operator (its name is the first column) does not hide the MACs learned on it', () => {
      const macs = [
        'MAC flags (S - static MAC, D - dynamic MAC, L - locally learned, P - Persistent static',
        '',
        'Ethernet switching table : 3 entries, 3 learned',
        '   Vlan                MAC                 MAC         Age    Logical',
        '   name                address             flags              interface',
        '   storage-system      52:54:00:12:34:56   D             -   ge-0/0/1.0',
        '   management          52:54:00:12:34:57   D             -   ge-0/0/2.0',
        '   static-hosts        52:54:00:12:34:58   D             -   ge-0/0/3.0',
      ].join('\n');
      const w = wiringOf(JUNOS_TABLE, macs, '', ['ge-0/0/1', 'ge-0/0/2', 'ge-0/0/3']);
      expect(w.get('ge-0/0/1')!.macs).to.deep.equal(['52:54:00:12:34:56']);
      expect(w.get('ge-0/0/2')!.macs).to.deep.equal(['52:54:00:12:34:57']);
      expect(w.get('ge-0/0/3')!.macs).to.deep.equal(['52:54:00:12:34:58']);
    });

    it('Junos: a static MAC (flag S, configured by hand) is no sign of the cable; one learned from traffic is', () => {
      const macs = [
        'MAC flags (S - static MAC, D - dynamic MAC, L - locally learned, P - Persistent static',
        '',
        'Ethernet switching table : 3 entries, 2 learned',
        '   Vlan                MAC                 MAC         Age    Logical',
        '   name                address             flags              interface',
        '   hilt-1001           52:54:00:12:34:56   S             -   ge-0/0/1.0',
        '   hilt-1001           52:54:00:12:34:57   D             -   ge-0/0/2.0',
        '   hilt-1001           52:54:00:12:34:58   DL            -   ge-0/0/3.0',
      ].join('\n');
      const w = wiringOf(JUNOS_TABLE, macs, '', ['ge-0/0/1', 'ge-0/0/2', 'ge-0/0/3']);
      expect(w.get('ge-0/0/1')!.macs).to.deep.equal([]);
      expect(w.get('ge-0/0/2')!.macs).to.deep.equal(['52:54:00:12:34:57']);
      expect(w.get('ge-0/0/3')!.macs).to.deep.equal(['52:54:00:12:34:58']);
    });

    it('NVUE: lldpctl keyvalue with two neighbours on one port keeps both, each with its own fields', () => {
      const lldp = [
        'lldp.swp2.via=LLDP', 'lldp.swp2.rid=1', 'lldp.swp2.chassis.mac=52:54:00:aa:bb:01', 'lldp.swp2.chassis.name=node-b', 'lldp.swp2.port.ifname=eno1',
        'lldp.swp2.via=LLDP', 'lldp.swp2.rid=2', 'lldp.swp2.chassis.mac=52:54:00:aa:bb:02', 'lldp.swp2.port.ifname=eno2',
      ].join('\n');
      const w = wiringOf(CUMULUS_NVUE_TABLE, '{}', lldp, ['swp2']);
      expect(w.get('swp2')!.lldp).to.deep.equal([
        { chassisId: '52:54:00:aa:bb:01', portId: 'eno1', systemName: 'node-b' },
        { chassisId: '52:54:00:aa:bb:02', portId: 'eno2' },
      ]);
    });

    it('NVUE: link state in JSON, staged; the mac-table JSON without the bridge\'s own; lldpctl keyvalue', () => {
      const a = CUMULUS_NVUE_TABLE.adminState!;
      expect(a.parse('{"admin-status": "down", "mtu": 9216, "state": {"down": {}}}', 'swp1')).to.equal(false);
      expect(a.parse('{"state": {"up": {}}}', 'swp1')).to.equal(true);
      expect(a.parse('{"admin-status": "up"}', 'swp1')).to.equal(true);
      expect(() => a.parse('{}', 'swp1')).to.throw(/no "state"/);
      expect(a.set(false, 'swp1')).to.deep.equal(['nv set interface swp1 link state down']);
      const macs = JSON.stringify({
        1: { 'entry-type': 'learned', interface: 'swp1', mac: '52:54:00:12:34:56', vlan: 1001 },
        2: { 'entry-type': 'permanent', interface: 'br_default', mac: '44:38:39:00:00:01', vlan: 1 },
        3: { 'entry-type': 'permanent', interface: 'swp2', mac: '44:38:39:00:00:02', vlan: 1 },
      });
      const lldp = ['lldp.swp2.via=LLDP', 'lldp.swp2.chassis.mac=52:54:00:aa:bb:01', 'lldp.swp2.chassis.name=node-b', 'lldp.swp2.port.ifname=eno1', 'lldp.swp3.via=LLDP'].join('\n');
      const w = wiringOf(CUMULUS_NVUE_TABLE, macs, lldp, ['swp1', 'swp2', 'swp3']);
      expect(w.get('swp1')).to.deep.equal({ macs: ['52:54:00:12:34:56'], lldp: [] });
      expect(w.get('swp2')).to.deep.equal({ macs: [], lldp: [{ chassisId: '52:54:00:aa:bb:01', portId: 'eno1', systemName: 'node-b' }] });
      expect(w.get('swp3')).to.deep.equal({ macs: [], lldp: [] });
    });
  });
});
