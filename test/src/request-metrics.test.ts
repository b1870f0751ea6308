/**
 * The request metrics counted in plain numbers (src/request-metrics.ts) show what prom-client's
 * own Counter and Histogram show for the same answers: the scrape's text is compared whole.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { RequestMetrics } from '../../src/request-metrics';

const BUCKETS = [0.001, 0.01, 0.1, 1];
const COUNT = { name: 'x_requests_total', help: 'requests' };
const LATENCY = { name: 'x_request_duration_seconds', help: 'durations', buckets: BUCKETS };

/** As src/metrics.ts labelled them through prom-client: /v0 routes under their route's label. */
function label(route: string | undefined): string {
  return route === undefined ? 'unmatched' : route === '/v0' ? '/' : route.startsWith('/v0/') ? route.slice(3) : route;
}

describe('request metrics counted in plain numbers', () => {
  it('scrape as prom-client\'s Counter and Histogram would, /v0 routes merged into their route', async () => {
    const answer = fc.record({
      route: fc.constantFrom(undefined, '/', '/v0', '/node/:node', '/v0/node/:node', '/nodes/:is_free'),
      method: fc.constantFrom('GET', 'PUT', 'DELETE'),
      status: fc.constantFrom(200, 202, 400, 401, 404, 503),
      // on and around the bounds too: a bound is in its own bucket (le)
      seconds: fc.oneof(fc.constantFrom(0, ...BUCKETS, 5), fc.double({ min: 0, max: 5, noNaN: true })),
    });
    await fc.assert(fc.asyncProperty(fc.array(answer, { maxLength: 60 }), async (answers) => {
      const ours = new Registry();
      const theirs = new Registry();
      const m = new RequestMetrics(ours, COUNT, LATENCY);
      const c = new Counter({ ...COUNT, labelNames: ['route', 'method', 'status'], registers: [theirs] });
      const h = new Histogram({ ...LATENCY, labelNames: ['route', 'method'], registers: [theirs] });
      for (const a of answers) {
        m.record(a.route, a.method, a.status, a.seconds);
        c.labels(label(a.route), a.method, String(a.status)).inc();
        h.labels(label(a.route), a.method).observe(a.seconds);
      }
      const lines = async (r: Registry) => (await r.metrics()).split('\n').sort();
      expect(await lines(ours)).to.deep.equal(await lines(theirs));
    }), { numRuns: 200 });
  });
});
