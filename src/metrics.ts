/**
 * The service's metrics, in Prometheus's text format at GET /metrics (src/routes/metrics.ts).
 * This is the only module that knows prom-client: the actor world reports through the hooks of
 * actors/telemetry.ts, which this class implements; the HTTP layer reports each answer through
 * request(); gauges of what is there now (live actors, mailboxes, pending operations, queues,
 * the store's size) are read when Prometheus scrapes. Each service has its own registry (tests
 * run many in one process); the process's own metrics (CPU, memory, event loop) are collected
 * once per process. A standby (docs/high-availability.md) has no activation to read: it shows
 * `hilt_active` 0, the counters of its earlier activations and the process's metrics, and none of
 * the gauges of what is there now. What each metric means: docs/operations.md.
 */
import type { Server } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DeviceOutcome, DriverKind, OperationType, Telemetry } from '../actors/telemetry';
import type { World } from '../actors/world';
import type { ReadModel } from '../actors/readmodel';
import type { PowerControl } from '../hardware/power';
import type { HeadnodeControl } from '../hardware/headnode-control';
import type { Consoles, ConsoleTelemetry } from '../hardware/consoles';
import type { LifecycleTelemetry } from './lifecycle';
import type { DropReason } from './events/hub';
import { RequestMetrics } from './request-metrics';

/** What the gauges read at each scrape. */
export interface MetricsSources {
  world: World;
  power: PowerControl;
  headnodes: HeadnodeControl;
  /** dashboard sessions open now */
  uiSessions?: () => number;
  /** event streams open now, and webhooks by state (src/events) */
  events?: { streams(): number; webhooks(): { delivering: number; failing: number } };
  /** the serial consoles' sessions and viewers */
  consoles?: Pick<Consoles, 'active' | 'viewerCount'>;
}

/** Request rates of the last minute (the dashboard's health panel). */
export interface RequestRates {
  /** requests per second over the last 10 s and the last 60 s */
  perSecond10s: number;
  perSecond60s: number;
  /** answers 5xx per second over the last 60 s */
  errorsPerSecond60s: number;
}

const LATENCY = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const HARDWARE = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const OPERATION = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const COMMIT = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];
const PER_SESSION = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];
const OPERATION_TYPES: OperationType[] = ['connect', 'detach', 'revert', 'reapply'];
const DEVICE_OUTCOMES: DeviceOutcome[] = ['ok', 'error', 'timeout', 'expired'];
const DROP_REASONS: DropReason[] = ['buffer', 'access', 'closing', 'removed'];
/** read from the engine of the activation at each scrape */
const STORAGE_GAUGES = ['hilt_storage_size_bytes', 'hilt_storage_used_bytes'];

let processRegistry: Registry | undefined;

/**
 * prom-client's families whose names are another family's plus `_total`: a gauge
 * `nodejs_active_handles` per type beside a gauge `nodejs_active_handles_total`. A parser that
 * reads `_total` as a counter's suffix takes the second for samples of the first, apart from
 * the rest of its family, which the text format forbids. The totals are the families' sums.
 */
const CLASHING = ['nodejs_active_resources_total', 'nodejs_active_handles_total', 'nodejs_active_requests_total'];

/** CPU, memory, file descriptors, event loop lag, GC: one set per process. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
    for (const name of CLASHING) processRegistry.removeSingleMetric(name);
  }
  return processRegistry;
}

/** A labelled metric's children, made once per label set (prom-client hashes labels on every call otherwise). */
function children<C>(make: (...values: string[]) => C): (...values: string[]) => C {
  const made = new Map<string, C>();
  return (...values) => {
    const key = values.join('\u0000');
    let c = made.get(key);
    if (!c) made.set(key, (c = make(...values)));
    return c;
  };
}

export class Metrics implements Telemetry, LifecycleTelemetry, ConsoleTelemetry {
  readonly registry = new Registry();
  private sources?: MetricsSources;
  /** one-second buckets of the last minute: [second, requests, 5xx] */
  private readonly window: [number, number, number][] = [];

