import { expect } from 'chai';
import { startTestServer, TestServer, Client, must, makeNode, makeUser, mockSwitch } from '../../helpers/server';

describe('admin inspection', () => {
  let ts: TestServer;
  let api: Client;
  before(async () => {
    // The journals read here are the calls' own: no release power-off after them (test/src/lifecycle/release.test.ts has those).
    ts = await startTestServer({ releasePowerOff: false });
    api = ts.api;
    await must(api.put('/project/ap'));
    await makeNode(api, 'an', ['eth0']);
    await must(api.put('/switch/as', mockSwitch));
    await must(api.put('/switch/as/port/gi1/0/7'));
    await must(api.post('/switch/as/port/gi1/0/7/connect_nic', { node: 'an', nic: 'eth0' }));
    await must(api.post('/project/ap/connect_node', { node: 'an' }));
  });

  it('GET /admin/actors lists live actors per kind with their mailbox depth', async () => {
    const r = await api.get('/admin/actors');
    expect(r.status).to.equal(200);
    expect(r.body).to.have.keys('project', 'node', 'nic', 'port', 'switch', 'network', 'user', 'headnode', 'webhook');
    expect(r.body.node).to.deep.include({ id: 'an', mailbox: 0 });
    expect(r.body.nic).to.deep.include({ id: 'an/eth0', mailbox: 0 });
    expect(r.body.port).to.deep.include({ id: 'as/gi1%2F0%2F7', mailbox: 0 });
    expect(r.body.project).to.deep.include({ id: 'ap', mailbox: 0 });
  });

  it('GET /admin/actors/:kind/:id shows committed state and sequence number, secrets redacted', async () => {
    const r = await api.get('/admin/actors/node/an');
    expect(r.status).to.equal(200);
    expect(r.body).to.include({ kind: 'node', id: 'an', live: true, sequenceNumber: 2 });
    expect(r.body.state.project).to.equal('ap');
    expect(r.body.state.obm.fields.password).to.equal('[redacted]');
  });

  it('shows a nic\'s and a port\'s actor by their two names (a port name\'s "/" percent-encoded)', async () => {
    const nic = await must(api.get('/admin/actors/nic/an/eth0'));
    expect(nic.body).to.include({ kind: 'nic', id: 'an/eth0', sequenceNumber: 1 });
    expect(nic.body.state).to.include({ node: 'an', name: 'eth0', pending: null, lastSeq: 0 });
    expect(nic.body.state.macaddr).to.be.a('string');
    const port = await must(api.get('/admin/actors/port/as/gi1%2F0%2F7'));
    expect(port.body).to.include({ kind: 'port', id: 'as/gi1%2F0%2F7', sequenceNumber: 2 });
    expect(port.body.state).to.deep.include({ switch: 'as', name: 'gi1/0/7', wire: { node: 'an', nic: 'eth0' }, config: { native: null, tagged: [] } });
    expect(port.body.state.registeredAt).to.be.closeTo(Date.now(), 60_000);
    const journal = await must(api.get('/admin/actors/port/as/gi1%2F0%2F7/journal'));
    expect(journal.body.map((e: { event: { type: string } }) => e.event.type)).to.deep.equal(['PortWired', 'PortRegistered']);
    expect((await api.get('/admin/actors/port/as/gi1/0/7')).status).to.equal(404);
    expect((await api.get('/admin/actors/nic/an')).status).to.equal(404);
    expect((await api.get('/admin/actors/nic/an/eth9')).status).to.equal(404);
  });

  it('shows the state of an entity whose actor is asleep, read from LMDB', async () => {
    await must(api.put('/project/sleepy'));
    await new Promise((r) => setImmediate(r)); // its mailbox has finished the turn
    await ts.world.runtime.sweep(Date.now() + 1e9, 0);
    const r = await api.get('/admin/actors/project/sleepy');
    expect(r.body).to.include({ live: false, sequenceNumber: 1 });
    expect(r.body.state).to.deep.equal({ name: 'sleepy' });
  });

  it('GET .../journal lists events newest first with time and acting user', async () => {
    const u = await makeUser(api, 'ap-member', 'pw', ['ap']);
    await must(api.with(u).post('/project/ap/detach_node', { node: 'an' }));
    const r = await api.get('/admin/actors/node/an/journal');
    expect(r.status).to.equal(200);
    expect(r.body.map((e: { event: { type: string } }) => e.event.type)).to.deep.equal(['NodeReleased', 'NodeAssigned', 'NodeRegistered']);
    expect(r.body[0].by).to.equal('ap-member');
    expect(r.body[1].by).to.equal('admin');
    expect(Date.parse(r.body[0].at)).to.be.closeTo(Date.now(), 60_000);
    expect(r.body[2].event.obm.fields.password).to.equal('[redacted]');
    const limited = await api.get('/admin/actors/node/an/journal?limit=1');
    expect(limited.body).to.have.length(1);
    expect(limited.body[0].sequenceNumber).to.equal(3);
  });

  it('keeps the journal of a deleted entity (the audit trail outlives it)', async () => {
    await must(api.put('/project/gone'));
    await must(api.del('/project/gone'));
    const r = await api.get('/admin/actors/project/gone/journal');
    expect(r.body.map((e: { event: { type: string } }) => e.event.type)).to.deep.equal(['ProjectDeleted', 'ProjectCreated']);
    expect((await api.get('/admin/actors/project/gone')).body.state).to.equal(null);
  });

  it('answers 404 for an unknown kind or entity, 400 for a bad limit', async () => {
    expect((await api.get('/admin/actors/bogus/x')).status).to.equal(404);
    expect((await api.get('/admin/actors/node/nope')).status).to.equal(404);
    expect((await api.get('/admin/actors/node/nope/journal')).status).to.equal(404);
    expect((await api.get('/admin/actors/node/an/journal?limit=0')).status).to.equal(400);
    expect((await api.get('/admin/actors/node/an/journal?limit=x')).status).to.equal(400);
    expect((await api.get('/admin/actors/node/an?limit=3')).status).to.equal(400);
  });

  it('is for admins only', async () => {
    const u = { user: 'ap-member', password: 'pw' };
    for (const path of ['/admin/actors', '/admin/actors/node/an', '/admin/actors/node/an/journal']) {
      expect((await api.with(u).get(path)).status, path).to.equal(401);
    }
  });
});
