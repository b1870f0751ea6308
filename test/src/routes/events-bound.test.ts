/**
 * An event stream's bound on unread bytes (src/events/hub.ts, docs/events.md §Backpressure): what
 * earlier writes left unread counts, not the write being made. With many streams the flush
 * interval grows and one flush's text can pass the bound; a consumer that reads everything keeps
 * its stream, and one that stops reading is dropped at the next write, holding at most the
 * bound and one write.
 */
import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { Stream, NO_FILTER, type Frame, type EventHub } from '../../../src/events/hub';

/** A response on a slow network: what is written stays unread until the consumer reads it. */
class Slow extends EventEmitter {
  writableLength = 0;
  received = '';
  headersSent = false;
  socket = null;
  destroyed = false;
  write(chunk: string | Buffer): boolean {
    this.writableLength += Buffer.byteLength(chunk);
    this.received += String(chunk);
    return true;
  }
  /** the consumer reads everything sent so far */
  read(): void {
    this.writableLength = 0;
  }
  end(): void {
    this.emit('close');
  }
  destroy(): void {
    this.destroyed = true;
    this.emit('close');
  }
}

const BOUND = 4096;

/** A hub with nothing to replay: the stream goes live at once. */
function hubStub(drops: string[]): EventHub {
  return {
    opts: { bufferBytes: BOUND },
    framesAfter: async function* () {},
    remove: () => undefined,
    dropped: (_s: Stream, reason: string) => drops.push(reason),
  } as unknown as EventHub;
}

let position = 0;
/** One flush of frames carrying `bytes` of text in all. */
function flushOf(bytes: number): Frame[] {
  const frames: Frame[] = [];
  for (let n = 0; n < bytes; n += 1000) {
    position++;
    frames.push({ position, kind: 'node', name: `n${position}`, type: 'node.registered', projects: [], text: `id: ${position}\ndata: ${'x'.repeat(980)}\n\n` });
  }
  return frames;
}

async function openStream(res: Slow, drops: string[]): Promise<Stream> {
  const s = new Stream(hubStub(drops), res as unknown as ServerResponse, { user: 'admin', admin: true, projects: new Set() }, NO_FILTER, position);
  await s.replay();
  res.read();
  return s;
}

describe('an event stream and its bound on unread bytes', () => {
  it('keeps a consumer that reads every flush, each larger than the bound', async () => {
    const res = new Slow();
    const drops: string[] = [];
    const s = await openStream(res, drops);
    const first = position + 1;
    for (let i = 0; i < 5; i++) {
      s.offer(flushOf(3 * BOUND));
      expect(s.ended, `flush ${i}`).to.equal(false);
      res.read();
    }
    expect(drops).to.deep.equal([]);
    const ids = [...res.received.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).to.deep.equal(Array.from({ length: position - first + 1 }, (_, i) => first + i));
  });

  it('drops a consumer that stops reading at the next write past the bound, holding at most the bound and one write', async () => {
    const res = new Slow();
    const drops: string[] = [];
    const s = await openStream(res, drops);
    const flush = 3 * 1000;
    let writes = 0;
    while (!s.ended && writes < 100) {
      s.offer(flushOf(flush));
      writes++;
      expect(res.writableLength).to.be.at.most(BOUND + flush + 100);
    }
    expect(drops).to.deep.equal(['buffer']);
    expect(res.destroyed).to.equal(true);
    // 3,000 bytes unread after the first write, 6,000 after the second: the third is refused.
    expect(writes).to.equal(3);
  });

  it('holds a flush larger than the bound behind a replay, and drops the stream at the next flush if the replay is still behind', async () => {
    const res = new Slow();
    const drops: string[] = [];
    let release!: () => void;
    const waiting = new Promise<void>((r) => (release = r));
    const hub = {
      ...hubStub(drops),
      // The replay waits (its client reads slowly) while flushes come.
      framesAfter: async function* () {
        await waiting;
      },
    } as unknown as EventHub;
    const s = new Stream(hub, res as unknown as ServerResponse, { user: 'admin', admin: true, projects: new Set() }, NO_FILTER, position);
    const replayed = s.replay();
    const first = position + 1;
    s.offer(flushOf(3 * BOUND));
    expect(drops).to.deep.equal([]);
    release();
    await replayed;
    const ids = [...res.received.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).to.deep.equal(Array.from({ length: position - first + 1 }, (_, i) => first + i));
    // Behind a replay that does not end, the second such flush drops it.
    const never = { ...hubStub(drops), framesAfter: async function* () { await new Promise(() => undefined); } } as unknown as EventHub;
    const stuck = new Stream(never, res as unknown as ServerResponse, { user: 'admin', admin: true, projects: new Set() }, NO_FILTER, position);
    void stuck.replay();
    stuck.offer(flushOf(3 * BOUND));
    expect(drops).to.deep.equal([]);
    stuck.offer(flushOf(1000));
    expect(drops).to.deep.equal(['buffer']);
  });

  it('drops a consumer that stops reading on a heartbeat too', async () => {
    const res = new Slow();
    const drops: string[] = [];
    const s = await openStream(res, drops);
    s.offer(flushOf(2 * BOUND));
    s.write(': heartbeat\n\n');
    expect(drops).to.deep.equal(['buffer']);
  });
});
