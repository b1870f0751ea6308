/**
 * GET /admin/audit: every mutation of a scenario, with its user and call, newest first, paged
 * without overlap or gap, filtered by object, user and time range, and no secret in it.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, mockSwitch, obm, ADMIN } from '../../helpers/server';
import { auditPage, AuditEntry } from '../../../src/audit';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('GET /admin/audit', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let alice: Client;
  let bob: Client;
  /** a moment between the scenario's two halves */
  let middle: string;
  const SECRETS = ['obm-secret', 'switch-secret', 'eos-secret-pw', 'alice-secret-pw', 'bob-secret-pw', ADMIN.password];

  /** Every page of a query, walked with `limit`. */
  async function walk(query: string, limit: number): Promise<AuditEntry[]> {
    const out: AuditEntry[] = [];
    let cursor: string | null = null;
    do {
      const r = await must(api.get(`/admin/audit?limit=${limit}${query ? `&${query}` : ''}${cursor ? `&cursor=${cursor}` : ''}`));
      expect(r.body.entries.length).to.be.at.most(limit);
      out.push(...r.body.entries);
      cursor = r.body.next;
    } while (cursor);
    return out;
  }

  before(async () => {
    ts = await startTestServer({ headnodeDriver: 'mock', baseImages: ['base-headnode'] });
    api = ts.api;
    // The scenario: an admin sets up, two users work.
    await must(api.put('/project/lab'));
    alice = api.with(await makeUser(api, 'alice', 'alice-secret-pw', ['lab']));
    bob = api.with(await makeUser(api, 'bob', 'bob-secret-pw', [], true));
    await must(api.put('/node/n1', { obm: obm() }));
    await must(api.put('/node/n1/nic/eth0', { macaddr: 'de:ad:be:ef:00:01' }));
    await must(api.put('/node/n1/metadata/rack', { value: 'r7' }));
    await must(api.put('/switch/s1', mockSwitch));
    await must(api.put('/switch/s1/port/gi1/0/1'));
    await must(api.post('/switch/s1/port/gi1/0/1/connect_nic', { node: 'n1', nic: 'eth0' }));
    await must(api.post('/project/lab/connect_node', { node: 'n1' }));
    await sleep(30);
    middle = new Date().toISOString();
    await sleep(30);
    await must(alice.put('/network/net1', { owner: 'lab', access: 'lab', net_id: '' }));
    const op = (await must(alice.post('/node/n1/nic/eth0/connect_network', { network: 'net1' }), 202)).body.status_id;
    for (let i = 0; i < 200 && (await must(alice.get(`/networking_action/${op}`))).body.status === 'PENDING'; i++) await sleep(20);
    await must(alice.put('/headnode/h1', { project: 'lab', base_img: 'base-headnode' }));
    await must(alice.put('/headnode/h1/hnic/hn0'));
    await must(api.put('/switch/eos', { type: 'http://schema.massopencloud.org/haas/v0/switches/arista_eos', hostname: '127.0.0.1:2222', username: 'admin', password: 'eos-secret-pw', host_key: `SHA256:${'B'.repeat(43)}` }));
    await must(api.del('/switch/eos/host_key'));
    await must(bob.put('/auth/basic/user/carol', { password: 'carol-pw', 'is-admin': false }));
    await must(bob.del('/auth/basic/user/carol'));
    await must(bob.del('/node/n1/metadata/rack'));
  });
  after(() => stopTestServer(ts));

  it('lists every mutation of every journal, with its user, newest first', async () => {
    const all = (await must(api.get('/admin/audit?limit=1000'))).body as { entries: AuditEntry[]; next: string | null };
    expect(all.next).to.equal(null);
    const at = all.entries.map((e) => Date.parse(e.at));
    for (let i = 1; i < at.length; i++) expect(at[i], 'newest first').to.be.at.most(at[i - 1]);
    // In the one commit order: each journal's events newest first, the whole as the stream gives it oldest first.
    const fed: string[] = [];
    for await (const e of ts.world.runtime.engine.feed(0)) if (!e.key.startsWith('meta:')) fed.push(e.key);
    expect(all.entries.map((e) => `${e.kind}:${e.name}`).reverse()).to.deep.equal(fed.slice(0, all.entries.length));
    // Exactly what the journals hold, entity by entity.
    const listed = new Map(all.entries.map((e) => [`${e.kind} ${e.name} ${e.sequenceNumber}`, e]));
    let journalled = 0;
    for (const kind of ts.world.runtime.kindNames()) {
      for (const id of await ts.world.runtime.registry(kind)!.storedIds()) {
        for await (const j of ts.world.runtime.registry(kind)!.journal(id, 1000)) {
          journalled++;
          const e = listed.get(`${kind} ${id} ${j.sequenceNumber}`);
          expect(e, `${kind} ${id} #${j.sequenceNumber}`).to.not.equal(undefined);
          const data = j.data as { type: string; by: string };
          expect(e!.event.type).to.equal(data.type);
          expect(e!.by).to.equal(data.by);
        }
      }
    }
    expect(all.entries).to.have.length(journalled);
  });

  it('says who made each change and with which call; the service\'s own work has no call', async () => {
    const all = (await walk('', 1000)).map((e) => [e.kind, e.name, e.event.type, e.by, e.call]);
    for (const expected of [
      ['user', 'admin', 'UserCreated', 'bootstrap', null],
      ['project', 'lab', 'ProjectCreated', 'admin', 'project_create'],
      ['user', 'alice', 'UserJoined', 'admin', 'user_add_project'],
      ['node', 'n1', 'NodeRegistered', 'admin', 'node_register'],
      ['nic', 'n1/eth0', 'NicRegistered', 'admin', 'node_register_nic'],
      ['node', 'n1', 'NodeMetadataSet', 'admin', 'node_set_metadata'],
      ['switch', 's1', 'SwitchRegistered', 'admin', 'switch_register'],
      ['port', 's1/gi1%2F0%2F1', 'PortWired', 'admin', 'port_connect_nic'],
      ['node', 'n1', 'NodeAssigned', 'admin', 'project_connect_node'],
      ['network', 'net1', 'NetworkCreated', 'alice', 'network_create'],
      ['nic', 'n1/eth0', 'NetworkActionQueued', 'alice', 'node_connect_network'],
      ['nic', 'n1/eth0', 'NetworkActionDone', 'switch', null],
      ['port', 's1/gi1%2F0%2F1', 'PortConfigured', 'switch', null],
      ['headnode', 'h1', 'HeadnodeCreated', 'alice', 'headnode_create'],
      ['headnode', 'h1', 'HnicCreated', 'alice', 'headnode_create_hnic'],
      ['switch', 'eos', 'SwitchHostKeyCleared', 'admin', 'switch_forget_host_key'],
      ['user', 'carol', 'UserCreated', 'bob', 'user_create'],
      ['user', 'carol', 'UserDeleted', 'bob', 'user_delete'],
      ['node', 'n1', 'NodeMetadataDeleted', 'bob', 'node_delete_metadata'],
    ]) expect(all, JSON.stringify(expected)).to.deep.include(expected);
    // The last change comes first.
    expect(all[0]).to.deep.equal(['node', 'n1', 'NodeMetadataDeleted', 'bob', 'node_delete_metadata']);
  });

  it('shows no secret: passwords, password hashes, BMC and switch credentials are redacted', async () => {
    const text = JSON.stringify(await walk('', 1000));
    for (const s of [...SECRETS, ...['admin', 'alice', 'bob'].map((u) => ts.world.rm.users.get(u)!.passwordHash)]) {
      expect(text.includes(s), `"${s.slice(0, 12)}…" in the audit log`).to.equal(false);
    }
    expect(text).to.not.match(/scrypt\$/);
    const node = (await walk('kind=node&name=n1', 1000)).find((e) => e.event.type === 'NodeRegistered')!;
    expect((node.event.obm as { password?: string; fields?: { password?: string } })).to.satisfy((o: { password?: string; fields?: { password?: string } }) => (o.password ?? o.fields?.password) === '[redacted]');
    const user = (await walk('kind=user&name=alice', 1000)).find((e) => e.event.type === 'UserCreated')!;
    expect(user.event.passwordHash).to.equal('[redacted]');
    const sw = (await walk('kind=switch&name=s1', 1000)).find((e) => e.event.type === 'SwitchRegistered')!;
    expect(JSON.stringify(sw.event)).to.include('[redacted]');
  });

  it('pages without overlap or gap, also while changes are committed between pages', async () => {
    const whole = await walk('', 1000);
    const pages: AuditEntry[] = [];
    let cursor: string | null = null;
    let n = 0;
    do {
      const r = await must(api.get(`/admin/audit?limit=4${cursor ? `&cursor=${cursor}` : ''}`));
      pages.push(...r.body.entries);
      cursor = r.body.next;
      // Newer changes do not move the pages after the first.
      if (n++ === 1) await must(api.put(`/project/late-${Date.now()}`));
    } while (cursor);
    expect(pages.map((e) => `${e.kind} ${e.name} ${e.sequenceNumber}`)).to.deep.equal(whole.map((e) => `${e.kind} ${e.name} ${e.sequenceNumber}`));
    expect((await must(api.get('/admin/audit?limit=1000'))).body.entries).to.have.length(whole.length + 1);
  });

  it('filters by object (kind and name), by kind, by user and by time range', async () => {
    const whole = await walk('', 1000);
    const node = await walk('kind=node&name=n1', 2);
    expect(node.map((e) => e.event.type)).to.deep.equal(whole.filter((e) => e.kind === 'node' && e.name === 'n1').map((e) => e.event.type));
    expect(node.map((e) => e.event.type)).to.deep.equal(['NodeMetadataDeleted', 'NodeAssigned', 'NodeMetadataSet', 'NodeRegistered']);
    expect(await walk(`kind=port&name=${encodeURIComponent('s1/gi1%2F0%2F1')}`, 1000)).to.have.length(whole.filter((e) => e.kind === 'port').length);
    const nics = await walk('kind=nic', 3);
    expect(nics.length).to.be.greaterThan(0);
    expect(nics.every((e) => e.kind === 'nic')).to.equal(true);
    expect(nics).to.have.length(whole.filter((e) => e.kind === 'nic').length);
    const byAlice = await walk('user=alice', 2);
    expect(byAlice.map((e) => `${e.kind} ${e.event.type}`)).to.deep.equal(whole.filter((e) => e.by === 'alice').map((e) => `${e.kind} ${e.event.type}`));
    expect(byAlice.length).to.be.at.least(4);
    const after = await walk(`since=${middle}`, 1000);
    expect(after.length).to.be.greaterThan(0);
    expect(after.every((e) => e.at >= middle)).to.equal(true);
    const before = await walk(`until=${middle}`, 1000);
    expect(before.every((e) => e.at < middle)).to.equal(true);
    expect(after.length + before.length).to.equal(whole.length);
    expect(await walk(`user=alice&until=${middle}`, 1000)).to.deep.equal([]);
    expect((await walk(`kind=network&name=net1&since=${middle}`, 1000)).map((e) => e.event.type)).to.deep.equal(['NetworkCreated']);
    expect(await walk('kind=node&name=nobody', 1000)).to.deep.equal([]);
    // A nic of the longest names: an id of two names, longer than one name may be.
    const [ln, lx] = ['N'.repeat(255), 'e'.repeat(255)];
    await must(api.put(`/node/${ln}`, { obm: obm() }));
    await must(api.put(`/node/${ln}/nic/${lx}`, { macaddr: 'de:ad:be:ef:00:09' }));
    expect((await walk(`kind=nic&name=${ln}/${lx}`, 1000)).map((e) => e.event.type)).to.deep.equal(['NicRegistered']);
    for (const bad of [`kind=nic&name=${'x'.repeat(256)}/eth0`, `kind=node&name=${'x'.repeat(256)}`, `kind=node&name=%01`]) {
      const r = await api.get(`/admin/audit?${bad}`);
      expect(r.status, bad.slice(0, 40)).to.equal(400);
      expect(r.body.msg).to.match(/name must be a name/);
    }
  });

  it('with a user filter, reads a bounded number of events per page and says where to go on', async () => {
    const byAlice = (await walk('user=alice', 1000)).map((e) => `${e.kind} ${e.name} ${e.sequenceNumber}`);
    const got: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await auditPage(ts.world, { user: 'alice', limit: 100, scan: 3, cursor });
      expect(page.entries.length).to.be.at.most(3);
      got.push(...page.entries.map((e) => `${e.kind} ${e.name} ${e.sequenceNumber}`));
      cursor = page.next ?? undefined;
      pages++;
    } while (cursor);
    expect(got).to.deep.equal(byAlice);
    expect(pages).to.be.greaterThan(3);
  });

  it('is for admins only, and refuses malformed filters', async () => {
    expect((await alice.get('/admin/audit')).status).to.equal(401);
    expect((await api.with(null).get('/admin/audit')).status).to.equal(401);
    expect((await bob.get('/v0/admin/audit?limit=1')).status).to.equal(200);
    for (const q of ['name=n1', 'kind=fridge', 'since=yesterday', 'until=2026-13-45T00:00:00Z', 'limit=0', 'limit=5000', 'cursor=bm90LWEtY3Vyc29y', 'cursor=%21', 'color=red']) {
      const r = await api.get(`/admin/audit?${q}`);
      expect(r.status, q).to.equal(400);
      expect(r.body.type, q).to.equal('BadArgumentError');
    }
  });
});
