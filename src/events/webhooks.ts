/**
 * Webhook delivery (docs/events.md, Webhooks): each webhook not failing has one worker, which
 * POSTs the events that match its filters, one at a time, in commit order, from its cursor:
 * the position of the last event it is done with, a durable mark beside the journal
 * (PersistenceEngine.setMark), moved after each 2xx. So delivery is at least once (a crash
 * between a 2xx and its mark sends that event again) and in order, and a restart (a kill -9, a
 * takeover by the standby) goes on from the mark.
 *
 * Anything but a 2xx within the timeout is tried again after a pause that doubles from
 * `retryMinMs` up to `retryMaxMs`; once the first failure in a row is `failAfterMs` old, the
 * webhook is recorded failing (its actor, `webhook.fail`) and its worker stops until an admin
 * resumes it (`webhook.resume`), from its cursor, with a new window. The failure record (when it
 * began, how many, the last error) is kept in the mark too, so a restart neither forgets nor
 * restarts the window; a resume clears it (WebhookRunner.resume).
 *
 * Journal retention (src/retention.ts) removes nothing at or after the lowest cursor of the
 * webhooks (webhookHold), so a webhook, failing or not, never loses an event it has not done
 * with. Should the store lack some all the same (a journal pruned without that hold), a worker
 * does not go on as if nothing were missing: as it starts, it compares its cursor with the
 * highest position retention removed (RETENTION_REMOVED_MARK) and, if an event after its cursor
 * went, records the webhook failing with that reason. A resume then accepts the loss: delivery
 * goes on from the cursor with the events the store still holds (the removed ones are in
 * retention's archive). A worker that runs cannot fall behind a removal: the hold is its stored
 * cursor, never ahead of the one it holds.
 */
import { createHmac } from 'node:crypto';
import { backoff } from '../../lib/time';
import type { World } from '../../actors/world';
import type { WebhookState } from '../../actors/webhook/protocol';
import type { PersistedEvent } from '../../actors/persistence/engine';
import type { EventHub } from './hub';
import type { Frame } from './frames';
import type { StreamEvent } from './types';
import { matches, NO_FILTER } from './frames';
import { lazyModule } from '../../lib/lazy';

const undici = lazyModule(() => require('undici') as typeof import('undici'));

export interface WebhookOptions {
  /** one attempt's bound */
  timeoutMs: number;
  /** the first pause after a failure */
  retryMinMs: number;
  /** the longest pause between attempts */
  retryMaxMs: number;
  /** failing this long in a row marks the webhook failing */
  failAfterMs: number;
  /** sent as User-Agent */
  userAgent: string;
}

/** What a webhook's mark holds. */
export interface DeliveryMark {
  /** position of the last event done with (delivered, or not for this webhook) */
  cursor: number;
  lastSuccess: number | null;
  lastError: string | null;
  /** failed attempts in a row */
  failures: number;
  /** when the first of them failed */
  failingSince: number | null;
  /** retention removed events after the cursor, up to this position, before they were delivered (the webhook was marked failing for it) */
  removedUpTo?: number;
  /** an admin's resume accepted the loss of the removed events up to this position: delivery goes on without them */
  acceptedUpTo?: number;
}

export interface WebhookTelemetry {
  delivered(ok: boolean, seconds: number): void;
}

export const markName = (id: string) => `webhook:${id}`;

/** The mark of the highest position journal retention removed, moved before it removes (src/retention.ts). */
export const RETENTION_REMOVED_MARK = 'retention:removed';

/** Where a webhook without a mark yet starts: after its creation (its first event's position). */
async function creationPosition(world: World, id: string): Promise<number | undefined> {
  for await (const e of world.runtime.engine.events(`webhook:${id}`)) return e.position;
  return undefined;
}

/**
 * What journal retention must keep for the webhooks: every event at or after the lowest of
 * their cursors (their stored marks, or their creation when they have none yet), failing or not.
 * The stored mark is never ahead of the cursor a running worker holds. Undefined: no webhook.
 */
export async function webhookHold(world: World): Promise<{ position: number; webhook: string } | undefined> {
  let hold: { position: number; webhook: string } | undefined;
  for (const id of [...world.rm.webhooks.keys()]) {
    const mark = (await world.runtime.engine.mark(markName(id))) as DeliveryMark | undefined;
    const position = mark?.cursor ?? (await creationPosition(world, id));
    if (position !== undefined && (!hold || position < hold.position)) hold = { position, webhook: id };
  }
  return hold;
}

/** The signature header's value: HMAC-SHA256 of the raw body keyed by the secret. */
export function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Events read from the journal at a time. */
const READ_BATCH = 100;

