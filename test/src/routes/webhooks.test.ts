/**
 * Webhooks against a local receiver: the admin routes, signed deliveries in order, retries with
 * backoff until a failing receiver recovers (each event 2xx'd once), the failing state and its
 * resume from the cursor.
 */
import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, obm, committed } from '../../helpers/server';
import { Receiver } from '../../helpers/receiver';
import { addSecret } from '../../helpers/secrets';
import { isSealed } from '../../../lib/sealed';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const SECRET = 'whsec-0123456789abcdef-secret';

describe('webhooks', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  const receivers: Receiver[] = [];
  const receiver = async () => {
    const r = await new Receiver().start();
    receivers.push(r);
    return r;
  };

  before(async () => {
    addSecret(SECRET);
    // The timeout is short for the receiver that hangs, but a 200 later than it is retried (at
    // least once), so it leaves a loaded machine room: the tests count one delivery per 2xx.
    ts = await startTestServer({ webhookRetryMinMs: 20, webhookRetryMaxMs: 200, webhookTimeoutMs: 1500, webhookFailAfterMs: 60_000 });
    api = ts.api;
  });
  after(async () => {
    await stopTestServer(ts);
    for (const r of receivers) await r.close();
  });

  it('creates, lists, shows and deletes webhooks (admin only, never showing the secret), and refuses bad input', async () => {
    const rcv = await receiver();
    const alice = await makeUser(api, 'wh-alice', 'wh-alice-pw');
    expect((await api.with(alice).post('/admin/webhooks', { url: rcv.url, secret: SECRET })).status).to.equal(401);
    expect((await api.with(alice).get('/admin/webhooks')).status).to.equal(401);
    for (const bad of [
      { url: 'ftp://127.0.0.1/x', secret: SECRET }, { url: 'not a url', secret: SECRET }, { url: rcv.url, secret: 'short' },
      { url: rcv.url }, { url: rcv.url, secret: SECRET, color: 'red' }, { url: rcv.url, secret: SECRET, types: 'node.registered' },
      // A type no event has would deliver nothing, silently (a typo).
      { url: rcv.url, secret: SECRET, types: ['node.regstered'] }, { url: rcv.url, secret: SECRET, types: ['nodes.*'] },
    ]) {
      const r = await api.post('/admin/webhooks', bad);
      expect(r.status, JSON.stringify(bad)).to.equal(400);
      expect(r.body.type).to.equal('BadArgumentError');
    }
    const { id } = (await must(api.post('/admin/webhooks', { url: rcv.url, secret: SECRET, types: ['project.created'], description: 'lab bot' }))).body;
    expect(id).to.be.a('string');
    const shown = (await must(api.get(`/admin/webhooks/${id}`))).body;
    expect(shown).to.deep.include({ id, url: rcv.url, types: ['project.created'], projects: [], description: 'lab bot', state: 'delivering', created_by: 'admin', consecutive_failures: 0 });
    const list = (await must(api.get('/admin/webhooks'))).body;
    expect(list.map((w: { id: string }) => w.id)).to.include(id);
    expect(JSON.stringify([shown, list])).to.not.include(SECRET);
    // Sealed at rest, as BMC and switch passwords are: the journal holds no plaintext of it.
    for await (const e of ts.world.runtime.engine.events(`webhook:${id}`)) {
      const stored = (e.data as { secret?: unknown }).secret;
      if (stored === undefined) continue;
      expect(isSealed(stored), JSON.stringify(stored)).to.equal(true);
      expect(JSON.stringify(stored)).to.not.include(SECRET);
    }
    if (ts.config.storage === 'lmdb') expect(readFileSync(join(ts.dataDir, 'data.mdb')).includes(Buffer.from(SECRET)), 'plaintext in data.mdb').to.equal(false);
    // The audit log and the stream redact it too.
    const audit = (await must(api.get('/admin/audit?kind=webhook'))).body;
    expect(JSON.stringify(audit)).to.not.include(SECRET);
    expect(audit.entries[0].event.secret).to.equal('[redacted]');
    await must(api.del(`/admin/webhooks/${id}`));
    expect((await api.get(`/admin/webhooks/${id}`)).status).to.equal(404);
    expect((await api.del(`/admin/webhooks/${id}`)).status).to.equal(404);
    expect((await api.post('/admin/webhooks/nope/resume')).status).to.equal(404);
  });

  it('refuses a URL with credentials in it: they would be shown in the listing, the audit log and the stream, and never sent', async () => {
    const rcv = await receiver();
    const password = 'receiver-basic-pw-7731';
    addSecret(password);
    const url = new URL(rcv.url);
    url.username = 'bot';
    url.password = password;
    const r = await api.post('/admin/webhooks', { url: url.toString(), secret: SECRET });
    expect(r.status, r.text).to.equal(400);
    expect(r.body.type).to.equal('BadArgumentError');
    expect(r.text).to.not.include(password);
    expect(JSON.stringify((await must(api.get('/admin/webhooks'))).body)).to.not.include(password);
    expect(JSON.stringify((await must(api.get('/admin/audit?kind=webhook&limit=1000'))).body)).to.not.include(password);
  });

  it('POSTs each matching event, signed, with its id and type, in commit order', async () => {
    const rcv = await receiver();
    const all = (await must(api.post('/admin/webhooks', { url: rcv.url, secret: SECRET }))).body.id;
    const rcv2 = await receiver();
    const some = (await must(api.post('/admin/webhooks', { url: rcv2.url, secret: SECRET, types: ['node.*', 'project.node_added'], projects: ['whp'] }))).body.id;
    await must(api.put('/project/whp'));
    for (let i = 0; i < 20; i++) await must(api.put(`/node/wn${i}`, { obm: obm() }));
    await must(api.post('/project/whp/connect_node', { node: 'wn3' }));
    await must(api.put('/node/wn3/metadata/k', { value: 1 }));
    await rcv.until(() => rcv.requests.some((r) => r.json?.type === 'node.metadata_set'));
    await rcv2.until(() => rcv2.requests.some((r) => r.json?.type === 'node.metadata_set'));
    for (const r of [...rcv.requests, ...rcv2.requests]) {
      expect(r.headers['content-type']).to.equal('application/json');
      expect(r.headers['x-hilt-signature']).to.equal(`sha256=${createHmac('sha256', SECRET).update(r.body).digest('hex')}`);
      expect(r.headers['x-hilt-event-id']).to.equal(r.json.id);
      expect(r.headers['x-hilt-event-type']).to.equal(r.json.type);
    }
    const ids = rcv.delivered().map(Number);
    for (let i = 1; i < ids.length; i++) expect(ids[i]).to.be.above(ids[i - 1]);
    expect(rcv.requests.filter((r) => r.json.type === 'node.registered')).to.have.length(20);
    // Filters: node events of project whp only.
    expect(rcv2.requests.map((r) => `${r.json.type} ${r.json.name}`)).to.deep.equal(['project.node_added wn3', 'node.metadata_set wn3']);
    const state = (await must(api.get(`/admin/webhooks/${all}`))).body;
    expect(state.cursor).to.equal(rcv.delivered().at(-1));
    expect(state.last_success).to.be.a('string');
    for (const id of [all, some]) await must(api.del(`/admin/webhooks/${id}`));
  });

  it('retries a failing receiver with backoff until it recovers: every event once per 2xx, in order', async () => {
    const rcv = await receiver();
    // Fails (500, then no answer in time, then a refused redirect) for a while, then recovers.
    rcv.answer = (_r, n) => (n < 4 ? 500 : n < 6 ? 'hang' : n < 7 ? 302 : 200);
    const id = (await must(api.post('/admin/webhooks', { url: rcv.url, secret: SECRET, types: ['project.created'] }))).body.id;
    for (let i = 0; i < 10; i++) await must(api.put(`/project/rp${i}`));
    await rcv.until(() => rcv.delivered().length === 10);
    const names = rcv.requests.filter((r) => r.status === 200).map((r) => r.json.name);
    expect(names).to.deep.equal(Array.from({ length: 10 }, (_, i) => `rp${i}`));
    // The failed attempts were all of the first event, spaced out by a growing pause.
    const failed = rcv.requests.filter((r) => r.status !== 200);
    expect(failed).to.have.length(7);
    expect(failed.every((r) => r.json.name === 'rp0')).to.equal(true);
    // Each pause at least the doubled one before it (a loaded machine only makes them longer).
    const gaps = rcv.requests.slice(0, 4).map((r, i, a) => (i ? r.at - a[i - 1].at : 0)).slice(1);
    gaps.forEach((g, i) => expect(g, `pause ${i + 1}`).to.be.at.least(20 * 2 ** i - 2));
    const state = (await must(api.get(`/admin/webhooks/${id}`))).body;
    expect(state.consecutive_failures).to.equal(0);
    expect(state.last_error).to.match(/302|answered/);
    expect(state.backlog).to.be.at.least(0);
    const metrics = await ts.metrics.text();
    expect(Number(/hilt_webhook_deliveries_total\{outcome="error"\} (\d+)/.exec(metrics)?.[1])).to.be.at.least(7);
    await must(api.del(`/admin/webhooks/${id}`));
  });

  it('goes on delivering after a read of the store failed, without waiting for another commit', async () => {
    const rcv = await receiver();
    const id = (await must(api.post('/admin/webhooks', { url: rcv.url, secret: SECRET, types: ['project.created'] }))).body.id;
    await must(api.put('/project/rf0'));
    await rcv.until(() => rcv.delivered().length === 1);
    // The worker's next read of the journal fails once (a database connection lost, say).
    const engine = ts.world.runtime.engine;
    const feed = engine.feed.bind(engine);
    let failed = 0;
    engine.feed = (after: number) => {
      if (failed++ === 0) throw new Error('connection lost');
      return feed(after);
    };
    try {
      await must(api.put('/project/rf1'));
      await rcv.until(() => rcv.delivered().length === 2);
    } finally {
      engine.feed = feed;
    }
    expect(failed, 'the read that failed').to.be.at.least(1);
    expect(rcv.requests.filter((r) => r.status === 200).map((r) => r.json.name)).to.deep.equal(['rf0', 'rf1']);
    await must(api.del(`/admin/webhooks/${id}`));
  });
});

