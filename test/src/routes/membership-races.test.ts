/**
 * Memberships racing their users' calls (docs/identity.md): a call authorized before
 * user_remove_project (or project_delete) commits, but decided in the project's mailbox after
 * it, is decided for a caller who is no longer a member.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, makeUser } from '../../helpers/server';
import { holdWrites } from '../../helpers/world';

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** The journal position of the first event of `type` under `key`, if any. */
async function positionOf(ts: TestServer, key: string, type: string): Promise<number | undefined> {
  for await (const e of ts.world.runtime.engine.events(key)) if ((e.data as { type?: string }).type === type) return e.position;
  return undefined;
}

describe('memberships racing their users\' calls', function () {
  this.timeout(120_000);
  let ts: TestServer;
  let api: Client;
  const ROUNDS = 12;

  before(async () => {
    ts = await startTestServer();
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
});
