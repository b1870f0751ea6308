/**
 * The name rule's bound (src/schemas/common.ts: 255 bytes of UTF-8) keeps every storage key
 * built from names within LMDB's key limit and PostgreSQL's index entry limit: the worst names of
 * every kind, escaped as actor ids escape them, go through every call of both engines, and the
 * mock switches' key.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbPersistenceEngine } from '../../../actors/persistence/lmdb';
import { migrateDatabase, PostgresPersistenceEngine } from '../../../actors/persistence/postgres';
import type { PersistenceEngine } from '../../../actors/persistence/engine';
import { freshDatabase } from '../../helpers/postgres';
import { nicId, portId } from '../../../actors/ids';
import { nameProblem, NAME_MAX_BYTES } from '../../../src/schemas/common';
import { MockSwitchDriver } from '../../../drivers/switch/mock';

/** The longest names, and those whose escaping grows most (`%` and `/` become three bytes). */
const WORST = ['%'.repeat(255), '/'.repeat(255), 'x'.repeat(255), '😀'.repeat(63) + 'xxx', 'é'.repeat(127) + 'x', '%/'.repeat(127) + '%'];

describe('storage keys built from the longest names fit LMDB and PostgreSQL', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-keys-')); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('every worst-case name is a name (and one byte more is not)', () => {
    for (const n of WORST) {
      expect(Buffer.byteLength(n)).to.equal(NAME_MAX_BYTES);
      expect(nameProblem(n), n.slice(0, 10)).to.equal(null);
      expect(nameProblem(n + 'x')).to.match(/at most 255 bytes/);
    }
  });

  const engines: [string, () => Promise<PersistenceEngine>][] = [
    ['LMDB', async () => new LmdbPersistenceEngine(join(dir, 'store'), { mapSizeGb: 1 })],
    // PostgreSQL's b-tree indexes bound an entry to about 2.7 KB: the keys and the journal's time indexes must fit.
    ['PostgreSQL', async () => {
      const url = await freshDatabase();
      await migrateDatabase({ url });
      return new PostgresPersistenceEngine({ url, poolSize: 2 });
    }],
  ];
  for (const [engineName, open] of engines) it(`persists, reads, snapshots, lists, recovers and lists by time the keys of every kind (${engineName})`, async () => {
    const engine = await open();
    const keys: string[] = [];
    for (const a of WORST) {
      for (const kind of ['project', 'node', 'switch', 'network', 'user', 'headnode']) keys.push(`${kind}:${a}`);
      for (const b of WORST) keys.push(`nic:${nicId(a, b)}`, `port:${portId(a, b)}`);
    }
    const longest = Math.max(...keys.map((k) => Buffer.byteLength(k)));
    expect(longest).to.equal(5 + 3 * 255 + 1 + 3 * 255); // `port:` and two escaped names
    for (const key of keys) {
      await engine.persist([{ key, sequenceNumber: 1, data: { type: 'X', key }, tags: [], createdAt: 1 }]);
      await engine.takeSnapshot({ key, sequenceNumber: 1, data: { s: key }, createdAt: 1 });
    }
    for (const key of keys.slice(0, 50)) {
      expect(await engine.head(key)).to.equal(1);
      expect((await engine.latestSnapshot(key))?.data).to.deep.equal({ s: key });
      const evs = [];
      for await (const e of engine.events(key)) evs.push(e.data);
      expect(evs).to.deep.equal([{ type: 'X', key }]);
      for await (const j of engine.journal(key, 5)) expect(j.data).to.deep.equal({ type: 'X', key });
    }
    let n = 0;
    for await (const k of engine.keys('nic:')) {
      expect(keys).to.include(k);
      n++;
    }
    expect(n).to.equal(WORST.length ** 2);
    let recovered = 0;
    for await (const s of engine.recoverAll('port:')) {
      expect(s.snapshot?.data).to.deep.equal({ s: s.key });
      recovered++;
    }
    expect(recovered).to.equal(WORST.length ** 2);
    let listed = 0;
    for await (const e of engine.history({ prefix: 'port:' })) {
      expect(e.key.startsWith('port:')).to.equal(true);
      listed++;
    }
    expect(listed).to.equal(WORST.length ** 2);
    await engine.close();
  });

  it('the mock switches keep ports of the longest switch and port names', async () => {
    const sw = new MockSwitchDriver({ path: join(dir, 'mock.d') });
    const session = await sw.open({ name: WORST[0], type: 'mock', fields: {} }, new AbortController().signal);
    await session.setNative(WORST[3], 1000);
    expect(sw.port(WORST[0], WORST[3])).to.deep.equal({ native: 1000, tagged: [] });
    await sw.close();
  });
});
