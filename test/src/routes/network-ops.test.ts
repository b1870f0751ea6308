/**
 * Network operations on node nics over real HTTP (docs/api-conventions.md §8, §4, §5, §7, §12 port_revert):
 * 202 + status id, the status resource, the order of every refusal, PENDING invisibility and
 * the 409s it causes (mock switch delay), failure injection, port_revert, /v0.
 */
import { expect } from 'chai';
import { startTestServer, TestServer, Client, Creds, Res, must, makeUser, makeNode, mockSwitch, finished } from '../../helpers/server';

/** `as: undefined` makes the client use its own (admin) credentials. */
const ADMIN_AS = undefined as unknown as Creds | null;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** A 202 whose body is exactly {"status_id": "<non-empty string>"}; returns the id. */
async function accepted(p: Promise<Res>): Promise<string> {
  const r = await p;
  expect(r.status, r.text).to.equal(202);
  expect(r.body).to.be.an('object').with.all.keys('status_id');
  expect(r.body.status_id).to.be.a('string').that.is.not.empty;
  return r.body.status_id as string;
}

/** Poll GET /networking_action/<id> until it leaves PENDING. */

async function refused(p: Promise<Res>, status: number, msg?: RegExp): Promise<Res> {
  const r = await p;
  expect(r.status, r.text).to.equal(status);
  if (status !== 401 || r.body) {
    expect(r.body).to.be.an('object');
    expect(r.body.type).to.be.a('string');
    expect(r.body.msg).to.be.a('string');
  }
  if (msg) expect(r.body.msg).to.match(msg);
  return r;
}

/** label → networks of a node's nics, as show_node (admin) gives them. */
async function nicNets(api: Client, node: string): Promise<Record<string, Record<string, string>>> {
  const r = await must(api.get(`/node/${node}`));
  return Object.fromEntries((r.body.nics as { label: string; networks: Record<string, string> }[]).map((n) => [n.label, n.networks]));
}

