/**
 * An operator's script of HIL CLI invocations, as HIL's own integration test of its CLI and
 * its documentation write them, run with `hilt` in place of `hil`: every line must succeed
 * (or, for calls hilt does not serve yet, say so) and leave the state HIL's would.
 *
 * Left out, as hilt has no such calls: `node obm enable|disable` and `node console show` (HIL's
 * obmd era), and the obmd form of `node register <node> <obmd-uri> <token>`: hilt takes the
 * form of HIL's earlier CLI, `node register <node> <obmtype> <host> <user> <password>`.
 */
import { expect } from 'chai';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, MOCK_SWITCH } from '../../helpers/server';
import { cliFor, hilt, rows } from '../../helpers/cli';
import { addCredentials } from '../../helpers/secrets';

const PROJECT1 = 'foo';
const NODE1 = 'dell-1';
const NIC1 = 'eth1';
const SWITCH1 = 'mock-switch1';
const SWITCH2 = 'mock-switch2';
const PORT = 'gi1/0/1';

describe('a script of HIL CLI invocations, run with hilt', function () {
  this.timeout(120_000);
  let ts: TestServer;
  let api: Client;
  let cli: ReturnType<typeof cliFor>;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    cli = cliFor(ts.url);
  });
  after(() => stopTestServer(ts));

  /** `hil(...)` of HIL's test: the output, or a failure when the exit is not 0. */
  const hil = async (...args: string[]) => {
    const r = await cli.run(...args);
    if (r.code !== 0) throw new Error(`hilt ${args.join(' ')} → ${r.code}: ${r.stderr}`);
    return r.stdout;
  };
  /** A call that the server offers or, until it does, one the CLI says it lacks (exit 1). */
  const hilIfServed = async (method: 'POST' | 'PUT', url: string, ...args: string[]) => {
    const r = await cli.run(...args);
    if (ts.app.hasRoute({ method, url })) expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(0);
    else expect([r.code, r.stderr]).to.deep.equal([1, `hilt: the server at ${ts.url} does not offer ${method} ${url.replace(':node', NODE1)} (404 NotFoundError: no such call: ${method} ${url.replace(':node', NODE1)})\n`]);
  };

  it('HIL\'s CLI integration test (tests/integration/cli.py), line by line', async () => {
    // Test node and nic creation
    await hil('node', 'register', NODE1, 'mock', 'ipmihost', 'ipmiuser', 'ipmipass');
    expect(await hil('node', 'list', 'all')).to.include(NODE1);
    expect(await hil('node', 'list', 'free')).to.include(NODE1);
    await hil('node', 'nic', 'register', NODE1, NIC1, 'aa:bb:cc:dd:ee:ff');
    expect(await hil('node', 'show', NODE1)).to.include(NIC1);
    // Test project create command
    await hil('project', 'create', PROJECT1);
    expect(await hil('project', 'list')).to.include(PROJECT1);
    // project and node connect
    await hil('project', 'node', 'add', PROJECT1, NODE1);
    expect(await hil('project', 'node', 'list', PROJECT1)).to.include(NODE1);
    expect(await hil('node', 'list', 'free')).to.not.include(NODE1);
    // obm related calls
    // HIL's mock OBM took any device name ("A"); hilt's boot_device takes pxe, disk or none
    // (docs/api-conventions.md §3), so the script's "A" is a 400 and a real device is used.
    const bad = await cli.run('node', 'bootdev', NODE1, 'A');
    expect([bad.code, bad.stderr]).to.deep.equal([1, 'hilt: BadArgumentError: invalid boot device "A": expected one of pxe, disk, none\n']);
    await hilIfServed('PUT', '/node/:node/boot_device', 'node', 'bootdev', NODE1, 'pxe');
    await hil('node', 'power', 'off', NODE1);
    await hilIfServed('POST', '/node/:node/power_on', 'node', 'power', 'on', NODE1);
    await hil('node', 'power', 'cycle', NODE1);
    // node metadata calls
    await hil('node', 'metadata', 'add', NODE1, 'metadata-label', 'metadata-value');
    expect((await api.get(`/node/${NODE1}`)).body.metadata).to.deep.equal({ 'metadata-label': 'metadata-value' });
    await hil('node', 'metadata', 'delete', NODE1, 'metadata-label');
    expect((await api.get(`/node/${NODE1}`)).body.metadata).to.deep.equal({});
    // switch register in 2 ways
    await hil('switch', 'register', SWITCH1, 'mock', 'host', 'user', 'pass');
    expect(await hil('switch', 'list')).to.include(SWITCH1);
    await hil('switch', 'register', SWITCH2, MOCK_SWITCH, '{"hostname": "host", "username": "user", "password": "pass"}');
    expect(await hil('switch', 'list')).to.include(SWITCH2);
    // Register a port and see that it's shown in show switch
    await hil('port', 'register', SWITCH1, PORT);
    expect(await hil('switch', 'show', SWITCH1)).to.include(PORT);
    expect(await hil('switch', 'show', SWITCH2)).to.not.include(PORT);
    // delete everything
    await hil('port', 'delete', SWITCH1, PORT);
    await hil('switch', 'delete', SWITCH1);
    await hil('switch', 'delete', SWITCH2);
    await hil('project', 'node', 'remove', PROJECT1, NODE1);
    await hil('project', 'delete', PROJECT1);
    await hil('node', 'nic', 'delete', NODE1, NIC1);
    await hil('node', 'delete', NODE1);

    expect((await api.get('/nodes/all')).body).to.deep.equal([]);
    expect((await api.get('/projects')).body).to.deep.equal([]);
    expect((await api.get('/switches')).body).to.deep.equal([]);
  });

  it('a tenant\'s day, as HIL\'s documentation walks it: users, networks, attaching nodes, headnodes', async () => {
    // The admin sets up the inventory and a project with its user.
    await hil('switch', 'register', 'sw0', 'mock', 'sw0.example', 'admin', 'sw-pass');
    for (const n of ['node-01', 'node-02']) {
      await hil('node', 'register', n, 'mock', `${n}-bmc`, 'ipmiuser', 'ipmipass');
      await hil('node', 'nic', 'register', n, 'eth0', `de:ad:be:ef:00:0${n.slice(-1)}`);
      await hil('port', 'register', 'sw0', `gi1/0/${n.slice(-1)}`);
      await hil('port', 'nic', 'add', 'sw0', `gi1/0/${n.slice(-1)}`, n, 'eth0');
    }
    await hil('project', 'create', 'runway');
    await hil('user', 'create', 'alice', 'alice-pw', 'regular');
    await hil('user', 'project', 'add', 'alice', 'runway');
    await hil('network', 'create', 'provider', 'admin', '--access', '', '--net-id', '3000');

    // alice, through HIL_USERNAME and HIL_PASSWORD, takes nodes and builds her network.
    const alice = async (...args: string[]) => {
      const r = await cli.as({ as: { user: 'alice', password: 'alice-pw' } })(...args);
      if (r.code !== 0) throw new Error(`hilt ${args.join(' ')} → ${r.code}: ${r.stderr}`);
      return r.stdout;
    };
    await alice('project', 'node', 'add', 'runway', 'node-01');
    await alice('project', 'node', 'add', 'runway', 'node-02');
    await alice('network', 'create', 'runway-net', 'runway');
    await alice('node', 'network', 'connect', 'node-01', 'eth0', 'runway-net', '--wait');
    await alice('node', 'network', 'connect', 'node-02', 'eth0', 'runway-net', 'vlan/native', '--wait');
    await alice('node', 'network', 'connect', 'node-01', 'eth0', 'provider', `vlan/3000`, '--wait');
    expect(await alice('network', 'show', 'runway-net')).to.match(/node-01\(eth0\)[\s\S]*node-02\(eth0\)/);
    expect(await alice('project', 'list-networks', 'runway')).to.include('runway-net');
    expect(await alice('network', 'list-attachments', 'runway-net', '--project', 'runway')).to.include('node-02');
    // A headnode of the project on the project's network.
    expect(await alice('headnode', 'list-images')).to.include('base-headnode');
    await alice('headnode', 'create', 'runway-hn', 'runway', 'base-headnode');
    await alice('headnode', 'nic', 'create', 'runway-hn', 'hn0');
    await alice('headnode', 'network', 'connect', 'runway-hn', 'hn0', 'runway-net');
    expect(await alice('headnode', 'list', 'runway')).to.include('runway-hn');
    // And hands one node back.
    await alice('node', 'network', 'detach', 'node-02', 'eth0', 'runway-net', '--wait');
    await alice('project', 'node', 'remove', 'runway', 'node-02');

    // The state HIL would have.
    expect((await api.get('/nodes/free')).body).to.deep.equal(['node-02']);
    expect((await api.get('/node/node-01')).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'runway-net', 'vlan/3000': 'provider' });
    expect((await api.get('/network/runway-net/attachments')).body).to.deep.equal({ 'node-01': { nic: 'eth0', channel: 'vlan/native', project: 'runway' } });
    expect((await api.get('/headnode/runway-hn')).body).to.deep.include({ project: 'runway', hnics: ['hn0'], networks: { hn0: 'runway-net' } });
    // The switch itself: node-02's port carries nothing any more, node-01's both networks.
    expect(ts.mockSwitch.port('sw0', 'gi1/0/2')).to.deep.equal({ native: null, tagged: [] });
    expect(ts.mockSwitch.port('sw0', 'gi1/0/1').tagged).to.include(3000);
    expect((await must(api.get('/switch/sw0/port/gi1/0/1'))).body.networks).to.deep.equal({ 'vlan/native': 'runway-net', 'vlan/3000': 'provider' });
  });

  it('the user and password of an HIL_ENDPOINT such as http://user:pw@host (HIL\'s CLI, through python-requests, sent them)', async () => {
    await makeUser(api, 'url-user', 'url-pass@:/ 1', [], true);
    addCredentials('url-user', 'url-pass@:/ 1');
    await must(api.put('/project/url-project'));
    const withCredentials = ts.url.replace('://', `://url-user:${encodeURIComponent('url-pass@:/ 1')}@`);
    const r = await hilt(withCredentials, ['project', 'list', '--json'], { as: null });
    expect([r.code, r.stderr]).to.deep.equal([0, '']);
    expect(JSON.parse(r.stdout)).to.include('url-project');
    // HIL_USERNAME and HIL_PASSWORD win, as requests' explicit auth won over the URL's.
    const wrong = await hilt(ts.url.replace('://', '://url-user:wrong-pass@'), ['project', 'list'], {});
    expect([wrong.code, wrong.stderr]).to.deep.equal([0, '']);
  });

  it('an HIL_ENDPOINT whose password holds / ? # or @ unencoded: a usage error that shows no part of it', async () => {
    for (const pw of ['s3cr#tq9-pw', 'ab1/zq2-pw', 'xk9?yq7-pw', '918#xq7-pw', 'pq8@wz7#zz9-pw']) {
      addCredentials('url-user', pw);
      const r = await hilt(ts.url.replace('://', `://url-user:${pw}@`), ['project', 'list'], { as: null });
      expect(r.code, `${pw}: ${r.stderr}`).to.equal(2);
      expect(r.stderr).to.match(/^hilt: the endpoint "http:\/\/url-user:\*\*\*@127\.0\.0\.1:\d+" /);
      for (const part of pw.split(/[#/?@]/)) expect(r.stderr, pw).to.not.include(part);
    }
  });

  it('HIL\'s --jsonout, on every command where one of its CLI\'s versions took it, prints what --json prints', async () => {
    await hil('node', 'register', 'jo-node', 'mock', 'jo-bmc', 'ipmiuser', 'ipmipass');
    await hil('switch', 'register', 'jo-switch', 'mock', 'jo-host', 'user', 'pass');
    await hil('port', 'register', 'jo-switch', 'gi1/0/9');
    await hil('project', 'create', 'jo-project');
    await hil('network', 'create', 'jo-net', 'jo-project');
    for (const args of [['node', 'list', 'all'], ['node', 'list', 'free'], ['node', 'show', 'jo-node'], ['network', 'list'], ['network', 'show', 'jo-net'],
      ['switch', 'list'], ['switch', 'show', 'jo-switch'], ['port', 'show', 'jo-switch', 'gi1/0/9']]) {
      const json = JSON.parse(await hil(...args, '--json'));
      expect(JSON.parse(await hil(...args, '--jsonout')), args.join(' ')).to.deep.equal(json);
    }
  });

  it('against a server with only HIL\'s calls, whose unknown paths get its web framework\'s HTML 404: lists fall back to the names, others say the call is not offered', async () => {
    const hil = createServer((req, res) => {
      const json: Record<string, string[]> = { '/nodes/all': ['n2', 'n1'], '/switches': ['s1'] };
      if (req.method === 'GET' && req.url && json[req.url]) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(json[req.url]));
      }
      res.writeHead(404, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n<p>The requested URL was not found on the server.</p>\n');
    });
    await new Promise<void>((r) => hil.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(hil.address() as AddressInfo).port}`;
      const nodes = await hilt(url, ['node', 'list', 'all']);
      expect([nodes.code, nodes.stderr]).to.deep.equal([0, '']);
      expect(rows(nodes.stdout)).to.deep.equal([['All Nodes (2)'], ['n1'], ['n2']]);
      const switches = await hilt(url, ['switch', 'list']);
      expect([switches.code, switches.stderr]).to.deep.equal([0, '']);
      expect(rows(switches.stdout)).to.deep.equal([['Switches (1)'], ['s1']]);
      const on = await hilt(url, ['node', 'power', 'on', 'n1']);
      expect([on.code, on.stderr]).to.deep.equal([1, `hilt: the server at ${url} does not offer POST /node/n1/power_on (404)\n`]);
    } finally {
      await new Promise<void>((r) => hil.close(() => r()));
    }
  });
});
