import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, Creds } from '../../helpers/server';

describe('networks', () => {
  let ts: TestServer;
  let api: Client;
  let alice: Creds; // member of pa
  let bob: Creds; // member of pb
  before(async () => {
    ts = await startTestServer({ vlanPool: [[1000, 1004]] });
    api = ts.api;
    await must(api.put('/project/pa'));
    await must(api.put('/project/pb'));
    alice = await makeUser(api, 'alice', 'pw-a', ['pa']);
    bob = await makeUser(api, 'bob', 'pw-b', ['pb']);
  });

  describe('PUT /network/:network', () => {
    it('lets a project create its own network with a pool id', async () => {
      await must(api.with(alice).put('/network/a-net', { owner: 'pa', access: 'pa', net_id: '' }));
      const show = await api.with(alice).get('/network/a-net');
      expect(show.body).to.deep.equal({ name: 'a-net', channels: ['vlan/native', 'vlan/1000'], owner: 'pa', access: ['pa'], 'connected-nodes': {} });
    });
    it('returns 409 for an existing name before any authorization', async () => {
      const r = await api.with(bob).put('/network/a-net', { owner: 'pb', access: 'pb', net_id: '' });
      expect(r.status).to.equal(409);
      // Whatever the net_id: its value is checked in the chain, after the name (§7).
      expect((await api.with(bob).put('/network/a-net', { owner: 'admin', access: '', net_id: '7'.repeat(100) })).status).to.equal(409);
    });
    it('checks a long net_id in the chain too: 401 to a project, 400 to an admin, 401 to a stranger', async () => {
      const body = { owner: 'pa', access: 'pa', net_id: '1'.repeat(100) };
      expect((await api.with(alice).put('/network/x', body)).status).to.equal(401);
      expect((await api.with(null).put('/network/x', body)).status).to.equal(401);
      expect((await api.with(alice).put('/network/x', { ...body, owner: 'admin', access: '' })).status).to.equal(401);
      const r = await api.put('/network/x', { ...body, owner: 'admin', access: '' });
      expect(r.status).to.equal(400);
      expect(r.body.msg).to.not.include('1'.repeat(65));
      expect((await api.get('/networks')).body).to.not.have.property('x');
    });
    it('returns 401 to a project asking for another owner, access or a net_id; 400 to an admin', async () => {
      for (const body of [{ owner: 'pa', access: 'pb', net_id: '' }, { owner: 'pa', access: 'pa', net_id: '5' }, { owner: 'pa', access: '', net_id: '' }]) {
        expect((await api.with(alice).put('/network/x', body)).status, JSON.stringify(body)).to.equal(401);
        expect((await api.put('/network/x', body)).status, JSON.stringify(body)).to.equal(400);
      }
      expect((await api.with(alice).put('/network/x', { owner: 'admin', access: '', net_id: '' })).status).to.equal(401);
      expect((await api.with(bob).put('/network/x', { owner: 'pa', access: 'pa', net_id: '' })).status).to.equal(401);
      expect((await api.get('/networks')).body).to.not.have.property('x');
    });
    it('returns 404 for a missing owner or access project', async () => {
      expect((await api.put('/network/x', { owner: 'nope', access: 'nope', net_id: '' })).status).to.equal(404);
      expect((await api.put('/network/x', { owner: 'admin', access: 'nope', net_id: '' })).status).to.equal(404);
    });
    it('lets an admin assign ids: outside the pool they may repeat, inside they are unique', async () => {
      await must(api.put('/network/ext1', { owner: 'admin', access: '', net_id: '3000' }));
      await must(api.put('/network/ext2', { owner: 'admin', access: 'pb', net_id: '3000' }));
      await must(api.put('/network/inpool', { owner: 'admin', access: '', net_id: '1003' }));
      expect((await api.put('/network/inpool2', { owner: 'admin', access: '', net_id: '1003' })).status).to.equal(409);
      const list = (await api.get('/networks')).body;
      expect(list.ext1).to.deep.equal({ network_id: '3000', projects: null });
      expect(list.ext2).to.deep.equal({ network_id: '3000', projects: ['pb'] });
      expect(list.inpool.network_id).to.equal('1003');
    });
    it('returns 400 for a net_id that is not 1..4096', async () => {
      for (const id of ['0', '4097', 'abc', '-1', '1.5', ' 5', '99999']) {
        expect((await api.put('/network/badid', { owner: 'admin', access: '', net_id: id })).status, id).to.equal(400);
      }
    });
    it('skips ids in use and answers 409 when the pool is exhausted; ids return on delete', async () => {
      await must(api.put('/network/d1', { owner: 'admin', access: '', net_id: '' })); // 1001
      await must(api.put('/network/d2', { owner: 'admin', access: '', net_id: '' })); // 1002
      await must(api.put('/network/d3', { owner: 'admin', access: '', net_id: '' })); // 1004 (1003 taken)
      const list = (await api.get('/networks')).body;
      expect([list.d1.network_id, list.d2.network_id, list.d3.network_id]).to.deep.equal(['1001', '1002', '1004']);
      expect((await api.put('/network/d4', { owner: 'admin', access: '', net_id: '' })).status).to.equal(409);
      await must(api.del('/network/d2'));
      await must(api.put('/network/d4', { owner: 'admin', access: '', net_id: '' }));
      expect((await api.get('/networks')).body.d4.network_id).to.equal('1002');
    });
    it('an id an admin chose inside the pool is reserved there, but is not a pool allocation (headnodes refuse it)', async () => {
      await must(api.put('/headnode/hn-pool', { project: 'pa', base_img: 'base-headnode' }));
      await must(api.put('/headnode/hn-pool/hnic/e0'));
      const r = await api.post('/headnode/hn-pool/hnic/e0/connect_network', { network: 'inpool' });
      expect(r.status).to.equal(400);
      expect(r.body.msg).to.match(/assigned by an administrator/);
      await must(api.post('/headnode/hn-pool/hnic/e0/connect_network', { network: 'd1' }));
      await must(api.del('/headnode/hn-pool'));
      // Deleting it gives its id back to the pool.
      await must(api.del('/network/inpool'));
      await must(api.put('/network/inpool', { owner: 'admin', access: '', net_id: '' }));
      expect((await api.get('/networks')).body.inpool.network_id).to.equal('1003');
    });
  });

  describe('GET /network/:network', () => {
    it('shows a public network to anyone authenticated, with access null', async () => {
      const r = await api.with(bob).get('/network/ext1');
      expect(r.status).to.equal(200);
      expect(r.body).to.deep.equal({ name: 'ext1', channels: ['vlan/native', 'vlan/3000'], owner: 'admin', access: null, 'connected-nodes': {} });
    });
    it('hides a restricted network from projects without access (401), and 404s a missing one', async () => {
      expect((await api.with(bob).get('/network/a-net')).status).to.equal(401);
      expect((await api.with(bob).get('/network/nope')).status).to.equal(404);
    });
  });

  describe('access', () => {
    it('lets the owner grant access; the grantee sees and lists the network', async () => {
      await must(api.with(alice).put('/network/a-net/access/pb'));
      expect((await api.with(bob).get('/network/a-net')).body.access).to.have.members(['pa', 'pb']);
      expect((await api.with(bob).get('/project/pb/networks')).body).to.include('a-net');
    });
    it('returns 409 when the project already has access, 404 for missing network or project', async () => {
      expect((await api.with(alice).put('/network/a-net/access/pb')).status).to.equal(409);
      expect((await api.put('/network/nope/access/pb')).status).to.equal(404);
      expect((await api.put('/network/a-net/access/nope')).status).to.equal(404);
    });
    it('returns 401 when a non-owner grants', async () => {
      expect((await api.with(bob).put('/network/ext2/access/pa')).status).to.equal(401);
      expect((await api.get('/network/ext2')).body.access).to.deep.equal(['pb']);
    });
    it('granting on a public network makes it restricted', async () => {
      await must(api.put('/network/pub', { owner: 'admin', access: '', net_id: '3001' }));
      await must(api.put('/network/pub/access/pa'));
      expect((await api.get('/network/pub')).body.access).to.deep.equal(['pa']);
      expect((await api.with(bob).get('/network/pub')).status).to.equal(401);
    });
    it('lets the grantee revoke itself; refuses to revoke the owner (409) or an unlisted project (404)', async () => {
      expect((await api.with(alice).del('/network/a-net/access/pa')).status).to.equal(409);
      await must(api.with(bob).del('/network/a-net/access/pb'));
      expect((await api.with(bob).get('/network/a-net')).status).to.equal(401);
      expect((await api.with(alice).del('/network/a-net/access/pb')).status).to.equal(404);
    });
    it('returns 401 when an outsider revokes another project', async () => {
      expect((await api.with(bob).del('/network/pub/access/pa')).status).to.equal(401);
      expect((await api.get('/network/pub')).body.access).to.deep.equal(['pa']);
    });
    it('revoking the last project of an admin network makes it public', async () => {
      await must(api.del('/network/pub/access/pa'));
      expect((await api.get('/network/pub')).body.access).to.equal(null);
      expect((await api.get('/networks')).body.pub.projects).to.equal(null);
    });
  });

  describe('attachments', () => {
    it('lists no attachments of a fresh network, to the owner and admin', async () => {
      expect((await api.with(alice).get('/network/a-net/attachments')).body).to.deep.equal({});
      expect((await api.get('/network/a-net/attachments?project=pa')).body).to.deep.equal({});
    });
    it('checks the project argument: 404 for a missing project, 400 for an empty one, 401 for outsiders', async () => {
      expect((await api.get('/network/a-net/attachments?project=nope')).status).to.equal(404);
      expect((await api.get('/network/a-net/attachments?project=')).status).to.equal(400);
      expect((await api.with(bob).get('/network/a-net/attachments')).status).to.equal(401);
      expect((await api.with(bob).get('/network/a-net/attachments?project=pb')).status).to.equal(401);
      expect((await api.get('/network/nope/attachments')).status).to.equal(404);
    });
  });

  describe('DELETE /network/:network', () => {
    it('returns 401 to a non-owner and 404 for a missing network', async () => {
      expect((await api.with(bob).del('/network/a-net')).status).to.equal(401);
      expect((await api.with(alice).del('/network/ext1')).status).to.equal(401);
      expect((await api.del('/network/nope')).status).to.equal(404);
    });
    it('lets the owning project delete its network', async () => {
      await must(api.with(alice).del('/network/a-net'));
      expect((await api.get('/networks')).body).to.not.have.property('a-net');
      expect((await api.get('/project/pa/networks')).body).to.not.include('a-net');
    });
  });
});

