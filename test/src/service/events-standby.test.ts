/**
 * The event stream on a standby pair (PostgreSQL): the active serves streams, a standby answers
 * 503 (so clients reconnect to the active, through the load balancer), and after a hand-over a
 * client resumes on the new active from its last id, without loss or repeat.
 */
import { expect } from 'chai';
import { ADMIN, must, obm, startTestServer, stopTestServer } from '../../helpers/server';
import { freshDatabase } from '../../helpers/postgres';
import { SseStream } from '../../helpers/sse';

describe('GET /events on a standby pair', function () {
  this.timeout(60_000);

  it('is served by the active; a standby answers 503; a client resumes on the new active after a hand-over', async () => {
    const url = await freshDatabase();
    const pg = (name: string) => ({ storage: 'postgres' as const, databaseUrl: url, leaseTtlMs: 2000, instanceName: name });
    const a = await startTestServer(pg('a'));
    const b = await startTestServer(pg('b'), { waitForActive: false });
    expect(b.role).to.equal('standby');
    const onB = new SseStream(`${b.url}/events`, { as: ADMIN });
    expect(await onB.answered()).to.equal(503);
    expect(onB.headers['retry-after']).to.equal('2');
    const s = new SseStream(`${a.url}/events?kind=node`, { as: ADMIN });
    expect(await s.answered()).to.equal(200);
    for (let i = 0; i < 5; i++) await must(a.api.put(`/node/sa${i}`, { obm: obm() }));
    await s.count(5);
    // The active stops: its streams end, and the standby takes over.
    await stopTestServer(a);
    await s.ended;
    await b.whenActive();
    for (let i = 0; i < 5; i++) await must(b.api.put(`/node/sb${i}`, { obm: obm() }));
    const again = new SseStream(`${b.url}/events?kind=node`, { as: ADMIN, lastEventId: s.events.at(-1)!.id });
    await again.count(5);
    const names = [...s.events, ...again.events].map((e) => e.data.name);
    expect(names).to.deep.equal([0, 1, 2, 3, 4].map((i) => `sa${i}`).concat([0, 1, 2, 3, 4].map((i) => `sb${i}`)));
    const ids = [...s.events, ...again.events].map((e) => Number(e.id));
    for (let i = 1; i < ids.length; i++) expect(ids[i]).to.be.above(ids[i - 1]);
    again.close();
    await stopTestServer(b);
  });
});