const short = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}…` : s);

class Worker {
  mark!: DeliveryMark;
  private stopped = false;
  private wake?: () => void;
  private sleeper?: NodeJS.Timeout;
  /** the webhook's first position, while the mark is being read */
  ready: Promise<void>;
  /** run() ended (set by the runner that started it) */
  done: Promise<void> = Promise.resolve();

  constructor(private readonly runner: WebhookRunner, readonly id: string) {
    this.ready = this.load();
  }

  private async load(): Promise<void> {
    const stored = (await this.runner.world.runtime.engine.mark(markName(this.id))) as DeliveryMark | undefined;
    if (stored) {
      this.mark = stored;
      return;
    }
    // A new webhook: the events after its creation.
    const cursor = (await creationPosition(this.runner.world, this.id)) ?? this.runner.hub.last;
    this.mark = { cursor, lastSuccess: null, lastError: null, failures: 0, failingSince: null };
  }

  /**
   * Whether journal retention removed an event after the cursor that no resume accepted: if so,
   * the webhook is recorded failing with that reason (and true), rather than going on without it.
   * Retention's own mark, not bounds().first: a store restored from a backup has a first position
   * past every one of its events (its positions go on past a gap), which is no removal.
   */
  private async lost(): Promise<boolean> {
    const engine = this.runner.world.runtime.engine;
    const removed = ((await engine.mark(RETENTION_REMOVED_MARK)) as number | undefined) ?? 0;
    if (removed <= this.mark.cursor || removed <= (this.mark.acceptedUpTo ?? 0)) return false;
    const error = `journal retention removed events after this webhook's cursor (${this.mark.cursor}), up to position ${removed}, before they were delivered; they are in retention's archive (hilt admin audit --archive). A resume goes on from the cursor without them`;
    this.mark = { ...this.mark, lastError: error, removedUpTo: removed };
    await this.save();
    await this.runner.world.webhooks.ask(this.id, { type: 'webhook.fail', by: 'hilt', error }).catch(() => undefined);
    return true;
  }

  private get webhook(): WebhookState | undefined {
    return this.runner.world.rm.webhooks.get(this.id);
  }

  /** Something was committed since the worker last began to read the journal. */
  private poked = false;

  poke(): void {
    this.poked = true;
    this.wake?.();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.sleeper);
    this.wake?.();
  }

  /**
   * Wait `ms`, or less when `wakeable` and something is committed (stop() always ends it). A
   * commit told while the worker was reading or saving, before it paused, ends the pause at once.
   */
  private pause(ms: number, wakeable: boolean): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.stopped || (wakeable && this.poked)) {
        resolve();
        return;
      }
      this.wake = () => {
        if (wakeable || this.stopped) resolve();
      };
      this.sleeper = setTimeout(resolve, ms);
    }).then(() => {
      this.wake = undefined;
      clearTimeout(this.sleeper);
    });
  }

  private wants(w: WebhookState, f: Frame): boolean {
    if (w.projects.length && !f.projects.some((p) => w.projects.includes(p))) return false;
    return matches(f, { ...NO_FILTER, types: new Set(w.types) });
  }

  async run(): Promise<void> {
    await this.ready;
    if (this.stopped || !this.webhook || this.webhook.failing || (await this.lost())) return;
    let moved = false;
    while (!this.stopped) {
      const w = this.webhook;
      if (!w || w.failing) return;
      // A few events at a time: no read stays open while a receiver is retried.
      this.poked = false;
      const batch: PersistedEvent[] = [];
      for await (const e of this.runner.world.runtime.engine.feed(this.mark.cursor)) {
        batch.push(e);
        if (batch.length >= READ_BATCH) break;
      }
      if (!batch.length) {
        // Caught up. Events passed over are recorded now: a crash only passes them over again.
        if (moved) await this.save();
        moved = false;
        await this.pause(30_000, true);
        continue;
      }
      for (const e of batch) {
        if (this.stopped) return;
        const f = this.runner.hub.frame(e);
        if (f && this.wants(w, f)) {
          if (!(await this.deliver(w, f))) return;
          moved = false;
        } else {
          this.mark.cursor = e.position ?? this.mark.cursor;
          moved = true;
        }
      }
    }
  }

  private async save(): Promise<void> {
    await this.runner.world.runtime.engine.setMark(markName(this.id), this.mark);
  }

  /** Deliver one event until a 2xx; false when the webhook is now failing or the worker stopped. */
  private async deliver(w: WebhookState, f: Frame & { event: StreamEvent }): Promise<boolean> {
    const body = JSON.stringify(f.event);
    const headers = {
      'content-type': 'application/json',
      'user-agent': this.runner.opts.userAgent,
      'x-hilt-event-id': f.event.id,
      'x-hilt-event-type': f.event.type,
      'x-hilt-webhook-id': this.id,
      'x-hilt-signature': signature(this.runner.world.credentials.open({ secret: w.secret }).secret as string, body),
    };
    for (;;) {
      if (this.stopped) return false;
      const started = performance.now();
      let error: string | null = null;
      try {
        const res = await undici().request(w.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(this.runner.opts.timeoutMs), maxRedirections: 0 });
        await res.body.dump().catch(() => undefined);
        if (res.statusCode < 200 || res.statusCode > 299) error = `the receiver answered ${res.statusCode}`;
      } catch (err) {
        const e = err as Error;
        error = e.name === 'TimeoutError' || e.name === 'AbortError' ? `no answer within ${this.runner.opts.timeoutMs} ms` : short(e.message || String(e));
      }
      this.runner.telemetry?.delivered(error === null, (performance.now() - started) / 1000);
      const now = Date.now();
      if (error === null) {
        this.mark = { ...this.mark, cursor: f.position, lastSuccess: now, failures: 0, failingSince: null };
        await this.save();
        return true;
      }
      this.mark = { ...this.mark, lastError: error, failures: this.mark.failures + 1, failingSince: this.mark.failingSince ?? now };
      await this.save().catch(() => undefined);
      if (now - this.mark.failingSince! >= this.runner.opts.failAfterMs) {
        await this.runner.world.webhooks.ask(this.id, { type: 'webhook.fail', by: 'hilt', error: `failing since ${new Date(this.mark.failingSince!).toISOString()}: ${error}` }).catch(() => undefined);
        return false;
      }
      const o = this.runner.opts;
      await this.pause(backoff(Math.min(this.mark.failures - 1, 30), o.retryMinMs, o.retryMaxMs), false);
    }
  }
}

export class WebhookRunner {
  private readonly workers = new Map<string, Worker>();
  private closed = false;
  private stopListening?: () => void;
  /** workers ended by a failed read or write of the store since the last commit, and the one sync they wait for */
  private storeFailures = 0;
  private resync?: NodeJS.Timeout;

  constructor(readonly world: World, readonly hub: EventHub, readonly opts: WebhookOptions, readonly telemetry?: WebhookTelemetry) {}

  /** Start a worker for every webhook that delivers; then follow commits. */
  start(): void {
    this.stopListening = this.world.runtime.engine.onCommit(() => {
      // The store took a commit: it works again.
      this.storeFailures = 0;
      this.sync();
    });
    this.sync();
  }

  /**
   * A worker's read or write of the store failed: new workers go on from the stored marks after
   * a pause, not at the next commit, which a quiet system may not make for a long time. One sync
   * for every failing webhook, its pause growing while the store keeps failing.
   */
  private storeFailed(): void {
    this.storeFailures++;
    if (this.closed || this.resync) return;
    this.resync = setTimeout(() => {
      this.resync = undefined;
      this.sync();
    }, backoff(Math.min(this.storeFailures - 1, 30), this.opts.retryMinMs, this.opts.retryMaxMs)).unref();
  }

  /** Workers for webhooks that deliver, none for the others; wake them all (something was committed). */
  sync(): void {
    if (this.closed) return;
    for (const [id, w] of this.world.rm.webhooks) {
      if (w.failing) continue;
      let worker = this.workers.get(id);
      if (!worker) {
        worker = new Worker(this, id);
        this.workers.set(id, worker);
        const started = worker;
        started.done = started.run().then(() => false, () => true).then((failed) => {
          if (this.workers.get(id) === started) this.workers.delete(id);
          if (failed) this.storeFailed();
        });
      }
      worker.poke();
    }
    for (const [id, worker] of this.workers) {
      if (!this.world.rm.webhooks.has(id)) worker.stop();
    }
  }

  /** A webhook's delivery state: its mark (read from storage when no worker runs). */
  async state(id: string): Promise<DeliveryMark | undefined> {
    const worker = this.workers.get(id);
    if (worker) {
      await worker.ready;
      return worker.mark;
    }
    return (await this.world.runtime.engine.mark(markName(id))) as DeliveryMark | undefined;
  }

  /**
   * A failing webhook resumed by an admin: from its cursor, with a new failure window. The
   * stored failure record is cleared before `webhook.resume` is committed: that commit starts
   * the worker (sync), which reads the mark once, as it starts, and saves its own copy after
   * each attempt; a record cleared after it would be read too late and then written over. No
   * worker runs while the webhook is failing but the one that recorded it, which may still be
   * finishing: it is stopped and waited for first, so nothing writes the old record back.
   * A crash between the two writes leaves the webhook failing with its record cleared: the next
   * resume does the same again. Resuming a webhook that is not failing changes nothing.
   */
  async resume(id: string, by: string): Promise<void> {
    if (this.world.rm.webhooks.get(id)?.failing) {
      const old = this.workers.get(id);
      if (old) {
        this.workers.delete(id);
        old.stop();
        await old.done;
      }
      const engine = this.world.runtime.engine;
      const mark = (await engine.mark(markName(id))) as DeliveryMark | undefined;
      // A loss to journal retention the failure reported is accepted: delivery goes on without those events.
      if (mark) await engine.setMark(markName(id), { ...mark, failures: 0, failingSince: null, acceptedUpTo: Math.max(mark.acceptedUpTo ?? 0, mark.removedUpTo ?? 0) });
    }
    await this.world.webhooks.ask(id, { type: 'webhook.resume', by });
    this.sync();
  }

  /** Webhooks recorded failing (metrics). */
  failing(): number {
    let n = 0;
    for (const w of this.world.rm.webhooks.values()) if (w.failing) n++;
    return n;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.resync);
    this.stopListening?.();
    for (const w of this.workers.values()) w.stop();
    this.workers.clear();
  }
}
