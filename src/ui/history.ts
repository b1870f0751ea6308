/**
 * The dashboard's pictures over time (issue 26): samples of the service's own metrics, every
 * 10 s for the last hour and every minute for the last day, kept in memory (a restart starts
 * them afresh). Each sample holds the health figures (request and 5xx rates, device queues,
 * pending operations, memory) and, per switch, the network operations finished since the last
 * sample, how many failed and their mean latency, read from the Prometheus counters and
 * histogram the service keeps anyway (hilt_network_operations_finished_total,
 * hilt_network_operation_duration_seconds).
 */
import { dict } from '../dict';
import type { Metrics } from '../metrics';

export interface Sample {
  /** ms */
  at: number;
  requestsPerSecond: number;
  errorsPerSecond: number;
  queues: { switch: number; obm: number; headnode: number };
  pending: number;
  memoryMiB: number;
  /** switch → operations finished since the previous sample, failures among them, mean seconds */
  switches: Record<string, { finished: number; failed: number; meanSeconds: number | null }>;
}

export interface HistorySources {
  metrics: Metrics;
  queues(): { switch: number; obm: number; headnode: number };
  pending(): number;
}

interface Totals { finished: number; failed: number; seconds: number; count: number }

const HOUR = { everyMs: 10_000, keep: 360 };
const DAY = { everyMs: 60_000, keep: 1440 };

export class UiHistory {
  readonly hour: Sample[] = [];
  readonly day: Sample[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  /** the cumulative figures at each series' last sample */
  private readonly last = new Map<Sample[], Map<string, Totals>>();

  constructor(private readonly src: HistorySources) {}

  start(): this {
    for (const [series, spec] of [[this.hour, HOUR], [this.day, DAY]] as const) {
      void this.sample(series, spec.keep);
      const t = setInterval(() => void this.sample(series, spec.keep), spec.everyMs);
      t.unref();
      this.timers.push(t);
    }
    return this;
  }

  stop(): void {
    for (const t of this.timers.splice(0)) clearInterval(t);
  }

  /** Per switch, the cumulative operation figures of the service's metrics. */
  private async totals(): Promise<Map<string, Totals>> {
    const out = new Map<string, Totals>();
    const of = (sw: string) => out.get(sw) ?? out.set(sw, { finished: 0, failed: 0, seconds: 0, count: 0 }).get(sw)!;
    const registry = this.src.metrics.registry;
    const finished = await registry.getSingleMetric('hilt_network_operations_finished_total')?.get();
    for (const v of finished?.values ?? []) {
      const t = of(String(v.labels.switch));
      t.finished += v.value;
      if (v.labels.status === 'ERROR') t.failed += v.value;
    }
    const seconds = await registry.getSingleMetric('hilt_network_operation_duration_seconds')?.get();
    for (const v of seconds?.values ?? []) {
      const name = (v as { metricName?: string }).metricName ?? '';
      if (name.endsWith('_sum')) of(String(v.labels.switch)).seconds += v.value;
      else if (name.endsWith('_count')) of(String(v.labels.switch)).count += v.value;
    }
    return out;
  }

  async sample(series: Sample[], keep: number, now = Date.now()): Promise<Sample> {
    const totals = await this.totals();
    const before = this.last.get(series);
    this.last.set(series, totals);
    const switches: Sample['switches'] = dict();
    for (const [sw, t] of totals) {
      const b = before?.get(sw) ?? (before ? { finished: 0, failed: 0, seconds: 0, count: 0 } : t);
      const count = t.count - b.count;
      switches[sw] = { finished: t.finished - b.finished, failed: t.failed - b.failed, meanSeconds: count > 0 ? (t.seconds - b.seconds) / count : null };
    }
    const rates = this.src.metrics.rates(now);
    const s: Sample = {
      at: now, requestsPerSecond: rates.perSecond60s, errorsPerSecond: rates.errorsPerSecond60s,
      queues: this.src.queues(), pending: this.src.pending(), memoryMiB: Math.round(process.memoryUsage().rss / 2 ** 20), switches,
    };
    series.push(s);
    if (series.length > keep) series.splice(0, series.length - keep);
    return s;
  }
}
