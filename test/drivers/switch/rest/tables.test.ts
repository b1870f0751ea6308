/**
 * The REST vendors' tables at unit level: the exact requests (method, path, body, tolerated
 * statuses) of each operation, and the parsing of the switches' real reply shapes (VLAN ranges,
 * namespaces, empty and absent lists, wrapped membership lines, error documents).
 */
import { expect } from 'chai';
import { BROCADE_TABLE, BrocadeReading } from '../../../../drivers/switch/brocade';
import { DELL_OS9_TABLE, DellReading, membership } from '../../../../drivers/switch/dellnos9';
import { planChange, TableReply } from '../../../../drivers/switch/http/driver';
import { el, parseXml } from '../../../../drivers/switch/http/xml';
import { SWITCH_DRIVERS } from '../../../../drivers/switch';

const ctx = { interfaceType: 'TenGigabitEthernet' };
const reply = (status: number, text = ''): TableReply => ({ status, text, ...(text && status < 300 ? { xml: parseXml(text) } : {}) });
const NS = 'urn:brocade.com:mgmt:brocade-interface';
const DELL = 'http://www.dell.com/ns/dell:0.1/root';
const B = '/rest/config/running/interface/TenGigabitEthernet/%22101/0/10%22';

describe('Brocade VDX table', () => {
  const trunk: BrocadeReading = { ready: true, switchport: true, mode: 'trunk', tagNative: false, native: null, tagged: [], enabled: true, other: [] };

  it('reads a port with three GETs (mode, trunk, shutdown), 404 meaning absent; a VLAN change\'s reading without the shutdown leaf', () => {
    expect(BROCADE_TABLE.read('101/0/10', ctx, false).map((r) => r.path)).to.deep.equal([`${B}/switchport/mode`, `${B}/switchport/trunk`]);
    expect(BROCADE_TABLE.read('101/0/10', ctx, true)).to.deep.equal([
      { method: 'GET', path: `${B}/switchport/mode`, tolerate: [404] },
      { method: 'GET', path: `${B}/switchport/trunk`, tolerate: [404] },
      { method: 'GET', path: `${B}/shutdown`, tolerate: [404] },
    ]);
  });

  it('parses a trunk: ranges expanded, the native VLAN apart, a shut port', () => {
    const r = BROCADE_TABLE.parse([
      reply(200, `<mode xmlns="${NS}"><vlan-mode>trunk</vlan-mode></mode>`),
      reply(200, `<trunk xmlns="${NS}"><allowed><vlan><add>1001,1005-1007</add></vlan></allowed><native-vlan>1001</native-vlan></trunk>`),
      reply(200, `<shutdown xmlns="${NS}">true</shutdown>`),
    ], '101/0/10', ctx);
    expect(r).to.deep.equal({ ready: true, switchport: true, mode: 'trunk', tagNative: false, native: 1001, tagged: [1005, 1006, 1007], enabled: false, other: [] });
  });

  it('parses an explicit empty list, an absent one (every VLAN), a tagged native VLAN, an access port and a routed one', () => {
    const mode = (m: string) => reply(200, `<mode xmlns="${NS}"><vlan-mode>${m}</vlan-mode></mode>`);
    const up = reply(404);
    const none = BROCADE_TABLE.parse([mode('trunk'), reply(200, `<trunk xmlns="${NS}"><allowed><vlan><none>true</none></vlan></allowed></trunk>`), up], 'p', ctx);
    expect(none).to.deep.include({ ready: true, tagged: [], native: null, enabled: true, other: [] });
    expect(BROCADE_TABLE.parse([mode('trunk'), reply(200, `<trunk xmlns="${NS}"></trunk>`), up], 'p', ctx).tagged).to.equal('all');
    const tagged = BROCADE_TABLE.parse([mode('trunk'), reply(200, `<trunk xmlns="${NS}"><allowed><vlan><none>true</none></vlan></allowed><tag><native-vlan>true</native-vlan></tag><native-vlan>7</native-vlan></trunk>`), up], 'p', ctx);
    expect(tagged).to.deep.include({ native: 7, tagNative: true, other: ['native VLAN 7 sent tagged'] });
    expect(BROCADE_TABLE.parse([mode('access'), reply(404), up], 'p', ctx)).to.deep.include({ ready: false, mode: 'access', other: ['access mode'] });
    expect(BROCADE_TABLE.parse([reply(404), reply(404), up], 'p', ctx)).to.deep.include({ ready: false, switchport: false, other: ['not a switch port'] });
  });

  it('refuses an answer in another namespace, or a VLAN list it cannot read', () => {
    expect(() => BROCADE_TABLE.parse([reply(200, '<mode xmlns="urn:other"><vlan-mode>trunk</vlan-mode></mode>'), reply(404), reply(404)], 'p', ctx))
      .to.throw(/expected <mode> in urn:brocade.com:mgmt:brocade-interface, the switch answered <mode> in urn:other/);
    expect(() => BROCADE_TABLE.parse([reply(200, `<mode xmlns="${NS}"><vlan-mode>trunk</vlan-mode></mode>`), reply(200, `<trunk xmlns="${NS}"><allowed><vlan><add>12,x</add></vlan></allowed></trunk>`), reply(404)], 'p', ctx))
      .to.throw(/"x" is not a VLAN id or range/);
  });

  it('sends HIL\'s requests with well-formed bodies: native, tagged add and remove, native remove', () => {
    expect(planChange(BROCADE_TABLE, ctx, '101/0/10', { kind: 'setNative', vlan: 1001 }, trunk)).to.deep.equal({
      requests: [
        { method: 'DELETE', path: `${B}/switchport/trunk/tag/native-vlan`, tolerate: [404] },
        { method: 'PUT', path: `${B}/switchport/trunk`, body: '<trunk><native-vlan>1001</native-vlan></trunk>' },
      ],
      expected: { native: 1001, tagged: [] },
    });
    const native = { ...trunk, native: 1001 };
    expect(planChange(BROCADE_TABLE, ctx, '101/0/10', { kind: 'addTagged', vlan: 1002 }, native)!.requests).to.deep.equal([
      { method: 'PUT', path: `${B}/switchport/trunk/allowed/vlan`, body: '<vlan><add>1002</add></vlan>' },
    ]);
    expect(planChange(BROCADE_TABLE, ctx, '101/0/10', { kind: 'removeTagged', vlan: 1002 }, { ...native, tagged: [1002] })!.requests).to.deep.equal([
      { method: 'PUT', path: `${B}/switchport/trunk/allowed/vlan`, body: '<vlan><remove>1002</remove></vlan>' },
    ]);
    expect(planChange(BROCADE_TABLE, ctx, '101/0/10', { kind: 'removeNative' }, native)!.requests).to.deep.equal([
      { method: 'DELETE', path: `${B}/switchport/trunk/native-vlan`, tolerate: [404] },
    ]);
    expect(planChange(BROCADE_TABLE, ctx, '101/0/10', { kind: 'addTagged', vlan: 1002 }, { ...native, tagged: [1002] })).to.equal(null);
  });

  it('makes an access port an empty trunk before its first change', () => {
    const access: BrocadeReading = { ...trunk, ready: false, mode: 'access', other: ['access mode'] };
    expect(planChange(BROCADE_TABLE, ctx, '101/0/10', { kind: 'addTagged', vlan: 1002 }, access)!.requests.map((r) => `${r.method} ${r.path.slice(B.length)} ${r.body ?? ''}`)).to.deep.equal([
      'PUT /switchport/mode <mode><vlan-mode>trunk</vlan-mode></mode>',
      'PUT /switchport/trunk/allowed/vlan <vlan><none>true</none></vlan>',
      'PUT /switchport/trunk/allowed/vlan <vlan><add>1002</add></vlan>',
    ]);
    const routed: BrocadeReading = { ...trunk, ready: false, switchport: false, mode: null, other: ['not a switch port'] };
    expect(planChange(BROCADE_TABLE, ctx, '101/0/10', { kind: 'reset' }, routed)!.requests[0]).to.deep.equal({ method: 'POST', path: B, body: '<switchport></switchport>', tolerate: [409] });
  });

  it('shuts a port by creating its shutdown leaf and opens it by deleting it', () => {
    expect(BROCADE_TABLE.setEnabled('101/0/10', false, trunk, ctx)).to.deep.equal([{ method: 'POST', path: B, body: '<shutdown>true</shutdown>', tolerate: [409] }]);
    expect(BROCADE_TABLE.setEnabled('101/0/10', true, trunk, ctx)).to.deep.equal([{ method: 'DELETE', path: `${B}/shutdown`, tolerate: [404] }]);
  });

  it('takes the message of a NOS REST error document', () => {
    const r = reply(200, '<errors xmlns="http://brocade.com/ns/rest"><error><error-type>application</error-type><error-tag>invalid-value</error-tag><error-message>%Error: VLAN 1002 does not exist</error-message></error></errors>');
    expect(BROCADE_TABLE.errorText(r)).to.equal('%Error: VLAN 1002 does not exist');
  });

  it('reads the MAC table and the LLDP neighbours page by page', async () => {
    const MAC = 'urn:brocade.com:mgmt:brocade-mac-address-table';
    const row = (mac: string, port: string, type = 'dynamic', iftype = 'tengigabitethernet') => `<mac-address-table><vlanid>1001</vlanid><mac-address>${mac}</mac-address><mac-type>${type}</mac-type><mac-state>active</mac-state><forwarding-interface><interface-type>${iftype}</interface-type><interface-name>${port}</interface-name></forwarding-interface></mac-address-table>`;
    const sent: string[] = [];
    const answers = [
      `<output xmlns="${MAC}">${row('5254.00aa.0001', '101/0/10')}${row('0100.5e00.0001', '101/0/10')}<has-more>true</has-more></output>`,
      `<output xmlns="${MAC}">${row('5254.00aa.0002', '101/0/11')}${row('5254.00aa.0003', '101/0/12', 'static')}${row('5254.00aa.0004', '1/0/1', 'dynamic', 'gigabitethernet')}<has-more>false</has-more></output>`,
      '<output xmlns="urn:brocade.com:mgmt:brocade-lldp-ext"><lldp-neighbor-detail><local-interface-name>Te 101/0/10</local-interface-name><local-interface-ifindex>7</local-interface-ifindex><remote-interface-name>eth0</remote-interface-name><remote-chassis-id>5254.00aa.0001</remote-chassis-id><remote-system-name>node-1</remote-system-name></lldp-neighbor-detail><has-more>false</has-more></output>',
    ];
    const wiring = await BROCADE_TABLE.wiring(['101/0/10', '101/0/13'], async (req) => {
      sent.push(`${req.method} ${req.path} ${req.body}`);
      return reply(200, answers.shift()!);
    }, ctx);
    expect(sent).to.deep.equal([
      'POST /rest/operational-state/get-mac-address-table <get-mac-address-table></get-mac-address-table>',
      'POST /rest/operational-state/get-mac-address-table <get-mac-address-table><last-mac-address-details><last-mac-address>0100.5e00.0001</last-mac-address></last-mac-address-details></get-mac-address-table>',
      'POST /rest/operational-state/get-lldp-neighbor-detail <get-lldp-neighbor-detail></get-lldp-neighbor-detail>',
    ]);
    expect(Object.fromEntries(wiring)).to.deep.equal({
      '101/0/10': { macs: ['52:54:00:aa:00:01'], lldp: [{ chassisId: '5254.00aa.0001', portId: 'eth0', systemName: 'node-1' }] },
      '101/0/11': { macs: ['52:54:00:aa:00:02'], lldp: [] },
      '101/0/13': { macs: [], lldp: [] },
    });
  });

  it('keeps the LLDP neighbours of its own interface type only: Fo 101/0/10 is not Te 101/0/10', async () => {
    const LLDP = 'urn:brocade.com:mgmt:brocade-lldp-ext';
    const row = (local: string, index: number, chassis: string) => `<lldp-neighbor-detail><local-interface-name>${local}</local-interface-name><local-interface-ifindex>${index}</local-interface-ifindex><remote-interface-name>eth0</remote-interface-name><remote-chassis-id>${chassis}</remote-chassis-id></lldp-neighbor-detail>`;
    const answers = [
      '<output xmlns="urn:brocade.com:mgmt:brocade-mac-address-table"><has-more>false</has-more></output>',
      `<output xmlns="${LLDP}">${row('Fo 101/0/10', 1, '5254.00aa.0009')}${row('Te 101/0/11', 2, '5254.00aa.0002')}${row('TenGigabitEthernet 101/0/12', 3, '5254.00aa.0003')}<has-more>false</has-more></output>`,
    ];
    const wiring = await BROCADE_TABLE.wiring(['101/0/10'], async () => reply(200, answers.shift()!), ctx);
    expect(Object.fromEntries(wiring)).to.deep.equal({
      '101/0/10': { macs: [], lldp: [] },
      '101/0/11': { macs: [], lldp: [{ chassisId: '5254.00aa.0002', portId: 'eth0' }] },
      '101/0/12': { macs: [], lldp: [{ chassisId: '5254.00aa.0003', portId: 'eth0' }] },
    });
  });

  it('reads the MAC table of a switch that refuses its LLDP operation (LLDP not enabled), but not an LLDP table cut short', async () => {
    const MAC = `<output xmlns="urn:brocade.com:mgmt:brocade-mac-address-table"><mac-address-table><vlanid>1001</vlanid><mac-address>5254.00aa.0001</mac-address><mac-type>dynamic</mac-type><forwarding-interface><interface-type>tengigabitethernet</interface-type><interface-name>101/0/10</interface-name></forwarding-interface></mac-address-table><has-more>false</has-more></output>`;
    const refused = '<errors xmlns="http://brocade.com/ns/rest"><error><error-message>LLDP is not enabled</error-message></error></errors>';
    const answers = [reply(200, MAC), reply(400, refused)];
    const sent: Array<number[] | undefined> = [];
    const wiring = await BROCADE_TABLE.wiring(['101/0/10'], async (req) => {
      sent.push(req.tolerate);
      return answers.shift()!;
    }, ctx);
    expect(sent[1], 'the LLDP request tolerates a refusal').to.include(400);
    expect(Object.fromEntries(wiring)).to.deep.equal({ '101/0/10': { macs: ['52:54:00:aa:00:01'], lldp: [] } });
    const LLDP = '<output xmlns="urn:brocade.com:mgmt:brocade-lldp-ext"><lldp-neighbor-detail><local-interface-name>Te 101/0/10</local-interface-name><local-interface-ifindex>7</local-interface-ifindex><remote-interface-name>eth0</remote-interface-name><remote-chassis-id>5254.00aa.0001</remote-chassis-id></lldp-neighbor-detail><has-more>true</has-more></output>';
    const cut = [reply(200, MAC), reply(200, LLDP), reply(500, refused)];
    const err = await BROCADE_TABLE.wiring(['101/0/10'], async () => cut.shift()!, ctx).then(() => null, (e: Error) => e);
    expect(err?.message).to.match(/LLDP neighbour table was refused at page 2/);
  });

  it('fails, rather than answer part of a table, when a page says it has more but ends without a row to go on from', async () => {
    const MAC = 'urn:brocade.com:mgmt:brocade-mac-address-table';
    const page1 = `<output xmlns="${MAC}"><mac-address-table><vlanid>1001</vlanid><mac-address>5254.00aa.0001</mac-address><mac-type>dynamic</mac-type><forwarding-interface><interface-type>tengigabitethernet</interface-type><interface-name>101/0/10</interface-name></forwarding-interface></mac-address-table><has-more>true</has-more></output>`;
    const answers = [page1, `<output xmlns="${MAC}"><has-more>true</has-more></output>`];
    const err = await BROCADE_TABLE.wiring(['101/0/10'], async () => reply(200, answers.shift() ?? `<output xmlns="${MAC}"><has-more>false</has-more></output>`), ctx).then(() => null, (e: Error) => e);
    expect(err, 'an empty page that says has-more').to.be.instanceOf(Error);
    expect(err!.message).to.match(/MAC address table says it has more/);
    const lldp = ['<output xmlns="urn:brocade.com:mgmt:brocade-mac-address-table"><has-more>false</has-more></output>',
      '<output xmlns="urn:brocade.com:mgmt:brocade-lldp-ext"><lldp-neighbor-detail><local-interface-name>Te 101/0/10</local-interface-name><remote-interface-name>eth0</remote-interface-name><remote-chassis-id>5254.00aa.0001</remote-chassis-id></lldp-neighbor-detail><has-more>true</has-more></output>'];
    const err2 = await BROCADE_TABLE.wiring(['101/0/10'], async () => reply(200, lldp.shift() ?? '<output xmlns="urn:brocade.com:mgmt:brocade-lldp-ext"><has-more>false</has-more></output>'), ctx).then(() => null, (e: Error) => e);
    expect(err2?.message).to.match(/LLDP neighbour table says it has more/);
  });

  it('fails, rather than answer part of the MAC table, when the switch never stops saying it has more', async () => {
    const MAC = 'urn:brocade.com:mgmt:brocade-mac-address-table';
    let n = 0;
    const err = await BROCADE_TABLE.wiring(['101/0/10'], async () => {
      const mac = `5254.00aa.${(++n).toString(16).padStart(4, '0')}`;
      return reply(200, `<output xmlns="${MAC}"><mac-address-table><vlanid>1001</vlanid><mac-address>${mac}</mac-address><mac-type>dynamic</mac-type><forwarding-interface><interface-type>tengigabitethernet</interface-type><interface-name>101/0/10</interface-name></forwarding-interface></mac-address-table><has-more>true</has-more></output>`);
    }, ctx).then(() => null, (e: Error) => e);
    expect(err, 'a MAC table cut short is no answer').to.be.instanceOf(Error);
    expect(err!.message).to.match(/more than \d+ pages/);
  });
});

