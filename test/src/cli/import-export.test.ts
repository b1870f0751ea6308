/**
 * hilt import FILE and hilt export (issue 26): YAML and CSV; every problem of a file reported
 * with its line and nothing changed; --dry-run; a second run changes nothing and says so; a
 * progress bar on a terminal; export, import into an empty service, export again: identical
 * (an SSH switch's pinned host key included).
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, stopTestServer, TestServer, Client, must, ADMIN, MOCK_OBM, MOCK_SWITCH, REDFISH_OBM, mockSwitch } from '../../helpers/server';
import { cliFor } from '../../helpers/cli';
import { onTerminal } from '../../helpers/pty';
import { addCredentials, addSecret } from '../../helpers/secrets';

const BMC_PW = 'import-bmc-secret';
const SW_PW = 'import-switch-secret';

const YAML = `# a rack
switches:
  - name: sw-a
    type: mock
    hostname: 127.0.0.1
    username: admin
    password: ${SW_PW}
    ports: [gi1/0/24]
nodes:
  - name: n1
    obm: {type: mock, host: 127.0.0.1, user: bmc, password: ${BMC_PW}}
    metadata: {rack: r1, slot: 3}
    nics:
      - {name: eth0, macaddr: "02:00:00:00:01:00", switch: sw-a, port: gi1/0/1}
      - {name: eth1, macaddr: "02:00:00:00:01:01", switch: sw-a, port: gi1/0/2}
  - name: n2
    obm: {type: mock, host: 127.0.0.2, user: bmc, password: ${BMC_PW}}
    nics:
      - {name: eth0, macaddr: "02:00:00:00:02:00", switch: sw-a, port: gi1/0/3}
  - name: spare
    obm: {type: ${MOCK_OBM}, host: 127.0.0.3, user: bmc, password: ${BMC_PW}}
`;

/** Line by line: each wrong in its own way. */
const BROKEN = `switches:
  - name: sw-b
    type: mock
    hostname: 127.0.0.1
    username: admin
    password: x
    ports: [eth0]
nodes:
  - name: m1
    obm: {type: mock, host: 127.0.0.1, user: bmc}
    nics:
      - {name: eth0, macaddr: "02:00:00:00:09:00", switch: nowhere, port: gi1/0/1}
  - name: m2
    obm: {type: carrier-pigeon, host: 127.0.0.1, user: bmc, password: p}
  - name: m3
    obm: {type: mock, host: 127.0.0.1, user: bmc, password: p}
    nics:
      - {name: eth0, macaddr: "02:00:00:00:09:01", switch: sw-b, port: gi1/0/5}
      - {name: eth0, macaddr: "02:00:00:00:09:02"}
      - {name: eth2, macaddr: "02:00:00:00:09:03", switch: sw-b, port: gi1/0/5}
  - name: m1
    obm: {type: mock, host: 127.0.0.1, user: bmc, password: p}
`;

const CSV = `node,nic,macaddr,switch,port,obm.type,obm.host,obm.user,obm.password,switch.type,switch.hostname,switch.username,switch.password,metadata.rack
c1,eth0,02:00:00:00:03:00,sw-c,gi1/0/1,mock,127.0.0.1,bmc,${BMC_PW},mock,127.0.0.1,admin,${SW_PW},r9
c1,eth1,02:00:00:00:03:01,sw-c,gi1/0/2,,,,,,,,,
c2,,,,,ipmi,127.0.0.1:6230,bmc,${BMC_PW},,,,,
,,,sw-c,te1/0/1,,,,,,,,,
`;

/** An SSH switch whose host key is pinned by the file. */
const PIN = `SHA256:${'A'.repeat(43)}`;
const PINNED = `switches:
  - name: sw-pin
    type: dellos10
    hostname: 127.0.0.1
    username: admin
    password: ${SW_PW}
    host_key: "${PIN}"
    ports: [ethernet1/1/1]
`;

