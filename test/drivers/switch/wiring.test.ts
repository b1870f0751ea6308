/**
 * Reading the switches' own tables at unit level: MAC spellings, each SSH family's
 * administrative state, learned-MAC table and LLDP neighbours from outputs in the shapes the
 * real switches print (odd column widths, legends, the switch's own entries, wrapped headers).
 */
import { expect } from 'chai';
import { fixedWidthTable, macRows, normalizeMac, wiringByPort } from '../../../drivers/switch/wiring';
import type { SwitchTable } from '../../../drivers/switch/ssh/table';
import { NEXUS_TABLE } from '../../../drivers/switch/nexus';
import { ARISTA_EOS_TABLE } from '../../../drivers/switch/arista-eos';
import { POWERCONNECT_TABLE } from '../../../drivers/switch/powerconnect55xx';
import { DELL_N3000_TABLE } from '../../../drivers/switch/delln3000';

/** What a table reads from a MAC table and an LLDP output, for these registered ports. */
function read(t: SwitchTable, ports: string[], macs: string, lldp: string) {
  const w = t.wiring!;
  return Object.fromEntries(wiringByPort(ports, macRows(macs, (x) => (w.portKey(x) ? x : null)), w.parseLldp(lldp), w.portKey));
}

describe('switch tables: wiring and administrative state', () => {
  it('writes every MAC spelling one way, and refuses what is not a MAC', () => {
    for (const m of ['0050.56A0.1234', '00:50:56:a0:12:34', '00-50-56-A0-12-34', '005056a01234']) expect(normalizeMac(m)).to.equal('00:50:56:a0:12:34');
    for (const m of ['', 'jenn.3057.8423', '00:50:56:a0:12', '00:50-56:a0:12:34', 'Eth1/3']) expect(normalizeMac(m)).to.equal(null);
  });

  it('cuts a fixed-width table at its rule, with headers over two lines', () => {
    const out = [
      '                                               Flow    Admin     Back   Mdix',
      'Port     Type         Duplex  Speed  Neg      control State    Pressure Mode',
      '-------- ------------ ------  -----  -------- ------- -----    -------- ----',
      'gi1/0/3  1G-Copper    Full    1000   Enabled  Off     Down     Disabled Auto',
      '',
      'ignored after the blank line',
    ].join('\n');
    const t = fixedWidthTable(out);
    expect(t.headers[6]).to.equal('Admin State');
    expect(t.rows).to.deep.equal([['gi1/0/3', '1G-Copper', 'Full', '1000', 'Enabled', 'Off', 'Down', 'Disabled', 'Auto']]);
    expect(fixedWidthTable('no rule here')).to.deep.equal({ headers: [], rows: [] });
  });

  describe('Cisco Nexus', () => {
    const a = NEXUS_TABLE.adminState!;
    it('reads the administrative state from "show interface", old releases included', () => {
      expect(a.show('Ethernet1/3')).to.equal('show interface Ethernet1/3');
      expect(a.parse('Ethernet1/3 is down (Administratively down)\nadmin state is down, Dedicated Interface\n  Hardware: 1000/10000 Ethernet', 'Ethernet1/3')).to.equal(false);
      expect(a.parse('Ethernet1/3 is down (Link not connected)\nadmin state is up, Dedicated Interface\n', 'Ethernet1/3')).to.equal(true);
      // NX-OS 5 prints no admin state line.
      expect(a.parse('Ethernet1/3 is down (Administratively down)\n  Hardware: 1000/10000 Ethernet', 'Ethernet1/3')).to.equal(false);
      expect(a.parse('Ethernet1/3 is up\n  Hardware: 1000/10000 Ethernet', 'Ethernet1/3')).to.equal(true);
      expect(() => a.parse('% Invalid interface format', 'Ethernet1/3')).to.throw(/no "<port> is up\/down" line/);
      expect(a.set(false)).to.deep.equal(['shutdown']);
      expect(a.set(true)).to.deep.equal(['no shutdown']);
    });

    it('reads learned MACs (not the switch\'s own) and LLDP details, port names as registered', () => {
      const macs = [
        'Legend: ',
        '        * - primary entry, G - Gateway MAC, (R) - Routed MAC, O - Overlay MAC',
        '        age - seconds since last seen,+ - primary entry using vPC Peer-Link,',
        '   VLAN     MAC Address      Type      age     Secure NTFY Ports',
        '---------+-----------------+--------+---------+------+----+------------------',
        '*  1001     0200.0000.0a01   dynamic  0         F      F    Eth1/3',
        '*  1001     5254.0012.3456   dynamic  0         F      F    Eth1/3',
        '* 100      0200.0000.0a02    dynamic   20         F    F  Po12',
        'G    -     0000.5e00.5301   static   -         F      F    sup-eth1(R)',
        '*    1     0100.5e00.0001   dynamic  0         F      F    Eth1/9',
      ].join('\n');
      const lldp = [
        'Capability codes:',
        '  (R) Router, (B) Bridge, (T) Telephone, (C) DOCSIS Cable Device',
        'Device ID            Local Intf      Hold-time  Capability  Port ID',
        '',
        'Chassis id: 0200.0000.0a00',
        'Port id: 0200.0000.0a01',
        'Local Port id: Eth1/3',
        'Port Description: not advertised',
        'System Name: node-a',
        'Time remaining: 115 seconds',
        '',
        'Chassis id: f8c2.8891.1045',
        'Port id: Ethernet1/40',
        'Local Port id: Eth1/40',
        'System Name: not advertised',
        '',
        'Total entries displayed: 2',
      ].join('\n');
      expect(read(NEXUS_TABLE, ['Ethernet1/3', 'ethernet1/4'], macs, lldp)).to.deep.equal({
        'Ethernet1/3': { macs: ['02:00:00:00:0a:01', '52:54:00:12:34:56'], lldp: [{ chassisId: '0200.0000.0a00', portId: '0200.0000.0a01', systemName: 'node-a' }] },
        'ethernet1/4': { macs: [], lldp: [] },
        Po12: { macs: ['02:00:00:00:0a:02'], lldp: [] },
        'Eth1/40': { macs: [], lldp: [{ chassisId: 'f8c2.8891.1045', portId: 'Ethernet1/40' }] },
      });
    });
  });

  describe('Arista EOS', () => {
    const a = ARISTA_EOS_TABLE.adminState!;
    it('reads the administrative state from the Status column of "show interfaces X status"', () => {
      const head = 'Port       Name   Status       Vlan     Duplex Speed  Type            Flags Encapsulation\n';
      expect(a.show('Ethernet7')).to.equal('show interfaces Ethernet7 status');
      expect(a.parse(`${head}Et7               disabled     trunk    full   10G    10GBASE-T\n`, 'Ethernet7')).to.equal(false);
      expect(a.parse(`${head}Et7        uplink connected    1001     full   10G    10GBASE-T\n`, 'Ethernet7')).to.equal(true);
      // errdisabled: the switch shut it, not an administrator
      expect(a.parse(`${head}Et7               errdisabled  trunk    full   10G    10GBASE-T\n`, 'Ethernet7')).to.equal(true);
      expect(() => a.parse(head, 'Ethernet7')).to.throw(/no row for Ethernet7/);
    });

    it('reads learned MACs (misaligned rows, the multicast table) and LLDP neighbours per interface', () => {
      const macs = [
        '          Mac Address Table',
        '------------------------------------------------------------------',
        '',
        'Vlan    Mac Address       Type        Ports      Moves   Last Move',
        '----    -----------       ----        -----      -----   ---------',
        '   3    0012.3694.03ec    STATIC      Et7',
        '  55        001c.7313.a3de      DYNAMIC        Et32        1    0:08:16 ago',
        '1001    0200.0000.0b01    DYNAMIC     Et1        1       9 days, 15:57:28 ago',
        'Total Mac Addresses for this criterion: 3',
        '',
        '          Multicast Mac Address Table',
        '------------------------------------------------------------------',
        'Vlan    Mac Address       Type        Ports',
        '----    -----------       ----        -----',
        '   4    0100.5e00.0001    STATIC      Po10 Po123',
      ].join('\n');
      const lldp = [
        'Interface Ethernet1 detected 1 LLDP neighbors:',
        '',
        '  Neighbor 0200.0000.0b00/0200.0000.0b01, age 3 seconds',
        '  Discovered 2 days, 1:02:03 ago; Last changed 2 days, 1:02:03 ago',
        '    - Chassis ID type: MAC address (4)',
        '      Chassis ID     : 0200.0000.0b00',
        '    - Port ID type: MAC address (3)',
        '      Port ID     : "0200.0000.0b01"',
        '    - Time To Live: 120 seconds',
        '    - System Name: "node-b"',
        '',
        'Interface Ethernet2 detected 0 LLDP neighbors:',
        '',
      ].join('\n');
      expect(read(ARISTA_EOS_TABLE, ['Ethernet1', 'Ethernet2'], macs, lldp)).to.deep.equal({
        Ethernet1: { macs: ['02:00:00:00:0b:01'], lldp: [{ chassisId: '0200.0000.0b00', portId: '0200.0000.0b01', systemName: 'node-b' }] },
        Ethernet2: { macs: [], lldp: [] },
        Et32: { macs: ['00:1c:73:13:a3:de'], lldp: [] },
      });
    });
  });

  describe('Dell PowerConnect 55xx', () => {
    it('reads the Admin State column of "show interfaces configuration"', () => {
      const a = POWERCONNECT_TABLE.adminState!;
      const out = (state: string) => [
        '                                               Flow    Admin     Back   Mdix',
        'Port     Type         Duplex  Speed  Neg      control State    Pressure Mode',
        '-------- ------------ ------  -----  -------- ------- -----    -------- ----',
        `gi1/0/3  1G-Copper    Full    1000   Enabled  Off     ${state.padEnd(8)} Disabled Auto`,
      ].join('\n');
      expect(a.show('gi1/0/3')).to.equal('show interfaces configuration gi1/0/3');
      expect(a.parse(out('Up'), 'gi1/0/3')).to.equal(true);
      expect(a.parse(out('Down'), 'gi1/0/3')).to.equal(false);
      expect(() => a.parse(out('Up'), 'gi1/0/4')).to.throw(/no row for gi1\/0\/4/);
    });

    it('reads learned MACs (with colons; the switch\'s own is "self") and the LLDP summary', () => {
      const macs = [
        'Flags: I - Internal usage VLAN',
        'Aging time is 300 sec',
        '',
        '    Vlan          Mac Address         Port       Type',
        ' ------------ --------------------- ---------- ----------',
        '      1         00:00:5e:00:53:01       0         self',
        '    1001        02:00:00:00:0c:01    gi1/0/1    dynamic',
      ].join('\n');
      const lldp = [
        'System capability supported: Bridge, Router',
        'System capability enabled: Bridge',
        '',
        '  Port        Device ID          Port ID         System Name     Capabilities  TTL',
        '--------- ----------------- ----------------- ----------------- ------------ -----',
        'gi1/0/1   02:00:00:00:0c:00 02:00:00:00:0c:01 node-c            S            93',
        'te1/0/1   00:11:22:33:44:55 gi1/0/48          core-sw           B, R         110',
      ].join('\n');
      expect(read(POWERCONNECT_TABLE, ['gi1/0/1'], macs, lldp)).to.deep.equal({
        'gi1/0/1': { macs: ['02:00:00:00:0c:01'], lldp: [{ chassisId: '02:00:00:00:0c:00', portId: '02:00:00:00:0c:01', systemName: 'node-c' }] },
        'te1/0/1': { macs: [], lldp: [{ chassisId: '00:11:22:33:44:55', portId: 'gi1/0/48', systemName: 'core-sw' }] },
      });
    });
  });

  describe('Dell N3000 (DNOS6)', () => {
    it('reads the Admin State column of "show interfaces configuration", and its MAC table and remote devices', () => {
      const a = DELL_N3000_TABLE.adminState!;
      const conf = [
        'Port      Description                    Duplex Speed   Neg  MTU   Admin',
        '                                                                   State',
        '--------- ------------------------------ ------ ------- ---- ----- -----',
        'Gi1/0/3                                  Auto   Auto    Auto 1518  Down',
      ].join('\n');
      expect(a.parse(conf, 'gi1/0/3')).to.equal(false);
      expect(DELL_N3000_TABLE.wiring!.lldp).to.equal('show lldp remote-device all');
      const macs = [
        'Aging time is 300 Sec',
        '',
        'Vlan     Mac Address           Type        Port',
        '-------- --------------------- ----------- ---------------------',
        '1        0000.5E00.5301        Management  Vl1',
        '1001     0200.0000.0D01        Dynamic     Gi1/0/2',
        '',
        'Total MAC Addresses in use: 2',
      ].join('\n');
      const lldp = [
        'LLDP Remote Device Summary',
        '',
        'Local',
        'Interface RemID   Chassis ID          Port ID           System Name',
        '--------- ------- ------------------- ----------------- -----------------',
        'Gi1/0/2   4       02:00:00:00:0D:00   02:00:00:00:0D:01 node-d',
      ].join('\n');
      expect(read(DELL_N3000_TABLE, ['gi1/0/2', 'gi1/0/3'], macs, lldp)).to.deep.equal({
        'gi1/0/2': { macs: ['02:00:00:00:0d:01'], lldp: [{ chassisId: '02:00:00:00:0D:00', portId: '02:00:00:00:0D:01', systemName: 'node-d' }] },
        'gi1/0/3': { macs: [], lldp: [] },
      });
    });
  });
});
