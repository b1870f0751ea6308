/**
 * The event hub's flush interval (src/events/hub.ts): under a stream of commits, the streams are
 * written at most every `flushMs`, and less often once there are more streams than
 * `writesPerSecond` allows at that pace; whatever the interval, every frame arrives, in order.
 */
import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { startTestServer, stopTestServer, TestServer, must, obm } from '../../helpers/server';
import { EventHub, NO_FILTER } from '../../../src/events/hub';

/** A response that keeps each write with its time (no socket: the hub writes through it). */
class Recorder extends EventEmitter {
  readonly writes: { at: number; text: string }[] = [];
  writableLength = 0;
  headersSent = true;
  socket = null;
  write(chunk: string | Buffer): boolean {
    this.writes.push({ at: performance.now(), text: String(chunk) });
    return true;
  }
  end(): void {
    this.emit('close');
  }
  destroy(): void {
    this.emit('close');
  }
  /** the writes that carried frames, and the frames' ids in the order received */
  frames(): { writes: number[]; ids: number[] } {
    const withFrames = this.writes.filter((w) => w.text.includes('id: '));
    return { writes: withFrames.map((w) => w.at), ids: withFrames.flatMap((w) => [...w.text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))) };
  }
}

const gaps = (times: number[]) => times.slice(1).map((t, i) => t - times[i]);

describe('the event hub under a stream of commits', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let hub: EventHub;

  before(async () => {
    ts = await startTestServer();
  });
  afterEach(() => hub?.close());
  after(() => stopTestServer(ts));

  /**
   * Open `n` streams from now, register nodes one after another for `ms` and at least 25 of them
   * (a loaded machine may take 90 ms a registration), and return the streams, the positions
   * committed and how long the registrations took.
   */
  async function burst(n: number, ms: number, prefix: string): Promise<{ streams: Recorder[]; positions: number[]; took: number }> {
    const streams = Array.from({ length: n }, () => new Recorder());
    const from = hub.last;
    for (const r of streams) hub.open(r as unknown as ServerResponse, { user: 'admin', admin: true, projects: new Set() }, NO_FILTER, from);
    // The replays (nothing to replay) finish and the streams go live: a commit heard before that
    // would be written at the replay's end, outside the flushes this test times.
    while (!streams.every((r) => r.writes.some((w) => w.text.includes(': live')))) await new Promise((r) => setTimeout(r, 5));
    const start = performance.now();
    for (let i = 0; performance.now() < start + ms || i < 25; i++) await must(ts.api.put(`/node/${prefix}${i}`, { obm: obm() }));
    const took = performance.now() - start;
    // The last flush.
    await new Promise((r) => setTimeout(r, 300));
    const positions: number[] = [];
    for await (const e of ts.world.runtime.engine.feed(from)) positions.push(e.position!);
    return { streams, positions, took };
  }

  it('writes 20 streams at most every 100 ms when 200 writes a second are allowed, and 2 streams every 10 ms, each frame once and in order', async () => {
    hub = new EventHub(ts.world.runtime, { bufferBytes: 1 << 20, heartbeatMs: 60_000, ringSize: 4096, ringBytes: 1 << 20, flushMs: 10, writesPerSecond: 200 });
    await hub.start();
    const many = await burst(20, 800, 'many');
    expect(hub.flushInterval).to.equal(100);
    expect(many.positions.length).to.be.greaterThan(20);
    const perStream = many.streams.map((s) => s.frames());
    for (const { writes, ids } of perStream) {
      expect(ids).to.deep.equal(many.positions);
      expect(writes.length).to.be.at.most(Math.ceil(many.took / 100) + 2);
      // Never two flushes back to back. A stream's write comes a little after its flush began,
      // later still after a pause (a collection on a loaded machine) among the flush's writes.
      for (const g of gaps(writes)) expect(g).to.be.greaterThan(50);
    }
    // Every stream got every flush (the same frames, live before the burst): a flush began at
    // its first write to any stream. The first after a quiet spell goes at once; then one per
    // interval at most (a timer may fire a millisecond or two early by this clock).
    const counts = new Set(perStream.map((f) => f.writes.length));
    expect(counts.size).to.equal(1);
    const starts = perStream[0].writes.map((_, k) => Math.min(...perStream.map((f) => f.writes[k])));
    for (const g of gaps(starts)) expect(g).to.be.greaterThan(97);
    hub.close();

    hub = new EventHub(ts.world.runtime, { bufferBytes: 1 << 20, heartbeatMs: 60_000, ringSize: 4096, ringBytes: 1 << 20, flushMs: 10, writesPerSecond: 200 });
    await hub.start();
    const few = await burst(2, 800, 'few');
    expect(hub.flushInterval).to.equal(10);
    for (const s of few.streams) {
      const { writes, ids } = s.frames();
      expect(ids).to.deep.equal(few.positions);
      // Many more writes than the 20 streams got: the interval is flushMs.
      expect(writes.length).to.be.greaterThan(20);
      // Never two flushes back to back. Each gap is measured at this stream's write, which comes
      // a little after its flush began (the other stream first; a loaded machine's pauses), so
      // two gaps of a 10 ms interval can read 7.8 and 12.2 ms: the bound is half the interval.
      // The next gap is longer by as much: the median is the interval.
      const g = gaps(writes).sort((a, b) => a - b);
      expect(g[0]).to.be.greaterThan(5);
      expect(g[g.length >> 1]).to.be.greaterThan(9);
    }
  });
});
