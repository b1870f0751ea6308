/**
 * The runtime bench (bench/runtime.ts) compares like with like, and its probes show the semantic
 * differences docs/design.md states: hilt's runtime writes a decision's events in one write,
 * recovers an actor in one read and answers every waiting ask when an actor faults; nact writes
 * each event on its own, recovers in two reads and leaves waiting asks to their timeouts.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { freshStore, msUntilWaitingAsksAnswered, readsPerRecovery, RUNTIMES, writesPerTwoEventDecision } from '../../bench/runtime';

describe('bench/runtime.ts: hilt and nact on one workload', () => {
  for (const name of ['hilt', 'nact'] as const) {
    it(`${name}: an operation is four durable commits, node, nic, port and nic again`, async () => {
      const store = freshStore();
      try {
        const w = RUNTIMES[name](store.count);
        for (let round = 0; round < 3; round++) await Promise.all([0, 1, 2, 3, 4].map((i) => w.op(i)));
        await w.close();
        expect(store.count.persists).to.equal(15 * 4);
        for (let i = 0; i < 5; i++) {
          expect(await store.engine.head(`node:n${i}`), `node:n${i}`).to.equal(3);
          expect(await store.engine.head(`nic:n${i}/eth0`), `nic:n${i}/eth0`).to.equal(6);
          expect(await store.engine.head(`port:sw/${i}`), `port:sw/${i}`).to.equal(3);
        }
      } finally {
        await store.done();
      }
    });
  }

  it('one atomic write per decision: hilt writes two events once, nact twice', async () => {
    expect(await writesPerTwoEventDecision('hilt')).to.equal(1);
    expect(await writesPerTwoEventDecision('nact')).to.equal(2);
  });

  it('recovery in one read: hilt reads once (recover), nact twice (latestSnapshot, then events)', async () => {
    expect(await readsPerRecovery('hilt')).to.equal(1);
    expect(await readsPerRecovery('nact')).to.equal(2);
  });

  it('a fault answers every waiting ask in hilt; in nact they wait for their own timeouts', async () => {
    expect((await msUntilWaitingAsksAnswered('hilt', 60_000)).answered).to.equal(4);
    // nact's callers hear nothing from the actor: each gets its query's own timeout.
    const nact = await msUntilWaitingAsksAnswered('nact', 300);
    expect(nact.answered).to.equal(0);
    expect(nact.ms).to.be.at.least(300);
  });

  it("the lines of nact's source that docs/design.md quotes are those of the installed nact", () => {
    const source = (file: string) => readFileSync(require.resolve(`nact/lib/${file}`), 'utf8');
    // every message on the next turn of the event loop; a query left to its own timeout
    expect(source('actor.js')).to.include('this.immediate = setImmediate(async () => {').and.include("deferred.reject(new Error('Query Timeout'))");
    // one event per write; recovery in two reads
    expect(source('persistence/persistent-actor.js')).to.include('await (this.persistenceEngine.persist(persistedEvent').and.include('this.persistenceEngine.latestSnapshot(this.key)');
  });
});
