/**
 * The kill -9 loop (bench/kill-loop.ts, `npm run bench:kill`) as a smoke run: a small world, 3
 * kills. It checks that no accepted operation is lost, that every port matches its nic, and that
 * the figures are printed; the figures themselves are the bench's (bench/README.md), never a
 * timed assertion here.
 */
import { expect } from 'chai';
import { killLoop } from '../../bench/kill-loop';

describe('bench/kill-loop.ts: the service killed with SIGKILL under clients (smoke run)', function () {
  this.timeout(120_000);

  it('loses no accepted operation across 3 kills, leaves every port matching its nic, and prints its figures', async () => {
    const lines: string[] = [];
    const r = await killLoop({ nodes: 4, switches: 2, kills: 3, delayMs: 50, minUpMs: 500, maxUpMs: 800, settleMs: 60_000, quietRestarts: 1, print: (l) => lines.push(l) });
    expect(r.restartsMs).to.have.length(3);
    expect(r.quietMs).to.have.length(1);
    expect(r.operations.length, 'operations accepted').to.be.above(4);
    expect(r.lost, 'operations not DONE or ERROR at the end').to.deep.equal([]);
    expect(r.done + r.errors).to.equal(r.operations.length);
    expect(r.mismatched, 'ports not matching their nic').to.deep.equal([]);
    for (const figure of ['restarts (spawn to a correct GET', 'restarts with no client running', 'operations accepted:', 'PENDING time (accepted_at to finished_at)', 'what its switch\'s queue explains', 'switch ports not matching their nic: 0']) {
      expect(lines.some((l) => l.includes(figure)), figure).to.equal(true);
    }
  });
});
