/**
 * CI smoke run of bench/churn.ts (issue 27 item 6): tiny counts, checking that the scenario works
 * and gives its figures (never timed): retention removes every event of every round's deleted
 * nodes, and the store with it ends smaller than the one without.
 */
import { expect } from 'chai';
import { churn } from '../../bench/churn';

describe('bench/churn.ts: journal retention under churn (smoke run)', function () {
  this.timeout(60_000);

  it('runs its rounds with and without retention and reports sizes and read latencies', async () => {
    const lines: string[] = [];
    const f = await churn({ nodes: 150, rounds: 2, log: (l) => lines.push(l) });
    expect(f.without.map((r) => r.removed)).to.deep.equal([0, 0]);
    expect(f.with.map((r) => r.removed)).to.deep.equal([300, 300]);
    expect(f.without[1].usedBytes, 'without retention the store grows').to.be.greaterThan(f.without[0].usedBytes);
    expect(f.with[1].usedBytes, 'with retention it ends smaller').to.be.lessThan(f.without[1].usedBytes);
    for (const s of [f.idle, f.pruning]) {
      expect(s.n).to.be.greaterThan(0);
      expect(s.p99).to.be.a('number').and.be.at.least(s.p50);
    }
    expect(lines).to.have.length(4);
  });
});
