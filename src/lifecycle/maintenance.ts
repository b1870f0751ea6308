/**
 * The maintenance pool (docs/lifecycle.md), as HIL v0.3 defines it: a node released from any
 * other project moves into the pool's project (the project actor asks the node to, in one
 * commit: it is never free in between), and the service POSTs `{"node": "<name>"}` to the
 * maintenance service, which cleans the node and frees it with project_detach_node from the pool.
 *
 * Beyond HIL: the notice is durable before the release is acknowledged (the node actor records
 * it in the release's own commit: `maintenance` in the node's state), signed with
 * HMAC-SHA256 when a secret is set, and retried with backoff (1 s doubling, at most 5 minutes
 * apart, for as long as the node waits in the pool) after a refusal, an answer other than 2xx or
 * no answer within the timeout. Each POST's outcome is recorded in the node
 * (`node.noticeAttempted`), and the notice stays with the node (taken, or not yet) until it leaves
 * the pool; a restart POSTs every notice not yet taken at once. Delivery is at
 * least once: a crash between a POST and its record repeats it, and the receiver's
 * project_detach_node from the pool, which ends the notice, answers 409 to a repeat.
 *
 * The node owns the notice; this runner owns no fact, only timers and the POSTs in flight.
 */
import { createHmac } from 'node:crypto';
import type { Asker } from '../../actors/runtime';
import type { ReadModel } from '../../actors/readmodel';
import type { NodeCommand, NodeReplies, NodeState } from '../../actors/node/protocol';
import { backoff } from '../../lib/time';
import { errorText, LifecycleLog, LifecycleTelemetry, recordOutcome, SYSTEM_USER } from './common';
import { lazyModule } from '../../lib/lazy';

const undici = lazyModule(() => require('undici') as typeof import('undici'));

export interface MaintenanceSettings {
  /** the pool's project */
  project: string;
  url: string;
  /** key of X-Hilt-Signature (none: unsigned) */
  secret?: string;
  /** bound on each POST */
  timeoutMs: number;
}

export interface MaintenanceDeps {
  rm: ReadModel;
  nodes: Asker<NodeCommand, NodeReplies>;
  telemetry: LifecycleTelemetry;
  log: LifecycleLog;
  /** false once this process may no longer act (a standby pair's lease): no POST then */
  mayAct?: () => boolean;
}

/** The wait before the next POST after `failures` failed ones: 1 s, doubling, at most 5 minutes. */
export const retryDelayMs = (failures: number) => backoff(Math.max(0, failures - 1), 1000, 300_000);

/** The signature header's value for `body` (what a receiver recomputes to check it). */
export const signature = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

export class MaintenanceDeliveries {
  /** node → the timer of its next POST */
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** nodes with a POST in flight */
  private readonly sending = new Set<string>();
  /** aborted by close(): every wait of the runner ends */
  private readonly stop = new AbortController();
  private get closed(): boolean {
    return this.stop.signal.aborted;
  }
  private readonly target: URL;
  private readonly authorization?: string;

  constructor(private readonly settings: MaintenanceSettings, private readonly deps: MaintenanceDeps) {
    // Credentials in the URL go as basic authentication (fetch refuses them in a URL), and never into a message.
    const url = new URL(settings.url);
    if (url.username || url.password) {
      this.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
      url.username = '';
      url.password = '';
    }
    this.target = url;
  }

  /** A node commit (World.nodeWatchers): a notice is due, or is no longer. */
  readonly watch = (id: string, prev: NodeState | null, next: NodeState | null): void => {
    if (next?.project === this.settings.project && prev?.project && prev.project !== this.settings.project) this.deps.telemetry.quarantined();
    const notice = next?.maintenance;
    if (notice && notice.deliveredAt === undefined && notice.since !== prev?.maintenance?.since) this.schedule(id, 0);
    else if (!notice && prev?.maintenance) this.cancel(id);
  };

  /** After a start: every notice still pending goes now. */
  resumeAll(): void {
    for (const [id, notice] of this.deps.rm.maintenanceNotices) if (notice.deliveredAt === undefined) this.schedule(id, 0);
  }

  close(): void {
    this.stop.abort();
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  /** The node's notice is POSTed now or waiting for a retry. */
  scheduled(id: string): boolean {
    return this.timers.has(id) || this.sending.has(id);
  }

  private schedule(id: string, delayMs: number): void {
    if (this.closed) return;
    this.cancel(id);
    this.timers.set(id, setTimeout(() => void this.deliver(id), delayMs));
  }

  private cancel(id: string): void {
    clearTimeout(this.timers.get(id));
    this.timers.delete(id);
  }

  private async deliver(id: string): Promise<void> {
    this.timers.delete(id);
    const node = this.deps.rm.nodes.get(id);
    const notice = node?.maintenance;
    if (!notice || notice.deliveredAt !== undefined || this.closed || this.sending.has(id)) return;
    // A notice an earlier pool left (HILT_MAINTENANCE_PROJECT named another project): its node is
    // not in this pool, whose service could not free it. It goes if the node enters this pool.
    if (node.project !== this.settings.project) return;
    // Not now (the lease's validity lapsed): later, unless this process stops acting for good (close()).
    if (this.deps.mayAct && !this.deps.mayAct()) return this.schedule(id, 1000);
    this.sending.add(id);
    let recorded = false;
    let error: string | null = null;
    try {
      error = await this.post(id);
      if (this.closed) return;
      this.deps.telemetry.maintenanceDelivery(error === null ? 'ok' : 'error');
      if (error === null) this.deps.log.info({ node: id }, 'the maintenance service took the notice of a node in the pool');
      else this.deps.log.warn({ node: id, attempts: notice.attempts + 1, err: error }, 'could not notify the maintenance service; retrying');
      recorded = await recordOutcome(() => this.deps.nodes.ask(id, { type: 'node.noticeAttempted', by: SYSTEM_USER, since: notice.since, error }), this.stop.signal);
    } finally {
      this.sending.delete(id);
    }
    const now = this.deps.rm.nodes.get(id)?.maintenance;
    if (!now || now.deliveredAt !== undefined) return;
    // A newer notice (the node left the pool and came back) while this POST was in flight: its
    // own delivery found this one sending and left it.
    if (now.since !== notice.since) this.schedule(id, 0);
    else if (error !== null && recorded) this.schedule(id, retryDelayMs(now.attempts));
  }

  /** One POST of the notice: null when the maintenance service took it (2xx), else why not. */
  private async post(node: string): Promise<string | null> {
    const body = JSON.stringify({ node });
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'hilt' };
    if (this.settings.secret !== undefined) headers['x-hilt-signature'] = signature(this.settings.secret, body);
    if (this.authorization) headers.authorization = this.authorization;
    const ms = this.settings.timeoutMs;
    try {
      const res = await undici().fetch(this.target, { method: 'POST', body, headers, redirect: 'manual', signal: AbortSignal.any([AbortSignal.timeout(ms), this.stop.signal]) });
      await res.body?.cancel().catch(() => undefined);
      return res.status >= 200 && res.status < 300 ? null : `the maintenance service answered ${res.status}`;
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      if (e.name === 'TimeoutError' || e.name === 'AbortError') return `the maintenance service did not answer within ${ms} ms`;
      return `could not reach the maintenance service: ${e.cause?.code ?? e.cause?.message ?? errorText(err)}`;
    }
  }
}