  /** hilt_http_requests_total and hilt_http_request_duration_seconds: counted in plain numbers (src/request-metrics.ts) */
  private readonly requests = new RequestMetrics(this.registry,
    { name: 'hilt_http_requests_total', help: 'HTTP requests answered, by route (the call\'s pattern, without the /v0 prefix), method and status' },
    { name: 'hilt_http_request_duration_seconds', help: 'Time from receiving a request to answering it, by route and method', buckets: LATENCY });
  private readonly commits = new Counter({ name: 'hilt_storage_commits_total', help: 'Decisions whose events were handed to storage, by actor kind and outcome (ok, refused)', labelNames: ['kind', 'outcome'], registers: [this.registry] });
  private readonly events = new Counter({ name: 'hilt_storage_events_total', help: 'Events committed, by actor kind', labelNames: ['kind'], registers: [this.registry] });
  private readonly commitSeconds = new Histogram({ name: 'hilt_storage_commit_duration_seconds', help: 'Time for a decision\'s events to be durable (LMDB: committed and flushed), by actor kind', labelNames: ['kind'], buckets: COMMIT, registers: [this.registry] });
  private readonly accepted = new Counter({ name: 'hilt_network_operations_accepted_total', help: 'Network operations accepted (PENDING), by switch and type (connect, detach, revert, reapply)', labelNames: ['switch', 'type'], registers: [this.registry] });
  private readonly finished = new Counter({ name: 'hilt_network_operations_finished_total', help: 'Network operations finished, by switch, type and status (DONE, ERROR)', labelNames: ['switch', 'type', 'status'], registers: [this.registry] });
  private readonly operationSeconds = new Histogram({ name: 'hilt_network_operation_duration_seconds', help: 'Time from accepting a network operation to committing its outcome, by switch', labelNames: ['switch'], buckets: OPERATION, registers: [this.registry] });
  private readonly driverCalls = new Counter({ name: 'hilt_driver_calls_total', help: 'Hardware driver calls, by kind (switch, obm, headnode), driver, call and outcome (ok, error)', labelNames: ['kind', 'driver', 'call', 'outcome'], registers: [this.registry] });
  private readonly driverSeconds = new Histogram({ name: 'hilt_driver_call_duration_seconds', help: 'Duration of hardware driver calls, by kind, driver and call', labelNames: ['kind', 'driver', 'call'], buckets: HARDWARE, registers: [this.registry] });
  private readonly sessionsOpened = new Counter({ name: 'hilt_switch_sessions_opened_total', help: 'Switch sessions opened (logins that succeeded), by switch', labelNames: ['switch'], registers: [this.registry] });
  private readonly perSession = new Histogram({ name: 'hilt_switch_session_operations', help: 'Port operations carried by each switch session, observed when it closes, by switch', labelNames: ['switch'], buckets: PER_SESSION, registers: [this.registry] });
  private readonly deviceCalls = new Counter({ name: 'hilt_device_queue_calls_total', help: 'Calls on the per-device queues, by queue (switch, obm, headnode) and outcome (ok, error, timeout: ran out of time; expired: never got the device in time)', labelNames: ['queue', 'outcome'], registers: [this.registry] });
  private readonly deviceWait = new Histogram({ name: 'hilt_device_queue_wait_seconds', help: 'Time a call waited for its device (behind earlier calls to it), by queue', labelNames: ['queue'], buckets: HARDWARE, registers: [this.registry] });

  private readonly streamsDropped = new Counter({ name: 'hilt_event_streams_dropped_total', help: 'Event streams ended by the service, by reason (buffer: the consumer did not read and passed the bound; access: the user\'s access changed; closing: the service stopped serving; removed: journal retention removed events the stream had not read)', labelNames: ['reason'], registers: [this.registry] });
  private readonly webhookDeliveries = new Counter({ name: 'hilt_webhook_deliveries_total', help: 'Webhook delivery attempts, by outcome (ok: a 2xx; error: anything else, or no answer in time)', labelNames: ['outcome'], registers: [this.registry] });
  private readonly webhookSeconds = new Histogram({ name: 'hilt_webhook_delivery_duration_seconds', help: 'Time of each webhook delivery attempt', buckets: LATENCY, registers: [this.registry] });
  private readonly consoleRestarts = new Counter({ name: 'hilt_console_restarts_total', help: 'Serial console sessions that dropped or could not open, and were opened again', registers: [this.registry] });

