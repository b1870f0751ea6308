/**
 * hilt import and export at the edges (docs/import.md): odd names (docs/api-conventions.md §1),
 * metadata values of every type the API takes, empty lists; YAML anchors; malformed files.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, Socket } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, stopTestServer, TestServer, Client, must, MOCK_OBM, MOCK_SWITCH } from '../../helpers/server';
import { cliFor } from '../../helpers/cli';
import { addCredentials } from '../../helpers/secrets';

const BMC_PW = 'edges-bmc-secret';
const SW_PW = 'edges-switch-secret';
const SECRETS = { HILT_IMPORT_BMC_PASSWORD: BMC_PW, HILT_IMPORT_SWITCH_PASSWORD: SW_PW };
const enc = (...parts: string[]) => parts.map(encodeURIComponent).join('/');

/** Every journal entry: a run that changes nothing adds none. */
async function auditCount(api: Client): Promise<number> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const page = (await must(api.get(`/admin/audit?limit=1000${cursor ? `&cursor=${cursor}` : ''}`))).body;
    n += page.entries.length;
    cursor = page.next ?? undefined;
  } while (cursor);
  return n;
}

describe('hilt import and export at the edges', function () {
  this.timeout(180_000);
  let ts: TestServer;
  let api: Client;
  let cli: ReturnType<typeof cliFor>;
  let dir: string;
  const file = (name: string, text: string) => {
    const f = join(dir, name);
    writeFileSync(f, text);
    return f;
  };
  before(async () => {
    addCredentials('bmc', BMC_PW);
    addCredentials('admin', SW_PW);
    ts = await startTestServer();
    api = ts.api;
    cli = cliFor(ts.url);
    dir = mkdtempSync(join(tmpdir(), 'hilt-import-edges-'));
  });
  after(async () => {
    await stopTestServer(ts);
    rmSync(dir, { recursive: true, force: true });
  });

  const ODD = ['__proto__', 'constructor', 'a/b', 'two words', 'ünï-čödé ✓', '007', 'true', 'null', '- x', '#hash', 'q"uote,comma', ' lead'];
  const METADATA: Record<string, unknown> = { s: 'text', digits: '3', n: 3, f: 1.5, neg: -2, big: 1e21, yes: true, no: false, word: 'true', nul: 'null', tilde: '~', __proto__x: 'p' };

  it('a site of odd names, every metadata type and empty lists: export, import into it and into an empty service, export again', async () => {
    for (const [i, sw] of ['__proto__', 'sw/1 ü'].entries()) {
      await must(api.put(`/switch/${enc(sw)}`, { type: MOCK_SWITCH, hostname: '127.0.0.1', username: 'admin', password: SW_PW }));
      await must(api.put(`/switch/${enc(sw, 'port', `gi1/0/${40 + i}`)}`));
    }
    await must(api.put(`/switch/${enc('empty sw')}`, { type: MOCK_SWITCH, hostname: '127.0.0.1', username: 'admin', password: SW_PW }));
    for (const [i, name] of ODD.entries()) {
      const md = i % 2 ? { ...METADATA, [`${name}`]: name, ['__proto__']: i } : {};
      await must(api.put(`/node/${enc(name)}`, { obm: { type: MOCK_OBM, host: '127.0.0.1', user: 'bmc', password: BMC_PW } }));
      for (const [k, v] of Object.entries(md)) await must(api.put(`/node/${enc(name, 'metadata', k)}`, { value: v }));
      if (i % 3 === 2) continue; // a node without nics
      await must(api.put(`/node/${enc(name, 'nic', name)}`, { macaddr: `02:00:00:00:0e:${i}` }));
      await must(api.put(`/node/${enc(name, 'nic', 'eth 1')}`, { macaddr: '' }));
      const sw = i % 2 ? '__proto__' : 'sw/1 ü';
      await must(api.put(`/switch/${enc(sw, 'port', `gi1/0/${i + 1}`)}`));
      await must(api.post(`/switch/${enc(sw, 'port', `gi1/0/${i + 1}`, 'connect_nic')}`, { node: name, nic: name }));
    }
    const shown = async (a: Client) => {
      const inv = (await must(a.get('/admin/inventory'))).body;
      return JSON.stringify(inv);
    };
    const site = await shown(api);
    for (const format of ['yaml', 'csv']) {
      const first = await cli.ok('export', '--format', format);
      const f = file(`odd.${format}`, first);
      const before = await auditCount(api);
      const same = await cli.run('import', f);
      expect([same.code, same.stderr], format).to.deep.equal([0, '']);
      expect(same.stdout, format).to.match(/^nothing to change/);
      expect(await auditCount(api), `${format}: not one change`).to.equal(before);
      const empty = await startTestServer();
      try {
        const again = cliFor(empty.url);
        const r = await again.as({ env: SECRETS })('import', f);
        expect(r.code, `${format}: ${r.stderr}`).to.equal(0);
        expect(await again.ok('export', '--format', format), format).to.equal(first);
        // YAML keeps each metadata value's type; CSV has text only (docs/import.md).
        if (format === 'yaml') expect(await shown(empty.api), 'the same site').to.equal(site);
      } finally {
        await stopTestServer(empty);
      }
    }
  });

  it('YAML anchors and aliases are read as the values they stand for', async () => {
    const f = file('aliases.yaml', `switches:
  - &sw {name: sw-al, type: mock, hostname: 127.0.0.1, username: admin, password: ${SW_PW}, ports: []}
nodes:
  - name: al1
    obm: &bmc {type: mock, host: 127.0.0.1, user: bmc, password: ${BMC_PW}}
    metadata: &md {rack: r1, slot: 3}
    nics: [{name: eth0, macaddr: &mac "02:00:00:00:0f:00", switch: &s sw-al, port: gi1/0/1}]
  - name: al2
    obm: *bmc
    metadata: *md
    nics: [{name: eth0, macaddr: *mac, switch: *s, port: gi1/0/2}]
`);
    const r = await cli.run('import', f);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.equal('added 1 switch, 2 ports, 2 nodes, 2 nics, 2 wirings; 0 objects already registered as the file says\n');
    const al2 = (await must(api.get('/admin/inventory'))).body.nodes.find((n: { name: string }) => n.name === 'al2');
    expect(al2).to.deep.equal({ name: 'al2', obm: { type: MOCK_OBM, fields: { host: '127.0.0.1', user: 'bmc' } }, metadata: { rack: 'r1', slot: 3 },
      nics: [{ name: 'eth0', macaddr: '02:00:00:00:0f:00', switch: 'sw-al', port: 'gi1/0/2' }] });
    const again = await cli.run('import', f);
    expect([again.code, again.stderr]).to.deep.equal([0, '']);
    expect(again.stdout).to.match(/^nothing to change/);
    // The same switch twice (an alias of its entry) is a duplicate, named at the alias.
    const twice = await cli.run('import', file('twice.yaml', `switches:\n  - &sw {name: sw-al, type: mock, hostname: 127.0.0.1, username: admin}\n  - *sw\n`));
    expect(twice.stderr).to.include(`${join(dir, 'twice.yaml')}:3: switch sw-al is also on line 2`);
  });

  it('YAML aliases that expand without end, or refer to no anchor, are refused with their line, quickly', async () => {
    const laughs = ['nodes:', '  - name: lol', '    obm: {type: mock, host: 127.0.0.1, user: bmc, password: x}', '    metadata:', '      a0: &a0 lol']
      .concat(Array.from({ length: 9 }, (_, i) => `      a${i + 1}: &a${i + 1} [${Array(10).fill(`*a${i}`).join(', ')}]`)).join('\n') + '\n';
    const t0 = Date.now();
    const r = await cli.run('import', file('laughs.yaml', laughs));
    expect(r.code).to.equal(1);
    expect(Date.now() - t0, 'refused quickly').to.be.below(20_000);
    expect(r.stderr).to.match(/laughs\.yaml:2: .*alias/);
    const cycle = await cli.run('import', file('cycle.yaml', 'nodes:\n  - &n\n    name: c1\n    obm: {type: mock, host: 127.0.0.1, user: bmc, password: x}\n    nics: [*n]\n'));
    expect(cycle.code).to.equal(1);
    expect(cycle.stderr).to.match(/cycle\.yaml:\d+: .*alias/);
    const none = await cli.run('import', file('none.yaml', 'nodes:\n  - name: c2\n    obm: *nowhere\n'));
    expect(none.code).to.equal(1);
    expect(none.stderr).to.include(`${join(dir, 'none.yaml')}:3: the alias *nowhere refers to no anchor before it`);
  });

  it('an unquoted password that begins with * reads as an alias to no anchor: refused with its line, the password not printed', async () => {
    const pw = '*Alias-bmc-Pw9';
    addCredentials('bmc', pw);
    const f = file('star-password.yaml', `nodes:\n  - name: sp1\n    obm: {type: mock, host: 127.0.0.1, user: bmc, password: ${pw}}\n`);
    const r = await cli.run('import', f);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include(`${f}:3: the value of password is an alias (it begins with *) that refers to no anchor before it`);
    expect(r.stderr + r.stdout).to.not.include(pw.slice(1));
    expect((await api.get('/node/sp1')).status).to.equal(404);
  });

  it('a CSV naming a column twice is refused: one of the two would be read, silently', async () => {
    const f = file('twice.csv', `node,nic,macaddr,obm.type,obm.host,obm.user,obm.password,obm.host\ntw1,,,mock,127.0.0.1,bmc,${BMC_PW},127.0.0.9\n`);
    const r = await cli.run('import', f);
    expect(r.code).to.equal(1);
    expect(r.stderr.trim().split('\n')).to.deep.equal([`${f}:1: column "obm.host" is given twice`, 'hilt: 1 problem: nothing was changed']);
    expect((await api.get('/node/tw1')).status).to.equal(404);
  });

  it('a BMC field named __proto__ is an unknown field, refused as any other', async () => {
    const f = file('proto-field.yaml', `nodes:\n  - name: pf1\n    obm: {type: mock, host: 127.0.0.1, user: bmc, password: ${BMC_PW}, __proto__: {}}\n`);
    const r = await cli.run('import', f);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include(`${f}:2: node pf1: unexpected field(s) for ${MOCK_OBM}: __proto__`);
    expect((await api.get('/node/pf1')).status).to.equal(404);
  });

  it('the connection lost half-way: the import stops, says how far it got and that a run again adds the rest; a run again completes it', async () => {
    const n = 30;
    const yaml = `switches:\n  - {name: sw-cut, type: mock, hostname: 127.0.0.1, username: admin, password: ${SW_PW}}\nnodes:\n${Array.from({ length: n }, (_, i) =>
      `  - {name: cut${i}, obm: {type: mock, host: 127.0.0.1, user: bmc, password: ${BMC_PW}}, nics: [{name: eth0, macaddr: "02:00:00:00:10:${i}", switch: sw-cut, port: gi1/0/${i + 1}}]}`).join('\n')}\n`;
    const f = file('cut.yaml', yaml);
    // A proxy to the service that cuts every connection after 40 requests and takes no more.
    const target = new URL(ts.url);
    const sockets = new Set<Socket>();
    let requests = 0;
    const proxy = createServer((c) => {
      const s = connect(Number(target.port), target.hostname);
      sockets.add(c).add(s);
      c.on('data', (d) => {
        requests += (d.toString('latin1').match(/^(GET|PUT|POST) /gm) ?? []).length;
        if (requests > 40) {
          proxy.close();
          for (const x of sockets) x.destroy();
        } else s.write(d);
      });
      s.pipe(c);
      c.on('error', () => s.destroy());
      s.on('error', () => c.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const port = (proxy.address() as { port: number }).port;
    const r = await cliFor(`http://127.0.0.1:${port}`).run('import', f);
    proxy.close();
    expect(r.code, r.stderr).to.equal(3);
    expect(r.stderr).to.match(/hilt: cannot reach http:\/\/127\.0\.0\.1:\d+: \w+: the import stopped after \d+ of 121 calls; the calls not made were not tried: hilt import again adds what is missing\n$/);
    const again = await cli.run('import', f);
    expect(again.code, again.stderr).to.equal(0);
    expect(again.stdout).to.match(/^added .*; \d+ objects already registered as the file says\n$/);
    const inv = (await must(api.get('/admin/inventory'))).body;
    const cut = inv.nodes.filter((x: { name: string }) => x.name.startsWith('cut'));
    expect(cut.length).to.equal(n);
    expect(cut.every((x: { nics: { switch: string }[] }) => x.nics[0]?.switch === 'sw-cut'), 'every nic wired').to.equal(true);
    expect((await cli.run('import', f)).stdout).to.match(/^nothing to change/);
  });

  it('a call the service fails (5xx) half-way: reported with its line, and exit code 3 (a failure of the server, not of the file)', async () => {
    const f = file('fails.yaml', `nodes:\n  - name: fl1\n    obm: {type: mock, host: 127.0.0.1, user: bmc, password: ${BMC_PW}}\n`);
    // An empty service whose store refuses every change.
    const failing = createHttpServer((req, res) => {
      res.writeHead(req.method === 'GET' ? 200 : 503, { 'content-type': 'application/json' });
      res.end(req.method === 'GET' ? '{"switches": [], "nodes": []}' : JSON.stringify({ type: 'ServiceUnavailableError', msg: 'storage refused the change' }));
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    try {
      const r = await cliFor(`http://127.0.0.1:${(failing.address() as { port: number }).port}`).run('import', f);
      expect(r.code, r.stderr).to.equal(3);
      expect(r.stderr).to.include(`${f}:2: ServiceUnavailableError: storage refused the change\n`);
    } finally {
      await new Promise<void>((resolve) => failing.close(() => resolve()));
    }
  });

  it('YAML: a metadata value of another type (3 and "3", true and "true") differs and is set; CSV, text only, compares the text', async () => {
    await must(api.put('/node/ty1', { obm: { type: MOCK_OBM, host: '127.0.0.1', user: 'bmc', password: BMC_PW }, metadata: { slot: 3, ok: true } }));
    const f = file('types.yaml', 'nodes:\n  - name: ty1\n    obm: {type: mock, host: 127.0.0.1, user: bmc}\n    metadata: {slot: "3", ok: "true"}\n');
    const r = await cli.run('import', f);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^added 2 metadata labels;/);
    expect((await must(api.get('/node/ty1'))).body.metadata).to.deep.equal({ slot: '3', ok: 'true' });
    await must(api.put('/node/ty1/metadata/slot', { value: 3 }));
    const csv = await cli.run('import', file('types.csv', 'node,obm.type,obm.host,obm.user,metadata.slot,metadata.ok\nty1,mock,127.0.0.1,bmc,3,true\n'));
    expect([csv.code, csv.stderr]).to.deep.equal([0, '']);
    expect(csv.stdout).to.match(/^nothing to change/);
  });
});