describe('hilt import and export', function () {
  this.timeout(120_000);
  let ts: TestServer;
  let api: Client;
  let cli: ReturnType<typeof cliFor>;
  let dir: string;
  const file = (name: string, text: string) => {
    const f = join(dir, name);
    writeFileSync(f, text);
    return f;
  };
  /** Every journal entry: a run that changes nothing adds none. */
  const auditCount = async () => {
    let n = 0;
    let cursor: string | undefined;
    do {
      const page = (await must(api.get(`/admin/audit?limit=1000${cursor ? `&cursor=${cursor}` : ''}`))).body;
      n += page.entries.length;
      cursor = page.next ?? undefined;
    } while (cursor);
    return n;
  };
  before(async () => {
    addCredentials('bmc', BMC_PW);
    addCredentials('admin', SW_PW);
    ts = await startTestServer();
    api = ts.api;
    cli = cliFor(ts.url);
    dir = mkdtempSync(join(tmpdir(), 'hilt-import-'));
  });
  after(async () => {
    await stopTestServer(ts);
    rmSync(dir, { recursive: true, force: true });
  });

  it('a file with errors: every problem with its line, and nothing changed', async () => {
    const before = await auditCount();
    const r = await cli.run('import', file('broken.yaml', BROKEN));
    expect(r.code).to.equal(1);
    const f = join(dir, 'broken.yaml');
    const lines = r.stderr.trim().split('\n');
    expect(lines).to.include.members([
      `${f}:2: port eth0 of switch sw-b: not a port name of ${MOCK_SWITCH} (gi1/0/11, te1/0/12, gi1/12 or te1/3)`,
      `${f}:9: node m1: its BMC password (obm.password) is missing (an export leaves secrets out: add it, or set HILT_IMPORT_BMC_PASSWORD)`,
      `${f}:12: nic eth0 of node m1: switch nowhere is neither in the file nor registered`,
      `${f}:19: nic eth0 of node m3 is also on line 18`,
      `${f}:20: nic eth2 of node m3: port gi1/0/5 of switch sw-b is already wired to nic eth0 of node m3 on line 18`,
      `${f}:21: node m1 is also on line 9`,
    ]);
    expect(lines.find((l) => l.startsWith(`${f}:13: node m2: unknown OBM type`)), 'an unknown BMC type').to.not.equal(undefined);
    expect(lines.at(-1)).to.equal('hilt: 7 problems: nothing was changed');
    expect(await auditCount(), 'nothing changed').to.equal(before);
    const notYaml = await cli.run('import', file('bad.yaml', 'nodes: [\n  {name: x\n'));
    expect(notYaml.code).to.equal(1);
    expect(notYaml.stderr).to.match(/bad\.yaml:\d+: not YAML: /);
    const unknownKey = await cli.run('import', file('key.yaml', 'nodes: []\nnetworks: []\n'));
    expect(unknownKey.stderr).to.include(`${join(dir, 'key.yaml')}:2: unknown key "networks" (a file has switches and nodes)`);
  });

  it('--dry-run says what it would add and changes nothing', async () => {
    const before = await auditCount();
    const r = await cli.run('import', file('rack.yaml', YAML), '--dry-run');
    expect([r.code, r.stderr]).to.deep.equal([0, '']);
    expect(r.stdout).to.equal('dry run, nothing changed: would add 1 switch, 4 ports, 3 nodes, 3 nics, 3 wirings; 0 objects already registered as the file says\n');
    expect(await auditCount()).to.equal(before);
    expect((await api.get('/node/n1')).status).to.equal(404);
  });

  it('imports YAML: switches, ports, nodes with their BMCs and metadata, nics and wiring', async () => {
    const r = await cli.run('import', join(dir, 'rack.yaml'));
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.equal('added 1 switch, 4 ports, 3 nodes, 3 nics, 3 wirings; 0 objects already registered as the file says\n');
    const stepLines = r.stderr.trim().split('\n');
    expect(stepLines, 'a line per step when not on a terminal').to.have.members(['switches: 1', 'ports: 4', 'nodes: 3', 'nics: 3', 'wiring: 3'].map((l) => `hilt: import: ${l}`));
    expect(stepLines.at(-1), 'the wiring after the rest').to.equal('hilt: import: wiring: 3');
    const n1 = (await must(api.get('/node/n1'))).body;
    expect(n1.metadata).to.deep.equal({ rack: 'r1', slot: 3 });
    expect(n1.nics.map((x: { label: string; macaddr: string; switch: string; port: string }) => [x.label, x.macaddr, x.switch, x.port])).to.deep.equal([
      ['eth0', '02:00:00:00:01:00', 'sw-a', 'gi1/0/1'], ['eth1', '02:00:00:00:01:01', 'sw-a', 'gi1/0/2']]);
    expect((await must(api.get('/switch/sw-a'))).body.ports.sort()).to.deep.equal(['gi1/0/1', 'gi1/0/2', 'gi1/0/24', 'gi1/0/3']);
    expect((await must(api.get('/admin/actors/node/n2'))).body.state.obm).to.deep.equal({ type: MOCK_OBM, fields: { host: '127.0.0.2', user: 'bmc', password: '[redacted]' } });
    expect(r.stdout + r.stderr).to.not.include(BMC_PW);
  });

  it('a second run changes nothing and says so', async () => {
    const before = await auditCount();
    const r = await cli.run('import', join(dir, 'rack.yaml'));
    expect([r.code, r.stdout, r.stderr]).to.deep.equal([0, `nothing to change: the 14 objects ${join(dir, 'rack.yaml')} names are registered as it says\n`, '']);
    expect(await auditCount(), 'not one change').to.equal(before);
  });

  it('refuses what exists differently (a BMC, a MAC address, a cable), naming the line', async () => {
    const changed = YAML.replace('host: 127.0.0.2', 'host: 127.0.0.9').replace('02:00:00:00:01:01', '02:00:00:00:01:99').replace('port: gi1/0/3', 'port: gi1/0/4');
    const r = await cli.run('import', file('changed.yaml', changed));
    expect(r.code).to.equal(1);
    const f = join(dir, 'changed.yaml');
    expect(r.stderr).to.include(`${f}:15: nic eth1 of node n1 exists with MAC address 02:00:00:00:01:01, not 02:00:00:00:01:99 (an import does not change a nic)`);
    expect(r.stderr).to.include(`${f}:16: node n2 exists with BMC ${MOCK_OBM} host=127.0.0.2, user=bmc, not ${MOCK_OBM} host=127.0.0.9, user=bmc (an import does not change a BMC)`);
    expect(r.stderr).to.include(`${f}:19: nic eth0 of node n2 is wired to port gi1/0/3 of switch sw-a, not gi1/0/4 of sw-a (an import does not move a cable)`);
  });

  it('a file pinning an SSH host key: a second run and a file without the key change nothing; another key is refused', async () => {
    const f = file('pinned.yaml', PINNED);
    const first = await cli.run('import', f);
    expect(first.code, first.stderr).to.equal(0);
    expect((await must(api.get('/switch/sw-pin'))).body.host_key).to.equal(PIN);
    const before = await auditCount();
    const second = await cli.run('import', f);
    expect([second.code, second.stdout, second.stderr]).to.deep.equal([0, `nothing to change: the 2 objects ${f} names are registered as it says\n`, '']);
    const unpinned = file('unpinned.yaml', PINNED.replace(/ {4}host_key: .*\n/, ''));
    const without = await cli.run('import', unpinned);
    expect([without.code, without.stderr], 'a file without the key').to.deep.equal([0, '']);
    expect(without.stdout).to.match(/^nothing to change/);
    const other = `SHA256:${'B'.repeat(43)}`;
    const repinned = file('repinned.yaml', PINNED.replace(PIN, other));
    const r = await cli.run('import', repinned);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include(`${repinned}:2: switch sw-pin exists with hostname=127.0.0.1, username=admin, host_key=${PIN}, not hostname=127.0.0.1, username=admin, host_key=${other} (an import does not change a switch)`);
    expect(await auditCount(), 'not one change').to.equal(before);
    expect((await must(api.get('/switch/sw-pin'))).body.host_key).to.equal(PIN);
  });

  it('imports CSV (a row per nic), then adds only a new metadata label on a second file', async () => {
    const r = await cli.run('import', file('rack.csv', CSV));
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^added 1 switch, 3 ports, 2 nodes, 2 nics, 2 wirings;/);
    expect((await must(api.get('/node/c1'))).body.metadata).to.deep.equal({ rack: 'r9' });
    expect((await must(api.get('/node/c2'))).body.nics).to.deep.equal([]);
    expect((await must(api.get('/switch/sw-c'))).body.ports.sort()).to.deep.equal(['gi1/0/1', 'gi1/0/2', 'te1/0/1']);
    const relabel = await cli.run('import', file('relabel.csv', CSV.replace(',r9\n', ',r10\n')));
    expect(relabel.stdout).to.match(/^added 1 metadata label; 10 objects already registered/);
    expect((await must(api.get('/node/c1'))).body.metadata).to.deep.equal({ rack: 'r10' });
    const conflicting = await cli.run('import', file('conflict.csv', CSV.replace('c1,eth1,02:00:00:00:03:01,sw-c,gi1/0/2,,', 'c1,eth1,02:00:00:00:03:01,sw-c,gi1/0/2,ipmi,')));
    expect(conflicting.stderr).to.include(`${join(dir, 'conflict.csv')}:3: node c1: type is "${'http://schema.massopencloud.org/haas/v0/obm/ipmi'}" here but "${MOCK_OBM}" on an earlier row`);
  });

  it('CSV rows that name a switch without describing it refer to it: a registered one, or one another row describes', async () => {
    await must(api.put('/switch/sw-reg', mockSwitch));
    const head = 'node,nic,macaddr,switch,port,obm.type,obm.host,obm.user,obm.password,switch.type,switch.hostname,switch.username,switch.password';
    const csv = `${head}
,,,sw-reg,gi1/0/9,,,,,,,,
r1,eth0,02:00:00:00:0a:00,sw-reg,gi1/0/1,mock,127.0.0.1,bmc,${BMC_PW},,,,
,,,sw-d,gi1/0/9,,,,,,,,
r1,eth1,02:00:00:00:0a:01,sw-d,gi1/0/1,,,,,mock,127.0.0.1,admin,${SW_PW}
`;
    const f = file('refs.csv', csv);
    const r = await cli.run('import', f);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.equal('added 1 switch, 4 ports, 1 node, 2 nics, 2 wirings; 0 objects already registered as the file says\n');
    expect((await must(api.get('/node/r1'))).body.nics.map((x: { switch: string; port: string }) => [x.switch, x.port])).to.deep.equal([['sw-reg', 'gi1/0/1'], ['sw-d', 'gi1/0/1']]);
    expect((await must(api.get('/switch/sw-reg'))).body.ports.sort()).to.deep.equal(['gi1/0/1', 'gi1/0/9']);
    expect((await must(api.get('/switch/sw-d'))).body.ports.sort()).to.deep.equal(['gi1/0/1', 'gi1/0/9']);
    expect((await must(api.get('/admin/inventory'))).body.switches.find((s: { name: string }) => s.name === 'sw-reg').type, 'the registered type kept').to.equal(MOCK_SWITCH);
    const again = await cli.run('import', f);
    expect([again.code, again.stderr]).to.deep.equal([0, '']);
    expect(again.stdout).to.match(/^nothing to change/);
    const unknown = file('unknown.csv', `${head}\n,,,sw-none,gi1/0/9,,,,,,,,\nr2,eth0,02:00:00:00:0a:02,sw-none,gi1/0/1,mock,127.0.0.1,bmc,${BMC_PW},,,,\n`);
    const u = await cli.run('import', unknown);
    expect(u.code).to.equal(1);
    expect(u.stderr.trim().split('\n')).to.deep.equal([
      `${unknown}:2: port gi1/0/9: switch sw-none is neither in the file nor registered`,
      `${unknown}:3: nic eth0 of node r2: switch sw-none is neither in the file nor registered`,
      'hilt: 2 problems: nothing was changed',
    ]);
  });

  it('CSV rows giving a BMC or a switch password differently: an error that prints neither password', async () => {
    const other = 'another-import-secret';
    addSecret(other);
    const f = file('passwords.csv', `node,nic,macaddr,switch,port,obm.type,obm.host,obm.user,obm.password,switch.type,switch.password
x1,eth0,02:00:00:00:0b:00,sw-x,gi1/0/1,mock,127.0.0.1,bmc,${BMC_PW},mock,${SW_PW}
x1,eth1,02:00:00:00:0b:01,sw-x,gi1/0/2,,,,${other},,${other}
`);
    const r = await cli.run('import', f);
    expect(r.code).to.equal(1);
    expect(r.stderr.trim().split('\n')).to.deep.equal([
      `${f}:3: switch sw-x: password differs from the one an earlier row gives`,
      `${f}:3: node x1: password differs from the one an earlier row gives`,
      'hilt: 2 problems: nothing was changed',
    ]);
    expect(r.stdout + r.stderr).to.not.include(BMC_PW).and.not.include(SW_PW).and.not.include(other);
  });

  for (const format of ['yaml', 'csv']) {
    it(`export (${format}), import into an empty service, export again: identical`, async () => {
      const first = await cli.ok('export', '--format', format);
      expect(first, 'secrets are left out').to.not.include(BMC_PW).and.not.include(SW_PW);
      expect(first, 'the pinned host key is kept').to.include(PIN);
      const empty = await startTestServer();
      try {
        const again = cliFor(empty.url);
        const f = file(`export.${format}`, first);
        const refused = await again.run('import', f);
        expect(refused.stderr, 'without the secrets').to.match(/its BMC password \(obm\.password\) is missing/);
        const r = await again.as({ env: { HILT_IMPORT_BMC_PASSWORD: BMC_PW, HILT_IMPORT_SWITCH_PASSWORD: SW_PW } })('import', f);
        expect(r.code, r.stderr).to.equal(0);
        expect(await again.ok('export', '--format', format)).to.equal(first);
        expect((await must(empty.api.get('/switch/sw-pin'))).body.host_key, 'pinned again, not trusted at the first login').to.equal(PIN);
        expect((await must(empty.api.get('/admin/actors/node/n1'))).body.state.obm.fields.password, 'the secret given').to.equal('[redacted]');
        const written = join(dir, `written.${format}`);
        expect(await again.run('export', '-o', written)).to.deep.include({ code: 0 });
        expect(readFileSync(written, 'utf8')).to.equal(first);
      } finally {
        await stopTestServer(empty);
      }
    });
  }

  it('a node beyond the metadata label limit is a problem of the check: nothing is added', async () => {
    const labels = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `l${from + i}: v`).join(', ');
    const f = file('labels.yaml', `switches:
  - {name: sw-lab, type: mock, hostname: 127.0.0.1, username: admin, password: ${SW_PW}, ports: [gi1/0/1]}
nodes:
  - name: lab1
    obm: {type: mock, host: 127.0.0.1, user: bmc, password: ${BMC_PW}}
    metadata: {${labels(101)}}
`);
    const before = await auditCount();
    const r = await cli.run('import', f);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include(`${f}:4: node lab1: 101 metadata labels, more than a node may have (100)`);
    expect(await auditCount(), 'nothing changed').to.equal(before);
    expect((await api.get('/switch/sw-lab')).status, 'not half applied').to.equal(404);
    // A registered node: its labels and the file's new ones together.
    await must(api.put('/node/lab2', { obm: { type: MOCK_OBM, host: '127.0.0.1', user: 'bmc', password: BMC_PW }, metadata: Object.fromEntries(Array.from({ length: 99 }, (_, i) => [`l${i}`, 'v'])) }));
    const g = file('labels2.yaml', `nodes:
  - name: lab2
    obm: {type: mock, host: 127.0.0.1, user: bmc}
    metadata: {${labels(3, 98)}}
    nics: [{name: eth0, macaddr: "02:00:00:00:0c:00"}]
`);
    const again = await cli.run('import', g);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.include(`${g}:2: node lab2: 101 metadata labels, more than a node may have (100)`);
    expect((await must(api.get('/node/lab2'))).body.nics, 'not half applied').to.deep.equal([]);
  });

  it('CSV: a BMC field the driver takes as a boolean (Redfish verify_tls) is converted, and its export imports again', async () => {
    const f = file('redfish.csv', `node,nic,macaddr,switch,port,obm.type,obm.host,obm.user,obm.password,obm.verify_tls
rf1,,,,,redfish,https://127.0.0.1:8443,bmc,${BMC_PW},false
`);
    const r = await cli.run('import', f);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.equal('added 1 node; 0 objects already registered as the file says\n');
    const rf1 = (await must(api.get('/admin/inventory'))).body.nodes.find((n: { name: string }) => n.name === 'rf1');
    expect(rf1.obm).to.deep.equal({ type: REDFISH_OBM, fields: { host: 'https://127.0.0.1:8443', user: 'bmc', verify_tls: false } });
    const again = await cli.run('import', f);
    expect([again.code, again.stderr]).to.deep.equal([0, '']);
    expect(again.stdout).to.match(/^nothing to change/);
  });

  it('CSV: names and values with spaces at their ends round-trip through an export and an import', async () => {
    await must(api.put('/node/%20sp1%20', { obm: { type: MOCK_OBM, host: '127.0.0.1', user: 'bmc', password: BMC_PW }, metadata: { rack: ' r1' } }));
    await must(api.put('/node/%20sp1%20/nic/eth0%20', { macaddr: '02:00:00:00:0d:00' }));
    const f = file('spaces.csv', await cli.ok('export', '--format', 'csv'));
    const before = await auditCount();
    const r = await cli.run('import', f);
    expect([r.code, r.stderr]).to.deep.equal([0, '']);
    expect(r.stdout).to.match(/^nothing to change/);
    expect(await auditCount(), 'not one change').to.equal(before);
    expect((await api.get('/node/sp1')).status).to.equal(404);
  });

  it('a CSV the reader cannot parse: the error names the field and the line, never a password in it', async () => {
    const pw = 'quoted-bmc-secret';
    addSecret(pw);
    const f = file('quote.csv', `node,nic,macaddr,switch,port,obm.type,obm.host,obm.user,obm.password
q1,,,,,mock,127.0.0.1,bmc,${pw}"tail
`);
    const r = await cli.run('import', f);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/quote\.csv:2: not CSV: Invalid Opening Quote: a quote is found on field "obm\.password" at line 2/);
    expect(r.stdout + r.stderr).to.not.include(pw);
    const g = file('quote2.csv', `node,nic,macaddr,switch,port,obm.type,obm.host,obm.user,obm.password
q1,,,,,mock,127.0.0.1,bmc,"${pw}"x
`);
    const r2 = await cli.run('import', g);
    expect(r2.code).to.equal(1);
    expect(r2.stderr).to.match(/quote2\.csv:2: not CSV: Invalid Closing Quote/);
    expect(r2.stdout + r2.stderr, 'not even a character after the quote').to.not.match(/got "x"/);
  });

  it('YAML: a name or MAC address written as digits is taken as written, not as the number it would be', async () => {
    const f = file('digits.yaml', `nodes:
  - name: 007
    obm: {type: mock, host: 127.0.0.1, user: bmc, password: ${BMC_PW}}
    nics: [{name: 01, macaddr: 001122334455}, {name: eth1, macaddr: 1e2233445566}]
`);
    const r = await cli.run('import', f);
    expect(r.code, r.stderr).to.equal(0);
    const node = (await must(api.get('/admin/inventory'))).body.nodes.find((n: { name: string }) => n.name === '007');
    expect(node, 'the node 007').to.not.equal(undefined);
    expect(node.nics.map((x: { name: string; macaddr: string }) => [x.name, x.macaddr])).to.deep.equal([['01', '001122334455'], ['eth1', '1e2233445566']]);
  });

  it('a progress bar on a terminal', async () => {
    const many = `nodes:\n${Array.from({ length: 60 }, (_, i) => `  - {name: t${i}, obm: {type: mock, host: 127.0.0.1, user: bmc, password: ${BMC_PW}}, nics: [{name: eth0, macaddr: "02:00:00:01:00:${i}"}]}`).join('\n')}\n`;
    const r = await onTerminal(['import', file('many.yaml', many)], { HIL_ENDPOINT: ts.url, HIL_USERNAME: ADMIN.user, HIL_PASSWORD: ADMIN.password });
    expect(r.code, r.output).to.equal(0);
    expect(r.output).to.match(/\[#+\.*\] \d+\/120 (nodes|nics) \(\d+\/s\)/);
    expect(r.output).to.include('\r\x1b[K');
    expect(r.output).to.include('added 60 nodes, 60 nics');
  });

  it('a nic registered with an empty MAC address (the API takes any text) round-trips: export, import into the same and an empty service', async () => {
    await must(api.put('/node/em1', { obm: { type: MOCK_OBM, host: '127.0.0.1', user: 'bmc', password: BMC_PW } }));
    await must(api.put('/node/em1/nic/eth0', { macaddr: '' }));
    for (const format of ['yaml', 'csv']) {
      const first = await cli.ok('export', '--format', format);
      const f = file(`empty-mac.${format}`, first);
      const same = await cli.run('import', f);
      expect([same.code, same.stderr], format).to.deep.equal([0, '']);
      expect(same.stdout).to.match(/^nothing to change/);
      const empty = await startTestServer();
      try {
        const again = cliFor(empty.url);
        const r = await again.as({ env: { HILT_IMPORT_BMC_PASSWORD: BMC_PW, HILT_IMPORT_SWITCH_PASSWORD: SW_PW } })('import', f);
        expect(r.code, r.stderr).to.equal(0);
        expect((await must(empty.api.get('/node/em1'))).body.nics.map((x: { label: string; macaddr: string }) => [x.label, x.macaddr])).to.deep.equal([['eth0', '']]);
        expect(await again.ok('export', '--format', format)).to.equal(first);
      } finally {
        await stopTestServer(empty);
      }
    }
    // A file that gives no MAC address at all is still refused: a YAML nic without the key, a CSV without the column.
    const noKey = await cli.run('import', file('no-mac.yaml', `nodes:\n  - name: em2\n    obm: {type: mock, host: 127.0.0.1, user: bmc, password: ${BMC_PW}}\n    nics: [{name: eth0}]\n`));
    expect(noKey.code).to.equal(1);
    expect(noKey.stderr).to.match(/no-mac\.yaml:4: nic eth0 of node em2: macaddr is missing/);
    const noColumn = await cli.run('import', file('no-mac.csv', `node,nic,obm.type,obm.host,obm.user,obm.password\nem2,eth0,mock,127.0.0.1,bmc,${BMC_PW}\n`));
    expect(noColumn.code).to.equal(1);
    expect(noColumn.stderr).to.match(/no-mac\.csv:2: nic eth0 of node em2: .*macaddr.* is missing/);
  });
});