describe('Dell OS9 table', () => {
  const SHOW = (lines: string[]) => reply(200, `<output xmlns="${DELL}"><command>show interfaces switchport TenGigabitEthernet 1/3\r\n\r\nCodes: U - Untagged, T - Tagged\r\n\r\n${lines.join('\r\n')}\r\n\r\nS3048-ON#</command></output>`);
  const IFACE = (inner: string) => reply(200, `<interface xmlns="${DELL}"><name>tengig-1-3</name>${inner}</interface>`);
  const hybrid: DellReading = { ready: true, switchport: true, hybrid: true, native: null, tagged: [], enabled: true, other: [] };

  it('reads a port: its resource with defaults, and the switchport show through the CLI', () => {
    expect(DELL_OS9_TABLE.read('1/3', ctx, false)).to.deep.equal(DELL_OS9_TABLE.read('1/3', ctx, true));
    expect(DELL_OS9_TABLE.read('1/3', ctx, true)).to.deep.equal([
      { method: 'GET', path: '/api/running/dell/interfaces/interface/tengig-1-3?with-defaults' },
      { method: 'POST', path: '/api/running/dell/_operations/cli', body: '<input><show-command>interfaces switchport TenGigabitEthernet 1/3</show-command></input>', read: true, tolerate: [400, 500] },
    ]);
  });

  it('parses HIL\'s sample: untagged 1512, tagged ranges expanded, wrapped lines joined', () => {
    const r = DELL_OS9_TABLE.parse([
      IFACE('<portmode><hybrid>true</hybrid></portmode><switchport></switchport><shutdown>false</shutdown>'),
      SHOW(['Name: TenGigabitEthernet 1/3', '802.1QTagged: Hybrid', 'Vlan membership:', 'Q       Vlans', 'U       1512', 'T       1511,1612-1614,', '        1700', '', 'Native VlanId: 1512.']),
    ], '1/3', ctx);
    expect(r).to.deep.equal({ ready: true, switchport: true, hybrid: true, native: 1512, tagged: [1511, 1612, 1613, 1614, 1700], enabled: true, other: [] });
  });

  it('reads the default VLAN as no native VLAN, a missing shutdown leaf as shut, other codes as other, a non-hybrid port as not ready', () => {
    const r = DELL_OS9_TABLE.parse([
      IFACE('<switchport></switchport>'),
      SHOW(['Name: TenGigabitEthernet 1/3', '802.1QTagged: True', 'Vlan membership:', 'Q       Vlans', 'U       1', 'G       20-21']),
    ], '1/3', ctx);
    expect(r).to.deep.equal({ ready: false, switchport: true, hybrid: false, native: null, tagged: [], enabled: false, other: ['GVRP tagged in 20,21'] });
    const l3 = DELL_OS9_TABLE.parse([IFACE('<shutdown>false</shutdown>'), reply(400, '<errors xmlns="http://tail-f.com/ns/tailf-rest-error"><error><error-message>% Error: not in Layer-2 mode.</error-message></error></errors>')], '1/3', ctx);
    expect(l3).to.deep.include({ ready: false, switchport: false, enabled: true, other: ['not a switchport'] });
    expect(membership('Vlan membership:\nQ Vlans\nT 10-12,14\n').codes.get('T')).to.deep.equal([10, 11, 12, 14]);
  });

  it('refuses a resource in another namespace and a switchport show it cannot read', () => {
    expect(() => DELL_OS9_TABLE.parse([reply(200, '<interface><name>x</name></interface>'), SHOW([])], '1/3', ctx)).to.throw(/expected <interface> in http:\/\/www.dell.com\/ns\/dell:0.1\/root/);
    expect(() => DELL_OS9_TABLE.parse([IFACE('<switchport></switchport>'), SHOW(['% Error: something else'])], '1/3', ctx)).to.throw(/no "Name:" line for 1\/3/);
  });

  const cliBody = (what: string, lines: string[]) => `<input><${what}>${lines.join('\r\n')}</${what}></input>`;
  const CLI = '/api/running/dell/_operations/cli';

  it('changes VLAN membership with CLI lines, the old untagged VLAN first', () => {
    expect(planChange(DELL_OS9_TABLE, ctx, '1/3', { kind: 'setNative', vlan: 1512 }, hybrid)!.requests).to.deep.equal([
      { method: 'POST', path: CLI, body: cliBody('config-commands', ['interface vlan 1512', ' untagged TenGigabitEthernet 1/3']) },
    ]);
    const native = { ...hybrid, native: 1512 };
    expect(planChange(DELL_OS9_TABLE, ctx, '1/3', { kind: 'setNative', vlan: 1513 }, native)!.requests[0]!.body).to.equal(
      cliBody('config-commands', ['interface vlan 1512', ' no untagged TenGigabitEthernet 1/3', 'interface vlan 1513', ' untagged TenGigabitEthernet 1/3']));
    expect(planChange(DELL_OS9_TABLE, ctx, '1/3', { kind: 'addTagged', vlan: 1511 }, native)!.requests[0]!.body).to.equal(
      cliBody('config-commands', ['interface vlan 1511', ' tagged TenGigabitEthernet 1/3']));
    expect(planChange(DELL_OS9_TABLE, ctx, '1/3', { kind: 'removeTagged', vlan: 1511 }, { ...native, tagged: [1511] })!.requests[0]!.body).to.equal(
      cliBody('config-commands', ['interface vlan 1511', ' no tagged TenGigabitEthernet 1/3']));
    expect(planChange(DELL_OS9_TABLE, ctx, '1/3', { kind: 'reset' }, { ...native, tagged: [1511, 1600] })!.requests).to.deep.equal([
      { method: 'POST', path: CLI, body: cliBody('config-commands', ['interface vlan 1511', ' no tagged TenGigabitEthernet 1/3', 'interface vlan 1600', ' no tagged TenGigabitEthernet 1/3', 'interface vlan 1512', ' no untagged TenGigabitEthernet 1/3']) },
    ]);
  });

  it('puts a port into hybrid mode through its resource, keeping its administrative state; shuts it the same way', () => {
    const l3: DellReading = { ...hybrid, ready: false, switchport: false, hybrid: false, enabled: false, other: ['not a switchport'] };
    const put = (inner: string) => ({ method: 'PUT', path: '/api/running/dell/interfaces/interface/tengig-1-3', body: `<interface><name>tengig-1-3</name>${inner}</interface>` });
    expect(planChange(DELL_OS9_TABLE, ctx, '1/3', { kind: 'reset' }, l3)!.requests).to.deep.equal([
      put('<portmode><hybrid>true</hybrid></portmode><switchport></switchport><shutdown>true</shutdown>'),
    ]);
    const access: DellReading = { ...hybrid, ready: false, hybrid: false };
    expect(planChange(DELL_OS9_TABLE, ctx, '1/3', { kind: 'reset' }, access)!.requests).to.deep.equal([
      put('<portmode><hybrid>false</hybrid></portmode><shutdown>false</shutdown>'),
      put('<portmode><hybrid>true</hybrid></portmode><switchport></switchport><shutdown>false</shutdown>'),
    ]);
    expect(DELL_OS9_TABLE.setEnabled('1/3', false, hybrid, ctx)).to.deep.equal([put('<portmode><hybrid>true</hybrid></portmode><switchport></switchport><shutdown>true</shutdown>')]);
  });

  it('escapes what it puts in a body, and saves with write memory', () => {
    expect(el('config-commands', 'description a<b & "c"')).to.equal('<config-commands>description a&lt;b &amp; &quot;c&quot;</config-commands>');
    expect(DELL_OS9_TABLE.save).to.deep.equal({ method: 'POST', path: CLI, body: cliBody('exec-command', ['write memory']) });
  });

  it('finds a refusal in a 200 answer (a CLI "% Error" line) and the message of an error document', () => {
    expect(DELL_OS9_TABLE.refusal!(reply(200, `<output xmlns="${DELL}"><command>% Error: Port is untagged in another Vlan.</command></output>`))).to.equal('% Error: Port is untagged in another Vlan.');
    expect(DELL_OS9_TABLE.refusal!(reply(200, `<output xmlns="${DELL}"></output>`))).to.equal(undefined);
    expect(DELL_OS9_TABLE.errorText(reply(200, '<errors xmlns="http://tail-f.com/ns/tailf-rest-error"><error><error-tag>malformed-message</error-tag><error-message>% Error: Invalid input</error-message></error></errors>'))).to.equal('% Error: Invalid input');
  });

  it('reads the MAC table and LLDP neighbours of its interface type from two show commands', async () => {
    const out = (text: string) => reply(200, `<output xmlns="${DELL}"><command>${text}</command></output>`);
    const answers = [
      out(['VlanId     Mac Address           Type          Interface        State',
        ' 1512      52:54:00:aa:00:01     Dynamic       Te 1/3           Active',
        ' 1512      52:54:00:aa:00:02     Static        Te 1/4           Active',
        ' 1         52:54:00:aa:00:03     Dynamic       Gi 1/3           Active',
        ' 1         52:54:00:aa:00:04     Dynamic       Te 1/5           Active'].join('\r\n')),
      out([' Local Interface Te 1/3 has 1 neighbor', '  Remote Chassis ID:  52:54:00:aa:00:01', '  Remote Port ID:  52:54:00:aa:00:01', '  Remote System Name:  node-1',
        ' Local Interface Gi 1/4 has 1 neighbor', '  Remote Chassis ID:  aa', '  Remote Port ID:  bb'].join('\r\n')),
    ];
    const sent: string[] = [];
    const wiring = await DELL_OS9_TABLE.wiring(['1/3', '1/4'], async (req) => {
      sent.push(req.body!);
      return answers.shift()!;
    }, ctx);
    expect(sent).to.deep.equal([cliBody('show-command', ['mac-address-table']), cliBody('show-command', ['lldp neighbors detail'])]);
    expect(Object.fromEntries(wiring)).to.deep.equal({
      '1/3': { macs: ['52:54:00:aa:00:01'], lldp: [{ chassisId: '52:54:00:aa:00:01', portId: '52:54:00:aa:00:01', systemName: 'node-1' }] },
      '1/4': { macs: [], lldp: [] },
      '1/5': { macs: ['52:54:00:aa:00:04'], lldp: [] },
    });
  });
});