  private readonly backups = new Counter({ name: 'hilt_backups_total', help: 'Online backups (POST /admin/backup), by outcome (ok, error)', labelNames: ['outcome'], registers: [this.registry] });
  private readonly backupLast = new Gauge({ name: 'hilt_backup_last_success_timestamp_seconds', help: 'When the last online backup of this process finished successfully (Unix time); absent until one did', registers: [] });
  private readonly backupSeconds = new Gauge({ name: 'hilt_backup_last_duration_seconds', help: 'How long the last successful online backup took', registers: [] });
  private readonly retentionPasses = new Counter({ name: 'hilt_retention_passes_total', help: 'Journal retention\'s background passes (HILT_JOURNAL_RETENTION_DAYS), by outcome (ok, error: the next pass goes on from where it stopped)', labelNames: ['outcome'], registers: [this.registry] });
  private readonly retentionLast = new Gauge({ name: 'hilt_retention_last_success_timestamp_seconds', help: 'When journal retention\'s last pass of this process ended successfully (Unix time); absent until one did', registers: [] });

  private readonly quarantines = new Counter({ name: 'hilt_node_quarantines_total', help: 'Released nodes moved into the maintenance pool (docs/lifecycle.md)', registers: [this.registry] });
  private readonly releasePowerOffs = new Counter({ name: 'hilt_release_power_offs_total', help: 'Power-offs after a release, by outcome (ok, error)', labelNames: ['outcome'], registers: [this.registry] });
  private readonly maintenanceDeliveries = new Counter({ name: 'hilt_maintenance_deliveries_total', help: 'POSTs of maintenance pool notices, by outcome (ok: the maintenance service took it; error: retried)', labelNames: ['outcome'], registers: [this.registry] });
  private readonly leaseExpiries = new Counter({ name: 'hilt_lease_expiries_total', help: 'Leases that passed (each starts its node\'s release)', registers: [this.registry] });

  /** switches named by the per-switch series above (forgetDeletedSwitches) */
  private readonly switchesNamed = new Set<string>();
  /** switches whose operation outcomes are shown from 0 (seedOutcomes) */
  private readonly switchesSeeded = new Set<string>();

  private readonly commitSeconds$ = children((kind) => this.commitSeconds.labels(kind));
  private readonly driverSeconds$ = children((kind, driver, call) => this.driverSeconds.labels(kind, driver, call));

