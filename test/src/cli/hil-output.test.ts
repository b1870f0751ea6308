/**
 * What scripts written against HIL's CLI parse in its output: tables drawn as its PrettyTable
 * drew them (`+---+` rules, `|` between cells, ASCII only), and one-column lists whose header
 * carries the count (`Projects (2)`), as HIL's make_table gave them.
 */
import { expect } from 'chai';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { startTestServer, stopTestServer, TestServer, must, makeNode, mockSwitch, finished } from '../../helpers/server';
import { cliFor, hilt, rows } from '../../helpers/cli';

/** The cells of a table as a shell script cuts them: `awk -F'|'` on the lines that start with `|`. */
const cut = (table: string): string[][] =>
  table.split('\n').filter((l) => l.startsWith('|')).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));

describe('hilt output as scripts of HIL\'s CLI parse it', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let cli: ReturnType<typeof cliFor>;
  before(async () => {
    ts = await startTestServer();
    cli = cliFor(ts.url);
    await must(ts.api.put('/project/pa'));
    await must(ts.api.put('/project/pb'));
    await makeNode(ts.api, 'n1', ['eth0', 'eth1']);
    await must(ts.api.put('/node/n1/metadata/rack', { value: 'r1' }));
  });
  after(() => stopTestServer(ts));

  it('a table is drawn in ASCII as PrettyTable drew it: +---+ rules, | between cells', async () => {
    const lines = (await cli.ok('project', 'list')).trimEnd().split('\n');
    expect(lines, 'rules above, under the header and below').to.have.length(6);
    for (const i of [0, 2, 5]) expect(lines[i]).to.match(/^\+-+\+$/);
    for (const i of [1, 3, 4]) expect(lines[i]).to.match(/^\| .* \|$/);
    expect(lines.join('\n')).to.match(/^[\x20-\x7e\n]*$/);
    expect(cut(lines.join('\n'))).to.deep.equal([['Projects (2)'], ['pa'], ['pb']]);

    // A two-column table too.
    const show = cut(await cli.ok('node', 'show', 'n1'));
    expect(show[0]).to.deep.equal(['Field', 'Value']);
    expect(show).to.deep.include.members([['Name', 'n1'], ['Label', 'eth0'], ['Label', 'eth1'], ['Networks', 'None'], ['rack', 'r1']]);
  });

  it('a one-column list counts its items in its header, as HIL\'s make_table did', async () => {
    await must(ts.api.put('/network/pa-net', { owner: 'pa', access: 'pa', net_id: '' }));
    await must(ts.api.post('/project/pa/connect_node', { node: 'n1' }));
    expect(cut(await cli.ok('project', 'list'))[0]).to.deep.equal(['Projects (2)']);
    expect(cut(await cli.ok('project', 'list-networks', 'pa'))).to.deep.equal([['Networks (1)'], ['pa-net']]);
    expect(cut(await cli.ok('project', 'node', 'list', 'pa'))).to.deep.equal([['Nodes (1)'], ['n1']]);
    expect(cut(await cli.ok('project', 'node', 'list', 'pb'))).to.deep.equal([['Nodes (0)']]);
    expect(cut(await cli.ok('headnode', 'list-images'))).to.deep.equal([['Images (1)'], ['base-headnode']]);
    // The test helper reads tables the same way.
    expect(rows(await cli.ok('project', 'list'))).to.deep.equal([['Projects (2)'], ['pa'], ['pb']]);
  });

  it('switch show: a switch without ports has Ports None, as HIL\'s CLI printed it', async () => {
    await must(ts.api.put('/switch/bare', mockSwitch));
    expect(cut(await cli.ok('switch', 'show', 'bare'))).to.deep.equal([['Field', 'Value'], ['Name', 'bare'], ['Ports', 'None']]);
  });

  it('a value the server gives as null prints None, as PrettyTable printed Python\'s None: an unwired nic\'s Switch and Port, a detach\'s New Network', async () => {
    await makeNode(ts.api, 'n-unwired', ['eth0']);
    const show = cut(await cli.ok('node', 'show', 'n-unwired'));
    expect(show).to.deep.include.members([['Switch', 'None'], ['Port', 'None']]);
    // A detach's new_network is null: HIL's networking-action show printed None there.
    await must(ts.api.put('/switch/sw-none', mockSwitch));
    await must(ts.api.put('/switch/sw-none/port/gi1/0/1'));
    await must(ts.api.post('/switch/sw-none/port/gi1/0/1/connect_nic', { node: 'n-unwired', nic: 'eth0' }));
    await must(ts.api.post('/project/pb/connect_node', { node: 'n-unwired' }));
    await must(ts.api.put('/network/pb-net', { owner: 'pb', access: 'pb', net_id: '' }));
    await finished(ts.api, (await must(ts.api.post('/node/n-unwired/nic/eth0/connect_network', { network: 'pb-net' }), 202)).body.status_id);
    const detach = (await must(ts.api.post('/node/n-unwired/nic/eth0/detach_network', { network: 'pb-net' }), 202)).body.status_id;
    await finished(ts.api, detach);
    expect(cut(await cli.ok('networking-action', 'show', detach))).to.deep.include(['New Network', 'None']);
  });

  it('against a server with only HIL\'s calls: node list and switch list print HIL\'s counted lists', async () => {
    const hil = createServer((req, res) => {
      const json: Record<string, string[]> = { '/nodes/free': ['n2', 'n1'], '/switches': [] };
      if (req.method === 'GET' && req.url && json[req.url]) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(json[req.url]));
      }
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end('<h1>Not Found</h1>');
    });
    await new Promise<void>((r) => hil.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(hil.address() as AddressInfo).port}`;
      expect(cut((await hilt(url, ['node', 'list', 'free'])).stdout)).to.deep.equal([['Free Nodes (2)'], ['n1'], ['n2']]);
      expect(cut((await hilt(url, ['switch', 'list'])).stdout)).to.deep.equal([['Switches (0)']]);
    } finally {
      await new Promise<void>((r) => hil.close(() => r()));
    }
  });

  it('project node remove --force waits for the ports\' reverts at most HIL_TIMEOUT seconds, as HIL\'s CLI did, and then leaves the node in its project', async () => {
    const calls: string[] = [];
    const hil = createServer((req, res) => {
      calls.push(`${req.method} ${req.url}`);
      const reply = (body: unknown) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.url === '/node/n9') return reply({ name: 'n9', project: 'p9', nics: [{ label: 'eth0', macaddr: 'aa', networks: { 'vlan/native': 'w9' }, switch: 's9', port: 'gi1' }], metadata: {} });
      if (req.url === '/switch/s9/port/gi1/revert') return reply({ status_id: 'st-9' });
      // A revert that never ends: a switch that stopped answering.
      if (req.url === '/networking_action/st-9') return reply({ status: 'PENDING', node: 'n9', nic: 'eth0', type: 'revert_port', channel: '', new_network: null });
      res.writeHead(500);
      res.end();
    });
    await new Promise<void>((r) => hil.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(hil.address() as AddressInfo).port}`;
      const t0 = Date.now();
      const r = await hilt(url, ['project', 'node', 'remove', 'p9', 'n9', '--force'], { env: { HIL_TIMEOUT: '1' } });
      expect(Date.now() - t0).to.be.below(10_000);
      expect(r.code).to.equal(3);
      expect(r.stderr).to.match(/\nhilt: revert of a port of n9: still PENDING after 1 s \(HIL_TIMEOUT\); the node stays in project p9\n$/);
      expect(calls).to.not.include('POST /project/p9/detach_node');
      const bad = await hilt(url, ['project', 'node', 'remove', 'p9', 'n9', '--force'], { env: { HIL_TIMEOUT: 'soon' } });
      expect([bad.code, bad.stderr]).to.deep.equal([2, 'hilt: HIL_TIMEOUT must be a number of seconds, got "soon"\n']);
    } finally {
      await new Promise<void>((r) => hil.close(() => r()));
    }
  });
});