describe('networks across a change of HILT_VLAN_POOL', () => {
  // Dynamic ids are unique (decisions.md §7): once the pool changes, a network may hold an id
  // the pool now has (an admin's id outside the old pool), or one outside it (given by the old
  // pool). Neither may end up on a second network through the pool, nor through an admin's id.
  it('gives no network an id another network holds, whatever the pool was when it was given', async () => {
    const first = await startTestServer({ vlanPool: [[1000, 1001]] });
    await must(first.api.put('/project/pa'));
    await must(first.api.put('/network/dyn', { owner: 'pa', access: 'pa', net_id: '' })); // 1000, from the pool
    await must(first.api.put('/network/ext', { owner: 'admin', access: '', net_id: '2000' })); // outside the pool
    await stopTestServer(first, false);

    // The pool now covers 2000 and no longer 1000.
    const again = await startTestServer({ vlanPool: [[2000, 2001]] }, {}, first.dataDir);
    try {
      const api = again.api;
      const channel = async (n: string) => (await must(api.get(`/network/${n}`))).body.channels[1] as string;
      expect(await channel('dyn')).to.equal('vlan/1000');
      expect(await channel('ext')).to.equal('vlan/2000');
      // The pool skips 2000, which the admin's network holds.
      await must(api.put('/network/dyn2', { owner: 'pa', access: 'pa', net_id: '' }));
      expect(await channel('dyn2')).to.equal('vlan/2001');
      // An admin may not pick 1000 (now outside the pool), which a network of the pool holds,
      // nor 2000 (now inside it), which the admin's network holds.
      for (const id of ['1000', '2000']) {
        const r = await api.put(`/network/pick${id}`, { owner: 'admin', access: '', net_id: id });
        expect(r.status, `net_id ${id}: ${r.text}`).to.equal(409);
        expect(r.body).to.deep.equal({ type: 'BlockedError', msg: `network id ${id} is in use by another network` });
        expect((await api.get(`/network/pick${id}`)).status).to.equal(404);
      }
      // The pool is used up: 2000 and 2001 are held.
      const full = await api.put('/network/dyn3', { owner: 'pa', access: 'pa', net_id: '' });
      expect(full.status, full.text).to.equal(409);
      // Several admin networks may still share an id outside the pool that no pooled network holds.
      await must(api.put('/network/ext2', { owner: 'admin', access: '', net_id: '3000' }));
      await must(api.put('/network/ext3', { owner: 'admin', access: '', net_id: '3000' }));
    } finally {
      await stopTestServer(again);
    }
  });
});