  /** `active`: does this process serve the API now (unset: always, as on the embedded engines)? */
  constructor(info: { version: string; storage: string }, active: () => boolean = () => true) {
    const registers = [this.registry];
    // Counters whose label values are known from the start show them at 0: a series that appears
    // at 1 shows no increase() in Prometheus, so an alert on the first failure would not fire.
    for (const outcome of ['ok', 'error']) {
      this.backups.labels(outcome).inc(0);
      this.retentionPasses.labels(outcome).inc(0);
      this.webhookDeliveries.labels(outcome).inc(0);
      this.releasePowerOffs.labels(outcome).inc(0);
      this.maintenanceDeliveries.labels(outcome).inc(0);
    }
    for (const queue of ['switch', 'obm', 'headnode']) for (const outcome of DEVICE_OUTCOMES) this.deviceCalls.labels(queue, outcome).inc(0);
    for (const reason of DROP_REASONS) this.streamsDropped.labels(reason).inc(0);
    new Gauge({ name: 'hilt_info', help: 'Always 1; the release and the storage engine as labels', labelNames: ['version', 'storage'], registers }).set(info, 1);
    new Gauge({
      name: 'hilt_active', help: '1 while this process serves the API, 0 while it is a standby (or taking over)', registers,
      collect() { this.set(active() ? 1 : 0); },
    });
    const self = this;
    new Gauge({
      name: 'hilt_actors_live', help: 'Entity actors awake now, by kind', labelNames: ['kind'], registers,
      collect() { self.perKind(this, (l) => l.live); },
    });
    new Gauge({
      name: 'hilt_actor_mailbox_messages', help: 'Messages queued or being handled in the mailboxes of the live actors, by kind', labelNames: ['kind'], registers,
      collect() { self.perKind(this, (l) => l.messages); },
    });
    new Gauge({
      name: 'hilt_actor_mailbox_max_messages', help: 'Messages in the fullest mailbox, by kind', labelNames: ['kind'], registers,
      collect() { self.perKind(this, (l) => l.busiest); },
    });
    new Gauge({
      name: 'hilt_network_operations_pending', help: 'Network operations accepted and not finished, by switch', labelNames: ['switch'], registers,
      collect() {
        this.reset();
        if (!self.sources) return;
        for (const [sw, n] of pendingPerSwitch(self.sources.world.rm)) this.set({ switch: sw }, n);
      },
    });
    new Gauge({
      name: 'hilt_ports_in_doubt', help: 'Switch ports that may carry VLANs beyond their configuration (a failed change, its set-back not confirmed yet), by switch', labelNames: ['switch'], registers,
      collect() {
        this.reset();
        if (!self.sources) return;
        const rm = self.sources.world.rm;
        const per = new Map<string, number>();
        for (const id of rm.portsInDoubt) {
          const sw = rm.ports.get(id)?.switch;
          if (sw !== undefined) per.set(sw, (per.get(sw) ?? 0) + 1);
        }
        for (const [sw, n] of per) this.set({ switch: sw }, n);
      },
    });
    new Gauge({
      name: 'hilt_ports_set_back_owed', help: 'Switch ports whose doubt an admin cleared by hand, their set-back to their configuration not confirmed yet (retried with backoff), by switch', labelNames: ['switch'], registers,
      collect() {
        this.reset();
        if (!self.sources) return;
        const rm = self.sources.world.rm;
        const per = new Map<string, number>();
        for (const id of rm.portsOwingSetBack) {
          const sw = rm.ports.get(id)?.switch;
          if (sw !== undefined) per.set(sw, (per.get(sw) ?? 0) + 1);
        }
        for (const [sw, n] of per) this.set({ switch: sw }, n);
      },
    });
    new Gauge({
      name: 'hilt_wiring_ports', help: 'Ports per wiring verdict (ok, mismatch, unseen, unwired) at the last wiring check of each switch, by switch', labelNames: ['switch', 'verdict'], registers,
      collect() {
        this.reset();
        if (!self.sources) return;
        const last = self.sources.world.wiring.last;
        for (const [sw, counts] of last) {
          // A deleted switch's check is forgotten: one made again under its name has had none.
          if (!self.sources.world.rm.switches.has(sw)) {
            last.delete(sw);
            continue;
          }
          for (const [verdict, n] of Object.entries(counts)) this.set({ switch: sw, verdict }, n);
        }
      },
    });
    new Gauge({
      name: 'hilt_device_queue_depth', help: 'Calls queued or running on the per-device queues, by queue', labelNames: ['queue'], registers,
      collect() {
        this.reset();
        const s = self.sources;
        if (!s) return;
        this.set({ queue: 'switch' }, s.world.sessions.size());
        this.set({ queue: 'obm' }, s.power.size());
        this.set({ queue: 'headnode' }, s.headnodes.size());
      },
    });
    new Gauge({
      name: 'hilt_event_streams', help: 'Event streams (GET /events) open now', registers,
      collect() {
        this.reset();
        if (self.sources?.events) this.set(self.sources.events.streams());
      },
    });
    new Gauge({
      name: 'hilt_webhooks', help: 'Webhooks, by state (delivering; failing: stopped after failing past the retry window, until resumed)', labelNames: ['state'], registers,
      collect() {
        this.reset();
        const w = self.sources?.events?.webhooks();
        if (!w) return;
        this.set({ state: 'delivering' }, w.delivering);
        this.set({ state: 'failing' }, w.failing);
      },
    });
    new Gauge({
      name: 'hilt_ui_sessions', help: 'Dashboard sessions open now', registers,
      collect() {
        this.reset();
        if (self.sources) this.set(self.sources.uiSessions?.() ?? 0);
      },
    });
    new Gauge({
      name: 'hilt_console_sessions', help: 'Serial console sessions open now (one per node whose console is recorded; an IPMI one is one ipmitool process)', registers,
      collect() {
        this.reset();
        if (self.sources) this.set(self.sources.consoles?.active() ?? 0);
      },
    });
    new Gauge({
      name: 'hilt_console_viewers', help: 'Viewers of live consoles connected now (WebSockets)', registers,
      collect() {
        this.reset();
        if (self.sources) this.set(self.sources.consoles?.viewerCount() ?? 0);
      },
    });
  }

