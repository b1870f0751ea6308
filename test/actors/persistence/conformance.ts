/**
 * The persistence engine contract as one suite, run against every engine
 * (see actors/persistence/engine.ts for the contract itself).
 */
import { expect } from 'chai';
import type { PersistenceEngine, PersistedEvent } from '../../../actors/persistence/engine';

const ev = (key: string, seq: number, data: unknown): PersistedEvent => ({ key, sequenceNumber: seq, data, tags: [], createdAt: 1_700_000_000_000 + seq });

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** What an engine with backup() needs from its test: a fresh folder path, and the engine opened on a copy. */
export interface BackupKit {
  freshPath(): string;
  openCopy(path: string): PersistenceEngine;
}

export function engineConformance(
  name: string,
  make: () => PersistenceEngine | Promise<PersistenceEngine>,
  reopen?: (old: PersistenceEngine) => Promise<PersistenceEngine>,
  backupKit?: BackupKit,
): void {
  describe(`PersistenceEngine conformance: ${name}`, () => {
    let engine: PersistenceEngine;
    const events = (key: string, offset?: number) => all(engine.events(key, offset));
    beforeEach(async () => { engine = await make(); });
    afterEach(async () => { await engine.close(); });

    it('replays persisted events of a key in sequence order', async () => {
      await engine.persist([ev('node:a', 2, { type: 'B' })]);
      await engine.persist([ev('node:a', 1, { type: 'A' })]);
      await engine.persist([ev('node:a', 3, { type: 'C' })]);
      expect((await events('node:a')).map((e) => (e.data as { type: string }).type)).to.deep.equal(['A', 'B', 'C']);
      expect((await events('node:a')).map((e) => e.sequenceNumber)).to.deep.equal([1, 2, 3]);
    });

    it('returns only events after the offset', async () => {
      for (let i = 1; i <= 5; i++) await engine.persist([ev('k', i, i)]);
      expect((await events('k', 2)).map((e) => e.data)).to.deep.equal([3, 4, 5]);
      expect(await events('k', 5)).to.deep.equal([]);
    });

    it('commits the events of one persist call together, across keys', async () => {
      await engine.persist([ev('nic:n/a', 1, 'a1'), ev('nic:n/a', 2, 'a2'), ev('node:n', 1, 'n1')]);
      expect((await events('nic:n/a')).map((e) => e.data)).to.deep.equal(['a1', 'a2']);
      expect(await engine.head('nic:n/a')).to.equal(2);
      expect(await engine.head('node:n')).to.equal(1);
      await engine.persist([]);
    });

    it('stores a batch whole or not at all: an event it cannot encode fails the call and leaves none of the batch', async () => {
      const told: PersistedEvent[] = [];
      const stop = engine.onCommit((evs) => told.push(...evs));
      // No engine can store it: a BigInt beyond 64 bits (msgpackr, JSON), a function (structuredClone).
      const unstorable = { huge: 2n ** 70n, fn: () => 1 };
      let failed: unknown;
      try {
        await engine.persist([ev('node:a', 1, 'a1'), ev('node:b', 1, unstorable), ev('node:c', 1, 'c1')]);
      } catch (err) {
        failed = err;
      }
      expect(failed, 'the call failed').to.be.instanceOf(Error);
      // A later batch durable: whatever the failed call had queued would be committed by now.
      await engine.persist([ev('node:d', 1, 'd1')]);
      for (const k of ['node:a', 'node:b', 'node:c']) {
        expect(await events(k), k).to.deep.equal([]);
        expect(await engine.head(k), k).to.equal(0);
      }
      expect(await all(engine.keys(''))).to.deep.equal(['node:d']);
      expect((await all(engine.history({}))).map((e) => e.key)).to.deep.equal(['node:d']);
      expect(told.map((e) => e.key)).to.deep.equal(['node:d']);
      stop();
      // The same batch, storable: stored whole.
      await engine.persist([ev('node:a', 1, 'a1'), ev('node:b', 1, 'b1'), ev('node:c', 1, 'c1')]);
      expect((await all(engine.history({}))).map((e) => e.key)).to.deep.equal(['node:c', 'node:b', 'node:a', 'node:d']);
    });

    it('gives back object keys exactly, "__proto__" and control characters included', async () => {
      const nics: Record<string, unknown> = {};
      for (const k of ['__proto__', '\u0001x', 'constructor', 'a']) Object.defineProperty(nics, k, { value: { k }, enumerable: true, writable: true, configurable: true });
      const data = { type: 'S', nics, list: [nics] };
      await engine.persist([ev('node:p', 1, data)]);
      await engine.takeSnapshot({ key: 'node:p', sequenceNumber: 1, data, createdAt: 1 });
      const back = [(await events('node:p'))[0].data, (await engine.latestSnapshot('node:p'))!.data] as { nics: object; list: object[] }[];
      for (const b of back) {
        expect(Object.keys(b.nics)).to.deep.equal(['__proto__', '\u0001x', 'constructor', 'a']);
        expect(Object.getPrototypeOf(b.nics)).to.equal(Object.prototype);
        expect(Object.getOwnPropertyDescriptor(b.nics, '__proto__')!.value).to.deep.equal({ k: '__proto__' });
        expect(Object.keys(b.list[0])).to.deep.equal(Object.keys(b.nics));
      }
    });

    it('keeps keys apart, including keys that are prefixes of each other', async () => {
      await engine.persist([ev('node:a', 1, 'a')]);
      await engine.persist([ev('node:ab', 1, 'ab')]);
      await engine.persist([ev('node:a:b', 1, 'a:b')]);
      expect((await events('node:a')).map((e) => e.data)).to.deep.equal(['a']);
      expect((await events('node:ab')).map((e) => e.data)).to.deep.equal(['ab']);
      expect(await all(engine.keys('node:'))).to.deep.equal(['node:a', 'node:a:b', 'node:ab']);
      expect(await all(engine.keys('node:a:'))).to.deep.equal(['node:a:b']);
      expect(await all(engine.keys('switch:'))).to.deep.equal([]);
    });

    it('keeps event metadata: key, timestamps and nested data', async () => {
      const data = { type: 'NodeRegistered', obm: { host: 'h', user: 'u' }, list: [1, 'x', null], by: 'admin' };
      await engine.persist([ev('node:m', 1, data)]);
      const [e] = await events('node:m');
      expect(e.key).to.equal('node:m');
      expect(e.createdAt).to.equal(1_700_000_000_001);
      expect(e.data).to.deep.equal(data);
    });

    it('does not let a caller change stored data by mutating what it persisted or read', async () => {
      const data = { list: [1] };
      await engine.persist([ev('m:1', 1, data)]);
      data.list.push(2);
      const [e] = await events('m:1');
      (e.data as { list: number[] }).list.push(3);
      expect((await events('m:1'))[0].data).to.deep.equal({ list: [1] });
    });

    it('tracks the head sequence number per key', async () => {
      expect(await engine.head('x')).to.equal(0);
      await engine.persist([ev('x', 1, 1)]);
      await engine.persist([ev('x', 2, 2)]);
      expect(await engine.head('x')).to.equal(2);
    });

    it('keeps the latest snapshot, and never lets an older one replace a newer one', async () => {
      expect(await engine.latestSnapshot('s')).to.equal(undefined);
      await engine.takeSnapshot({ key: 's', sequenceNumber: 3, data: { v: 3 }, createdAt: 3 });
      await engine.takeSnapshot({ key: 's', sequenceNumber: 5, data: { v: 5 }, createdAt: 5 });
      await engine.takeSnapshot({ key: 's', sequenceNumber: 4, data: { v: 4 }, createdAt: 4 });
      const snap = await engine.latestSnapshot('s');
      expect(snap?.sequenceNumber).to.equal(5);
      expect(snap?.data).to.deep.equal({ v: 5 });
    });

    it('stores a null snapshot (a deleted entity) as null', async () => {
      await engine.takeSnapshot({ key: 'gone', sequenceNumber: 2, data: null, createdAt: 1 });
      const snap = await engine.latestSnapshot('gone');
      expect(snap?.sequenceNumber).to.equal(2);
      expect(snap?.data).to.equal(null);
    });

    it('lists the journal newest first, limited, and reads it lazily', async () => {
      for (let i = 1; i <= 4; i++) await engine.persist([ev('j', i, { n: i })]);
      expect((await all(engine.journal('j', 2))).map((e) => e.sequenceNumber)).to.deep.equal([4, 3]);
      expect(await all(engine.journal('j', 10))).to.have.length(4);
      expect(await all(engine.journal('none', 10))).to.deep.equal([]);
      for await (const e of engine.journal('j', 10)) {
        expect(e.sequenceNumber).to.equal(4);
        break;
      }
    });

    it('recovers one key: its latest snapshot and only the events after it', async () => {
      expect(await engine.recover('node:none')).to.deep.equal({ key: 'node:none', snapshot: undefined, events: [] });
      for (let i = 1; i <= 5; i++) await engine.persist([ev('node:one', i, { i })]);
      expect((await engine.recover('node:one')).events.map((e) => e.sequenceNumber)).to.deep.equal([1, 2, 3, 4, 5]);
      await engine.takeSnapshot({ key: 'node:one', sequenceNumber: 4, data: { upTo: 4 }, createdAt: 9 });
      const got = await engine.recover('node:one');
      expect(got.snapshot).to.deep.equal({ key: 'node:one', sequenceNumber: 4, data: { upTo: 4 }, createdAt: 9 });
      expect(got.events.map((e) => [e.sequenceNumber, e.data])).to.deep.equal([[5, { i: 5 }]]);
      expect(got.events[0]).to.include({ key: 'node:one', createdAt: 1_700_000_000_005 });
      await engine.takeSnapshot({ key: 'node:one', sequenceNumber: 5, data: { upTo: 5 }, createdAt: 9 });
      expect((await engine.recover('node:one')).events).to.deep.equal([]);
    });

    it('recovers every key of a prefix in bulk: its latest snapshot and only the events after it', async () => {
      for (let i = 1; i <= 5; i++) await engine.persist([ev('node:r1', i, i)]);
      await engine.persist([ev('node:r2', 1, 'x')]);
      await engine.persist([ev('switch:s', 1, 's')]);
      await engine.takeSnapshot({ key: 'node:r1', sequenceNumber: 3, data: { upTo: 3 }, createdAt: 0 });
      const got = await all(engine.recoverAll('node:'));
      expect(got.map((g) => g.key)).to.deep.equal(['node:r1', 'node:r2']);
      expect(got[0].snapshot?.data).to.deep.equal({ upTo: 3 });
      expect(got[0].events.map((e) => e.data)).to.deep.equal([4, 5]);
      expect(got[1].snapshot).to.equal(undefined);
      expect(got[1].events.map((e) => e.data)).to.deep.equal(['x']);
    });

    it('recovers in bulk keys that are prefixes of one another, beside snapshotted ones, each with all its events and no other key\'s', async () => {
      const keys = ['node:a', 'node:a0', 'node:a/b', 'node:a/b/c', 'node:a b', 'node:a-', 'node:a\u00e9', 'node:a\u{1F600}', 'node:b', 'node:ba'];
      for (const [i, key] of keys.entries()) {
        for (let s = 1; s <= 1 + (i % 3); s++) await engine.persist([ev(key, s, `${key}#${s}`)]);
      }
      await engine.takeSnapshot({ key: 'node:a/b', sequenceNumber: 2, data: { upTo: 2 }, createdAt: 0 });
      const got = await all(engine.recoverAll('node:'));
      expect(got.map((g) => g.key).sort()).to.deep.equal([...keys].sort());
      for (const [i, key] of keys.entries()) {
        const g = got.find((x) => x.key === key)!;
        const want = Array.from({ length: 1 + (i % 3) }, (_, s) => `${key}#${s + 1}`);
        if (key === 'node:a/b') {
          expect(g.snapshot?.data, key).to.deep.equal({ upTo: 2 });
          expect(g.events.map((e) => e.data), key).to.deep.equal(want.slice(2));
        } else {
          expect(g.snapshot, key).to.equal(undefined);
          expect(g.events.map((e) => e.data), key).to.deep.equal(want);
          expect(g.events.every((e) => e.key === key)).to.equal(true);
        }
      }
    });

    const history = (q: Parameters<PersistenceEngine['history']>[0]) => all(engine.history(q));
    const pos = (e: { createdAt: number; key: string; sequenceNumber: number }) => `${e.createdAt} ${e.key} ${e.sequenceNumber}`;
    const at = (key: string, seq: number, createdAt: number, data: unknown = {}): PersistedEvent => ({ key, sequenceNumber: seq, data, tags: [], createdAt });

    it('lists every key\'s events newest first, in the one commit order, whatever their times', async () => {
      await engine.persist([at('node:a', 1, 100, { n: 'a1' })]);
      await engine.persist([at('nic:a/x', 1, 200), at('port:s/p', 1, 200)]);
      await engine.persist([at('node:a', 2, 200), at('node:a', 3, 200)]);
      await engine.persist([at('switch:s', 1, 50)]);
      await engine.persist([at('node:b', 1, 300, { n: 'b1' })]);
      const got = await history({});
      expect(got.map(pos)).to.deep.equal([
        '300 node:b 1', '50 switch:s 1', '200 node:a 3', '200 node:a 2', '200 port:s/p 1', '200 nic:a/x 1', '100 node:a 1',
      ]);
      const positions = got.map((e) => e.position!);
      for (let i = 1; i < positions.length; i++) expect(positions[i], 'positions fall, newest first').to.be.below(positions[i - 1]);
      expect(got[0].data).to.deep.equal({ n: 'b1' });
      expect(got[6].data).to.deep.equal({ n: 'a1' });
      expect(await all(engine.history({ prefix: 'nobody:' }))).to.deep.equal([]);
    });

    it('gives positions in commit order across concurrent writers, and tells commit listeners in that order once durable', async () => {
      const told: PersistedEvent[] = [];
      const stop = engine.onCommit((evs) => told.push(...evs));
      await Promise.all(Array.from({ length: 200 }, (_, i) => engine.persist([ev(`c:${i % 7}`, Math.floor(i / 7) + 1, i), ev(`d:${i}`, 1, i)])));
      stop();
      await engine.persist([ev('c:late', 1, 'unheard')]);
      expect(told).to.have.length(400);
      const ps = told.map((e) => e.position!);
      for (let i = 1; i < ps.length; i++) expect(ps[i], 'told in commit order').to.be.above(ps[i - 1]);
      // Each key's events in sequence order; a call's events side by side, in call order.
      for (let i = 0; i < told.length; i += 2) {
        expect(told[i].data).to.equal(told[i + 1].data);
        expect(told[i].key).to.match(/^c:/);
      }
      const fed = await all(engine.feed(0));
      expect(fed.map((e) => e.position)).to.deep.equal([...ps, fed.at(-1)!.position]);
      expect(fed.at(-1)!.data).to.equal('unheard');
      const seqs = new Map<string, number>();
      for (const e of fed) {
        expect(e.sequenceNumber, e.key).to.equal((seqs.get(e.key) ?? 0) + 1);
        seqs.set(e.key, e.sequenceNumber);
      }
      expect((await all(engine.feed(ps[397]))).map((e) => e.position)).to.deep.equal([ps[398], ps[399], fed.at(-1)!.position]);
      const b = await engine.bounds();
      expect(b.last).to.equal(fed.at(-1)!.position);
      expect(b.first).to.be.at.most(ps[0]);
      // The journal and the events of a key carry the same positions.
      const j = await all(engine.journal('c:3', 2));
      expect(j.map((e) => e.position)).to.deep.equal(fed.filter((e) => e.key === 'c:3').slice(-2).reverse().map((e) => e.position));
    });

    it('finds the position of a time: the events at or after it come after that position', async () => {
      expect(await engine.positionAt(0)).to.equal((await engine.bounds()).last);
      for (let i = 1; i <= 5; i++) await engine.persist([at(`t:${i}`, 1, i * 10), at(`u:${i}`, 1, i * 10)]);
      const fed = await all(engine.feed(0));
      const after = async (t: number) => (await all(engine.feed(await engine.positionAt(t)))).map((e) => e.createdAt);
      expect(await after(30)).to.deep.equal([30, 30, 40, 40, 50, 50]);
      expect(await after(25)).to.deep.equal([30, 30, 40, 40, 50, 50]);
      expect(await after(0)).to.deep.equal(fed.map((e) => e.createdAt));
      expect(await after(51)).to.deep.equal([]);
      // One millisecond over several commits, keys sorting against their order: the instant's
      // lowest position counts, not that of its first key.
      await engine.persist([at('z:1', 1, 60)]);
      await engine.persist([at('a:1', 1, 60), at('m:1', 1, 60)]);
      await engine.persist([at('b:1', 1, 61)]);
      expect((await all(engine.feed(await engine.positionAt(60)))).map((e) => e.key)).to.deep.equal(['z:1', 'a:1', 'm:1', 'b:1']);
      expect((await all(engine.history({ since: 60, until: 61 }))).map((e) => e.key)).to.deep.equal(['m:1', 'a:1', 'z:1']);
    });

    it('keeps marks beside the journal, outside it', async () => {
      expect(await engine.mark('webhook:w1')).to.equal(undefined);
      await engine.setMark('webhook:w1', { cursor: 12 });
      await engine.setMark('webhook:w2', 3);
      await engine.setMark('webhook:w1', { cursor: 13 });
      expect(await engine.mark('webhook:w1')).to.deep.equal({ cursor: 13 });
      expect(await engine.mark('webhook:w2')).to.equal(3);
      expect(await all(engine.keys(''))).to.deep.equal([]);
      expect((await engine.bounds()).last).to.equal(0);
    });

    it('filters the history by key prefix and time range (since inclusive, until exclusive)', async () => {
      for (let i = 1; i <= 6; i++) await engine.persist([at(`node:n${i % 2}`, Math.ceil(i / 2), i * 10), at(`user:u${i}`, 1, i * 10)]);
      expect((await history({ prefix: 'node:' })).map(pos)).to.deep.equal(['60 node:n0 3', '50 node:n1 3', '40 node:n0 2', '30 node:n1 2', '20 node:n0 1', '10 node:n1 1']);
      expect((await history({ prefix: 'node:n1' })).map(pos)).to.deep.equal(['50 node:n1 3', '30 node:n1 2', '10 node:n1 1']);
      expect((await history({ since: 30, until: 50 })).map(pos)).to.deep.equal(['40 user:u4 1', '40 node:n0 2', '30 user:u3 1', '30 node:n1 2']);
      expect((await history({ prefix: 'user:', since: 60 })).map(pos)).to.deep.equal(['60 user:u6 1']);
      expect(await history({ until: 10 })).to.deep.equal([]);
    });

    it('continues the history after a position, strictly, also within one instant', async () => {
      await engine.persist([at('a:1', 1, 5), at('a:2', 1, 5), at('a:3', 1, 5)]);
      await engine.persist([at('a:1', 2, 7)]);
      const first = await history({});
      expect(first.map(pos)).to.deep.equal(['7 a:1 2', '5 a:3 1', '5 a:2 1', '5 a:1 1']);
      expect((await history({ before: first[1].position })).map(pos)).to.deep.equal(['5 a:2 1', '5 a:1 1']);
      expect((await history({ before: first[3].position })).map(pos)).to.deep.equal([]);
      // A position above every stored one continues from the newest; until wins if lower.
      expect((await history({ before: first[0].position! + 1000 })).map(pos)).to.deep.equal(first.map(pos));
      expect((await history({ before: first[0].position, until: 6, prefix: 'a:2' })).map(pos)).to.deep.equal(['5 a:2 1']);
      // The same for one kind's prefix, with other kinds between.
      await engine.persist([at('b:1', 1, 8), at('c:1', 1, 8)]);
      await engine.persist([at('a:2', 2, 9), at('b:1', 2, 9)]);
      const kindA = await history({ prefix: 'a:' });
      expect(kindA.map(pos)).to.deep.equal(['9 a:2 2', '7 a:1 2', '5 a:3 1', '5 a:2 1', '5 a:1 1']);
      expect((await history({ prefix: 'a:', before: kindA[2].position })).map(pos)).to.deep.equal(['5 a:2 1', '5 a:1 1']);
      expect((await history({ prefix: 'a:', until: 7 })).map(pos)).to.deep.equal(['5 a:3 1', '5 a:2 1', '5 a:1 1']);
      expect((await history({ prefix: 'b:', since: 9 })).map(pos)).to.deep.equal(['9 b:1 2']);
      expect((await history({ prefix: 'c:', before: kindA[0].position })).map(pos)).to.deep.equal(['8 c:1 1']);
      expect(await history({ prefix: 'd:' })).to.deep.equal([]);
    });

    it('reads the history lazily, and sees events persisted while it is being read', async () => {
      for (let i = 1; i <= 50; i++) await engine.persist([at('k:x', i, 1_000 + i)]);
      const seen: number[] = [];
      for await (const e of engine.history({ prefix: 'k:' })) {
        seen.push(e.sequenceNumber);
        if (seen.length === 3) await engine.persist([at('k:y', 1, 5)]);
        if (seen.length === 10) break;
      }
      expect(seen).to.deep.equal([50, 49, 48, 47, 46, 45, 44, 43, 42, 41]);
      expect((await history({ prefix: 'k:y' })).map(pos)).to.deep.equal(['5 k:y 1']);
    });

    it('rewrites stored data in place: keys, sequence numbers, times, tags and history kept; nothing added', async () => {
      const tagged = (key: string, seq: number, createdAt: number, data: unknown): PersistedEvent => ({ key, sequenceNumber: seq, data, tags: ['t'], createdAt });
      await engine.persist([tagged('node:a', 1, 100, { type: 'R', password: 'plain-1' }), tagged('node:b', 1, 150, { type: 'R', password: 'plain-b' })]);
      await engine.persist([tagged('node:a', 2, 200, { type: 'S', n: 2 })]);
      await engine.takeSnapshot({ key: 'node:a', sequenceNumber: 2, data: { password: 'plain-snap' }, createdAt: 250 });
      const before = await history({});
      await engine.rewrite({
        events: [
          { key: 'node:a', sequenceNumber: 1, data: { type: 'R', password: { $sealed: 'one' } } },
          { key: 'node:b', sequenceNumber: 1, data: { type: 'R', password: { $sealed: 'b' }, __proto__x: 1 } },
          // not stored: never created
          { key: 'node:a', sequenceNumber: 9, data: { type: 'X' } },
          { key: 'node:zz', sequenceNumber: 1, data: { type: 'X' } },
        ],
        snapshots: [{ key: 'node:a', sequenceNumber: 2, data: { password: { $sealed: 'snap' } } }, { key: 'node:b', sequenceNumber: 1, data: { type: 'X' } }],
      });
      const a = await events('node:a');
      expect(a.map((e) => [e.sequenceNumber, e.createdAt, e.tags, e.data])).to.deep.equal([
        [1, 100, ['t'], { type: 'R', password: { $sealed: 'one' } }], [2, 200, ['t'], { type: 'S', n: 2 }],
      ]);
      expect((await events('node:b'))[0].data).to.deep.equal({ type: 'R', password: { $sealed: 'b' }, __proto__x: 1 });
      expect(await events('node:zz')).to.deep.equal([]);
      expect(await engine.head('node:a')).to.equal(2);
      expect(await all(engine.keys('node:'))).to.deep.equal(['node:a', 'node:b']);
      expect(await engine.latestSnapshot('node:b')).to.equal(undefined);
      expect((await engine.latestSnapshot('node:a'))?.data).to.deep.equal({ password: { $sealed: 'snap' } });
      expect((await engine.recover('node:a')).snapshot?.data).to.deep.equal({ password: { $sealed: 'snap' } });
      const after = await history({});
      expect(after.map(pos)).to.deep.equal(before.map(pos));
      expect(after.find((e) => e.key === 'node:a' && e.sequenceNumber === 1)?.data).to.deep.equal({ type: 'R', password: { $sealed: 'one' } });
      expect((await all(engine.journal('node:a', 5))).map((e) => e.data)).to.deep.equal([{ type: 'S', n: 2 }, { type: 'R', password: { $sealed: 'one' } }]);
      expect(JSON.stringify([a, after, await engine.latestSnapshot('node:a')])).to.not.match(/plain-/);
    });

    it('rewrites a snapshot only while it is still the one at that sequence number', async () => {
      await engine.persist([ev('node:s', 1, { v: 1 }), ev('node:s', 2, { v: 2 })]);
      await engine.takeSnapshot({ key: 'node:s', sequenceNumber: 2, data: { newer: true }, createdAt: 0 });
      await engine.rewrite({ events: [], snapshots: [{ key: 'node:s', sequenceNumber: 1, data: { older: true } }] });
      expect((await engine.latestSnapshot('node:s'))?.data).to.deep.equal({ newer: true });
    });

    it('compacts without losing anything, and takes writes after', async () => {
      for (let i = 1; i <= 30; i++) await engine.persist([ev(`node:c${i % 3}`, Math.ceil(i / 3), { i, password: `pw-${i}` })]);
      await engine.takeSnapshot({ key: 'node:c1', sequenceNumber: 5, data: { at: 5 }, createdAt: 0 });
      await engine.rewrite({ events: [{ key: 'node:c1', sequenceNumber: 1, data: { i: 1, password: { $sealed: 'x' } } }], snapshots: [] });
      const before = await history({});
      await engine.compact();
      expect((await history({})).map((e) => [pos(e), e.data])).to.deep.equal(before.map((e) => [pos(e), e.data]));
      expect((await engine.latestSnapshot('node:c1'))?.data).to.deep.equal({ at: 5 });
      await engine.persist([ev('node:c1', 11, { after: true })]);
      expect((await events('node:c1')).at(-1)?.data).to.deep.equal({ after: true });
      expect(await engine.head('node:c1')).to.equal(11);
    });

    it('prunes a key whole: its events leave every read, with its snapshot and the key itself', async () => {
      for (let i = 1; i <= 3; i++) await engine.persist([at('node:gone', i, 5_000 + 2 * i), at('node:kept', i, 5_001 + 2 * i)]);
      await engine.takeSnapshot({ key: 'node:gone', sequenceNumber: 2, data: { at: 2 }, createdAt: 0 });
      const gonePositions = (await events('node:gone')).map((e) => e.position!);
      expect(await engine.prune([{ key: 'node:gone', upTo: 3 }])).to.deep.equal({ events: 3, keys: 1 });
      expect(await events('node:gone')).to.deep.equal([]);
      expect(await engine.head('node:gone')).to.equal(0);
      expect(await engine.latestSnapshot('node:gone')).to.equal(undefined);
      expect(await all(engine.keys('node:'))).to.deep.equal(['node:kept']);
      expect(await all(engine.journal('node:gone', 10))).to.deep.equal([]);
      expect(await engine.recover('node:gone')).to.deep.equal({ key: 'node:gone', snapshot: undefined, events: [] });
      expect((await all(engine.recoverAll('node:'))).map((s) => s.key)).to.deep.equal(['node:kept']);
      expect((await history({})).map((e) => e.key)).to.deep.equal(['node:kept', 'node:kept', 'node:kept']);
      expect((await history({ prefix: 'node:' })).map((e) => e.sequenceNumber)).to.deep.equal([3, 2, 1]);
      expect((await all(engine.feed(0))).map((e) => e.key)).to.deep.equal(['node:kept', 'node:kept', 'node:kept']);
      // The time of a pruned event still bounds a listing.
      const kept = await events('node:kept');
      expect((await history({ since: 5_002, until: 5_006 })).map((e) => e.createdAt)).to.deep.equal([5_005, 5_003]);
      expect(await engine.positionAt(5_002)).to.be.below(kept[0].position!);
      // A stream cannot resume from before the last position removed.
      expect((await engine.bounds()).first).to.be.greaterThan(Math.max(...gonePositions));
      // The name is free again: its events start over.
      await engine.persist([at('node:gone', 1, 6_000, { again: true })]);
      expect((await events('node:gone')).map((e) => e.data)).to.deep.equal([{ again: true }]);
      expect((await events('node:gone'))[0].position).to.be.greaterThan(Math.max(...gonePositions, ...kept.map((e) => e.position!)));
    });

    it('prunes an earlier life of a key: what came after upTo stays, with the key and a later snapshot', async () => {
      for (let i = 1; i <= 6; i++) await engine.persist([at('node:life', i, 7_000 + i, { i })]);
      await engine.takeSnapshot({ key: 'node:life', sequenceNumber: 2, data: { at: 2 }, createdAt: 0 });
      expect(await engine.prune([{ key: 'node:life', upTo: 3 }])).to.deep.equal({ events: 3, keys: 0 });
      expect((await events('node:life')).map((e) => e.sequenceNumber)).to.deep.equal([4, 5, 6]);
      expect(await engine.head('node:life')).to.equal(6);
      expect(await engine.latestSnapshot('node:life'), 'a snapshot of what went goes with it').to.equal(undefined);
      expect((await engine.recover('node:life')).events.map((e) => e.sequenceNumber)).to.deep.equal([4, 5, 6]);
      await engine.takeSnapshot({ key: 'node:life', sequenceNumber: 5, data: { at: 5 }, createdAt: 0 });
      await engine.prune([{ key: 'node:life', upTo: 4 }, { key: 'node:none', upTo: 9 }]);
      expect((await engine.latestSnapshot('node:life'))?.data).to.deep.equal({ at: 5 });
      expect((await all(engine.journal('node:life', 10))).map((e) => e.sequenceNumber)).to.deep.equal([6, 5]);
      expect((await history({ prefix: 'node:' })).map((e) => e.sequenceNumber)).to.deep.equal([6, 5]);
    });

    it('prunes a key whose events all go while the newest one is the store\'s newest: positions still go on', async () => {
      await engine.persist([at('node:only', 1, 8_000)]);
      const [only] = await events('node:only');
      await engine.prune([{ key: 'node:only', upTo: 1 }]);
      const b = await engine.bounds();
      expect(b.first).to.equal(only.position! + 1);
      expect(b.last).to.be.at.least(only.position!);
      await engine.persist([at('node:next', 1, 8_001)]);
      expect((await events('node:next'))[0].position).to.be.greaterThan(only.position!);
    });

    if (reopen) {
      it('keeps what it pruned pruned across a close and reopen, and never gives its positions again', async () => {
        for (let i = 1; i <= 4; i++) await engine.persist([at(`node:p${i}`, 1, 9_000 + i)]);
        const top = (await events('node:p4'))[0].position!;
        await engine.prune([{ key: 'node:p3', upTo: 1 }, { key: 'node:p4', upTo: 1 }]);
        engine = await reopen(engine);
        expect(await all(engine.keys('node:p'))).to.deep.equal(['node:p1', 'node:p2']);
        expect((await engine.bounds()).first).to.equal(top + 1);
        await engine.persist([at('node:p5', 1, 9_010)]);
        expect((await events('node:p5'))[0].position).to.be.greaterThan(top);
      });

      it('keeps rewritten data across a close and reopen', async () => {
        await engine.persist([ev('node:r', 1, { password: 'plain-r' })]);
        await engine.rewrite({ events: [{ key: 'node:r', sequenceNumber: 1, data: { password: { $sealed: 'r' } } }], snapshots: [] });
        engine = await reopen(engine);
        expect((await events('node:r'))[0].data).to.deep.equal({ password: { $sealed: 'r' } });
      });

      it('keeps the history across a close and reopen', async () => {
        for (let i = 1; i <= 20; i++) await engine.persist([at(`node:h${i % 4}`, Math.ceil(i / 4), 2_000 + i)]);
        engine = await reopen(engine);
        const got = await history({ prefix: 'node:' });
        expect(got).to.have.length(20);
        expect(got.map((e) => e.createdAt)).to.deep.equal(Array.from({ length: 20 }, (_, i) => 2_020 - i));
      });

      it('finds every persisted event and snapshot after the engine is closed and reopened', async () => {
        for (let i = 1; i <= 50; i++) await engine.persist([ev(`node:n${i % 5}`, Math.ceil(i / 5), { i })]);
        await engine.takeSnapshot({ key: 'node:n1', sequenceNumber: 4, data: { at: 4 }, createdAt: 0 });
        engine = await reopen(engine);
        expect(await all(engine.keys('node:'))).to.have.length(5);
        expect(await events('node:n1')).to.have.length(10);
        expect(await engine.head('node:n3')).to.equal(10);
        expect((await engine.latestSnapshot('node:n1'))?.data).to.deep.equal({ at: 4 });
      });

      it('makes concurrent writes of many keys durable together', async () => {
        await Promise.all(Array.from({ length: 500 }, (_, i) => engine.persist([ev(`k:${i}`, 1, i)])));
        engine = await reopen(engine);
        expect(await all(engine.keys('k:'))).to.have.length(500);
      });
    }

    it('reports its size when it can (stats is optional): a number of bytes that grows with what it holds', async function () {
      if (!engine.stats) this.skip();
      const before = await engine.stats!();
      expect(before.sizeBytes).to.be.a('number').and.be.at.least(0);
      await Promise.all(Array.from({ length: 2000 }, (_, i) => engine.persist([ev(`big:${i}`, 1, 'x'.repeat(512))])));
      const after = await engine.stats!();
      expect(after.sizeBytes + (after.usedBytes ?? 0)).to.be.greaterThan(before.sizeBytes + (before.usedBytes ?? 0));
      if (after.usedBytes !== undefined) expect(after.usedBytes).to.be.at.most(after.sizeBytes);
    });

    if (backupKit) {
      it('backs up online: the copy holds every event persisted before the backup began, and opens as a store', async function () {
        this.timeout(30_000);
        const acked: string[] = [];
        let writing = true;
        let n = 0;
        const writer = (async () => {
          while (writing) {
            const key = `node:w${n++}`;
            await engine.persist([ev(key, 1, { n })]);
            acked.push(key);
          }
        })();
        while (acked.length < 200) await new Promise((r) => setTimeout(r, 5));
        const before = [...acked];
        const path = backupKit.freshPath();
        await engine.backup!(path);
        writing = false;
        await writer;
        await engine.backup!(path).then(() => expect.fail('a backup over an existing path'), (err: Error) => expect(err.message).to.match(/exists/));
        const copy = backupKit.openCopy(path);
        try {
          const keys = new Set(await all(copy.keys('node:w')));
          for (const k of before) expect(keys.has(k), k).to.equal(true);
          expect((await all(copy.history({ prefix: 'node:w' }))).length).to.equal(keys.size);
          await copy.persist([ev('node:after', 1, 'x')]);
          expect(await copy.head('node:after')).to.equal(1);
          expect(await engine.head('node:after'), 'the copy is a store of its own').to.equal(0);
        } finally {
          await copy.close();
        }
      });
    }
  });
}
