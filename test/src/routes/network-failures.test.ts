/**
 * Network operations that fail or race: the switch port never keeps a VLAN the service does not
 * know about, a queued port operation never reaches a port rewired meanwhile, and a caller
 * authorized through a project cannot act on the node once it has moved to another project.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, makeUser, mockSwitch, Creds, finished } from '../../helpers/server';
import { RECENT_ACTIONS } from '../../../actors/nic/protocol';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A project with a member, a network, and node `n` whose nic eth0 is wired to switch s. */
async function fixture(api: Client, p: string, n: string): Promise<{ member: Creds; vlan: number }> {
  await must(api.put(`/project/${p}`));
  const member = await makeUser(api, `${p}-member`, 'pw', [p]);
  await must(api.put(`/network/${p}-net`, { owner: p, access: p, net_id: '' }));
  if ((await api.get('/switch/s')).status === 404) await must(api.put('/switch/s', mockSwitch));
  await must(api.put(`/switch/s/port/gi1/0/${n.length}${p.length}`));
  await makeNode(api, n, ['eth0']);
  await must(api.post(`/switch/s/port/gi1/0/${n.length}${p.length}/connect_nic`, { node: n, nic: 'eth0' }));
  await must(api.post(`/project/${p}/connect_node`, { node: n }));
  return { member, vlan: Number((await api.get('/networks')).body[`${p}-net`].network_id) };
}

describe('network operations that time out', function () {
  this.timeout(30_000);
  let ts: TestServer;
  before(async () => {
    // Every switch call takes 300 ms and is given 100: each one times out, then still lands.
    ts = await startTestServer({ mockSwitchDelayMs: 300, switchTimeoutMs: 100 });
  });

  it('end ERROR with the reason, and the port is left as the service holds it (no VLAN it does not know)', async () => {
    const api = ts.api;
    const { member } = await fixture(api, 'tp', 'tn');
    const r = await must(api.with(member).post('/node/tn/nic/eth0/connect_network', { network: 'tp-net' }), 202);
    const st = await finished(api, r.body.status_id);
    expect(st.status).to.equal('ERROR');
    expect(st.error).to.match(/did not finish within 100 ms/);
    expect((await api.get('/node/tn')).body.nics[0].networks).to.deep.equal({});
    // The timed-out change landed on the switch after all; the service set the port back.
    while (ts.world.sessions.depth('s') > 0) await sleep(20);
    expect(ts.mockSwitch.port('s', 'gi1/0/22')).to.deep.equal({ native: null, tagged: [] });
    // The nic is free for another operation.
    expect((await api.with(member).post('/node/tn/nic/eth0/connect_network', { network: 'tp-net' })).status).to.equal(202);
  });
});

describe('network operations and rewiring, project moves', function () {
  this.timeout(30_000);
  let ts: TestServer;
  before(async () => {
    ts = await startTestServer({ mockSwitchDelayMs: 300 });
  });

  it('port_detach_nic is refused (409) while the nic has a queued port operation, and allowed after it', async () => {
    const api = ts.api;
    await must(api.put('/project/rp'));
    await must(api.put('/switch/s', mockSwitch));
    await must(api.put('/switch/s/port/gi1/0/9'));
    await makeNode(api, 'fn', ['eth0']);
    await must(api.post('/switch/s/port/gi1/0/9/connect_nic', { node: 'fn', nic: 'eth0' }));
    // A free node: an admin reverts its port.
    const r = await must(api.post('/switch/s/port/gi1/0/9/revert'), 202);
    const refused = await api.post('/switch/s/port/gi1/0/9/detach_nic');
    expect(refused.status).to.equal(409);
    expect(refused.body.msg).to.match(/pending/);
    expect((await api.get('/switch/s/port/gi1/0/9')).body).to.include({ node: 'fn', nic: 'eth0' });
    expect((await finished(api, r.body.status_id)).status).to.equal('DONE');
    await must(api.post('/switch/s/port/gi1/0/9/detach_nic'));
  });

  it('a caller authorized through a project cannot queue work on the node once it belongs to another project', async () => {
    const api = ts.api;
    const { member } = await fixture(api, 'mp', 'mn');
    await must(api.put('/project/mq'));
    // Between the route's authorization (node in mp) and the node actor's turn, the node moves
    // to mq; the command carries the project it was authorized through.
    await must(api.post('/project/mp/detach_node', { node: 'mn' }));
    await must(api.post('/project/mq/connect_node', { node: 'mn' }));
    const err = await ts.world.nodes
      .ask('mn', { type: 'node.connectNetwork', by: member.user, project: 'mp', nic: 'eth0', network: 'mp-net', channel: 'vlan/native' })
      .catch((e) => e);
    expect(err).to.have.property('type', 'AuthorizationError');
    const detachErr = await ts.world.nodes.ask('mn', { type: 'node.detachNetwork', by: member.user, project: 'mp', nic: 'eth0', network: 'mp-net' }).catch((e) => e);
    expect(detachErr).to.have.property('type', 'AuthorizationError');
    expect((await api.get('/node/mn/networking_actions')).body).to.deep.equal([]);
    // Over HTTP the member of mp is refused outright now.
    expect((await api.with(member).post('/node/mn/nic/eth0/connect_network', { network: 'mp-net' })).status).to.equal(401);
  });
});

describe('network operation statuses beyond the recent ones', function () {
  this.timeout(60_000);

  it('are still answered from the journal, also after a restart; the nic\'s state keeps only the recent ones', async () => {
    let ts = await startTestServer();
    let api = ts.api;
    const { member } = await fixture(api, 'hp', 'hn');
    const n = RECENT_ACTIONS + 8;
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const path = `/node/hn/nic/eth0/${i % 2 ? 'detach_network' : 'connect_network'}`;
      const r = await must(api.with(member).post(path, { network: 'hp-net' }), 202);
      ids.push(r.body.status_id);
      expect((await finished(api, r.body.status_id)).status).to.equal('DONE');
    }
    expect((await api.get('/node/hn')).body.nics[0].networks).to.deep.equal({});
    expect((await api.get('/admin/actors/nic/hn/eth0')).body.state.actions).to.have.length(RECENT_ACTIONS);
    for (let round = 0; round < 2; round++) {
      const first = (await must(api.with(member).get(`/networking_action/${ids[0]}`))).body;
      expect(first).to.include({ status: 'DONE', node: 'hn', nic: 'eth0', new_network: 'hp-net' });
      const list = (await must(api.get('/node/hn/networking_actions'))).body as { status_id: string; status: string; finished_at: string }[];
      expect(list.map((a) => a.status_id)).to.deep.equal([...ids].reverse());
      expect(list.every((a) => a.status === 'DONE' && a.finished_at)).to.equal(true);
      if (round === 0) {
        await stopTestServer(ts, false);
        ts = await startTestServer({}, {}, ts.dataDir);
        api = ts.api;
      }
    }
    // A node deleted and registered again under its name starts a new history.
    await must(api.post('/project/hp/detach_node', { node: 'hn' }));
    await must(api.post('/switch/s/port/gi1/0/22/detach_nic'));
    await must(api.del('/node/hn/nic/eth0'));
    await must(api.del('/node/hn'));
    await makeNode(api, 'hn', ['eth0']);
    expect((await must(api.get('/node/hn/networking_actions'))).body).to.deep.equal([]);
    expect((await api.get(`/networking_action/${ids[0]}`)).status).to.equal(404);
    await stopTestServer(ts);
  });
});