  /** The process's HTTP listener (src/gate.ts): its connections now, and those refused past HILT_MAX_CONNECTIONS. */
  listener(server: Server): void {
    const registers = [this.registry];
    new Gauge({
      name: 'hilt_http_connections', help: 'HTTP connections open now (event streams and WebSockets included)', registers,
      async collect() {
        this.set(await new Promise<number>((r) => server.getConnections((err, n) => r(err ? 0 : n))));
      },
    });
    const refused = new Counter({ name: 'hilt_http_connections_refused_total', help: 'Connections closed unanswered because HILT_MAX_CONNECTIONS were open', registers });
    server.on('drop', () => refused.inc());
  }

  /** Nothing to read from now on (a step-down): the gauges of what is there now go empty. */
  detach(): void {
    this.sources = undefined;
    // Unlabelled gauges cannot be empty: a size of 0 would be a lie, so they go until the next attach.
    for (const name of STORAGE_GAUGES) this.registry.removeSingleMetric(name);
  }

  /** What the gauges read from now on. */
  async attach(sources: MetricsSources): Promise<void> {
    this.sources = sources;
    for (const kind of sources.world.runtime.kindNames()) for (const outcome of ['ok', 'refused']) this.commits.labels(kind, outcome).inc(0);
    // Only what the engine tells: LMDB its file's size and the bytes in use within its map,
    // PostgreSQL the size of hilt's tables (no bound to fill), the memory engine nothing.
    if (!sources.world.runtime.tellsStorageSize) return;
    const stats = () => this.sources?.world.runtime.storageStats().catch(() => undefined);
    const registers = [this.registry];
    if (!this.registry.getSingleMetric('hilt_storage_size_bytes')) {
      new Gauge({
        name: 'hilt_storage_size_bytes', help: 'Size of the store (LMDB: its data file; PostgreSQL: hilt\'s tables and indexes)', registers,
        async collect() {
          const s = await stats();
          if (s) this.set(s.sizeBytes);
        },
      });
    }
    if (!this.registry.getSingleMetric('hilt_storage_used_bytes') && (await stats())?.usedBytes !== undefined) {
      new Gauge({
        name: 'hilt_storage_used_bytes', help: 'Bytes in use within the store\'s fixed map (LMDB: pages up to the last one written)', registers,
        async collect() {
          const s = await stats();
          if (s?.usedBytes !== undefined) this.set(s.usedBytes);
        },
      });
    }
  }

  private perKind(g: Gauge<'kind'>, pick: (l: { live: number; messages: number; busiest: number }) => number): void {
    g.reset();
    const world = this.sources?.world;
    if (!world) return;
    for (const kind of world.runtime.kindNames()) g.set({ kind }, pick(world.runtime.registry(kind)!.load()));
  }

  /** A console session is opened again (hardware/consoles.ts). */
  consoleRestarted(): void {
    this.consoleRestarts.inc();
  }