describe('REST wiring of a Dell OS9 that refuses its LLDP show (LLDP not enabled)', () => {
  it('still reads its MAC table', async () => {
    const out = (text: string) => reply(200, `<output xmlns="${DELL}"><command>${text}</command></output>`);
    const answers = [
      out(' 1512      52:54:00:aa:00:01     Dynamic       Te 1/3           Active'),
      reply(400, '<errors xmlns="http://tail-f.com/ns/tailf-rest-error"><error><error-tag>malformed-message</error-tag><error-message>% Error: LLDP is not enabled.</error-message></error></errors>'),
    ];
    const wiring = await DELL_OS9_TABLE.wiring(['1/3'], async () => answers.shift()!, ctx);
    expect(Object.fromEntries(wiring)).to.deep.equal({ '1/3': { macs: ['52:54:00:aa:00:01'], lldp: [] } });
  });
});

describe('REST wiring of a Dell OS9 port with two LLDP neighbours', () => {
  it('keeps both, each from its own lines between the rules of dashes', async () => {
    const out = (text: string) => reply(200, `<output xmlns="${DELL}"><command>${text}</command></output>`);
    const answers = [
      out(''),
      out(['========================================================================',
        ' Local Interface Te 1/3 has 2 neighbors', '  Total Frames Out: 6547', '  The neighbors are given below:',
        '  -----------------------------------------------------------------------', '',
        '    Remote Chassis ID Subtype: Mac address (4)', '    Remote Chassis ID:  52:54:00:aa:00:01', '    Remote Port ID:  52:54:00:aa:00:01', '    Remote System Name:  node-1',
        '  ---------------------------------------------------------------------------', '',
        '    Remote Chassis ID Subtype: Mac address (4)', '    Remote Chassis ID:  52:54:00:aa:00:02', '    Remote Port ID:  eth1',
        '  ---------------------------------------------------------------------------'].join('\r\n')),
    ];
    const wiring = await DELL_OS9_TABLE.wiring(['1/3'], async () => answers.shift()!, ctx);
    expect(wiring.get('1/3')!.lldp).to.deep.equal([
      { chassisId: '52:54:00:aa:00:01', portId: '52:54:00:aa:00:01', systemName: 'node-1' },
      { chassisId: '52:54:00:aa:00:02', portId: 'eth1' },
    ]);
  });
});

describe('REST switch registry entries', () => {
  it('both say nativeFirst, take HIL\'s port names and refuse others', () => {
    for (const name of ['brocade', 'dellnos9']) {
      const e = SWITCH_DRIVERS.find((d) => d.type.endsWith(`/switches/${name}`))!;
      expect(e.nativeFirst, name).to.equal(true);
      for (const ok of ['1/3', '101/0/10']) expect(e.portName.test(ok), ok).to.equal(true);
      for (const bad of ['Te 1/3', 'te1/3', '1/3/', '1', '1/3/4/5']) expect(e.portName.test(bad), bad).to.equal(false);
    }
  });
});
