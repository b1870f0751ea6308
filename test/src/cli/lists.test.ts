/**
 * Lists worth reading (issue 26): `node list` with project, power (as last seen, with its age and
 * the last call's failure), networks and last operation (`-o wide` for more); failed operations
 * across every node (`networking-action list --status ERROR`, and GET /networking_actions);
 * `headnode list` with state and VNC port. As an admin, a member, and a member of another project.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, makeUser, mockSwitch, finished, IPMI_OBM, Creds } from '../../helpers/server';
import { freePort } from '../../helpers/process';
import { cliFor, rows } from '../../helpers/cli';

describe('hilt lists', function () {
  this.timeout(90_000);
  let ts: TestServer;
  let api: Client;
  let cli: ReturnType<typeof cliFor>;
  let alice: Creds;
  let bob: Creds;
  let failedId: string;
  before(async () => {
    // gi1/0/9 fails every switch operation; a BMC on a closed port fails within the OBM timeout.
    ts = await startTestServer({ mockSwitchFailPorts: ['s1/gi1/0/9'], obmTimeoutMs: 1500, headnodeDriver: 'mock' });
    api = ts.api;
    cli = cliFor(ts.url);
    for (const p of ['pa', 'pb']) await must(api.put(`/project/${p}`));
    alice = await makeUser(api, 'alice', 'alice-pw-lists', ['pa']);
    bob = await makeUser(api, 'bob', 'bob-pw-lists', ['pb']);
    await must(api.put('/switch/s1', mockSwitch));
    for (const [node, port] of [['good', 'gi1/0/1'], ['bad', 'gi1/0/9']]) {
      await makeNode(api, node, ['eth0']);
      await must(api.put(`/switch/s1/port/${port}`));
      await must(api.post(`/switch/s1/port/${port}/connect_nic`, { node, nic: 'eth0' }));
      await must(api.post('/project/pa/connect_node', { node }));
    }
    await makeNode(api, 'spare');
    await must(api.put('/node/dead', { obm: { type: IPMI_OBM, host: `127.0.0.1:${await freePort()}`, user: 'u', password: 'dead-bmc-pw' } }));
    await must(api.post('/project/pb/connect_node', { node: 'dead' }));
    await must(api.put('/network/net', { owner: 'pa', access: 'pa', net_id: '' }));
    const ok = (await must(api.post('/node/good/nic/eth0/connect_network', { network: 'net' }), 202)).body.status_id;
    expect((await finished(api, ok)).status).to.equal('DONE');
    failedId = (await must(api.post('/node/bad/nic/eth0/connect_network', { network: 'net' }), 202)).body.status_id;
    expect((await finished(api, failedId)).status).to.equal('ERROR');
    await must(api.post('/node/good/power_on'));
    expect((await api.post('/node/dead/power_off')).status, 'the dead BMC fails').to.equal(502);
  });
  after(() => stopTestServer(ts));

  it('node list: project, power with its age, networks and the last operation with its short id and failure', async () => {
    const t = rows(await cli.ok('node', 'list', 'all'));
    expect(t[0]).to.deep.equal(['Node', 'Project', 'Power', 'Networks', 'Last Operation']);
    const [good, bad, dead, spare] = ['good', 'bad', 'dead', 'spare'].map((n) => t.find((r) => r[0] === n)!);
    const short = (await cli.json('networking-action', 'list')).find((a: { node: string }) => a.node === 'good').short_id;
    expect([good[0], good[1], good[3]]).to.deep.equal(['good', 'pa', 'net']);
    expect(good[2]).to.match(/^on \(\d+s ago\)$/);
    expect(good[4]).to.match(new RegExp(`^${short} connect eth0 net DONE \\d+s ago$`));
    expect(bad[4], 'the failure on the row').to.match(/^[0-9a-f]{8} connect eth0 net ERROR \d+s ago$/);
    // A multi-line cell: its second line is the reason.
    const text = await cli.ok('node', 'list', 'all');
    expect(text).to.match(/reason: .*(fail|gi1\/0\/9)/i);
    expect(dead.slice(1, 3)).to.deep.equal(['pb', 'unknown']);
    expect(text, 'the power call\'s failure, with its age').to.match(/FAILED \d+s ago: .*did not answer within 1500 ms/);
    expect(text, 'the BMC\'s address is not in a list').to.not.include('127.0.0.1');
    expect(spare.slice(1, 5)).to.deep.equal(['free', 'unknown', '', '']);
    expect(rows(await cli.ok('node', 'list', 'free')).slice(1).map((r) => r[0])).to.deep.equal(['spare']);
  });

  it('node list -o wide: nics, pending operations, BMC driver, lease and metadata too', async () => {
    await must(api.put('/node/spare/metadata/rack', { value: 'r7' }));
    const t = rows(await cli.ok('node', 'list', 'all', '-o', 'wide'));
    expect(t[0]).to.deep.equal(['Node', 'Project', 'Power', 'Networks', 'Last Operation', 'Nics', 'Pending', 'BMC', 'Lease Ends', 'Metadata']);
    expect(t.find((r) => r[0] === 'spare')!.slice(5)).to.deep.equal(['0', '0', 'mock', '', 'rack=r7']);
    expect(t.find((r) => r[0] === 'dead')!.slice(5, 8)).to.deep.equal(['0', '0', 'ipmi']);
  });

  it('node list as a member: its project\'s nodes and the free ones; the others only counted', async () => {
    const r = await cli.as({ as: bob })('node', 'list', 'all');
    expect(r.code, r.stderr).to.equal(0);
    expect(rows(r.stdout).slice(1).map((x) => x[0]).filter(Boolean), 'the names (a cell\'s second line has none)').to.deep.equal(['dead', 'spare']);
    expect(r.stderr).to.equal('hilt: and 2 nodes of other projects\n');
    expect(rows(r.stdout)[0], 'no BMC column for a member, even wide').to.not.include('BMC');
    expect(JSON.parse((await cli.as({ as: bob })('node', 'list', 'all', '--json')).stdout).sort(), '--json: list_nodes as today').to.deep.equal(['bad', 'dead', 'good', 'spare']);
  });

  it('networking-action list --status ERROR without a node: the failures of every node the caller may see', async () => {
    const t = rows(await cli.ok('networking-action', 'list', '--status', 'ERROR'));
    expect(t.slice(1).map((r) => [r[1], r[2], r[3], r[4], r[6]])).to.deep.equal([['bad', 'eth0', 'modify_port', 'net', 'ERROR']]);
    expect(t[1][9], 'the reason').to.not.equal('');
    const json = await cli.json('networking-action', 'list', '--status', 'ERROR');
    expect(json.map((a: { status_id: string }) => a.status_id)).to.deep.equal([failedId]);
    expect(rows((await cli.as({ as: alice })('networking-action', 'list', '--status', 'ERROR')).stdout).length, 'a member of the project sees it').to.equal(2);
    expect(rows((await cli.as({ as: bob })('networking-action', 'list', '--status', 'ERROR')).stdout).length, 'a member of another project does not').to.equal(1);
    const all = (await must(api.get('/networking_actions'))).body;
    expect(all.map((a: { status: string }) => a.status).sort()).to.deep.equal(['DONE', 'ERROR']);
    expect((await api.get('/networking_actions?status=BOGUS')).status).to.equal(400);
    expect((await api.get('/networking_actions?limit=1001')).status).to.equal(400);
    expect((await must(api.get('/networking_actions?limit=1'))).body).to.have.length(1);
  });

  it('headnode list: state, VNC port, base image and hnics', async () => {
    await must(api.put('/headnode/h1', { project: 'pa', base_img: 'base-headnode' }));
    await must(api.put('/headnode/h1/hnic/eth0'));
    await must(api.put('/headnode/h2', { project: 'pa', base_img: 'base-headnode' }));
    await must(api.post('/headnode/h2/start'));
    const vnc = (await must(api.get('/headnode/h2'))).body.vncport;
    const t = rows(await cli.as({ as: alice })('headnode', 'list', 'pa').then((r) => r.stdout));
    expect(t).to.deep.equal([
      ['Headnode', 'State', 'VNC Port', 'Base Image', 'Hnics', 'Error'],
      ['h1', 'created', '', 'base-headnode', 'eth0: no network', ''],
      ['h2', 'running', String(vnc), 'base-headnode', '', ''],
    ]);
    expect((await cli.json('headnode', 'list', 'pa')).sort()).to.deep.equal(['h1', 'h2']);
  });
});