  /** An online backup ended. */
  backup(ok: boolean, seconds: number): void {
    this.backups.labels(ok ? 'ok' : 'error').inc();
    if (!ok) return;
    // Registered at the first success: a timestamp of 0 would read as a backup half a century old.
    if (!this.registry.getSingleMetric('hilt_backup_last_success_timestamp_seconds')) {
      this.registry.registerMetric(this.backupLast);
      this.registry.registerMetric(this.backupSeconds);
    }
    this.backupLast.set(Date.now() / 1000);
    this.backupSeconds.set(seconds);
  }

  /** A background pass of journal retention ended (src/retention.ts). */
  retentionPass(ok: boolean): void {
    this.retentionPasses.labels(ok ? 'ok' : 'error').inc();
    if (!ok) return;
    // Registered at the first success, as the backup's: a timestamp of 0 would read as a pass half a century old.
    if (!this.registry.getSingleMetric('hilt_retention_last_success_timestamp_seconds')) this.registry.registerMetric(this.retentionLast);
    this.retentionLast.set(Date.now() / 1000);
  }

  /** An event stream the service ended (src/events/hub.ts). */
  dropped(reason: string): void {
    this.streamsDropped.labels(reason).inc();
  }

  /** A webhook delivery attempt (src/events/webhooks.ts). */
  delivered(ok: boolean, seconds: number): void {
    this.webhookDeliveries.labels(ok ? 'ok' : 'error').inc();
    this.webhookSeconds.observe(seconds);
  }

  /** One HTTP answer. `route` is the call's pattern (undefined: no route matched). */
  request(route: string | undefined, method: string, status: number, seconds: number): void {
    this.requests.record(route, method, status, seconds);
    this.rate(status);
  }

  /**
   * One answer node's HTTP parser gave (src/gate.ts) to a request no route saw whole: 408 (too
   * slow to arrive), 431, 400. `method` is the request's when its headers had arrived (node's
   * parser knows a fixed list of methods), else undefined.
   */
  unread(method: string | undefined, status: number): void {
    this.requests.unread(method ?? 'unknown', status);
    this.rate(status);
  }

  private rate(status: number): void {
    const now = Math.floor(Date.now() / 1000);
    let last = this.window[this.window.length - 1];
    if (!last || last[0] !== now) {
      this.window.push((last = [now, 0, 0]));
      while (this.window.length && this.window[0][0] <= now - 60) this.window.shift();
    }
    last[1]++;
    if (status >= 500) last[2]++;
  }

  /** Requests per second of the last 10 and 60 seconds (the current second not counted: it is not over). */
  rates(now = Date.now()): RequestRates {
    const second = Math.floor(now / 1000);
    let n10 = 0;
    let n60 = 0;
    let e60 = 0;
    for (const [s, n, e] of this.window) {
      if (s >= second || s < second - 60) continue;
      n60 += n;
      e60 += e;
      if (s >= second - 10) n10 += n;
    }
    return { perSecond10s: n10 / 10, perSecond60s: n60 / 60, errorsPerSecond60s: e60 / 60 };
  }

  /** The Prometheus text of this service's metrics and the process's. */
  async text(): Promise<string> {
    await this.forgetDeletedSwitches();
    this.seedPendingSwitches();
    return Registry.merge([processMetrics(), this.registry]).metrics();
  }

  /**
   * The series of switches deleted since the last scrape go: a deleted switch's name would stay
   * in every scrape of this process. Read at the scrape from the committed view, so a session
   * that closes after its switch was deleted is dropped too. (No other series carries an
   * object's name: nodes and BMCs are counted by driver, the gauges read what is there now.)
   */
  private async forgetDeletedSwitches(): Promise<void> {
    const rm = this.sources?.world.rm;
    if (!rm) return;
    const gone = new Set([...this.switchesNamed].filter((sw) => !rm.switches.has(sw)));
    if (!gone.size) return;
    for (const sw of gone) {
      this.switchesNamed.delete(sw);
      this.switchesSeeded.delete(sw);
    }
    for (const metric of [this.accepted, this.finished, this.operationSeconds, this.sessionsOpened, this.perSession] as (Counter<string> | Histogram<string>)[]) {
      for (const { labels } of (await metric.get()).values) {
        if (!gone.has(String(labels.switch))) continue;
        // A histogram's buckets carry `le` besides the labels of their series.
        const { le: _le, ...own } = labels as Record<string, string | number>;
        metric.remove(own);
      }
    }
  }

