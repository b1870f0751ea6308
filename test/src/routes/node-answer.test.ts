/**
 * show_node's answers are kept as sent until a commit changes what they show
 * (actors/readmodel-indexes.ts, NodeAnswers): each change a node's answer shows is made after
 * both views were read (and so cached), and the next read must show it.
 */
import { expect } from 'chai';
import { NodeAnswers } from '../../../actors/readmodel';
import { loadConfig } from '../../../src/config';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, obm, mockSwitch, finished } from '../../helpers/server';

describe('show_node answers kept until a change', () => {
  let ts: TestServer;
  let api: Client;
  let member: Client;
  before(async () => {
    ts = await startTestServer({ releasePowerOff: false });
    api = ts.api;
    await must(api.put('/project/ka'));
    member = api.with(await makeUser(api, 'ka-member', 'ka-member-pw', ['ka']));
    await must(api.put('/switch/ks', mockSwitch));
    for (const p of ['gi1/0/1', 'gi1/0/2']) await must(api.put(`/switch/ks/port/${p}`));
    await must(api.put('/network/kn', { owner: 'admin', access: 'ka', net_id: '' }));
  });
  after(() => stopTestServer(ts));

  /** Both views, read twice: the second read is the cached one. */
  async function views(): Promise<{ admin: any; member: any }> {
    const read = async (c: Client) => {
      const first = await c.get('/node/kn1');
      const again = await c.get('/node/kn1');
      expect(again.text).to.equal(first.text);
      expect(first.headers['content-type']).to.equal('application/json; charset=utf-8');
      return first.status === 200 ? first.body : first.status;
    };
    return { admin: await read(api), member: await read(member) };
  }
  const nic = (label: string, mac: string, networks: object, port: string | null) => ({ label, macaddr: mac, networks, port, switch: port && 'ks' });
  const memberOf = (admin: any) => ({ ...admin, nics: admin.nics.map(({ port: _p, switch: _s, ...rest }: any) => rest) });

  it('shows every change to the node, its nics, their ports and networks at the next read', async () => {
    const expectNode = async (admin: object) => {
      const v = await views();
      expect(v.admin).to.deep.equal(admin);
      expect(v.member).to.deep.equal(memberOf(admin));
    };
    await must(api.put('/node/kn1', { obm: obm() }));
    await expectNode({ name: 'kn1', project: null, nics: [] });
    await must(api.put('/node/kn1/nic/eth0', { macaddr: 'de:ad:be:ef:00:01' }));
    await expectNode({ name: 'kn1', project: null, nics: [nic('eth0', 'de:ad:be:ef:00:01', {}, null)] });
    await must(api.post('/switch/ks/port/gi1/0/1/connect_nic', { node: 'kn1', nic: 'eth0' }));
    await expectNode({ name: 'kn1', project: null, nics: [nic('eth0', 'de:ad:be:ef:00:01', {}, 'gi1/0/1')] });
    await must(api.post('/switch/ks/port/gi1/0/1/detach_nic'));
    await expectNode({ name: 'kn1', project: null, nics: [nic('eth0', 'de:ad:be:ef:00:01', {}, null)] });
    await must(api.post('/switch/ks/port/gi1/0/2/connect_nic', { node: 'kn1', nic: 'eth0' }));
    await expectNode({ name: 'kn1', project: null, nics: [nic('eth0', 'de:ad:be:ef:00:01', {}, 'gi1/0/2')] });
    await must(api.put('/node/kn1/nic/eth1', { macaddr: 'de:ad:be:ef:00:02' }));
    await must(api.put('/node/kn1/metadata/rack', { value: 'r7' }));
    const two = [nic('eth0', 'de:ad:be:ef:00:01', {}, 'gi1/0/2'), nic('eth1', 'de:ad:be:ef:00:02', {}, null)];
    await expectNode({ name: 'kn1', project: null, nics: two, metadata: { rack: 'r7' } });
    await must(api.post('/project/ka/connect_node', { node: 'kn1' }));
    await expectNode({ name: 'kn1', project: 'ka', nics: two, metadata: { rack: 'r7' } });
    const op = (await must(member.post('/node/kn1/nic/eth0/connect_network', { network: 'kn' }), 202)).body.status_id;
    expect((await finished(member, op)).status).to.equal('DONE');
    const attached = [nic('eth0', 'de:ad:be:ef:00:01', { 'vlan/native': 'kn' }, 'gi1/0/2'), two[1]];
    await expectNode({ name: 'kn1', project: 'ka', nics: attached, metadata: { rack: 'r7' } });
    const off = (await must(member.post('/node/kn1/nic/eth0/detach_network', { network: 'kn' }), 202)).body.status_id;
    expect((await finished(member, off)).status).to.equal('DONE');
    await must(api.del('/node/kn1/metadata/rack'));
    await expectNode({ name: 'kn1', project: 'ka', nics: two, metadata: {} });
    await must(member.post('/project/ka/detach_node', { node: 'kn1' }));
    await must(api.del('/node/kn1/nic/eth1'));
    await expectNode({ name: 'kn1', project: null, nics: [two[0]], metadata: {} });
    await must(api.post('/switch/ks/port/gi1/0/2/detach_nic'));
    await must(api.del('/node/kn1/nic/eth0'));
    await must(api.del('/node/kn1'));
    expect(await views()).to.deep.equal({ admin: 404, member: 404 });
    await must(api.put('/node/kn1', { obm: obm() }));
    await expectNode({ name: 'kn1', project: null, nics: [] });
  });

  it('a node in another project is refused, whatever was cached', async () => {
    await must(api.put('/project/kb'));
    await must(api.post('/project/ka/connect_node', { node: 'kn1' }));
    expect((await views()).member).to.deep.equal({ name: 'kn1', project: 'ka', nics: [] });
    await must(member.post('/project/ka/detach_node', { node: 'kn1' }));
    await must(api.post('/project/kb/connect_node', { node: 'kn1' }));
    expect((await member.get('/node/kn1')).status).to.equal(401);
  });

  it('HILT_ANSWER_CACHE_MIB sets the bound: 0 keeps no answer, and the answers are the same', async () => {
    await must(api.get('/node/kn1'));
    expect(ts.world.rm.nodeAnswers.size).to.equal(1);
    const none = await startTestServer({ answerCacheMiB: 0 });
    try {
      await must(none.api.put('/node/kz', { obm: obm() }));
      await must(none.api.put('/node/kz/nic/eth0', { macaddr: 'de:ad:be:ef:00:09' }));
      const r = await must(none.api.get('/node/kz'));
      expect(r.body).to.deep.equal({ name: 'kz', project: null, nics: [{ label: 'eth0', macaddr: 'de:ad:be:ef:00:09', networks: {}, port: null, switch: null }] });
      expect(none.world.rm.nodeAnswers.size).to.equal(0);
    } finally {
      await stopTestServer(none);
    }
    expect(loadConfig({ HILT_ANSWER_CACHE_MIB: '0' }).answerCacheMiB).to.equal(0);
    expect(loadConfig({}).answerCacheMiB).to.equal(64);
    expect(() => loadConfig({ HILT_ANSWER_CACHE_MIB: '-1' })).to.throw('HILT_ANSWER_CACHE_MIB must be a non-negative integer');
  });

  it('keeps at most its bound: a set that would pass it empties the cache first', () => {
    const c = new NodeAnswers(10);
    c.set('a', 'admin', 'aaaa');
    c.set('a', 'member', 'aa');
    c.set('b', 'admin', 'bbbb');
    expect([c.get('a', 'admin'), c.get('a', 'member'), c.get('b', 'admin'), c.size]).to.deep.equal(['aaaa', 'aa', 'bbbb', 2]);
    c.set('c', 'admin', 'cc');
    expect([c.get('a', 'admin'), c.get('b', 'admin'), c.get('c', 'admin'), c.size]).to.deep.equal([undefined, undefined, 'cc', 1]);
    c.forget('c');
    c.set('d', 'admin', 'd'.repeat(10));
    expect([c.get('d', 'admin'), c.size]).to.deep.equal(['d'.repeat(10), 1]);
    c.set('d', 'admin', 'e'.repeat(10));
    expect([c.get('d', 'admin'), c.size]).to.deep.equal(['e'.repeat(10), 1]);
    c.set('f', 'admin', 'f'.repeat(11));
    expect([c.get('f', 'admin'), c.get('d', 'admin')]).to.deep.equal([undefined, 'e'.repeat(10)]);
    const off = new NodeAnswers(0);
    off.set('a', 'admin', 'a');
    expect([off.get('a', 'admin'), off.size]).to.deep.equal([undefined, 0]);
  });
});
