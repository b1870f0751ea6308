/**
 * One VLAN twice on one port (docs/api-conventions.md §8): two admin networks may share an id
 * outside the pool (§7), but one port cannot carry a VLAN both untagged and tagged. Accepting
 * the second network ended DONE while the switch carried it on no channel of its own, and
 * detaching it then took the VLAN off the port under the first network, which stayed attached.
 * The connect is refused with 409 instead, on the mock switch and on a simulated one alike.
 */
import { expect } from 'chai';
import { must, makeNode, mockSwitch, finished, startTestServer, stopTestServer, TestServer } from '../../helpers/server';
import { operation, switchFamilyService } from '../../helpers/switch-family';
import { registration, simFor, VENDOR_CASES } from '../../helpers/switch-sims';

const VLAN = 3000; // outside the default pool (1000-1999): several admin networks may share it

describe('one VLAN on one port through two networks (§8)', function () {
  this.timeout(60_000);

  describe('on the mock switch', () => {
    let ts: TestServer;
    before(async () => {
      ts = await startTestServer();
      const api = ts.api;
      await must(api.put('/project/p'));
      await must(api.put('/switch/sw', mockSwitch));
      for (const [i, node] of [[1, 'n1'], [2, 'n2']] as const) {
        await must(api.put(`/switch/sw/port/gi1/0/${i}`));
        await makeNode(api, node, ['eth0']);
        await must(api.post(`/switch/sw/port/gi1/0/${i}/connect_nic`, { node, nic: 'eth0' }));
        await must(api.post('/project/p/connect_node', { node }));
      }
      for (const w of ['wa', 'wb']) await must(api.put(`/network/${w}`, { owner: 'admin', access: 'p', net_id: String(VLAN) }));
    });
    after(() => stopTestServer(ts));

    const connect = async (node: string, body: Record<string, unknown>) => {
      const r = await ts.api.post(`/node/${node}/nic/eth0/connect_network`, body);
      expect(r.status, r.text).to.equal(202);
      return finished(ts.api, r.body.status_id);
    };

    it('refuses a tagged network whose VLAN the nic carries natively: 409, nothing changes', async () => {
      expect((await connect('n1', { network: 'wa' })).status).to.equal('DONE');
      const r = await ts.api.post('/node/n1/nic/eth0/connect_network', { network: 'wb', channel: `vlan/${VLAN}` });
      expect(r.status, r.text).to.equal(409);
      expect(r.body).to.deep.equal({ type: 'BlockedError', msg: `VLAN ${VLAN} of network wb is already on nic eth0 of node n1, through network wa on channel vlan/native` });
      expect(ts.mockSwitch.port('sw', 'gi1/0/1')).to.deep.equal({ native: VLAN, tagged: [] });
      expect((await must(ts.api.get('/node/n1/networking_actions'))).body).to.have.length(1);
      expect((await must(ts.api.get('/node/n1'))).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'wa' });
    });

    it('refuses a native network whose VLAN the nic carries tagged: 409', async () => {
      expect((await connect('n2', { network: 'wa', channel: `vlan/${VLAN}` })).status).to.equal('DONE');
      const r = await ts.api.post('/node/n2/nic/eth0/connect_network', { network: 'wb' });
      expect(r.status, r.text).to.equal(409);
      expect(r.body.type).to.equal('BlockedError');
      expect(r.body.msg).to.match(new RegExp(`VLAN ${VLAN} .*through network wa on channel vlan/${VLAN}`));
      expect(ts.mockSwitch.port('sw', 'gi1/0/2')).to.deep.equal({ native: null, tagged: [VLAN] });
    });

    it('the earlier checks come first: network already on the nic, channel in use, channel not legal', async () => {
      let r = await ts.api.post('/node/n1/nic/eth0/connect_network', { network: 'wa', channel: `vlan/${VLAN}` });
      expect(r.status).to.equal(409);
      expect(r.body.msg).to.match(/already attached/);
      r = await ts.api.post('/node/n1/nic/eth0/connect_network', { network: 'wb' });
      expect(r.status).to.equal(409);
      expect(r.body.msg).to.match(/channel vlan\/native of nic eth0 is already in use/);
      r = await ts.api.post('/node/n1/nic/eth0/connect_network', { network: 'wb', channel: 'vlan/3001' });
      expect(r.status).to.equal(409);
      expect(r.body.type).to.equal('IllegalStateError');
    });

    it('another nic, or a network of another VLAN, is not affected', async () => {
      await must(ts.api.put('/network/wc', { owner: 'admin', access: 'p', net_id: '3001' }));
      expect((await connect('n1', { network: 'wc', channel: 'vlan/3001' })).status).to.equal('DONE');
      expect(ts.mockSwitch.port('sw', 'gi1/0/1')).to.deep.equal({ native: VLAN, tagged: [3001] });
    });
  });

  describe('on a simulated switch: the port keeps carrying the first network', () => {
    const service = switchFamilyService();
    const c = VENDOR_CASES.find((v) => v.vendor === 'nexus')!;

    it('refuses the second network, and the first one stays on the port', async () => {
      const api = service.api;
      const sim = await simFor(c);
      await must(api.put('/switch/sim', registration(c, sim)));
      await must(api.put(`/switch/sim/port/${c.ports[0]}`));
      await makeNode(api, 'sn', ['eth0']);
      await must(api.post(`/switch/sim/port/${c.ports[0]}/connect_nic`, { node: 'sn', nic: 'eth0' }));
      await must(api.post('/project/p/connect_node', { node: 'sn' }));
      for (const w of ['sa', 'sb']) await must(api.put(`/network/${w}`, { owner: 'admin', access: 'p', net_id: String(VLAN) }));
      expect((await operation(api, 'sn', 'eth0', 'connect_network', { network: 'sa' })).status).to.equal('DONE');
      const r = await api.post('/node/sn/nic/eth0/connect_network', { network: 'sb', channel: `vlan/${VLAN}` });
      expect(r.status, r.text).to.equal(409);
      expect(sim.carried(c.ports[0])).to.deep.equal({ native: VLAN, tagged: [] });
      expect((await must(api.get('/node/sn'))).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'sa' });
    });
  });
});