  /**
   * A switch with operations pending that this process accepted none of (they were accepted
   * before a restart, or by the other process of a pair) shows its outcomes from 0 too.
   */
  private seedPendingSwitches(): void {
    const rm = this.sources?.world.rm;
    if (!rm) return;
    for (const [sw, n] of pendingPerSwitch(rm)) if (n) this.seedOutcomes(sw);
  }

  readonly contentType = this.registry.contentType;

  // Telemetry (actors/telemetry.ts)

  committed(kind: string, events: number, seconds: number, ok: boolean): void {
    this.commits.labels(kind, ok ? 'ok' : 'refused').inc();
    if (!ok) return;
    this.events.labels(kind).inc(events);
    this.commitSeconds$(kind).observe(seconds);
  }

  operationAccepted(sw: string, type: OperationType): void {
    this.switchesNamed.add(sw);
    this.accepted.labels(sw, type).inc();
    this.seedOutcomes(sw);
  }

  /** A switch's operation outcomes from 0 (see the constructor): its first ERROR is an increase. */
  private seedOutcomes(sw: string): void {
    if (this.switchesSeeded.has(sw)) return;
    this.switchesSeeded.add(sw);
    this.switchesNamed.add(sw);
    for (const type of OPERATION_TYPES) for (const status of ['DONE', 'ERROR']) this.finished.labels(sw, type, status).inc(0);
  }

  operationFinished(sw: string, type: OperationType, status: 'DONE' | 'ERROR', seconds: number): void {
    this.switchesNamed.add(sw);
    this.finished.labels(sw, type, status).inc();
    this.operationSeconds.labels(sw).observe(seconds);
  }

  driverCall(kind: DriverKind, driver: string, call: string, seconds: number, ok: boolean): void {
    this.driverCalls.labels(kind, driver, call, ok ? 'ok' : 'error').inc();
    this.driverSeconds$(kind, driver, call).observe(seconds);
  }

  sessionOpened(sw: string): void {
    this.switchesNamed.add(sw);
    this.sessionsOpened.labels(sw).inc();
  }

  sessionClosed(sw: string, operations: number): void {
    this.switchesNamed.add(sw);
    this.perSession.labels(sw).observe(operations);
  }

  deviceCall(queue: DriverKind, waitedSeconds: number, outcome: DeviceOutcome): void {
    this.deviceCalls.labels(queue, outcome).inc();
    this.deviceWait.labels(queue).observe(waitedSeconds);
  }

  // LifecycleTelemetry (src/lifecycle/common.ts)

  quarantined(): void {
    this.quarantines.inc();
  }

  releasePowerOff(outcome: 'ok' | 'error'): void {
    this.releasePowerOffs.labels(outcome).inc();
  }

  maintenanceDelivery(outcome: 'ok' | 'error'): void {
    this.maintenanceDeliveries.labels(outcome).inc();
  }

  leaseExpired(): void {
    this.leaseExpiries.inc();
  }
}

/** Pending network operations per switch, from the committed view (every known switch, 0 included). */
export function pendingPerSwitch(rm: ReadModel): Map<string, number> {
  const out = new Map<string, number>([...rm.switches.keys()].map((s) => [s, 0]));
  for (const node of rm.pendingByNode.keys()) {
    for (const nic of rm.pendingByNode.get(node)) {
      const p = rm.nic(node, nic)?.pending;
      if (p) out.set(p.switch, (out.get(p.switch) ?? 0) + 1);
    }
  }
  return out;
}