describe('a grant racing the deletion of its network', () => {
  let ts: TestServer;
  before(async () => {
    ts = await startTestServer();
  });
  after(async () => {
    await stopTestServer(ts);
  });

  it('a grant held up in the grantee\'s mailbox does not land on a network of that name made since by another owner', async () => {
    const api = ts.api;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    // carol is a member of pc (which owns w) and of px; dave of pd.
    for (const p of ['pc', 'pd', 'px']) await must(api.put(`/project/${p}`));
    const carol = await makeUser(api, 'carol', 'pw-c', ['pc', 'px']);
    const dave = await makeUser(api, 'dave', 'pw-d', ['pd']);
    await must(api.with(carol).put('/network/w', { owner: 'pc', access: 'pc', net_id: '' }));
    // px's mailbox is held by a network created for px, whose commit is held back.
    const engine = ts.world.runtime.engine;
    const persist = engine.persist.bind(engine);
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    engine.persist = async (events) => {
      if (events.some((e) => e.key === 'network:slow')) await held;
      return persist(events);
    };
    try {
      const slow = api.put('/network/slow', { owner: 'admin', access: 'px', net_id: '3005' });
      await sleep(100);
      // carol grants px access to w, authorized as a member of its owner: the grant waits in px's mailbox.
      const grant = api.with(carol).put('/network/w/access/px');
      await sleep(100);
      // Meanwhile w is deleted, and dave makes a network w of his own.
      await must(api.with(carol).del('/network/w'));
      await must(api.with(dave).put('/network/w', { owner: 'pd', access: 'pd', net_id: '' }));
      release();
      await must(slow);
      const r = await grant;
      expect(r.status, r.text).to.equal(401);
      expect(r.body.type).to.equal('AuthorizationError');
      const w = (await must(api.get('/network/w'))).body;
      expect(w.owner).to.equal('pd');
      expect(w.access).to.deep.equal(['pd']);
      expect((await api.with(carol).get('/network/w')).status).to.equal(401);
    } finally {
      release();
      engine.persist = persist;
    }
  });
});

