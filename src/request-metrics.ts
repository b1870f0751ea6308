/**
 * The two metrics every HTTP answer moves (src/metrics.ts names them: the requests by route,
 * method and status, and their durations by route and method), counted in plain numbers and
 * handed to prom-client's registry only when it is scraped. prom-client's label children validate and hash their labels
 * on each inc() and observe(); on a read of the read model that was a measurable part of the
 * request's cost (bench/README.md, Per-request speed, second round). What the scrape shows is
 * the same as prom-client's Counter and Histogram showed.
 */
import type { Registry } from 'prom-client';

interface Latency { count: number; sum: number; /** per bucket, not cumulative; the last is +Inf's own */ buckets: number[] }
interface PerMethod { latency: Latency; statuses: Map<number, number> }
interface PerRoute { methods: Map<string, PerMethod> }

/** One value of a metric as prom-client's registry formats it. */
interface Value { labels: Record<string, string | number>; value: number; metricName?: string }

/** The route label of the answers node's HTTP parser gave (a route's label starts with `/`). */
const UNREAD = 'unread';

export class RequestMetrics {
  /** by the route's label: `/v0/x` and `/x` are one route, counted in one place in the order answered (as prom-client adds) */
  private readonly byLabel = new Map<string, PerRoute>();
  /** by the route's pattern as fastify gives it ('' when no route matched): its label's figures */
  private readonly routes = new Map<string, PerRoute>();

  private readonly bounds: readonly number[];
  private readonly latencyName: string;

  /** `count`: the counter by route, method and status; `latency`: the histogram by route and method. */
  constructor(registry: Registry, count: { name: string; help: string }, latency: { name: string; help: string; buckets: readonly number[] }) {
    this.bounds = latency.buckets;
    this.latencyName = latency.name;
    // Objects of prom-client's metric shape (name, help, type, get()): its registry formats them.
    const metric = ({ name, help }: { name: string; help: string }, type: string, fill: (values: Value[]) => void) => ({
      name, help, type, aggregator: 'sum',
      get: () => {
        const values: Value[] = [];
        fill(values);
        return { name, help, type, aggregator: 'sum', values };
      },
    });
    registry.registerMetric(metric(count, 'counter', (v) => this.counts(v)) as never);
    registry.registerMetric(metric(latency, 'histogram', (v) => this.latencies(v)) as never);
  }

  /** One answer. `route` is the call's pattern (undefined: no route matched). */
  record(route: string | undefined, method: string, status: number, seconds: number): void {
    const key = route ?? '';
    let r = this.routes.get(key);
    if (!r) {
      const label = route === undefined ? 'unmatched' : route === '/v0' ? '/' : route.startsWith('/v0/') ? route.slice(3) : route;
      r = this.byLabel.get(label);
      if (!r) this.byLabel.set(label, (r = { methods: new Map() }));
      this.routes.set(key, r);
    }
    const l = this.count(r, method, status).latency;
    l.count++;
    l.sum += seconds;
    let i = 0;
    while (i < this.bounds.length && seconds > this.bounds[i]) i++;
    l.buckets[i]++;
  }

  /**
   * One answer node's HTTP parser gave (src/request-body.ts, clientError: 408, 431, 400) to a
   * request no route saw whole: counted under the route `unread`, with no duration (its start
   * is not known when its headers never arrived).
   */
  unread(method: string, status: number): void {
    let r = this.byLabel.get(UNREAD);
    if (!r) this.byLabel.set(UNREAD, (r = { methods: new Map() }));
    this.count(r, method, status);
  }

  private count(r: PerRoute, method: string, status: number): PerMethod {
    let m = r.methods.get(method);
    if (!m) r.methods.set(method, (m = { latency: { count: 0, sum: 0, buckets: new Array(this.bounds.length + 1).fill(0) }, statuses: new Map() }));
    m.statuses.set(status, (m.statuses.get(status) ?? 0) + 1);
    return m;
  }

  private counts(values: Value[]): void {
    for (const [route, r] of this.byLabel) {
      for (const [method, m] of r.methods) {
        for (const [status, n] of m.statuses) values.push({ labels: { route, method, status: String(status) }, value: n });
      }
    }
  }

  private latencies(values: Value[]): void {
    const name = this.latencyName;
    for (const [route, r] of this.byLabel) {
      for (const [method, { latency }] of r.methods) {
        if (!latency.count) continue;
        let acc = 0;
        for (let i = 0; i <= this.bounds.length; i++) {
          acc += latency.buckets[i];
          values.push({ labels: { le: i < this.bounds.length ? this.bounds[i] : '+Inf', route, method }, value: acc, metricName: `${name}_bucket` });
        }
        values.push({ labels: { route, method }, value: latency.sum, metricName: `${name}_sum` });
        values.push({ labels: { route, method }, value: latency.count, metricName: `${name}_count` });
      }
    }
  }
}
