/**
 * Memberships racing their users' calls (docs/identity.md): a call authorized before
 * user_remove_project (or project_delete) commits, but decided in the project's mailbox after
 * it, is decided for a caller who is no longer a member.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, makeUser, IPMI_OBM } from '../../helpers/server';
import { holdWrites } from '../../helpers/world';
import { until } from '../../helpers/wait';
import { watch } from '../../helpers/console-ws';

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** The journal position of the first event of `type` under `key`, if any. */
async function positionOf(ts: TestServer, key: string, type: string): Promise<number | undefined> {
  for await (const e of ts.world.runtime.engine.events(key)) if ((e.data as { type?: string }).type === type) return e.position;
  return undefined;
}

/** The asks queued or being decided in an actor's mailbox. */
const inflight = (entity: { liveActors(): { id: string; mailbox: number }[] }, id: string) => entity.liveActors().find((a) => a.id === id)?.mailbox ?? 0;

const hoursAhead = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString();

describe('memberships racing their users\' calls', function () {
  this.timeout(120_000);
  let ts: TestServer;
  let api: Client;
  const ROUNDS = 12;

  before(async () => {
    ts = await startTestServer({ headnodeDriver: 'mock', baseImages: ['base-headnode'] });
    api = ts.api;
  });
  after(async () => {
    if (ts) await stopTestServer(ts);
  });

  it('a user removed from a project while its connect_node waits in the project\'s turn reserves nothing for it', async () => {
    for (const r of range(ROUNDS)) {
      await must(api.put(`/project/mp${r}`));
      const u = api.with(await makeUser(api, `mu${r}`, 'pw', [`mp${r}`]));
      await makeNode(api, `mn${r}`);
      // The password checked once: the next calls are authorized at once.
      await must(u.get(`/project/mp${r}/nodes`));
      const [removed, connected] = await Promise.all([
        api.post(`/auth/basic/user/mu${r}/remove_project`, { project: `mp${r}` }),
        u.post(`/project/mp${r}/connect_node`, { node: `mn${r}` }),
      ]);
      expect(removed.status, removed.text).to.equal(200);
      // Refused as the later order would: the caller lacks the right then.
      expect(connected.status, connected.text).to.be.oneOf([200, 401]);
      if (connected.status !== 200) continue;
      // Reserved: then before the user left.
      const left = await positionOf(ts, `user:mu${r}`, 'UserLeft');
      const assigned = await positionOf(ts, `node:mn${r}`, 'NodeAssigned');
      expect(assigned!, `round ${r}`).to.be.below(left!);
    }
  });

  it('a user removed from a project while its network_create waits in the project\'s turn creates nothing for it', async () => {
    for (const r of range(ROUNDS)) {
      await must(api.put(`/project/wp${r}`));
      const u = api.with(await makeUser(api, `wu${r}`, 'pw', [`wp${r}`]));
      await must(u.get(`/project/wp${r}/networks`));
      const [removed, created] = await Promise.all([
        api.post(`/auth/basic/user/wu${r}/remove_project`, { project: `wp${r}` }),
        u.put(`/network/ww${r}`, { owner: `wp${r}`, access: `wp${r}`, net_id: '' }),
      ]);
      expect(removed.status, removed.text).to.equal(200);
      expect(created.status, created.text).to.be.oneOf([200, 401]);
      if (created.status !== 200) continue;
      const left = await positionOf(ts, `user:wu${r}`, 'UserLeft');
      const made = await positionOf(ts, `network:ww${r}`, 'NetworkCreated');
      expect(made!, `round ${r}`).to.be.below(left!);
    }
  });
  it('a user removed from a project while its network_delete and access revoke wait in the network\'s turn deletes and revokes nothing', async () => {
    for (const p of ['dp', 'dq', 'dr']) await must(api.put(`/project/${p}`));
    const u = api.with(await makeUser(api, 'du', 'pw', ['dp']));
    await must(api.put('/network/dw', { owner: 'dp', access: 'dp', net_id: '' }));
    await must(api.put('/network/dw/access/dq'));
    await must(u.get('/project/dp/networks'));
    // The network's turn is held by an admin's grant whose commit is held back.
    const hold = holdWrites(ts.world.runtime.engine, 'network:dw');
    try {
      const granted = api.put('/network/dw/access/dr');
      await hold.waiting;
      // Authorized now (a member of the owner), decided after the removal.
      const deleted = u.del('/network/dw');
      const revoked = u.del('/network/dw/access/dq');
      await new Promise((r) => setTimeout(r, 100));
      await must(api.post('/auth/basic/user/du/remove_project', { project: 'dp' }));
      hold.release();
      await must(granted);
      for (const [what, r] of [['delete', await deleted], ['revoke', await revoked]] as const) {
        expect(r.status, `${what}: ${r.text}`).to.equal(401);
      }
      expect((await must(api.get('/network/dw'))).body.access).to.have.members(['dp', 'dq', 'dr']);
    } finally {
      hold.release();
    }
  });

  /**
   * Runs `calls` (a member's, authorized now) while `key`'s commits are held behind `holder`'s
   * (an admin's calls, `holders` of them, each on an actor `mailbox` counts), removes the member
   * once all of them wait in the mailboxes, then lets them run: every one must be refused (401).
   */
  async function removedWhileQueued(key: string, mailbox: () => number, holder: () => Promise<unknown>, calls: [string, () => Promise<{ status: number; text: string }>][], removal: () => Promise<unknown>, holders = 1) {
    const hold = holdWrites(ts.world.runtime.engine, key);
    try {
      const held = holder();
      await hold.waiting;
      const answers = calls.map(([what, call]) => [what, call()] as const);
      await until(`the member's ${calls.length} calls wait in ${key}'s turn`, () => mailbox() === calls.length + holders);
      await removal();
      hold.release();
      await held;
      for (const [what, answer] of answers) {
        const r = await answer;
        expect(r.status, `${what}: ${r.text}`).to.equal(401);
      }
    } finally {
      hold.release();
    }
  }

  it('a user removed from a project while its lease set and delete wait in the node\'s turn changes no lease', async () => {
    await must(api.put('/project/lp'));
    const u = api.with(await makeUser(api, 'lu', 'pw', ['lp']));
    await makeNode(api, 'ln');
    await must(api.post('/project/lp/connect_node', { node: 'ln' }));
    await must(api.put('/node/ln/lease', { expires_at: hoursAhead(1) }));
    await must(u.get('/node/ln/lease'));
    const admins = hoursAhead(2);
    await removedWhileQueued('node:ln', () => inflight(ts.world.nodes, 'ln'), () => must(api.put('/node/ln/lease', { expires_at: admins })), [
      ['lease set', () => u.put('/node/ln/lease', { expires_at: hoursAhead(3) })],
      ['lease delete', () => u.del('/node/ln/lease')],
    ], () => must(api.post('/auth/basic/user/lu/remove_project', { project: 'lp' })));
    expect((await must(api.get('/node/ln/lease'))).body.expires_at).to.equal(admins);
  });

  it('a user removed from a project while its console start, stop and attach wait in the node\'s turn changes no recording', async () => {
    await must(api.put('/project/cp'));
    const creds = await makeUser(api, 'cu', 'pw', ['cp']);
    const u = api.with(creds);
    /** A console stream's upgrade, as its status (101: served). */
    const attach = (n: string) => watch(ts.url, n, creds).then((w) => {
      w.ws.close();
      return { status: 101, text: '' };
    }, (err: { status?: number; message: string }) => ({ status: err.status ?? -1, text: err.message }));
    // A BMC nothing answers at: the calls here are the node actor's; no session is needed.
    for (const n of ['cn1', 'cn2', 'cn3']) {
      await must(api.put(`/node/${n}`, { obm: { type: IPMI_OBM, host: '127.0.0.1:9', user: 'u', password: 'p' } }));
      await must(api.post('/project/cp/connect_node', { node: n }));
    }
    await must(api.put('/node/cn2/console'));
    await must(u.get('/node/cn1'));
    const recording = async (n: string) => (await api.get(`/node/${n}/console`)).status !== 404;
    // Each node's turn is held by an admin's lease: cn1's start, cn2's stop and cn3's attach (which would start it) wait behind them.
    const nodes = ['cn1', 'cn2', 'cn3'];
    await removedWhileQueued('node:cn', () => nodes.reduce((n, id) => n + inflight(ts.world.nodes, id), 0), () => Promise.all(nodes.map((n) =>
      must(api.put(`/node/${n}/lease`, { expires_at: hoursAhead(1) })))), [
      ['console start', () => u.put('/node/cn1/console')],
      ['console stop', () => u.del('/node/cn2/console')],
      ['console attach', () => attach('cn3')],
    ], () => must(api.post('/auth/basic/user/cu/remove_project', { project: 'cp' })), nodes.length);
    expect(await recording('cn1')).to.equal(false);
    expect(await recording('cn2')).to.equal(true);
    expect(await recording('cn3')).to.equal(false);
    await must(api.del('/node/cn2/console'));
  });

  it('a user removed from a project while its headnode calls wait in the headnode\'s turn changes nothing of it', async () => {
    await must(api.put('/project/hp'));
    const u = api.with(await makeUser(api, 'hu', 'pw', ['hp']));
    await must(api.put('/network/hw', { owner: 'hp', access: 'hp', net_id: '' }));
    await must(api.put('/headnode/hh', { project: 'hp', base_img: 'base-headnode' }));
    for (const hnic of ['eth0', 'eth1']) await must(api.put(`/headnode/hh/hnic/${hnic}`));
    await must(u.get('/headnode/hh'));
    const show = async () => (await must(api.get('/headnode/hh'))).body as { hnics: string[]; status: string; networks: Record<string, string | null> };
    const removal = () => must(api.post('/auth/basic/user/hu/remove_project', { project: 'hp' }));
    const back = () => must(api.post('/auth/basic/user/hu/add_project', { project: 'hp' }));
    const queued = () => inflight(ts.world.headnodes, 'hh');
    await must(api.post('/headnode/hh/hnic/eth1/connect_network', { network: 'hw' }));
    // Created, not started: the calls that need that, behind an admin's hnic create.
    await removedWhileQueued('headnode:hh', queued, () => must(api.put('/headnode/hh/hnic/held')), [
      ['hnic create', () => u.put('/headnode/hh/hnic/eth2')],
      ['hnic connect', () => u.post('/headnode/hh/hnic/eth0/connect_network', { network: 'hw' })],
      ['hnic detach', () => u.post('/headnode/hh/hnic/eth1/detach_network')],
      ['hnic delete', () => u.del('/headnode/hh/hnic/eth1')],
      ['start', () => u.post('/headnode/hh/start')],
    ], removal);
    const before = await show();
    expect(before.hnics).to.have.members(['eth0', 'eth1', 'held']);
    expect(before.networks).to.deep.include({ eth0: null, eth1: 'hw' });
    expect(before.status).to.equal('created');
    // Running: stop and delete, which wait in the headnode's device queue behind an admin's stop.
    await must(api.post('/headnode/hh/start'));
    await back();
    await must(u.get('/headnode/hh'));
    await removedWhileQueued('headnode:hh', () => queued() + ts.headnodes.queued('hh'), () => must(api.post('/headnode/hh/stop')), [
      ['stop', () => u.post('/headnode/hh/stop')],
      ['delete', () => u.del('/headnode/hh')],
    ], removal, 2);
    const after = await show();
    expect(after.hnics).to.have.members(['eth0', 'eth1', 'held']);
    expect(after.status).to.equal('stopped');
  });
});
