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

export function engineConformance(
  name: string,
  make: () => PersistenceEngine | Promise<PersistenceEngine>,
  reopen?: (old: PersistenceEngine) => Promise<PersistenceEngine>,
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

    if (reopen) {
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
  });
}
