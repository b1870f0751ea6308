/**
 * Quotas (issue 20 item 5): a project_connect_node, network_create or headnode_create beyond a limit is a 409
 * naming the quota; concurrent reservations at the limit never overshoot (the project's mailbox
 * serializes them); a lowered quota evicts nothing.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, makeNode, Creds } from '../../helpers/server';

describe('quotas', function () {
  this.timeout(30_000);
  let ts: TestServer;
  let api: Client;
  let member: Creds;

  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await must(api.put('/project/pq'));
    await must(api.put('/project/other'));
    member = await makeUser(api, 'quota-m', 'quota-m-pw', ['pq']);
    for (let i = 0; i < 10; i++) await makeNode(api, `q${i}`);
  });
  after(() => stopTestServer(ts));

  it('is set by admins only (401 first), for a project that exists, with counts or null', async () => {
    expect((await api.put('/project/nope/quota', { nodes: 1 }, { as: member })).status).to.equal(401);
    expect((await api.put('/project/pq/quota', { nodes: 1 }, { as: member })).status).to.equal(401);
    expect((await api.put('/project/nope/quota', { nodes: 1 })).status).to.equal(404);
    for (const body of [{}, { nodes: -1 }, { nodes: 1.5 }, { nodes: '3' }, { cpus: 3 }, { nodes: 2_000_000 }]) {
      const r = await api.put('/project/pq/quota', body);
      expect(r.status, JSON.stringify(body)).to.equal(400);
      expect(r.body.type).to.equal('BadArgumentError');
    }
    expect((await must(api.get('/project/pq/quota', { as: member }))).body).to.deep.equal({ nodes: { limit: null, used: 0 }, networks: { limit: null, used: 0 }, headnodes: { limit: null, used: 0 } });
    expect((await api.put('/project/pq/quota', { headnodes: -1 })).status).to.equal(400);
    expect((await api.get('/project/other/quota', { as: member })).status).to.equal(401);
    expect((await api.get('/project/nope/quota')).status).to.equal(404);
  });

  it('refuses a reservation or a network beyond the limit with a 409 naming the quota', async () => {
    await must(api.put('/project/pq/quota', { nodes: 2, networks: 1 }));
    await must(api.post('/project/pq/connect_node', { node: 'q0' }, { as: member }));
    await must(api.post('/project/pq/connect_node', { node: 'q1' }, { as: member }));
    const r = await api.post('/project/pq/connect_node', { node: 'q2' }, { as: member });
    expect(r.status).to.equal(409);
    expect(r.body).to.deep.equal({ type: 'BlockedError', msg: 'project pq has reached its quota of 2 nodes' });
    // A node that is not free gets its own 409 first.
    expect((await api.post('/project/pq/connect_node', { node: 'q0' })).body.msg).to.match(/not free/);
    await must(api.put('/network/pq-net1', { owner: 'pq', access: 'pq', net_id: '' }, { as: member }));
    const n = await api.put('/network/pq-net2', { owner: 'pq', access: 'pq', net_id: '' }, { as: member });
    expect(n.status).to.equal(409);
    expect(n.body.msg).to.equal('project pq has reached its quota of 1 network');
    // An admin network the project may use is not the project's own: no limit applies.
    await must(api.put('/network/admin-net', { owner: 'admin', access: 'pq', net_id: '' }));
    expect((await must(api.get('/project/pq/quota'))).body).to.deep.equal({ nodes: { limit: 2, used: 2 }, networks: { limit: 1, used: 1 }, headnodes: { limit: null, used: 0 } });
  });

  it('the same network created twice at once with one slot left: one 200, and the other the name\'s 409, not the quota\'s', async () => {
    await must(api.put('/project/twice'));
    await must(api.put('/project/twice/quota', { networks: 1 }));
    const as = await makeUser(api, 'quota-twice', 'quota-twice-pw', ['twice']);
    // A client retrying a create it saw time out does this: the first may still be committing.
    const rs = await Promise.all([0, 1, 2, 3].map(() => api.put('/network/twice-net', { owner: 'twice', access: 'twice', net_id: '' }, { as })));
    expect(rs.map((r) => r.status).sort()).to.deep.equal([200, 409, 409, 409]);
    for (const r of rs) if (r.status === 409) expect(r.body, r.text).to.deep.equal({ type: 'DuplicateError', msg: 'network twice-net already exists' });
    // The quota still holds for another name.
    expect((await api.put('/network/twice-net2', { owner: 'twice', access: 'twice', net_id: '' }, { as })).body.msg).to.equal('project twice has reached its quota of 1 network');
  });

  it('8 parallel network creates of distinct names with two slots left: two 200, six 409 naming the quota, two networks made', async () => {
    await must(api.put('/project/np'));
    const as = await makeUser(api, 'quota-np', 'quota-np-pw', ['np']);
    await must(api.put('/project/np/quota', { networks: 3 }));
    await must(api.put('/network/np-0', { owner: 'np', access: 'np', net_id: '' }, { as }));
    const names = [1, 2, 3, 4, 5, 6, 7, 8].map((i) => `np-${i}`);
    const rs = await Promise.all(names.map((n) => api.put(`/network/${n}`, { owner: 'np', access: 'np', net_id: '' }, { as })));
    expect(rs.map((r) => r.status).sort()).to.deep.equal([200, 200, 409, 409, 409, 409, 409, 409]);
    for (const r of rs) if (r.status === 409) expect(r.body, r.text).to.deep.equal({ type: 'BlockedError', msg: 'project np has reached its quota of 3 networks' });
    const made = names.filter((_n, i) => rs[i].status === 200);
    expect((await must(api.get('/project/np/networks'))).body).to.have.members(['np-0', ...made]);
    expect((await must(api.get('/project/np/quota'))).body.networks).to.deep.equal({ limit: 3, used: 3 });
  });

  it('a lowered quota evicts nothing; null removes a limit, an absent key leaves it', async () => {
    await must(api.put('/project/pq/quota', { nodes: 0 }));
    expect((await must(api.get('/project/pq/nodes'))).body).to.have.members(['q0', 'q1']);
    expect((await must(api.get('/project/pq/quota'))).body).to.deep.equal({ nodes: { limit: 0, used: 2 }, networks: { limit: 1, used: 1 }, headnodes: { limit: null, used: 0 } });
    expect((await api.post('/project/pq/connect_node', { node: 'q2' })).status).to.equal(409);
    // Releasing is never refused for a quota.
    await must(api.post('/project/pq/detach_node', { node: 'q1' }));
    await must(api.put('/project/pq/quota', { nodes: null }));
    expect((await must(api.get('/project/pq/quota'))).body.nodes).to.deep.equal({ limit: null, used: 1 });
    expect((await must(api.get('/project/pq/quota'))).body.networks.limit).to.equal(1);
    await must(api.post('/project/pq/connect_node', { node: 'q1' }));
  });

  it('refuses a headnode beyond the limit with a 409 naming the quota, after every other check, and creates nothing', async () => {
    await must(api.put('/project/hq'));
    const as = await makeUser(api, 'quota-hq', 'quota-hq-pw', ['hq']);
    const create = (name: string, by: Creds | undefined = as, body: object = { project: 'hq', base_img: 'base-headnode' }) => api.put(`/headnode/${name}`, body, by ? { as: by } : {});
    await must(api.put('/project/hq/quota', { headnodes: 1 }));
    // Only the headnode limit changed.
    expect((await must(api.get('/project/hq/quota', { as }))).body).to.deep.equal({ nodes: { limit: null, used: 0 }, networks: { limit: null, used: 0 }, headnodes: { limit: 1, used: 0 } });
    await must(create('hq-1'));
    const r = await create('hq-2');
    expect(r.status).to.equal(409);
    expect(r.body).to.deep.equal({ type: 'BlockedError', msg: 'project hq has reached its quota of 1 headnode' });
    expect((await api.get('/headnode/hq-2')).status).to.equal(404);
    expect((await must(api.get('/project/hq/headnodes'))).body).to.deep.equal(['hq-1']);
    // Every other check comes first: a base image not installed, a name taken, auth.
    expect((await create('hq-2', as, { project: 'hq', base_img: 'nope' })).status).to.equal(400);
    expect((await create('hq-1')).body.type).to.equal('DuplicateError');
    expect((await create('hq-2', member)).status).to.equal(401);
    // Admins are held to it too.
    expect((await create('hq-2', undefined)).body.msg).to.equal('project hq has reached its quota of 1 headnode');
    expect((await must(api.get('/project/hq/quota', { as }))).body.headnodes).to.deep.equal({ limit: 1, used: 1 });
    // A lowered quota evicts nothing; a delete frees a slot; a headnode of another project is not counted.
    await must(api.put('/project/hq/quota', { headnodes: 0 }));
    expect((await must(api.get('/project/hq/quota'))).body.headnodes).to.deep.equal({ limit: 0, used: 1 });
    expect((await must(api.get('/headnode/hq-1'))).body.project).to.equal('hq');
    await must(api.put('/project/hq/quota', { headnodes: 1 }));
    await must(api.del('/headnode/hq-1'));
    await must(api.put('/headnode/other-h', { project: 'other', base_img: 'base-headnode' }));
    await must(create('hq-2'));
    expect((await must(api.get('/project/hq/quota'))).body.headnodes).to.deep.equal({ limit: 1, used: 1 });
    await must(api.put('/project/hq/quota', { headnodes: null }));
    await must(create('hq-3'));
    expect((await must(api.get('/project/hq/quota'))).body.headnodes).to.deep.equal({ limit: null, used: 2 });
  });

  it('8 parallel headnode creates with two slots left: two 200, six 409, two headnodes made', async () => {
    await must(api.put('/project/hp'));
    const as = await makeUser(api, 'quota-hp', 'quota-hp-pw', ['hp']);
    await must(api.put('/project/hp/quota', { headnodes: 3 }));
    await must(api.put('/headnode/hp-0', { project: 'hp', base_img: 'base-headnode' }, { as }));
    const names = [1, 2, 3, 4, 5, 6, 7, 8].map((i) => `hp-${i}`);
    const rs = await Promise.all(names.map((n) => api.put(`/headnode/${n}`, { project: 'hp', base_img: 'base-headnode' }, { as })));
    expect(rs.map((r) => r.status).sort()).to.deep.equal([200, 200, 409, 409, 409, 409, 409, 409]);
    for (const r of rs) if (r.status === 409) expect(r.body, r.text).to.deep.equal({ type: 'BlockedError', msg: 'project hp has reached its quota of 3 headnodes' });
    const made = names.filter((_n, i) => rs[i].status === 200);
    expect((await must(api.get('/project/hp/headnodes'))).body).to.have.members(['hp-0', ...made]);
    for (const [i, n] of names.entries()) if (rs[i].status === 409) expect((await api.get(`/headnode/${n}`)).status).to.equal(404);
    expect((await must(api.get('/project/hp/quota'))).body.headnodes).to.deep.equal({ limit: 3, used: 3 });
  });

  it('8 parallel reservations with one slot left: one 200, seven 409; the limit holds after a restart', async () => {
    await must(api.put('/project/pq/quota', { nodes: 3 }));
    const rs = await Promise.all(['q2', 'q3', 'q4', 'q5', 'q6', 'q7', 'q8', 'q9'].map((node) => api.post('/project/pq/connect_node', { node }, { as: member })));
    const statuses = rs.map((r) => r.status).sort();
    expect(statuses).to.deep.equal([200, 409, 409, 409, 409, 409, 409, 409]);
    for (const r of rs) if (r.status === 409) expect(r.body.msg).to.match(/quota of 3 nodes/);
    expect((await must(api.get('/project/pq/nodes'))).body).to.have.length(3);
    const dir = ts.dataDir;
    await stopTestServer(ts, false);
    ts = await startTestServer({}, {}, dir);
    api = ts.api;
    expect((await must(api.get('/project/pq/quota'))).body.nodes).to.deep.equal({ limit: 3, used: 3 });
    expect((await api.post('/project/pq/connect_node', { node: 'q9' })).status).to.equal(409);
    // The headnode limit and its count come back too (the count from the headnodes themselves).
    expect((await must(api.get('/project/hp/quota'))).body.headnodes).to.deep.equal({ limit: 3, used: 3 });
    expect((await api.put('/headnode/hp-9', { project: 'hp', base_img: 'base-headnode' })).body.msg).to.equal('project hp has reached its quota of 3 headnodes');
  });
});