describe('network operations on nics (docs/api-conventions.md §8)', function () {
  this.timeout(30_000);

  describe('without a switch delay', () => {
    let ts: TestServer;
    let api: Client;
    let alice: Creds; // member of pa
    let bob: Creds; // member of pb
    let carol: Creds; // member of no project
    const vl: Record<string, number> = {};
    /** every status id accepted on n1, in acceptance order */
    const n1Ids: string[] = [];
    const NETS = ['pa-net', 'pa-net2', 'pb-net', 'pub', 'pub2', 'adm-pa', 'fail-net'];
    const NODES = ['n1', 'nb', 'nfree', 'nfail'];

    /** Everything a refused call must leave unchanged. */
    async function snapshot() {
      const nodes: Record<string, unknown> = {};
      const actions: Record<string, unknown> = {};
      for (const n of NODES) {
        nodes[n] = (await must(api.get(`/node/${n}`))).body;
        actions[n] = (await must(api.get(`/node/${n}/networking_actions`))).body;
      }
      const attachments: Record<string, unknown> = {};
      const networks: Record<string, unknown> = {};
      for (const w of NETS) {
        const r = await api.get(`/network/${w}/attachments`);
        attachments[w] = r.status === 200 ? r.body : r.status;
        const s = await api.get(`/network/${w}`);
        networks[w] = s.status === 200 ? s.body : s.status;
      }
      return { nodes, actions, attachments, networks, sw: ts.mockSwitch.ports('sw'), sw2: ts.mockSwitch.ports('sw2') };
    }

    /** The call is refused with `status` and nothing changes. */
    async function refusedUnchanged(p: () => Promise<Res>, status: number, msg?: RegExp): Promise<void> {
      const before = await snapshot();
      await refused(p(), status, msg);
      expect(await snapshot()).to.deep.equal(before);
    }

    const connect = (as: Creds | null, node: string, nic: string, body: unknown) => api.post(`/node/${node}/nic/${nic}/connect_network`, body, { as });
    const detach = (as: Creds | null, node: string, nic: string, body: unknown) => api.post(`/node/${node}/nic/${nic}/detach_network`, body, { as });

    before(async () => {
      ts = await startTestServer({ mockSwitchFailPorts: ['sw/gi1/0/9'] });
      api = ts.api;
      for (const p of ['pa', 'pb']) await must(api.put(`/project/${p}`));
      alice = await makeUser(api, 'alice', 'pw-a', ['pa']);
      bob = await makeUser(api, 'bob', 'pw-b', ['pb']);
      carol = await makeUser(api, 'carol', 'pw-c');
      await must(api.put('/switch/sw', mockSwitch));
      await must(api.put('/switch/sw2', mockSwitch));
      for (let i = 1; i <= 9; i++) await must(api.put(`/switch/sw/port/gi1/0/${i}`));
      await must(api.put('/switch/sw2/port/gi1/0/1'));
      await makeNode(api, 'n1', ['eth0', 'eth1', 'eth2']);
      await makeNode(api, 'nb', ['ethb']);
      await makeNode(api, 'nfree', ['eth0']);
      await makeNode(api, 'nfail', ['eth0']);
      const wire = (sw: string, port: string, node: string, nic: string) => must(api.post(`/switch/${sw}/port/${port}/connect_nic`, { node, nic }));
      await wire('sw', 'gi1/0/1', 'n1', 'eth0');
      await wire('sw2', 'gi1/0/1', 'n1', 'eth1'); // n1.eth2 stays unwired
      await wire('sw', 'gi1/0/3', 'nfree', 'eth0');
      await wire('sw', 'gi1/0/4', 'nb', 'ethb');
      await wire('sw', 'gi1/0/9', 'nfail', 'eth0'); // gi1/0/5 stays unwired
      await must(api.post('/project/pa/connect_node', { node: 'n1' }));
      await must(api.post('/project/pa/connect_node', { node: 'nfail' }));
      await must(api.post('/project/pb/connect_node', { node: 'nb' }));
      await must(api.put('/network/pa-net', { owner: 'pa', access: 'pa', net_id: '' }, { as: alice }));
      await must(api.put('/network/pa-net2', { owner: 'pa', access: 'pa', net_id: '' }, { as: alice }));
      await must(api.put('/network/fail-net', { owner: 'pa', access: 'pa', net_id: '' }, { as: alice }));
      await must(api.put('/network/pb-net', { owner: 'pb', access: 'pb', net_id: '' }, { as: bob }));
      await must(api.put('/network/pub', { owner: 'admin', access: '', net_id: '' }));
      await must(api.put('/network/pub2', { owner: 'admin', access: '', net_id: '' }));
      await must(api.put('/network/adm-pa', { owner: 'admin', access: 'pa', net_id: '' }));
      const list = (await must(api.get('/networks'))).body;
      for (const w of NETS) vl[w] = Number(list[w].network_id);
    });

    describe('connect and detach', () => {
      it('connects on the default channel vlan/native: 202, then DONE, and every view agrees', async () => {
        const id = await accepted(connect(alice, 'n1', 'eth0', { network: 'pa-net' }));
        n1Ids.push(id);
        expect(await finished(api, id)).to.deep.equal({
          status: 'DONE', node: 'n1', nic: 'eth0', type: 'modify_port', channel: 'vlan/native', new_network: 'pa-net',
        });
        expect(await nicNets(api, 'n1')).to.deep.equal({ eth0: { 'vlan/native': 'pa-net' }, eth1: {}, eth2: {} });
        const mine = (await must(api.get('/node/n1', { as: alice }))).body;
        expect(mine.nics.find((n: any) => n.label === 'eth0').networks).to.deep.equal({ 'vlan/native': 'pa-net' });
        expect((await must(api.get('/network/pa-net/attachments'))).body).to.deep.equal({ n1: { nic: 'eth0', channel: 'vlan/native', project: 'pa' } });
        expect((await must(api.get('/network/pa-net/attachments?project=pa', { as: alice }))).body).to.have.keys('n1');
        expect((await must(api.get('/switch/sw/port/gi1/0/1'))).body).to.deep.equal({ node: 'n1', nic: 'eth0', networks: { 'vlan/native': 'pa-net' } });
        expect(ts.mockSwitch.port('sw', 'gi1/0/1')).to.deep.equal({ native: vl['pa-net'], tagged: [] });
      });

      it('connects on a tagged channel vlan/<network_id>, with a status id of its own', async () => {
        const ch2 = `vlan/${vl['pa-net2']}`;
        const id = await accepted(connect(alice, 'n1', 'eth0', { network: 'pa-net2', channel: ch2 }));
        expect(n1Ids).to.not.include(id);
        n1Ids.push(id);
        expect(await finished(api, id)).to.deep.equal({ status: 'DONE', node: 'n1', nic: 'eth0', type: 'modify_port', channel: ch2, new_network: 'pa-net2' });
        // an admin may connect an assigned node too
        const chp = `vlan/${vl.pub}`;
        const id2 = await accepted(connect(ADMIN_AS, 'n1', 'eth0', { network: 'pub', channel: chp }));
        expect(n1Ids).to.not.include(id2);
        n1Ids.push(id2);
        expect((await finished(api, id2)).status).to.equal('DONE');
        const nets = { 'vlan/native': 'pa-net', [ch2]: 'pa-net2', [chp]: 'pub' };
        expect((await nicNets(api, 'n1')).eth0).to.deep.equal(nets);
        expect((await must(api.get('/network/pa-net2/attachments'))).body).to.deep.equal({ n1: { nic: 'eth0', channel: ch2, project: 'pa' } });
        expect((await must(api.get('/network/pub/attachments'))).body).to.deep.equal({ n1: { nic: 'eth0', channel: chp, project: 'pa' } });
        expect((await must(api.get('/switch/sw/port/gi1/0/1'))).body.networks).to.deep.equal(nets);
        expect(ts.mockSwitch.port('sw', 'gi1/0/1')).to.deep.equal({ native: vl['pa-net'], tagged: [vl['pa-net2'], vl.pub].sort((a, b) => a - b) });
      });

      it('detaches tagged and native networks: the channel disappears at DONE everywhere', async () => {
        const ch2 = `vlan/${vl['pa-net2']}`;
        const id = await accepted(detach(alice, 'n1', 'eth0', { network: 'pa-net2' }));
        n1Ids.push(id);
        expect(await finished(api, id)).to.deep.equal({ status: 'DONE', node: 'n1', nic: 'eth0', type: 'modify_port', channel: ch2, new_network: null });
        expect((await nicNets(api, 'n1')).eth0).to.deep.equal({ 'vlan/native': 'pa-net', [`vlan/${vl.pub}`]: 'pub' });
        expect((await must(api.get('/network/pa-net2/attachments'))).body).to.deep.equal({});
        expect(ts.mockSwitch.port('sw', 'gi1/0/1')).to.deep.equal({ native: vl['pa-net'], tagged: [vl.pub] });

        const id2 = await accepted(detach(alice, 'n1', 'eth0', { network: 'pub' }));
        n1Ids.push(id2);
        expect((await finished(api, id2)).channel).to.equal(`vlan/${vl.pub}`);
        const id3 = await accepted(detach(alice, 'n1', 'eth0', { network: 'pa-net' }));
        n1Ids.push(id3);
        expect(await finished(api, id3)).to.deep.equal({ status: 'DONE', node: 'n1', nic: 'eth0', type: 'modify_port', channel: 'vlan/native', new_network: null });
        expect((await nicNets(api, 'n1')).eth0).to.deep.equal({});
        expect((await must(api.get('/network/pa-net/attachments'))).body).to.deep.equal({});
        expect((await must(api.get('/switch/sw/port/gi1/0/1'))).body.networks).to.deep.equal({});
        expect(ts.mockSwitch.port('sw', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });

        // leave pa-net on eth0's native channel for the refusals below
        const id4 = await accepted(connect(alice, 'n1', 'eth0', { network: 'pa-net' }));
        n1Ids.push(id4);
        expect((await finished(api, id4)).status).to.equal('DONE');
        expect(ts.mockSwitch.port('sw', 'gi1/0/1')).to.deep.equal({ native: vl['pa-net'], tagged: [] });
      });
    });

    describe('connect refusals, in the order of §8', () => {
      it('node 404 first (also for a non-member, a missing nic and a missing network)', async () => {
        await refusedUnchanged(() => connect(alice, 'ghost', 'eth0', { network: 'pub' }), 404, /ghost/);
        await refusedUnchanged(() => connect(carol, 'ghost', 'nonic', { network: 'nonet' }), 404, /ghost/);
      });
      it('nic 404 of that node (a nic of another node does not count), before network 404, free 409 and auth', async () => {
        await refusedUnchanged(() => connect(alice, 'n1', 'ethb', { network: 'pub' }), 404, /ethb/);
        await refusedUnchanged(() => connect(alice, 'n1', 'nonic', { network: 'nonet' }), 404, /nonic/);
        await refusedUnchanged(() => connect(ADMIN_AS, 'nfree', 'nonic', { network: 'pub' }), 404, /nonic/);
        await refusedUnchanged(() => connect(bob, 'n1', 'nonic', { network: 'pub' }), 404, /nonic/);
      });
      it('network 404 before free 409 and auth ("" is looked up as given: 404, docs/api-conventions.md §1)', async () => {
        await refusedUnchanged(() => connect(alice, 'n1', 'eth1', { network: 'nonet' }), 404, /nonet/);
        await refusedUnchanged(() => connect(alice, 'n1', 'eth1', { network: '' }), 404, /network ""/);
        await refusedUnchanged(() => connect(ADMIN_AS, 'nfree', 'eth0', { network: 'nonet' }), 404, /nonet/);
        await refusedUnchanged(() => connect(carol, 'n1', 'eth1', { network: 'nonet' }), 404, /nonet/);
      });
      it('free node 409, for admins too and before authorization', async () => {
        await refusedUnchanged(() => connect(ADMIN_AS, 'nfree', 'eth0', { network: 'pub' }), 409);
        await refusedUnchanged(() => connect(carol, 'nfree', 'eth0', { network: 'pub' }), 409);
        await refusedUnchanged(() => connect(bob, 'nfree', 'eth0', { network: 'pb-net' }), 409);
      });
      it('401 for non-members, before not-wired 404 and the 409s', async () => {
        await refusedUnchanged(() => connect(bob, 'n1', 'eth1', { network: 'pub' }), 401);
        await refusedUnchanged(() => connect(carol, 'n1', 'eth1', { network: 'pub' }), 401);
        await refusedUnchanged(() => connect(bob, 'n1', 'eth2', { network: 'pub' }), 401);
        await refusedUnchanged(() => connect(bob, 'n1', 'eth0', { network: 'pa-net' }), 401);
        await refusedUnchanged(() => connect(bob, 'n1', 'eth1', { network: 'pb-net' }), 401);
        await refusedUnchanged(() => connect({ user: 'alice', password: 'wrong' }, 'n1', 'eth1', { network: 'pub' }), 401);
        await refusedUnchanged(() => connect(null, 'n1', 'eth1', { network: 'pub' }), 401);
      });
      it('404 when the nic is not wired to a port, before the 409s', async () => {
        await refusedUnchanged(() => connect(alice, 'n1', 'eth2', { network: 'pub' }), 404);
        await refusedUnchanged(() => connect(ADMIN_AS, 'n1', 'eth2', { network: 'pb-net' }), 404);
        await refusedUnchanged(() => connect(alice, 'n1', 'eth2', { network: 'pub', channel: 'bogus' }), 404);
      });
      it('409 when the node\'s project (not the caller) lacks access to the network', async () => {
        await refusedUnchanged(() => connect(alice, 'n1', 'eth1', { network: 'pb-net' }), 409);
        await refusedUnchanged(() => connect(ADMIN_AS, 'n1', 'eth1', { network: 'pb-net' }), 409);
        await refusedUnchanged(() => connect(ADMIN_AS, 'nb', 'ethb', { network: 'adm-pa' }), 409);
        await refusedUnchanged(() => connect(alice, 'n1', 'eth0', { network: 'pb-net', channel: 'bogus' }), 409);
      });
      it('409 when the network is already on the nic, on any channel', async () => {
        await refusedUnchanged(() => connect(alice, 'n1', 'eth0', { network: 'pa-net' }), 409);
        await refusedUnchanged(() => connect(alice, 'n1', 'eth0', { network: 'pa-net', channel: `vlan/${vl['pa-net']}` }), 409);
      });
      it('409 when the channel (default vlan/native) is already used on the nic', async () => {
        await refusedUnchanged(() => connect(alice, 'n1', 'eth0', { network: 'pub' }), 409);
        await refusedUnchanged(() => connect(alice, 'n1', 'eth0', { network: 'adm-pa', channel: 'vlan/native' }), 409);
      });
      it('409, never 400, when the channel is not one of the network\'s channels', async () => {
        for (const channel of ['vlan/9', `vlan/${vl['pa-net']}`, 'vlan/*', 'garbage', '', 'VLAN/native', ' vlan/native', `vlan/0${vl.pub}`, `vlan/${'0'.repeat(100)}${vl.pub}`, 'x'.repeat(100_000)]) {
          await refusedUnchanged(() => connect(alice, 'n1', 'eth1', { network: 'pub', channel }), 409);
        }
        // The refusal quotes a prefix of it only (docs/api-conventions.md §1, Names).
        expect((await connect(alice, 'n1', 'eth1', { network: 'pub', channel: 'x'.repeat(100_000) })).body.msg).to.not.include('x'.repeat(65));
        // Not a malformed request either: a long channel from a stranger is the stranger's 401.
        await refusedUnchanged(() => connect(null, 'n1', 'eth1', { network: 'pub', channel: 'x'.repeat(100) }), 401);
      });
    });

    describe('detach refusals, in the order of §8', () => {
      it('node 404, then network 404 before nic 404', async () => {
        await refusedUnchanged(() => detach(alice, 'ghost', 'nonic', { network: 'nonet' }), 404, /ghost/);
        await refusedUnchanged(() => detach(alice, 'n1', 'nonic', { network: 'nonet' }), 404, /nonet/);
        await refusedUnchanged(() => detach(carol, 'nfree', 'nonic', { network: 'nonet' }), 404, /nonet/);
      });
      it('nic 404 (of that node) before free 409 and auth', async () => {
        await refusedUnchanged(() => detach(alice, 'n1', 'ethb', { network: 'pa-net' }), 404, /ethb/);
        await refusedUnchanged(() => detach(ADMIN_AS, 'nfree', 'nonic', { network: 'pub' }), 404, /nonic/);
        await refusedUnchanged(() => detach(bob, 'n1', 'nonic', { network: 'pa-net' }), 404, /nonic/);
      });
      it('free node 409 before authorization', async () => {
        await refusedUnchanged(() => detach(ADMIN_AS, 'nfree', 'eth0', { network: 'pub' }), 409);
        await refusedUnchanged(() => detach(carol, 'nfree', 'eth0', { network: 'pub' }), 409);
      });
      it('401 for non-members', async () => {
        await refusedUnchanged(() => detach(bob, 'n1', 'eth0', { network: 'pa-net' }), 401);
        await refusedUnchanged(() => detach(carol, 'n1', 'eth1', { network: 'pub' }), 401);
      });
      it('409 (not 400) when the network is not attached to the nic', async () => {
        await refusedUnchanged(() => detach(alice, 'n1', 'eth1', { network: 'pa-net' }), 409);
        await refusedUnchanged(() => detach(ADMIN_AS, 'n1', 'eth0', { network: 'pub' }), 409);
        await refusedUnchanged(() => detach(alice, 'n1', 'eth0', { network: 'pb-net' }), 409);
      });
      // §8's order for detach has no wiring step: "nic 404 → node free 409 → auth → pending 409 → not attached 409".
      it('409 when the network is not attached to an unwired nic', async () => {
        await refusedUnchanged(() => detach(alice, 'n1', 'eth2', { network: 'pa-net' }), 409);
      });
    });

    describe('bad bodies: 400 before anything else', () => {
      const badConnect: [string, unknown][] = [
        ['an extra key', { network: 'pub', channel: 'vlan/native', extra: 1 }],
        ['a key repeating a path parameter', { network: 'pub', nic: 'eth1' }],
        ['no network', { channel: 'vlan/native' }],
        ['an empty object', {}],
        ['a numeric network', { network: 5 }],
        ['a null network', { network: null }],
        ['a list as network', { network: ['pub'] }],
        ['a numeric channel', { network: 'pub', channel: 5 }],
        ['a null channel', { network: 'pub', channel: null }],
        ['a boolean channel', { network: 'pub', channel: true }],
      ];
      for (const [what, body] of badConnect) {
        it(`connect with ${what}: 400 for the member, a stranger, no credentials and a missing node`, async () => {
          await refusedUnchanged(() => connect(alice, 'n1', 'eth1', body), 400);
          await refusedUnchanged(() => connect(carol, 'n1', 'eth1', body), 400);
          await refusedUnchanged(() => connect(null, 'n1', 'eth1', body), 400);
          await refusedUnchanged(() => connect(alice, 'ghost', 'eth1', body), 400);
        });
      }
      it('connect with a body that is not a JSON object (or no body): 400', async () => {
        for (const raw of ['[]', '"pub"', 'not json', '', 'null', '{"network": "pub",}']) {
          await refusedUnchanged(() => api.call('POST', '/node/n1/nic/eth1/connect_network', { as: alice, raw }), 400);
        }
      });
      const badDetach: [string, unknown][] = [
        ['a channel', { network: 'pa-net', channel: 'vlan/native' }],
        ['an extra key', { network: 'pa-net', x: 1 }],
        ['no network', {}],
        ['a numeric network', { network: 5 }],
        ['a null network', { network: null }],
      ];
      for (const [what, body] of badDetach) {
        it(`detach with ${what}: 400, and the attachment stays`, async () => {
          await refusedUnchanged(() => detach(alice, 'n1', 'eth0', body), 400);
          await refusedUnchanged(() => detach(null, 'n1', 'eth0', body), 400);
        });
      }
      it('GET /networking_action with a query parameter: 400', async () => {
        await refused(api.get(`/networking_action/${n1Ids[0]}?x=1`), 400);
      });
    });

    describe('rules that attachments enforce elsewhere', () => {
      it('project_detach_node is 409 while a nic of the node is attached', async () => {
        await refusedUnchanged(() => api.post('/project/pa/detach_node', { node: 'n1' }, { as: alice }), 409);
        await refusedUnchanged(() => api.post('/project/pa/detach_node', { node: 'n1' }), 409);
        expect((await must(api.get('/node/n1'))).body.project).to.equal('pa');
      });
      it('network_delete is 409 while the network is attached', async () => {
        await refusedUnchanged(() => api.del('/network/pa-net', { as: alice }), 409);
        await refusedUnchanged(() => api.del('/network/pa-net'), 409);
        await must(api.get('/network/pa-net'));
      });
      it('node_delete_nic is 409 while the nic carries a network', async () => {
        await refusedUnchanged(() => api.del('/node/n1/nic/eth0'), 409);
        expect(await nicNets(api, 'n1')).to.have.keys('eth0', 'eth1', 'eth2');
      });
      it('grant on a public network is 409 while another project\'s node uses it; fine for the only user', async () => {
        const id = await accepted(connect(bob, 'nb', 'ethb', { network: 'pub' }));
        expect((await finished(api, id)).status).to.equal('DONE');
        await refusedUnchanged(() => api.put('/network/pub/access/pa'), 409);
        expect((await must(api.get('/network/pub'))).body.access).to.equal(null);
        // the one project using it may get it: it keeps its access
        const id2 = await accepted(connect(bob, 'nb', 'ethb', { network: 'pub2', channel: `vlan/${vl.pub2}` }));
        expect((await finished(api, id2)).status).to.equal('DONE');
        await must(api.put('/network/pub2/access/pb'));
        expect((await must(api.get('/network/pub2'))).body.access).to.deep.equal(['pb']);
      });
      it('revoke is 409 while a node of that project is attached, 200 once detached', async () => {
        const id = await accepted(connect(alice, 'n1', 'eth1', { network: 'adm-pa' }));
        n1Ids.push(id);
        expect((await finished(api, id)).status).to.equal('DONE');
        await refusedUnchanged(() => api.del('/network/adm-pa/access/pa'), 409);
        const id2 = await accepted(detach(alice, 'n1', 'eth1', { network: 'adm-pa' }));
        n1Ids.push(id2);
        expect((await finished(api, id2)).status).to.equal('DONE');
        await must(api.del('/network/adm-pa/access/pa'));
        expect((await must(api.get('/network/adm-pa'))).body.access).to.equal(null);
        await must(api.put('/network/adm-pa/access/pa'));
      });
    });

    describe('a switch failure (mockSwitchFailPorts sw/gi1/0/9)', () => {
      it('ends the action ERROR with a reason, changes nothing, and frees the nic', async () => {
        const id = await accepted(connect(alice, 'nfail', 'eth0', { network: 'fail-net' }));
        const st = await finished(api, id);
        expect(st).to.include({ status: 'ERROR', node: 'nfail', nic: 'eth0', type: 'modify_port', channel: 'vlan/native', new_network: 'fail-net' });
        expect(st.error).to.be.a('string').that.is.not.empty;
        expect(await nicNets(api, 'nfail')).to.deep.equal({ eth0: {} });
        expect((await must(api.get('/network/fail-net/attachments'))).body).to.deep.equal({});
        expect((await must(api.get('/switch/sw/port/gi1/0/9'))).body).to.deep.equal({ node: 'nfail', nic: 'eth0', networks: {} });
        expect(ts.mockSwitch.port('sw', 'gi1/0/9')).to.deep.equal({ native: null, tagged: [] });

        // the nic is free again: a new operation is accepted (and fails the same way)
        const id2 = await accepted(connect(alice, 'nfail', 'eth0', { network: 'fail-net', channel: `vlan/${vl['fail-net']}` }));
        expect(id2).to.not.equal(id);
        const st2 = await finished(api, id2);
        expect(st2.status).to.equal('ERROR');
        expect(st2.error).to.be.a('string').that.is.not.empty;
        const list = (await must(api.get('/node/nfail/networking_actions', { as: alice }))).body;
        expect(list.map((a: any) => a.status_id)).to.deep.equal([id2, id]);
        expect(list[0]).to.include({ status: 'ERROR' });

        // nothing is left pending or attached: the node and the network can go
        await must(api.del('/network/fail-net', { as: alice }));
        await must(api.post('/project/pa/detach_node', { node: 'nfail' }, { as: alice }));
        expect((await must(api.get('/node/nfail'))).body.project).to.equal(null);
      });
      it('does not disturb other ports', async () => {
        const id = await accepted(connect(alice, 'n1', 'eth1', { network: 'pub' }));
        n1Ids.push(id);
        expect((await finished(api, id)).status).to.equal('DONE');
        expect(ts.mockSwitch.port('sw2', 'gi1/0/1')).to.deep.equal({ native: vl.pub, tagged: [] });
        const id2 = await accepted(detach(alice, 'n1', 'eth1', { network: 'pub' }));
        n1Ids.push(id2);
        expect((await finished(api, id2)).status).to.equal('DONE');
        expect(ts.mockSwitch.port('sw2', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
      });
    });

    describe('port_revert (§12)', () => {
      it('is admin only, checked first', async () => {
        await refusedUnchanged(() => api.post('/switch/sw/port/gi1/0/1/revert', undefined, { as: alice }), 401);
        await refusedUnchanged(() => api.post('/switch/ghost/port/gi1/0/1/revert', undefined, { as: bob }), 401);
        await refusedUnchanged(() => api.post('/switch/sw/port/gi1/0/5/revert', undefined, { as: alice }), 401);
      });
      it('404 for a missing switch, a missing port and a port with no nic', async () => {
        await refusedUnchanged(() => api.post('/switch/ghost/port/gi1/0/1/revert'), 404);
        await refusedUnchanged(() => api.post('/switch/sw/port/gi1/0/77/revert'), 404);
        await refusedUnchanged(() => api.post('/switch/sw/port/gi1/0/5/revert'), 404);
      });
      it('400 with a body', async () => {
        await refusedUnchanged(() => api.post('/switch/sw/port/gi1/0/1/revert', { network: 'pa-net' }), 400);
      });
      it('202, then DONE: every network leaves the nic and the port', async () => {
        const id = await accepted(connect(alice, 'n1', 'eth0', { network: 'pub', channel: `vlan/${vl.pub}` }));
        n1Ids.push(id);
        expect((await finished(api, id)).status).to.equal('DONE');
        expect(ts.mockSwitch.port('sw', 'gi1/0/1')).to.deep.equal({ native: vl['pa-net'], tagged: [vl.pub] });

        const rid = await accepted(api.post('/switch/sw/port/gi1/0/1/revert'));
        expect(n1Ids).to.not.include(rid);
        n1Ids.push(rid);
        expect(await finished(api, rid)).to.deep.equal({ status: 'DONE', node: 'n1', nic: 'eth0', type: 'revert_port', channel: '', new_network: null });
        // the node's project may read it
        expect((await must(api.get(`/networking_action/${rid}`, { as: alice }))).body.type).to.equal('revert_port');
        expect((await nicNets(api, 'n1')).eth0).to.deep.equal({});
        expect((await must(api.get('/switch/sw/port/gi1/0/1'))).body).to.deep.equal({ node: 'n1', nic: 'eth0', networks: {} });
        expect(ts.mockSwitch.port('sw', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
        expect((await must(api.get('/network/pa-net/attachments'))).body).to.deep.equal({});
        // pub stays on nb
        expect((await must(api.get('/network/pub/attachments'))).body).to.deep.equal({ nb: { nic: 'ethb', channel: 'vlan/native', project: 'pb' } });
        expect(ts.mockSwitch.port('sw', 'gi1/0/4')).to.deep.equal({ native: vl.pub, tagged: [vl.pub2] });
        // a revert of an empty port is accepted too
        const rid2 = await accepted(api.post('/switch/sw/port/gi1/0/1/revert', {}));
        n1Ids.push(rid2);
        expect((await finished(api, rid2)).status).to.equal('DONE');
      });
    });

    describe('/v0 prefix', () => {
      it('serves connect, detach, port_revert, the status and the list under /v0', async () => {
        const id = await accepted(api.post('/v0/node/n1/nic/eth1/connect_network', { network: 'pa-net2' }, { as: alice }));
        n1Ids.push(id);
        let st: any;
        for (;;) {
          st = (await must(api.get(`/v0/networking_action/${id}`, { as: alice }))).body;
          if (st.status !== 'PENDING') break;
          await sleep(10);
        }
        expect(st).to.deep.equal({ status: 'DONE', node: 'n1', nic: 'eth1', type: 'modify_port', channel: 'vlan/native', new_network: 'pa-net2' });
        expect(ts.mockSwitch.port('sw2', 'gi1/0/1')).to.deep.equal({ native: vl['pa-net2'], tagged: [] });
        expect((await must(api.get('/v0/node/n1/networking_actions', { as: alice }))).body[0].status_id).to.equal(id);
        const id2 = await accepted(api.post('/v0/node/n1/nic/eth1/detach_network', { network: 'pa-net2' }, { as: alice }));
        n1Ids.push(id2);
        expect((await finished(api, id2)).status).to.equal('DONE');
        expect(ts.mockSwitch.port('sw2', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
        const rid = await accepted(api.post('/v0/switch/sw2/port/gi1/0/1/revert'));
        n1Ids.push(rid);
        expect((await finished(api, rid)).type).to.equal('revert_port');
        expect((await api.post('/v0/node/n1/nic/eth1/detach_network', { network: 'pa-net2' }, { as: alice })).status).to.equal(409);
      });
    });

    describe('GET /networking_action/<id> and GET /node/<node>/networking_actions', () => {
      it('shows a status to admins and members of the node\'s project only', async () => {
        const id = n1Ids[0];
        const first = { status: 'DONE', node: 'n1', nic: 'eth0', type: 'modify_port', channel: 'vlan/native', new_network: 'pa-net' };
        expect((await must(api.get(`/networking_action/${id}`))).body).to.deep.equal(first);
        expect((await must(api.get(`/networking_action/${id}`, { as: alice }))).body).to.deep.equal(first);
        await refused(api.get(`/networking_action/${id}`, { as: bob }), 401);
        await refused(api.get(`/networking_action/${id}`, { as: carol }), 401);
        await refused(api.get(`/networking_action/${id}`, { as: null }), 401);
        const nbId = (await must(api.get('/node/nb/networking_actions'))).body[0].status_id;
        await refused(api.get(`/networking_action/${nbId}`, { as: alice }), 401);
        await must(api.get(`/networking_action/${nbId}`, { as: bob }));
      });
      it('answers 404 for an unknown or garbage id, before authorization', async () => {
        const ids = ['garbage', 'AAAA', 'bm9wZQ', '0', b64(['ghost', 'x', 1]), b64(['n1', 'x', 1]), b64({ node: 'n1' }), n1Ids[0] + 'x', n1Ids[0].slice(0, -2)];
        for (const id of ids) {
          await refused(api.get(`/networking_action/${encodeURIComponent(id)}`), 404);
          await refused(api.get(`/networking_action/${encodeURIComponent(id)}`, { as: carol }), 404);
        }
      });
      it('answers 404 for an id with characters no status id has: ids are opaque, so any id not handed out is unknown (§8)', async () => {
        // A real id padded or with a character base64url lacks, a dotted id, a space, Unicode, a newline.
        const ids = [`${n1Ids[0]}=`, `+${n1Ids[0]}`, 'a.b', '1234 5', 'ü', '%', 'x\ny'];
        for (const id of ids) {
          for (const as of [undefined, carol]) {
            const r = await refused(api.get(`/networking_action/${encodeURIComponent(id)}`, { as }), 404, /^networking action /);
            expect(r.body.type).to.equal('NotFoundError');
            expect(r.body.msg).to.not.include('\n');
          }
        }
      });
      it('lists a node\'s actions newest first, each with its status id', async () => {
        const list = (await must(api.get('/node/n1/networking_actions'))).body as any[];
        expect(list.map((a) => a.status_id)).to.deep.equal([...n1Ids].reverse());
        expect(list.every((a) => a.node === 'n1' && a.status === 'DONE')).to.equal(true);
        expect(list[list.length - 1]).to.include({ nic: 'eth0', channel: 'vlan/native', new_network: 'pa-net', type: 'modify_port' });
        expect((await must(api.get('/node/n1/networking_actions', { as: alice }))).body).to.deep.equal(list);
        await refused(api.get('/node/n1/networking_actions', { as: bob }), 401);
        await refused(api.get('/node/ghost/networking_actions'), 404);
        expect((await must(api.get('/node/nfree/networking_actions'))).body).to.deep.equal([]);
      });
      it('node_delete_nic of a wired nic whose actions are finished (ERROR) frees its port; its statuses stay', async () => {
        const list = (await must(api.get('/node/nfail/networking_actions'))).body;
        expect(list).to.have.length(2);
        expect((await must(api.get('/switch/sw/port/gi1/0/9'))).body).to.include({ node: 'nfail', nic: 'eth0' });
        await must(api.del('/node/nfail/nic/eth0'));
        expect((await must(api.get('/switch/sw/port/gi1/0/9'))).body).to.deep.equal({});
        expect((await must(api.get('/node/nfail/networking_actions'))).body).to.deep.equal(list);
        expect((await must(api.get(`/networking_action/${list[0].status_id}`))).body.status).to.equal('ERROR');
      });
    });
  });

  describe('while an action is PENDING (mock switch delay 800 ms)', () => {
    const DELAY = 800;
    let ts: TestServer;
    let api: Client;
    let alice: Creds;
    let bob: Creds;
    const vl: Record<string, number> = {};
    const connect = (as: Creds | null, node: string, nic: string, body: unknown) => api.post(`/node/${node}/nic/${nic}/connect_network`, body, { as });
    const detach = (as: Creds | null, node: string, nic: string, body: unknown) => api.post(`/node/${node}/nic/${nic}/detach_network`, body, { as });
    const status = async (id: string) => (await must(api.get(`/networking_action/${id}`))).body;

    before(async () => {
      ts = await startTestServer({ mockSwitchDelayMs: DELAY });
      api = ts.api;
      for (const p of ['pa', 'pb']) await must(api.put(`/project/${p}`));
      alice = await makeUser(api, 'alice', 'pw-a', ['pa']);
      bob = await makeUser(api, 'bob', 'pw-b', ['pb']);
      await must(api.put('/switch/sw', mockSwitch));
      await must(api.put('/switch/sw2', mockSwitch));
      await must(api.put('/switch/sw3', mockSwitch));
      await must(api.put('/switch/sw/port/gi1/0/1'));
      await must(api.put('/switch/sw2/port/gi1/0/1'));
      await must(api.put('/switch/sw3/port/gi1/0/1'));
      await makeNode(api, 'm1', ['eth0', 'eth1']);
      await makeNode(api, 'm2', ['eth0']);
      await must(api.post('/switch/sw/port/gi1/0/1/connect_nic', { node: 'm1', nic: 'eth0' }));
      await must(api.post('/switch/sw2/port/gi1/0/1/connect_nic', { node: 'm1', nic: 'eth1' }));
      await must(api.post('/switch/sw3/port/gi1/0/1/connect_nic', { node: 'm2', nic: 'eth0' }));
      await must(api.post('/project/pa/connect_node', { node: 'm1' }));
      await must(api.post('/project/pb/connect_node', { node: 'm2' }));
      await must(api.put('/network/pa-net', { owner: 'pa', access: 'pa', net_id: '' }, { as: alice }));
      await must(api.put('/network/spare', { owner: 'pa', access: 'pa', net_id: '' }, { as: alice }));
      await must(api.put('/network/adm-pa', { owner: 'admin', access: 'pa', net_id: '' }));
      await must(api.put('/network/pub', { owner: 'admin', access: '', net_id: '' }));
      await must(api.put('/network/pub2', { owner: 'admin', access: '', net_id: '' }));
      const list = (await must(api.get('/networks'))).body;
      for (const w of ['pa-net', 'spare', 'adm-pa', 'pub', 'pub2']) vl[w] = Number(list[w].network_id);
    });

    it('a pending connect is invisible, blocks its own nic and what depends on it, not another nic', async () => {
      const id1 = await accepted(connect(alice, 'm1', 'eth0', { network: 'pa-net' }));
      expect(await status(id1)).to.deep.equal({ status: 'PENDING', node: 'm1', nic: 'eth0', type: 'modify_port', channel: 'vlan/native', new_network: 'pa-net' });
      expect((await must(api.get(`/networking_action/${id1}`, { as: alice }))).body.status).to.equal('PENDING');
      expect(await nicNets(api, 'm1')).to.deep.equal({ eth0: {}, eth1: {} });
      expect((await must(api.get('/network/pa-net/attachments'))).body).to.deep.equal({});
      expect((await must(api.get('/switch/sw/port/gi1/0/1'))).body.networks).to.deep.equal({});
      expect(ts.mockSwitch.port('sw', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });

      // the nic is busy: calls that would otherwise be accepted are 409
      await refused(connect(alice, 'm1', 'eth0', { network: 'spare', channel: `vlan/${vl.spare}` }), 409);
      await refused(connect(api.as, 'm1', 'eth0', { network: 'adm-pa' }), 409);
      await refused(detach(alice, 'm1', 'eth0', { network: 'pa-net' }), 409);
      await refused(api.post('/switch/sw/port/gi1/0/1/revert'), 409);
      // authorization still comes first
      await refused(connect(bob, 'm1', 'eth0', { network: 'spare' }), 401);
      // what a pending connect blocks elsewhere
      await refused(api.del('/node/m1/nic/eth0'), 409);
      await refused(api.post('/project/pa/detach_node', { node: 'm1' }, { as: alice }), 409);
      await refused(api.del('/network/pa-net', { as: alice }), 409);

      // another nic of the same node is not blocked
      const id2 = await accepted(connect(alice, 'm1', 'eth1', { network: 'adm-pa' }));
      expect(id2).to.not.equal(id1);
      // revoking pa from adm-pa would otherwise succeed (nothing attached yet)
      await refused(api.del('/network/adm-pa/access/pa'), 409);
      // a pb node connecting to a public network: granting it to pa would cut pb off
      const id3 = await accepted(connect(bob, 'm2', 'eth0', { network: 'pub' }));
      await refused(api.put('/network/pub/access/pa'), 409);

      // the window held: all of the above happened while id1 was PENDING
      expect((await status(id1)).status).to.equal('PENDING');
      expect(await nicNets(api, 'm1')).to.deep.equal({ eth0: {}, eth1: {} });
      expect((await must(api.get('/node/m1/networking_actions'))).body.map((a: any) => a.status_id)).to.deep.equal([id2, id1]);

      for (const id of [id1, id2, id3]) expect((await finished(api, id)).status).to.equal('DONE');
      expect(await nicNets(api, 'm1')).to.deep.equal({ eth0: { 'vlan/native': 'pa-net' }, eth1: { 'vlan/native': 'adm-pa' } });
      expect(await nicNets(api, 'm2')).to.deep.equal({ eth0: { 'vlan/native': 'pub' } });
      expect(ts.mockSwitch.port('sw', 'gi1/0/1')).to.deep.equal({ native: vl['pa-net'], tagged: [] });
      expect(ts.mockSwitch.port('sw2', 'gi1/0/1')).to.deep.equal({ native: vl['adm-pa'], tagged: [] });
      expect(ts.mockSwitch.port('sw3', 'gi1/0/1')).to.deep.equal({ native: vl.pub, tagged: [] });
      // nothing refused above happened
      expect((await must(api.get('/node/m1'))).body.project).to.equal('pa');
      await must(api.get('/network/pa-net'));
      expect((await must(api.get('/network/adm-pa'))).body.access).to.deep.equal(['pa']);
      expect((await must(api.get('/network/pub'))).body.access).to.equal(null);
    });

    it('a pending detach is invisible until DONE and blocks its own nic only', async () => {
      const id1 = await accepted(detach(alice, 'm1', 'eth0', { network: 'pa-net' }));
      expect(await status(id1)).to.deep.equal({ status: 'PENDING', node: 'm1', nic: 'eth0', type: 'modify_port', channel: 'vlan/native', new_network: null });
      expect((await nicNets(api, 'm1')).eth0).to.deep.equal({ 'vlan/native': 'pa-net' });
      expect((await must(api.get('/network/pa-net/attachments'))).body).to.deep.equal({ m1: { nic: 'eth0', channel: 'vlan/native', project: 'pa' } });
      expect(ts.mockSwitch.port('sw', 'gi1/0/1')).to.deep.equal({ native: vl['pa-net'], tagged: [] });

      await refused(connect(alice, 'm1', 'eth0', { network: 'spare', channel: `vlan/${vl.spare}` }), 409);
      await refused(detach(alice, 'm1', 'eth0', { network: 'pa-net' }), 409);
      await refused(api.post('/switch/sw/port/gi1/0/1/revert'), 409);
      await refused(api.post('/project/pa/detach_node', { node: 'm1' }, { as: alice }), 409);
      await refused(api.del('/network/pa-net', { as: alice }), 409);
      await refused(api.del('/node/m1/nic/eth0'), 409);

      const id2 = await accepted(detach(alice, 'm1', 'eth1', { network: 'adm-pa' }));
      expect((await status(id1)).status).to.equal('PENDING');
      // still attached while pending (the detach is not done): a revoke is still refused
      await refused(api.del('/network/adm-pa/access/pa'), 409);

      for (const id of [id1, id2]) {
        expect(await finished(api, id)).to.include({ status: 'DONE', new_network: null });
      }
      expect(await nicNets(api, 'm1')).to.deep.equal({ eth0: {}, eth1: {} });
      expect((await must(api.get('/network/pa-net/attachments'))).body).to.deep.equal({});
      expect(ts.mockSwitch.port('sw', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
      expect(ts.mockSwitch.port('sw2', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
      // with nothing pending or attached, what was refused now succeeds
      await must(api.del('/network/pa-net', { as: alice }));
      await must(api.del('/network/adm-pa/access/pa'));
      await must(api.post('/project/pa/detach_node', { node: 'm1' }, { as: alice }));
    });

    it('a pending port_revert is invisible until DONE and blocks the nic', async () => {
      const id0 = await accepted(connect(bob, 'm2', 'eth0', { network: 'pub2', channel: `vlan/${vl.pub2}` }));
      expect((await finished(api, id0)).status).to.equal('DONE');
      const rid = await accepted(api.post('/switch/sw3/port/gi1/0/1/revert'));
      expect(await status(rid)).to.deep.equal({ status: 'PENDING', node: 'm2', nic: 'eth0', type: 'revert_port', channel: '', new_network: null });
      const both = { 'vlan/native': 'pub', [`vlan/${vl.pub2}`]: 'pub2' };
      expect((await nicNets(api, 'm2')).eth0).to.deep.equal(both);
      await refused(api.post('/switch/sw3/port/gi1/0/1/revert'), 409);
      await refused(detach(bob, 'm2', 'eth0', { network: 'pub' }), 409);
      await refused(api.post('/project/pb/detach_node', { node: 'm2' }, { as: bob }), 409);
      expect((await status(rid)).status).to.equal('PENDING');
      expect(ts.mockSwitch.port('sw3', 'gi1/0/1')).to.deep.equal({ native: vl.pub, tagged: [vl.pub2] });
      expect((await finished(api, rid)).status).to.equal('DONE');
      expect((await nicNets(api, 'm2')).eth0).to.deep.equal({});
      expect(ts.mockSwitch.port('sw3', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
      await must(api.post('/project/pb/detach_node', { node: 'm2' }, { as: bob }));
    });
  });
});

