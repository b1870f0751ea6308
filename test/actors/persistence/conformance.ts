/**
 * The persistence engine contract as one suite, run against every engine
 * (see actors/persistence/engine.ts for the contract itself).
 */
import { expect } from 'chai';
import type { PersistenceEngine, PersistedEvent } from '../../../actors/persistence/engine';

const ev = (key: string, seq: number, data: unknown): PersistedEvent => ({ key, sequenceNumber: seq, data, tags: [], createdAt: 1_700_000_000_000 + seq });

export function engineConformance(name: string, make: () => PersistenceEngine, reopen?: (old: PersistenceEngine) => Promise<PersistenceEngine>): void {
  describe(`PersistenceEngine conformance: ${name}`, () => {
    let engine: PersistenceEngine;
    beforeEach(() => { engine = make(); });
    afterEach(async () => { await engine.close(); });

    it('replays persisted events of a key in sequence order', async () => {
      await engine.persist(ev('node:a', 2, { type: 'B' }));
      await engine.persist(ev('node:a', 1, { type: 'A' }));
      await engine.persist(ev('node:a', 3, { type: 'C' }));
      expect(engine.events('node:a').map((e) => (e.data as { type: string }).type)).to.deep.equal(['A', 'B', 'C']);
      expect(engine.events('node:a').map((e) => e.sequenceNumber)).to.deep.equal([1, 2, 3]);
    });

    it('returns only events after the offset, and at most limit of them', async () => {
      for (let i = 1; i <= 5; i++) await engine.persist(ev('k', i, i));
      expect(engine.events('k', 2).map((e) => e.data)).to.deep.equal([3, 4, 5]);
      expect(engine.events('k', 2, 2).map((e) => e.data)).to.deep.equal([3, 4]);
      expect(engine.events('k', 5)).to.deep.equal([]);
    });

    it('gives back object keys exactly, "__proto__" and control characters included', async () => {
      const nics: Record<string, unknown> = {};
      for (const k of ['__proto__', '\u0001x', 'constructor', 'a']) Object.defineProperty(nics, k, { value: { k }, enumerable: true, writable: true, configurable: true });
      const data = { type: 'S', nics, list: [nics] };
      await engine.persist(ev('node:p', 1, data));
      await engine.takeSnapshot({ key: 'node:p', sequenceNumber: 1, data, createdAt: 1 });
      const back = [engine.events('node:p')[0].data, (await engine.latestSnapshot('node:p'))!.data] as { nics: object; list: object[] }[];
      for (const b of back) {
        expect(Object.keys(b.nics)).to.deep.equal(['__proto__', '\u0001x', 'constructor', 'a']);
        expect(Object.getPrototypeOf(b.nics)).to.equal(Object.prototype);
        expect(Object.getOwnPropertyDescriptor(b.nics, '__proto__')!.value).to.deep.equal({ k: '__proto__' });
        expect(Object.keys(b.list[0])).to.deep.equal(Object.keys(b.nics));
      }
    });

    it('keeps keys apart, including keys that are prefixes of each other', async () => {
      await engine.persist(ev('node:a', 1, 'a'));
      await engine.persist(ev('node:ab', 1, 'ab'));
      await engine.persist(ev('node:a:b', 1, 'a:b'));
      expect(engine.events('node:a').map((e) => e.data)).to.deep.equal(['a']);
      expect(engine.events('node:ab').map((e) => e.data)).to.deep.equal(['ab']);
      expect(engine.keys('node:')).to.deep.equal(['node:a', 'node:a:b', 'node:ab']);
      expect(engine.keys('switch:')).to.deep.equal([]);
    });

    it('keeps event metadata: key, timestamps and nested data', async () => {
      const data = { type: 'NodeRegistered', obm: { host: 'h', user: 'u' }, list: [1, 'x', null], by: 'admin' };
      await engine.persist(ev('node:m', 1, data));
      const [e] = engine.events('node:m');
      expect(e.key).to.equal('node:m');
      expect(e.createdAt).to.equal(1_700_000_000_001);
      expect(e.data).to.deep.equal(data);
    });

    it('tracks the head sequence number per key', async () => {
      expect(engine.head('x')).to.equal(0);
      await engine.persist(ev('x', 1, 1));
      await engine.persist(ev('x', 2, 2));
      expect(engine.head('x')).to.equal(2);
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

    it('lists the journal newest first, limited', async () => {
      for (let i = 1; i <= 4; i++) await engine.persist(ev('j', i, { n: i }));
      expect(Array.from(engine.journal('j', 2)).map((e) => e.sequenceNumber)).to.deep.equal([4, 3]);
      expect(Array.from(engine.journal('j', 10))).to.have.length(4);
      expect(Array.from(engine.journal('none', 10))).to.deep.equal([]);
    });

    if (reopen) {
      it('finds every persisted event and snapshot after the engine is closed and reopened', async () => {
        for (let i = 1; i <= 50; i++) await engine.persist(ev(`node:n${i % 5}`, Math.ceil(i / 5), { i }));
        await engine.takeSnapshot({ key: 'node:n1', sequenceNumber: 4, data: { at: 4 }, createdAt: 0 });
        engine = await reopen(engine);
        expect(engine.keys('node:')).to.have.length(5);
        expect(engine.events('node:n1')).to.have.length(10);
        expect(engine.head('node:n3')).to.equal(10);
        expect((await engine.latestSnapshot('node:n1'))?.data).to.deep.equal({ at: 4 });
      });

      it('makes concurrent writes of many keys durable together', async () => {
        await Promise.all(Array.from({ length: 500 }, (_, i) => engine.persist(ev(`k:${i}`, 1, i))));
        engine = await reopen(engine);
        expect(engine.keys('k:')).to.have.length(500);
      });
    }
  });
}