describe('webhooks: failing past the retry window', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let rcv: Receiver;

  before(async () => {
    addSecret(SECRET);
    // No receiver here hangs: a long timeout, so no 200 arrives after it and is sent again.
    ts = await startTestServer({ webhookRetryMinMs: 20, webhookRetryMaxMs: 50, webhookTimeoutMs: 5000, webhookFailAfterMs: 400 });
    rcv = await new Receiver().start();
  });
  after(async () => {
    await stopTestServer(ts);
    await rcv.close();
  });

  it('is marked failing (visible, in the metrics), keeps its cursor, and resumes from it when an admin says so', async () => {
    const api = ts.api;
    rcv.answer = () => 503;
    const id = (await must(api.post('/admin/webhooks', { url: rcv.url, secret: SECRET, types: ['project.created'] }))).body.id;
    await must(api.put('/project/f0'));
    await rcv.until(() => rcv.requests.length >= 3);
    const failing = async () => (await must(api.get(`/admin/webhooks/${id}`))).body;
    const end = Date.now() + 10_000;
    while ((await failing()).state !== 'failing' && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    const w = await failing();
    expect(w.state).to.equal('failing');
    expect(w.failing_reason).to.match(/503/);
    expect(w.consecutive_failures).to.be.at.least(3);
    expect(await ts.metrics.text()).to.match(/hilt_webhooks\{state="failing"\} 1/);
    // It stopped: no more attempts, while events go on being committed.
    const attempts = rcv.requests.length;
    for (let i = 1; i <= 5; i++) await must(api.put(`/project/f${i}`));
    await new Promise((r) => setTimeout(r, 300));
    expect(rcv.requests.length).to.equal(attempts);
    // The failing state is an event of the webhook, as is its resume.
    const audit = (await must(api.get(`/admin/audit?kind=webhook&name=${id}`))).body.entries.map((e: { event: { type: string } }) => e.event.type);
    expect(audit).to.include('WebhookFailing');
    rcv.answer = () => 200;
    await must(api.post(`/admin/webhooks/${id}/resume`));
    await rcv.until(() => rcv.delivered().length === 6);
    expect(rcv.requests.filter((r) => r.status === 200).map((r) => r.json.name)).to.deep.equal(['f0', 'f1', 'f2', 'f3', 'f4', 'f5']);
    const after = await failing();
    expect(after.state).to.equal('delivering');
    expect(after.consecutive_failures).to.equal(0);
    expect(await ts.metrics.text()).to.match(/hilt_webhooks\{state="failing"\} 0/);
  });

  it('gives a resumed webhook a new failure window: a receiver still down at the resume is retried for all of it', async () => {
    const api = ts.api;
    const down = await new Receiver().start();
    try {
      down.answer = () => 503;
      const id = (await must(api.post('/admin/webhooks', { url: down.url, secret: SECRET, types: ['project.created'] }))).body.id;
      const failed = committed(ts, `webhook:${id}`, 'WebhookFailing');
      await must(api.put('/project/window0'));
      await failed;
      expect((await must(api.get(`/admin/webhooks/${id}`))).body.state).to.equal('failing');
      // The old window (400 ms) is over. The receiver is still down for the first two attempts
      // after the resume and answers the third: 20 to 50 ms apart, well within a new window.
      const before = down.requests.length;
      down.answer = (_r, n) => (n < before + 2 ? 503 : 200);
      const failedAgain = committed(ts, `webhook:${id}`, 'WebhookFailing');
      await must(api.post(`/admin/webhooks/${id}/resume`));
      await Promise.race([
        down.until(() => down.delivered().length === 1),
        failedAgain.then(() => {
          throw new Error(`failing again after ${down.requests.length - before} attempt(s) since the resume`);
        }),
      ]);
      expect(down.requests.length - before).to.equal(3);
      const after = (await must(api.get(`/admin/webhooks/${id}`))).body;
      expect(after.state).to.equal('delivering');
      expect(after.consecutive_failures).to.equal(0);
      await must(api.del(`/admin/webhooks/${id}`));
    } finally {
      await down.close();
    }
  });
});

