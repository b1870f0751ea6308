/**
 * A refusal that says what blocks it names it (issue 26): the networks a node or nic is
 * attached to, how many ports a switch still has, the nodes a project or network still holds.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, Res, must, makeNode, makeUser, mockSwitch, finished } from '../../helpers/server';

async function blockedBy(p: Promise<Res>): Promise<string> {
  const r = await p;
  expect(r.status, r.text).to.equal(409);
  expect(r.body.type).to.equal('BlockedError');
  return r.body.msg as string;
}

describe('refusals name what blocks them', function () {
  this.timeout(30_000);
  let ts: TestServer;
  let api: Client;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await must(api.put('/project/p'));
    await makeNode(api, 'n1', ['eth0', 'eth1']);
    await must(api.put('/switch/s1', mockSwitch));
    for (const [port, nic] of [['gi1/0/1', 'eth0'], ['gi1/0/2', 'eth1']]) {
      await must(api.put(`/switch/s1/port/${port}`));
      await must(api.post(`/switch/s1/port/${port}/connect_nic`, { node: 'n1', nic }));
    }
    await must(api.put('/switch/s1/port/gi1/0/3'));
    await must(api.post('/project/p/connect_node', { node: 'n1' }));
    for (const net of ['red', 'blue']) {
      await must(api.put(`/network/${net}`, { owner: 'p', access: 'p', net_id: '' }));
    }
    const blueVlan = (await must(api.get('/network/blue'))).body.channels.find((c: string) => c !== 'vlan/native');
    for (const [nic, body] of [['eth0', { network: 'red' }], ['eth0', { network: 'blue', channel: blueVlan }], ['eth1', { network: 'blue' }]] as const) {
      const r = await api.post(`/node/n1/nic/${nic}/connect_network`, body);
      expect(r.status, r.text).to.equal(202);
      expect((await finished(api, r.body.status_id)).status).to.equal('DONE');
    }
  });
  after(() => stopTestServer(ts));

  it('detaching a node from its project names the networks it is attached to', async () => {
    expect(await blockedBy(api.post('/project/p/detach_node', { node: 'n1' }))).to.equal('node n1 is attached to networks blue, red');
  });

  it('deleting an attached nic names its networks', async () => {
    expect(await blockedBy(api.del('/node/n1/nic/eth1'))).to.equal('nic eth1 of node n1 is attached to network blue');
  });

  it('deleting a network names the nodes attached to it', async () => {
    expect(await blockedBy(api.del('/network/blue'))).to.equal('network blue is attached to 1 node (n1)');
  });

  it('deleting a network names its headnodes, to a member of its owner only those of the owner', async () => {
    await must(api.put('/project/q'));
    const member = await makeUser(api, 'pm', 'pm-pw', ['p']);
    await must(api.put('/network/shared', { owner: 'p', access: 'p', net_id: '' }));
    await must(api.put('/network/shared/access/q'));
    for (const [h, project] of [['hn-p', 'p'], ['hn-q-secret', 'q']]) {
      await must(api.put(`/headnode/${h}`, { project, base_img: 'base-headnode' }));
      await must(api.put(`/headnode/${h}/hnic/e0`));
      await must(api.post(`/headnode/${h}/hnic/e0/connect_network`, { network: 'shared' }));
    }
    expect(await blockedBy(api.del('/network/shared'))).to.equal('network shared is attached to 2 headnodes (hn-p, hn-q-secret)');
    expect(await blockedBy(api.with(member).del('/network/shared'))).to.equal('network shared is attached to 2 headnodes (hn-p, 1 headnode of another project)');
    await must(api.del('/headnode/hn-p'));
    expect(await blockedBy(api.with(member).del('/network/shared'))).to.equal('network shared is attached to 1 headnode (1 headnode of another project)');
  });

  it('deleting a project names what it still has', async () => {
    expect(await blockedBy(api.del('/project/p'))).to.equal('project p still has 1 node (n1)');
  });

  it('deleting a switch says how many ports it still has, and deleting a wired port names its nic', async () => {
    expect(await blockedBy(api.del('/switch/s1'))).to.equal('switch s1 still has 3 ports (gi1/0/1, gi1/0/2, gi1/0/3)');
    expect(await blockedBy(api.del('/switch/s1/port/gi1/0/1'))).to.equal('port gi1/0/1 of switch s1 is connected to nic eth0 of node n1');
  });
});
