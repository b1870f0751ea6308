import { expect } from 'chai';
import { startTestServer, TestServer, Client, must, makeNode, makeUser, mockSwitch, Creds, finished } from '../../helpers/server';

describe('admin repairs of network state', () => {
  let ts: TestServer;
  let api: Client;
  let member: Creds;
  let vlan: { w: number; t: number };
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await must(api.put('/project/rp'));
    member = await makeUser(api, 'rp-member', 'pw', ['rp']);
    await must(api.put('/switch/rs', mockSwitch));
    await must(api.put('/switch/rs/port/gi1/0/1'));
    await makeNode(api, 'rn', ['eth0']);
    await must(api.post('/switch/rs/port/gi1/0/1/connect_nic', { node: 'rn', nic: 'eth0' }));
    await must(api.post('/project/rp/connect_node', { node: 'rn' }));
    await must(api.put('/network/rw', { owner: 'rp', access: 'rp', net_id: '' }));
    await must(api.put('/network/rt', { owner: 'rp', access: 'rp', net_id: '' }));
    const nets = (await api.get('/networks')).body;
    vlan = { w: Number(nets.rw.network_id), t: Number(nets.rt.network_id) };
    await finished(api, (await must(api.post('/node/rn/nic/eth0/connect_network', { network: 'rw' }), 202)).body.status_id);
    await finished(api, (await must(api.post('/node/rn/nic/eth0/connect_network', { network: 'rt', channel: `vlan/${vlan.t}` }), 202)).body.status_id);
    expect(ts.mockSwitch.port('rs', 'gi1/0/1')).to.deep.equal({ native: vlan.w, tagged: [vlan.t] });
  });

  it('re-applies a port\'s configuration from the service\'s state after drift', async () => {
    // The switch "reboots" and forgets the port's VLANs.
    const session = await ts.mockSwitch.open({ name: 'rs', type: 'mock', fields: {} }, new AbortController().signal);
    await session.resetPort('gi1/0/1');
    await session.addTagged('gi1/0/1', 3999);
    expect(ts.mockSwitch.port('rs', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [3999] });
    const r = await api.post('/admin/node/rn/nic/eth0/reapply');
    expect(r.status).to.equal(202);
    const status = await finished(api, r.body.status_id);
    expect(status).to.include({ status: 'DONE', type: 'reapply_port' });
    expect(ts.mockSwitch.port('rs', 'gi1/0/1')).to.deep.equal({ native: vlan.w, tagged: [vlan.t] });
    expect((await api.get('/node/rn')).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'rw', [`vlan/${vlan.t}`]: 'rt' });
  });

  it('force-detaches a network in the service\'s state only (dead switch)', async () => {
    await must(api.post('/admin/node/rn/nic/eth0/force_detach', { network: 'rt' }));
    expect((await api.get('/node/rn')).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'rw' });
    expect((await api.get('/network/rt/attachments')).body).to.deep.equal({});
    // The switch was not told.
    expect(ts.mockSwitch.port('rs', 'gi1/0/1').tagged).to.deep.equal([vlan.t]);
    // The network is now free to delete.
    await must(api.del('/network/rt'));
    expect((await api.post('/admin/node/rn/nic/eth0/force_detach', { network: 'rt' })).status).to.equal(409);
  });

  it('is for admins only, and checks its objects', async () => {
    expect((await api.with(member).post('/admin/node/rn/nic/eth0/reapply')).status).to.equal(401);
    expect((await api.with(member).post('/admin/node/rn/nic/eth0/force_detach', { network: 'rw' })).status).to.equal(401);
    expect((await api.post('/admin/node/nope/nic/eth0/reapply')).status).to.equal(404);
    expect((await api.post('/admin/node/rn/nic/nope/force_detach', { network: 'rw' })).status).to.equal(404);
    expect((await api.post('/admin/node/rn/nic/eth0/force_detach', {})).status).to.equal(400);
    expect((await api.get('/node/rn')).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'rw' });
  });
});
