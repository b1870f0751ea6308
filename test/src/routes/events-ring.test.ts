/**
 * The event hub with a ring of a few events (src/events/hub.ts): streams that resume behind the
 * ring read the journal up to it and go on from memory, under concurrent writes, with no loss or
 * repeat; the ring trims itself in steps and stays within its bounds.
 */
import { expect } from 'chai';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestServer, stopTestServer, TestServer, must, obm } from '../../helpers/server';
import { SseStream, SseEvent } from '../../helpers/sse';
import { EventHub, NO_FILTER } from '../../../src/events/hub';

describe('the event hub with a small ring', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let hub: EventHub;
  let server: Server;
  let url: string;
  const RING = 8;

  before(async () => {
    ts = await startTestServer();
    // A hub of its own on the service's storage, served by a bare http server: every stream is an admin's.
    hub = new EventHub(ts.world.runtime, { bufferBytes: 1 << 20, heartbeatMs: 60_000, ringSize: RING, ringBytes: 1 << 20, flushMs: 5, writesPerSecond: 6000 });
    await hub.start();
    server = createServer((req, res) => {
      const after = Number(new URL(req.url!, 'http://x').searchParams.get('after'));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': hello\n\n');
      hub.open(res, { user: 'admin', admin: true, projects: new Set() }, NO_FILTER, after);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  after(async () => {
    hub.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await stopTestServer(ts);
  });

  it('resumes from behind the ring (journal, then memory) under concurrent writes, with no loss or repeat', async () => {
    const start = (await ts.world.runtime.engine.bounds()).last;
    // A follower from the start keeps frames flowing live through the ring all along.
    const follower = new SseStream(`${url}?after=${start}`, { light: true });
    let writing = true;
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; writing; i++) await must(ts.api.put(`/node/ring${w}-${i}`, { obm: obm() }));
    });
    const got: SseEvent[] = [];
    let last = start;
    const rnd = (n: number) => Math.floor(Math.random() * n);
    try {
      for (let round = 0; round < 10; round++) {
        // Let the writers run well past the ring before resuming from `last`.
        const target = last + 3 * RING + rnd(3 * RING);
        await follower.until(() => Number(follower.events.at(-1)?.id ?? 0) >= target, 20_000);
        const s = new SseStream(`${url}?after=${last}`);
        await s.count(1 + rnd(4 * RING), 20_000);
        s.close();
        got.push(...s.events);
        last = Number(s.events.at(-1)!.id);
      }
    } finally {
      writing = false;
      await Promise.all(writers);
    }
    const end = (await ts.world.runtime.engine.bounds()).last;
    const s = new SseStream(`${url}?after=${last}`);
    if (last < end) await s.until(() => Number(s.events.at(-1)?.id ?? 0) >= end, 20_000);
    s.close();
    got.push(...s.events);
    await follower.until(() => Number(follower.events.at(-1)?.id ?? 0) >= end, 20_000);
    follower.close();
    const journal: string[] = [];
    for await (const e of ts.world.runtime.engine.feed(start)) if (!e.key.startsWith('meta:')) journal.push(String(e.position));
    expect(journal.length).to.be.greaterThan(30 * RING);
    expect(got.map((e) => e.id)).to.deep.equal(journal);
    expect(follower.events.map((e) => e.id)).to.deep.equal(journal);
    // The ring stayed within its bound (it trims in steps, down to 7/8 of it), and holds the newest.
    const ring = (hub as unknown as { ring: { position: number }[] }).ring;
    expect(ring.length).to.be.within(1, RING);
    expect(ring.at(-1)!.position).to.equal(end);
  });
});