describe('a deletion racing the creation of a network of that name', () => {
  let ts: TestServer;
  before(async () => {
    ts = await startTestServer();
  });
  after(async () => {
    await stopTestServer(ts);
  });

  it('a revoke authorized through the owner of a network deleted since does not touch the network now of that name', async () => {
    const api = ts.api;
    for (const p of ['pe', 'pf']) await must(api.put(`/project/${p}`));
    const erin = await makeUser(api, 'erin', 'pw-e', ['pe']);
    await must(api.with(erin).put('/network/v', { owner: 'pe', access: 'pe', net_id: '' }));
    await must(api.put('/network/v/access/pf'));
    // erin is authorized (as a member of pe, v's owner) to revoke pf; before the network's turn,
    // v is deleted and an admin makes a network v for pf alone.
    await must(api.del('/network/v'));
    await must(api.put('/network/v', { owner: 'admin', access: 'pf', net_id: '3006' }));
    const err = await ts.world.networks.ask('v', { type: 'network.revoke', by: erin.user, project: 'pf', owner: 'pe' }).catch((e) => e);
    expect(err).to.have.property('type', 'AuthorizationError');
    // Not made public.
    expect((await must(api.get('/network/v'))).body.access).to.deep.equal(['pf']);
  });

  it('a second delete does not remove the network another owner made of that name meanwhile', async () => {
    const api = ts.api;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    for (const p of ['pc', 'pd']) await must(api.put(`/project/${p}`));
    const carol = await makeUser(api, 'carol', 'pw-c', ['pc']);
    const dave = await makeUser(api, 'dave', 'pw-d', ['pd']);
    const engine = ts.world.runtime.engine;
    const persist = engine.persist.bind(engine);
    const hold = (what: (e: { key: string; data: unknown }) => boolean) => {
      let release!: () => void;
      const held = new Promise<void>((r) => { release = r; });
      return { held, what, release };
    };
    // pd's mailbox is held by a network created for pd, whose commit is held back.
    const slow = hold((e) => e.key === 'network:slow');
    // carol's first delete of w is held in its commit.
    const deletion = hold((e) => e.key === 'network:w' && (e.data as { type: string }).type === 'NetworkDeleted');
    engine.persist = async (events) => {
      for (const h of [slow, deletion]) if (events.some(h.what)) await h.held;
      return persist(events);
    };
    try {
      const slowCreate = api.put('/network/slow', { owner: 'admin', access: 'pd', net_id: '3005' });
      await sleep(100);
      // dave's w, for which no network w exists yet, waits in pd's mailbox.
      const daves = api.with(dave).put('/network/w', { owner: 'pd', access: 'pd', net_id: '' });
      await sleep(100);
      await must(api.with(carol).put('/network/w', { owner: 'pc', access: 'pc', net_id: '' }));
      const first = api.with(carol).del('/network/w');
      await sleep(100);
      // dave's creation reaches w's mailbox, behind carol's deletion.
      slow.release();
      await must(slowCreate);
      await sleep(100);
      // carol deletes w again (a retry): the route still sees her w.
      const second = api.with(carol).del('/network/w');
      await sleep(100);
      deletion.release();
      expect((await first).status).to.equal(200);
      await must(daves);
      const r = await second;
      expect(r.status, r.text).to.equal(401);
      expect((await must(api.get('/network/w'))).body.owner).to.equal('pd');
    } finally {
      slow.release();
      deletion.release();
      engine.persist = persist;
    }
  });
});
