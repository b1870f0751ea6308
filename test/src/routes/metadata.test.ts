import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, makeUser, Creds } from '../../helpers/server';

describe('node metadata (PUT and DELETE /node/:node/metadata/:label)', () => {
  let ts: TestServer;
  let api: Client;
  let member: Creds;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await must(api.put('/project/mp'));
    member = await makeUser(api, 'mp-member', 'pw', ['mp']);
    await makeNode(api, 'm1');
    await must(api.post('/project/mp/connect_node', { node: 'm1' }));
  });
  after(() => stopTestServer(ts));

  const meta = async (node: string, as?: Creds) => (await api.get(`/node/${node}`, as ? { as } : undefined)).body.metadata;

  it('adds a label, replaces its value, and show_node returns it (also to the node\'s project)', async () => {
    await must(api.put('/node/m1/metadata/rack', { value: 'r1' }));
    await must(api.put('/node/m1/metadata/unit', { value: 12 }));
    await must(api.put('/node/m1/metadata/gpu', { value: true }));
    expect(await meta('m1')).to.deep.equal({ rack: 'r1', unit: 12, gpu: true });
    await must(api.put('/node/m1/metadata/rack', { value: 'r2' }));
    expect(await meta('m1', member)).to.deep.equal({ rack: 'r2', unit: 12, gpu: true });
  });

  it('deletes a label; an unknown label is 404', async () => {
    await must(api.del('/node/m1/metadata/gpu'));
    expect(await meta('m1')).to.deep.equal({ rack: 'r2', unit: 12 });
    const r = await api.del('/node/m1/metadata/gpu');
    expect(r.status).to.equal(404);
    expect(r.body.type).to.equal('NotFoundError');
  });

  it('is admin only, checked before the node: a project member gets 401 even for a missing node', async () => {
    expect((await api.with(member).put('/node/m1/metadata/x', { value: 'v' })).status).to.equal(401);
    expect((await api.with(member).put('/node/nope/metadata/x', { value: 'v' })).status).to.equal(401);
    expect((await api.with(member).del('/node/m1/metadata/rack')).status).to.equal(401);
    expect((await api.put('/node/nope/metadata/x', { value: 'v' })).status).to.equal(404);
    expect((await api.del('/node/nope/metadata/x')).status).to.equal(404);
    expect(await meta('m1')).to.not.have.property('x');
  });

  it('refuses a body without value, with another key, or a nested value (400), before authentication', async () => {
    for (const body of [{}, { value: 'v', other: 1 }, { value: { a: 1 } }, { value: [1] }, { value: null }]) {
      const r = await api.put('/node/m1/metadata/bad', body);
      expect(r.status, JSON.stringify(body)).to.equal(400);
      expect(r.body.type).to.equal('BadArgumentError');
    }
    expect((await api.with(null).put('/node/m1/metadata/bad', {})).status).to.equal(400);
    expect((await api.del('/node/m1/metadata/rack', { body: { value: 1 } })).status).to.equal(400);
    expect(await meta('m1')).to.not.have.property('bad');
  });

  it('refuses a 101st label (409) but still replaces an existing one', async () => {
    await makeNode(api, 'm-full');
    for (let i = 0; i < 100; i++) await must(api.put(`/node/m-full/metadata/k${i}`, { value: i }));
    const r = await api.put('/node/m-full/metadata/k100', { value: 1 });
    expect(r.status).to.equal(409);
    expect(r.body.type).to.equal('IllegalStateError');
    await must(api.put('/node/m-full/metadata/k5', { value: 'five' }));
    expect(Object.keys(await meta('m-full'))).to.have.length(100);
  });

  it('journals each change as its own event, with the acting user', async () => {
    const j = (await api.get('/admin/actors/node/m1/journal?limit=3')).body as { by: string; event: { type: string; label?: string } }[];
    expect(j.map((e) => e.event.type)).to.deep.equal(['NodeMetadataDeleted', 'NodeMetadataSet', 'NodeMetadataSet']);
    expect(j[0]).to.include({ by: 'admin' });
    expect(j[0].event.label).to.equal('gpu');
  });

  it('keeps labels that are names of object properties (__proto__, constructor) across a restart', async () => {
    // A server of its own, restarted on the same folder.
    const dir = mkdtempSync(join(tmpdir(), 'hilt-meta-'));
    let s = await startTestServer({}, {}, dir);
    await makeNode(s.api, 'p1');
    await must(s.api.put('/node/p1/metadata/__proto__', { value: 'a' }));
    await must(s.api.put('/node/p1/metadata/constructor', { value: 2 }));
    await must(s.api.put('/node/p1/metadata/gone', { value: 3 }));
    await must(s.api.del('/node/p1/metadata/gone'));
    const before = (await s.api.get('/node/p1')).text;
    expect(JSON.parse(before).metadata).to.deep.equal(JSON.parse('{"__proto__":"a","constructor":2}'));
    await stopTestServer(s, false);
    s = await startTestServer({}, {}, dir);
    expect((await s.api.get('/node/p1')).text).to.equal(before);
    await must(s.api.del('/node/p1/metadata/__proto__'));
    expect((await s.api.get('/node/p1')).body.metadata).to.deep.equal({ constructor: 2 });
    await stopTestServer(s);
    rmSync(dir, { recursive: true, force: true });
  });
});
