/**
 * The error class (`type`) of each 409 the contract and HIL name: HIL's clients read it
 * (docs/api-conventions.md §1, Error body). Each refusal is checked against HIL v0.2's class for
 * the same case; the statuses and the order are tested with their calls (network-ops,
 * networks, headnodes).
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, Creds, Res, must, makeUser, makeNode, mockSwitch, finished } from '../../helpers/server';

async function refusedAs(p: Promise<Res>, type: string, msg: RegExp): Promise<void> {
  const r = await p;
  expect(r.status, r.text).to.equal(409);
  expect(r.body, r.text).to.deep.include({ type });
  expect(r.body.msg).to.match(msg);
}

describe('error classes of conflicts (docs/api-conventions.md §1)', function () {
  this.timeout(30_000);
  let ts: TestServer;
  let api: Client;
  let alice: Creds;
  let vlan: number;
  const connect = (node: string, nic: string, body: unknown) => api.post(`/node/${node}/nic/${nic}/connect_network`, body, { as: alice });
  const detach = (node: string, nic: string, body: unknown) => api.post(`/node/${node}/nic/${nic}/detach_network`, body, { as: alice });

  before(async () => {
    // Operations stay PENDING long enough to meet them.
    ts = await startTestServer({ mockSwitchDelayMs: 1500 });
    api = ts.api;
    for (const p of ['pa', 'pb']) await must(api.put(`/project/${p}`));
    alice = await makeUser(api, 'alice', 'pw-a', ['pa']);
    await must(api.put('/switch/sw', mockSwitch));
    await makeNode(api, 'n1', ['eth0', 'eth1']);
    await makeNode(api, 'nfree', ['eth0']);
    for (const [port, node, nic] of [['gi1/0/1', 'n1', 'eth0'], ['gi1/0/2', 'n1', 'eth1'], ['gi1/0/3', 'nfree', 'eth0']]) {
      await must(api.put(`/switch/sw/port/${port}`));
      await must(api.post(`/switch/sw/port/${port}/connect_nic`, { node, nic }));
    }
    await must(api.post('/project/pa/connect_node', { node: 'n1' }));
    await must(api.put('/network/pa-net', { owner: 'pa', access: 'pa', net_id: '' }, { as: alice }));
    await must(api.put('/network/pa-net2', { owner: 'pa', access: 'pa', net_id: '' }, { as: alice }));
    await must(api.put('/network/pb-net', { owner: 'pb', access: 'pb', net_id: '' }));
    vlan = Number((await must(api.get('/networks'))).body['pa-net'].network_id);
  });
  after(() => stopTestServer(ts));

  it('a free node in connect_network or detach_network: ProjectMismatchError, as HIL', async () => {
    await refusedAs(api.post('/node/nfree/nic/eth0/connect_network', { network: 'pa-net' }), 'ProjectMismatchError', /is free/);
    await refusedAs(api.post('/node/nfree/nic/eth0/detach_network', { network: 'pa-net' }), 'ProjectMismatchError', /is free/);
  });

  it("the node's project without access to the network: ProjectMismatchError, for a node and a headnode", async () => {
    await refusedAs(connect('n1', 'eth0', { network: 'pb-net' }), 'ProjectMismatchError', /has no access/);
    await must(api.put('/headnode/h1', { project: 'pa', base_img: 'base-headnode' }));
    await must(api.put('/headnode/h1/hnic/x'));
    await refusedAs(api.post('/headnode/h1/hnic/x/connect_network', { network: 'pb-net' }), 'ProjectMismatchError', /has no access/);
  });

  it('a pending operation on the nic (connect, detach, port_revert): BlockedError', async () => {
    const r = await connect('n1', 'eth0', { network: 'pa-net' });
    expect(r.status, r.text).to.equal(202);
    await refusedAs(connect('n1', 'eth0', { network: 'pa-net2', channel: `vlan/${vlan + 1}` }), 'BlockedError', /pending network operation/);
    await refusedAs(detach('n1', 'eth0', { network: 'pa-net' }), 'BlockedError', /pending network operation/);
    await refusedAs(api.post('/switch/sw/port/gi1/0/1/revert'), 'BlockedError', /pending network operation/);
    expect((await finished(api, r.body.status_id)).status).to.equal('DONE');
  });

  it('a network already on the nic, or a channel in use: BlockedError', async () => {
    await refusedAs(connect('n1', 'eth0', { network: 'pa-net', channel: `vlan/${vlan}` }), 'BlockedError', /already attached/);
    await refusedAs(connect('n1', 'eth0', { network: 'pa-net2' }), 'BlockedError', /already in use/);
  });

  it('revoking the owner\'s access: BlockedError', async () => {
    await refusedAs(api.del('/network/pa-net/access/pa'), 'BlockedError', /owns network pa-net/);
  });

  it('an admin\'s net_id of the pool already in use: BlockedError', async () => {
    await refusedAs(api.put('/network/taken', { owner: 'admin', access: '', net_id: String(vlan) }), 'BlockedError', new RegExp(`${vlan}`));
  });
});
