/**
 * A node's network operations are read by the project that made them (and admins), not by the
 * next project to hold the node nor by anyone while it is free (src/routes/operation-access.ts):
 * a nic keeps its recent operations across a release, and they name the project's private
 * networks and its failures. Over the API (the status routes, the node lists) and the
 * dashboard's views.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, makeNode, mockSwitch, finished, Res } from '../../helpers/server';

/** A dashboard session of a user. */
async function dashboard(api: Client, as: { user: string; password: string }) {
  const r = await must(api.call('POST', '/ui/api/login', { as: null, body: as }));
  const cookie = String([r.headers['set-cookie']].flat()[0]).split(';')[0];
  return (path: string): Promise<Res> => api.call('GET', path, { as: null, headers: { cookie } });
}

describe('network operations across a change of hands', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  const alice = { user: 'oa-alice', password: 'oa-alice-pw-1' };
  const bob = { user: 'oa-bob', password: 'oa-bob-pw-1' };
  /** A's operations on the node, then B's */
  const ofA: string[] = [];
  let ofB = '';
  const SECRET_NET = 'oa-a-private-net';

  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    for (const p of ['oa-a', 'oa-b']) await must(api.put(`/project/${p}`));
    await makeNode(api, 'oa-n1', ['eth0']);
    await must(api.put('/switch/oa-s1', mockSwitch));
    await must(api.put('/switch/oa-s1/port/gi1/0/1'));
    await must(api.post('/switch/oa-s1/port/gi1/0/1/connect_nic', { node: 'oa-n1', nic: 'eth0' }));
    await makeUser(api, alice.user, alice.password, ['oa-a']);
    await makeUser(api, bob.user, bob.password, ['oa-b']);
    const a = api.with(alice);
    await must(a.post('/project/oa-a/connect_node', { node: 'oa-n1' }));
    await must(a.put(`/network/${SECRET_NET}`, { owner: 'oa-a', access: 'oa-a', net_id: '' }));
    for (const path of ['connect_network', 'detach_network']) {
      const id = (await must(a.post(`/node/oa-n1/nic/eth0/${path}`, { network: SECRET_NET }), 202)).body.status_id;
      expect((await finished(a, id)).status).to.equal('DONE');
      ofA.push(id);
    }
    await must(a.post('/project/oa-a/detach_node', { node: 'oa-n1' }));
  });
  after(() => stopTestServer(ts));

  it('a free node\'s operations: admins only, in the lists and the dashboard too', async () => {
    const b = api.with(bob);
    expect((await b.get('/node/oa-n1/networking_actions')).status).to.equal(401);
    for (const which of ['free', 'all']) {
      const row = (await must(b.get(`/nodes/${which}/details`))).body.nodes.find((n: { name: string }) => n.name === 'oa-n1');
      expect(row, `/nodes/${which}/details lists the free node`).to.not.equal(undefined);
      expect(row.last_operation, `/nodes/${which}/details`).to.equal(null);
    }
    const ui = await dashboard(api, bob);
    const detail = await must(ui('/ui/api/node/oa-n1'));
    expect(detail.body.operations).to.deep.equal([]);
    expect(detail.body.last_status).to.equal(null);
    expect(detail.text).to.not.include(SECRET_NET);
    expect((await must(ui('/ui/api/table/nodes'))).text).to.not.include(SECRET_NET);
    // An admin still reads them all.
    const adminRow = (await must(api.get('/nodes/free/details'))).body.nodes.find((n: { name: string }) => n.name === 'oa-n1');
    expect(adminRow.last_operation).to.include({ status_id: ofA[1], network: SECRET_NET });
  });

  it('the next project reads its own operations on the node, not those of the project before', async () => {
    const b = api.with(bob);
    await must(b.post('/project/oa-b/connect_node', { node: 'oa-n1' }));
    await must(b.put('/network/oa-b-net', { owner: 'oa-b', access: 'oa-b', net_id: '' }));
    ofB = (await must(b.post('/node/oa-n1/nic/eth0/connect_network', { network: 'oa-b-net' }), 202)).body.status_id;
    expect((await finished(b, ofB)).status).to.equal('DONE');

    const list = (await must(b.get('/node/oa-n1/networking_actions'))).body as { status_id: string }[];
    expect(list.map((x) => x.status_id)).to.deep.equal([ofB]);
    const all = (await must(b.get('/networking_actions'))).body as { status_id: string }[];
    expect(all.map((x) => x.status_id)).to.deep.equal([ofB]);
    for (const id of ofA) expect((await b.get(`/networking_action/${id}`)).status, `A's status ${id}`).to.equal(404);
    expect((await must(b.get(`/networking_action/${ofB}`))).body).to.include({ status: 'DONE', new_network: 'oa-b-net' });
    const row = (await must(b.get('/nodes/all/details'))).body.nodes.find((n: { name: string }) => n.name === 'oa-n1');
    expect(row.last_operation).to.include({ status_id: ofB });

    const ui = await dashboard(api, bob);
    const detail = await must(ui('/ui/api/node/oa-n1'));
    expect(detail.body.operations.length).to.equal(1);
    expect(detail.text).to.not.include(SECRET_NET);
    expect((await must(ui('/ui/api/table/operations'))).text).to.not.include(SECRET_NET);

    // The admin reads the node's whole history; A, no longer holding the node, none of it.
    const everything = (await must(api.get('/node/oa-n1/networking_actions'))).body as { status_id: string }[];
    expect(everything.map((x) => x.status_id).sort()).to.deep.equal([...ofA, ofB].sort());
    expect((await must(api.get(`/networking_action/${ofA[0]}`))).body).to.include({ new_network: SECRET_NET });
    expect((await api.with(alice).get(`/networking_action/${ofA[0]}`)).status).to.equal(401);
  });

  it('the project that made them reads them again when it holds the node again', async () => {
    const detach = (await must(api.with(bob).post('/node/oa-n1/nic/eth0/detach_network', { network: 'oa-b-net' }), 202)).body.status_id;
    expect((await finished(api.with(bob), detach)).status).to.equal('DONE');
    await must(api.with(bob).post('/project/oa-b/detach_node', { node: 'oa-n1' }));
    const a = api.with(alice);
    await must(a.post('/project/oa-a/connect_node', { node: 'oa-n1' }));
    const mine = (await must(a.get('/node/oa-n1/networking_actions'))).body as { status_id: string }[];
    expect(mine.map((x) => x.status_id).sort()).to.deep.equal([...ofA].sort());
    expect((await must(a.get(`/networking_action/${ofA[0]}`))).body).to.include({ new_network: SECRET_NET });
    for (const id of [ofB, detach]) expect((await a.get(`/networking_action/${id}`)).status).to.equal(404);
  });
});
