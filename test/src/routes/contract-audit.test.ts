/**
 * Contract conformance where the newer features meet HIL's calls: the check orders of
 * docs/api-conventions.md (../shared/spec/decisions.md) still hold for a node with a lease, in a
 * quota's project, and so on. Each test is a deviation an audit found.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, Creds, Res, must, makeUser, makeNode, mockSwitch, finished, deadSwitch } from '../../helpers/server';
import { until } from '../../helpers/wait';

async function refused(p: Promise<Res>, status: number, type: string): Promise<Res> {
  const r = await p;
  expect(r.status, r.text).to.equal(status);
  expect(r.body, r.text).to.deep.equal({ type, msg: r.body.msg });
  expect(r.body.msg).to.be.a('string');
  return r;
}

describe('contract audit: check orders with the newer features', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let alice: Creds;
  let bob: Creds;

  before(async () => {
    ts = await startTestServer({ headnodeDriver: 'mock' });
    api = ts.api;
    for (const p of ['pa', 'pb', 'pq']) await must(api.put(`/project/${p}`));
    alice = await makeUser(api, 'alice', 'alice-pw', ['pa']);
    bob = await makeUser(api, 'bob', 'bob-pw', ['pb']);
    await must(api.put('/switch/sw', mockSwitch));
    await makeNode(api, 'n1', ['eth0', 'eth1']);
    await makeNode(api, 'n2', ['eth0']);
    await makeNode(api, 'n3', ['eth0']);
    await makeNode(api, 'n4');
    for (const [port, node] of [['gi1/0/1', 'n1'], ['gi1/0/2', 'n2']]) {
      await must(api.put(`/switch/sw/port/${port}`));
      await must(api.post(`/switch/sw/port/${port}/connect_nic`, { node, nic: 'eth0' }));
    }
    await must(api.post('/project/pa/connect_node', { node: 'n1' }));
    await must(api.post('/project/pa/connect_node', { node: 'n2' }));
    await must(api.post('/project/pb/connect_node', { node: 'n3' }));
    await must(api.put('/network/pa-net', { owner: 'pa', access: 'pa', net_id: '' }, { as: alice }));
    await must(api.put('/network/pa-two', { owner: 'pa', access: 'pa', net_id: '' }, { as: alice }));
  });
  after(() => stopTestServer(ts));

  it('node_connect_network on a node whose lease has passed: the 404s of the chain (nic, its port) come before the lease\'s 409, auth before both', async () => {
    const r = await must(api.post('/node/n1/nic/eth0/connect_network', { network: 'pa-net' }, { as: alice }), 202);
    expect((await finished(api, r.body.status_id)).status).to.equal('DONE');
    // The switch answers no login: the expiry cannot detach pa-net, so the node stays in pa with its lease passed.
    const dead = deadSwitch(ts, 'sw');
    try {
      await must(api.put('/node/n1/lease', { expires_at: new Date(Date.now() + 1000).toISOString() }, { as: alice }));
      await until('the lease has passed', async () => (await api.get('/node/n1/lease')).body.expired === true, 10_000);
      // docs/api-conventions.md §8: … auth → nic not wired to a port 404 → … (409s).
      await refused(api.post('/node/n1/nic/eth1/connect_network', { network: 'pa-two' }, { as: alice }), 404, 'NotFoundError');
      await refused(api.post('/node/n1/nic/nosuch/connect_network', { network: 'pa-two' }, { as: alice }), 404, 'NotFoundError');
      await refused(api.post('/node/n1/nic/eth1/connect_network', { network: 'pa-two' }, { as: bob }), 401, 'AuthorizationError');
      const lease = await refused(api.post('/node/n1/nic/eth0/connect_network', { network: 'pa-two' }, { as: alice }), 409, 'IllegalStateError');
      expect(lease.body.msg).to.match(/lease of node n1 has expired/);
    } finally {
      dead.revive();
    }
  });

  it('a project at its quota: project_connect_node, network_create and headnode_create answer every earlier check of their chains first', async () => {
    await must(api.post('/auth/basic/user/alice/add_project', { project: 'pq' }));
    await must(api.put('/project/pq/quota', { nodes: 0, networks: 0, headnodes: 0 }));
    const as = { as: alice };
    // project_connect_node: project 404 → auth → node 404 → node not free 409 → quota 409.
    await refused(api.post('/project/pq/connect_node', { node: 'nosuch' }, as), 404, 'NotFoundError');
    await refused(api.post('/project/pq/connect_node', { node: 'n3' }, { as: bob }), 401, 'AuthorizationError');
    const notFree = await refused(api.post('/project/pq/connect_node', { node: 'n3' }, as), 409, 'BlockedError');
    expect(notFree.body.msg).to.match(/not free/).and.not.match(/quota/);
    // network_create: name 409 → owner 404 → auth → illegal combination (admin 400) → quota 409.
    await refused(api.put('/network/pa-net', { owner: 'pq', access: 'pq', net_id: '' }, as), 409, 'DuplicateError');
    await refused(api.put('/network/q1', { owner: 'pq', access: 'pq', net_id: '' }, { as: bob }), 401, 'AuthorizationError');
    await refused(api.put('/network/q1', { owner: 'pq', access: 'pq', net_id: '7' }), 400, 'BadArgumentError');
    // headnode_create: base image 400 → name 409 → project 404 → auth → quota 409.
    await refused(api.put('/headnode/hq', { project: 'pq', base_img: 'no-such-image' }, as), 400, 'BadArgumentError');
    await refused(api.put('/headnode/hq', { project: 'pq', base_img: 'base-headnode' }, { as: bob }), 401, 'AuthorizationError');
    for (const r of [
      await api.post('/project/pq/connect_node', { node: 'n4' }, as),
      await api.put('/network/q1', { owner: 'pq', access: 'pq', net_id: '' }, as),
      await api.put('/headnode/hq', { project: 'pq', base_img: 'base-headnode' }, as),
    ]) {
      expect(r.status, r.text).to.equal(409);
      expect(r.body, r.text).to.deep.include({ type: 'BlockedError' });
      expect(r.body.msg).to.match(/quota/);
    }
  });

  it('a port in doubt holds a release and a network\'s delete only after the chains\' 404s, authorization and project checks', async () => {
    const r = await must(api.post('/node/n2/nic/eth0/connect_network', { network: 'pa-two' }, { as: alice }), 202);
    expect((await finished(api, r.body.status_id)).status).to.equal('DONE');
    const dead = deadSwitch(ts, 'sw');
    try {
      await must(api.post('/admin/node/n2/nic/eth0/force_detach', { network: 'pa-two' }));
      // network_delete: 404 → auth → … → a port in doubt 409.
      await refused(api.del('/network/pa-two', { as: bob }), 401, 'AuthorizationError');
      await refused(api.del('/network/pa-two', { as: alice }), 409, 'BlockedError');
      // project_detach_node: project 404 → auth → node 404 → not in this project 409 → … → a port in doubt 409.
      await refused(api.post('/project/pa/detach_node', { node: 'n2' }, { as: bob }), 401, 'AuthorizationError');
      await refused(api.post('/project/pa/detach_node', { node: 'nosuch' }, { as: alice }), 404, 'NotFoundError');
      await refused(api.post('/project/pb/detach_node', { node: 'n2' }, { as: bob }), 409, 'ProjectMismatchError');
      const held = await refused(api.post('/project/pa/detach_node', { node: 'n2' }, { as: alice }), 409, 'BlockedError');
      expect(held.body.msg).to.match(/in doubt/);
      // node_delete_nic: admin → node 404 → nic 404 → … → a port in doubt 409.
      await refused(api.del('/node/n2/nic/eth0', { as: alice }), 401, 'AuthorizationError');
      await refused(api.del('/node/n2/nic/nosuch'), 404, 'NotFoundError');
      await refused(api.del('/node/n2/nic/eth0'), 409, 'BlockedError');
      await must(api.post('/admin/switch/sw/port/gi1/0/2/clear_doubt'));
      await refused(api.post('/admin/switch/sw/port/gi1/0/2/clear_doubt'), 409, 'IllegalStateError');
    } finally {
      dead.revive();
    }
  });
});
