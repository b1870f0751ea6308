/**
 * show_network's `connected-nodes` (docs/api-conventions.md §7): HIL's own CLI (`hil network
 * show`) stops with a KeyError without it.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, Creds, must, makeUser, makeNode, mockSwitch } from '../../helpers/server';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function connect(api: Client, node: string, nic: string, network: string): Promise<void> {
  const r = await api.post(`/node/${node}/nic/${nic}/connect_network`, { network });
  expect(r.status, r.text).to.equal(202);
  for (;;) {
    const s = (await must(api.get(`/networking_action/${r.body.status_id}`))).body;
    if (s.status === 'DONE') return;
    if (s.status !== 'PENDING') throw new Error(JSON.stringify(s));
    await sleep(10);
  }
}

describe('GET /network/:network connected-nodes', () => {
  let ts: TestServer;
  let api: Client;
  let alice: Creds; // member of pa, the owner
  let bob: Creds; // member of pb, granted access
  let carol: Creds; // member of no project
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    for (const p of ['pa', 'pb']) await must(api.put(`/project/${p}`));
    alice = await makeUser(api, 'alice', 'pw-a', ['pa']);
    bob = await makeUser(api, 'bob', 'pw-b', ['pb']);
    carol = await makeUser(api, 'carol', 'pw-c');
    await must(api.put('/switch/s1', mockSwitch));
    let port = 1;
    for (const [node, project] of [['na', 'pa'], ['nb', 'pb'], ['__proto__', 'pb']]) {
      await makeNode(api, node, ['eth0', 'eth1']);
      for (const nic of ['eth0', 'eth1']) {
        const p = `gi1/0/${port++}`;
        await must(api.put(`/switch/s1/port/${p}`));
        await must(api.post(`/switch/s1/port/${p}/connect_nic`, { node, nic }));
      }
      await must(api.post(`/project/${project}/connect_node`, { node }));
    }
    await must(api.put('/network/shared', { owner: 'pa', access: 'pa', net_id: '' }));
    await must(api.put('/network/shared/access/pb'));
    await must(api.put('/network/public', { owner: 'admin', access: '', net_id: '3001' }));
    await connect(api, 'na', 'eth0', 'shared');
    await connect(api, 'na', 'eth1', 'shared');
    await connect(api, 'nb', 'eth0', 'shared');
    await connect(api, '__proto__', 'eth1', 'shared');
    await connect(api, 'nb', 'eth1', 'public');
  });
  after(() => stopTestServer(ts));

  const show = async (as: Creds | undefined, network: string) => {
    const r = await api.get(`/network/${network}`, as ? { as } : undefined);
    expect(r.status, r.text).to.equal(200);
    return r;
  };

  it('lists every attached node with its nics to an admin and to the owning project', async () => {
    const all = JSON.parse('{"na":["eth0","eth1"],"nb":["eth0"],"__proto__":["eth1"]}');
    expect((await show(undefined, 'shared')).body['connected-nodes']).to.deep.equal(all);
    expect((await show(alice, 'shared')).body['connected-nodes']).to.deep.equal(all);
  });

  it('lists only its own nodes to a project that was granted access', async () => {
    const r = await show(bob, 'shared');
    expect(r.body['connected-nodes']).to.deep.equal(JSON.parse('{"nb":["eth0"],"__proto__":["eth1"]}'));
    expect(r.text).to.not.include('"na"');
  });

  it('lists nothing of others on a public network to a user of another project, or of none', async () => {
    expect((await show(alice, 'public')).body['connected-nodes']).to.deep.equal({});
    expect((await show(carol, 'public')).body['connected-nodes']).to.deep.equal({});
    expect((await show(bob, 'public')).body['connected-nodes']).to.deep.equal({ nb: ['eth1'] });
    expect((await show(undefined, 'public')).body['connected-nodes']).to.deep.equal({ nb: ['eth1'] });
  });

  it('keeps the contract\'s keys beside it, and is empty for a network without attachments', async () => {
    await must(api.put('/network/empty', { owner: 'pa', access: 'pa', net_id: '' }));
    const r = await show(alice, 'empty');
    expect(r.body).to.have.all.keys('name', 'channels', 'owner', 'access', 'connected-nodes');
    expect(r.body['connected-nodes']).to.deep.equal({});
  });

  it('keeps a node or network named __proto__ as an ordinary key of the attachments and the network list', async () => {
    const r = await api.get('/network/shared/attachments');
    expect(r.status, r.text).to.equal(200);
    expect(Object.keys(r.body).sort()).to.deep.equal(['__proto__', 'na', 'nb']);
    expect(r.text).to.include('"__proto__":{"nic":"eth1","channel":"vlan/native","project":"pb"}');
    await must(api.put('/network/__proto__', { owner: 'admin', access: '', net_id: '3002' }));
    const list = await api.get('/networks');
    expect(list.status, list.text).to.equal(200);
    expect(list.text).to.include('"__proto__":{"network_id":"3002","projects":null}');
    await must(api.del('/network/__proto__'));
  });

  it('drops a node once its detach is DONE', async () => {
    const r = await api.post('/node/nb/nic/eth1/detach_network', { network: 'public' });
    expect(r.status).to.equal(202);
    for (let i = 0; i < 500 && Object.keys((await show(undefined, 'public')).body['connected-nodes']).length; i++) await sleep(10);
    expect((await show(undefined, 'public')).body['connected-nodes']).to.deep.equal({});
  });
});
