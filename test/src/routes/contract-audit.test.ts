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
    ts = await startTestServer();
    api = ts.api;
    for (const p of ['pa', 'pb']) await must(api.put(`/project/${p}`));
    alice = await makeUser(api, 'alice', 'alice-pw', ['pa']);
    bob = await makeUser(api, 'bob', 'bob-pw', ['pb']);
    await must(api.put('/switch/sw', mockSwitch));
    await makeNode(api, 'n1', ['eth0', 'eth1']);
    await must(api.put('/switch/sw/port/gi1/0/1'));
    await must(api.post('/switch/sw/port/gi1/0/1/connect_nic', { node: 'n1', nic: 'eth0' }));
    await must(api.post('/project/pa/connect_node', { node: 'n1' }));
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
});
