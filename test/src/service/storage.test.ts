import { expect } from 'chai';
import { startTestServer, stopTestServer, must, makeNode, mockSwitch } from '../../helpers/server';

describe('HILT_STORAGE=memory', () => {
  it('serves the whole API from memory, and keeps nothing past the process', async () => {
    let ts = await startTestServer({ storage: 'memory' });
    const api = ts.api;
    await must(api.put('/project/mp'));
    await makeNode(api, 'mn', ['eth0']);
    await must(api.put('/switch/ms', mockSwitch));
    await must(api.put('/switch/ms/port/gi1/0/1'));
    await must(api.post('/switch/ms/port/gi1/0/1/connect_nic', { node: 'mn', nic: 'eth0' }));
    await must(api.post('/project/mp/connect_node', { node: 'mn' }));
    await must(api.put('/network/mw', { owner: 'mp', access: 'mp', net_id: '' }));
    const id = (await must(api.post('/node/mn/nic/eth0/connect_network', { network: 'mw' }), 202)).body.status_id;
    for (const deadline = Date.now() + 5000; (await api.get(`/networking_action/${id}`)).body.status === 'PENDING' && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await api.get('/node/mn')).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'mw' });
    await stopTestServer(ts, false);
    ts = await startTestServer({ storage: 'memory' }, {}, ts.dataDir);
    expect((await ts.api.get('/nodes/all')).body).to.deep.equal([]);
    expect((await ts.api.get('/projects')).body).to.deep.equal([]);
    await stopTestServer(ts);
  });
});
