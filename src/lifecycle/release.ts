/**
 * What follows a release (docs/lifecycle.md): the node is powered off and its console log goes.
 * project_detach_node answers as soon as the release is durable; the node actor recorded the
 * power-off as pending in the same commit, and this runner carries it out outside every mailbox
 * (docs/actors.md, rule 4), on the BMC's device queue with the usual deadline
 * (hardware/power.ts), then records the outcome in the node (`node.powerOffEnded`). A failed one
 * flags the node (GET /admin/nodes/attention) until a later power-off succeeds. One the lease
 * guard refused (src/lease-guard.ts: this process could not act for a moment, nothing reached
 * the BMC) stays pending and is tried again every RETRY_MS, for as long as the node is where
 * the release put it and no other power call on it ended since its first try; otherwise it is recorded as
 * failed. After a restart, every power-off still pending in storage is carried out (rule 7),
 * unless a new tenant holds the node by then: that one is recorded as failed (resumeAll).
 *
 * Release hooks: code that must act on every release registers one (`hooks`). Serial consoles
 * stop and delete the node's console log there. A hook runs once per release, and again after a
 * restart for a release whose power-off was still pending (its node not taken since); it must be idempotent and quick to
 * start (it is not waited for), and its failure is logged, never fatal.
 */
import type { Asker } from '../../actors/runtime';
import type { ReadModel } from '../../actors/readmodel';
import type { NodeCommand, NodeReplies, NodeState } from '../../actors/node/protocol';
import type { PowerControl } from '../../hardware/power';
import { conflict, HiltError, notFound } from '../../actors/errors';
import { errorText, LifecycleLog, LifecycleTelemetry, recordOutcome, SYSTEM_USER } from './common';

/** Runs for each release of a node, with the node as the release left it. */
export type ReleaseHook = (node: NodeState) => Promise<void> | void;

export interface ReleaseDeps {
  rm: ReadModel;
  nodes: Asker<NodeCommand, NodeReplies>;
  power: PowerControl;
  telemetry: LifecycleTelemetry;
  log: LifecycleLog;
}

/**
 * The node is no longer where the release of `since` put it: free, or in the maintenance pool
 * (whose notice carries the release's time). Only a reservation moves it on without a release
 * of its own, which would have replaced the power-off.
 */
const changedHands = (node: NodeState, since: number) => node.project !== null && node.maintenance?.since !== since;

/** The pause before a power-off the lease guard refused is tried again. */
const RETRY_MS = 1000;

export class ReleaseRunner {
  /** called once for each release (see the file's comment) */
  readonly hooks: ReleaseHook[] = [];
  /** `node\0since` of the power-offs under way */
  private readonly running = new Set<string>();
  /** `node\0since` → the timer of a power-off to try again */
  private readonly retries = new Map<string, NodeJS.Timeout>();
  /** aborted by close(): every wait of the runner ends */
  private readonly stop = new AbortController();
  private get closed(): boolean {
    return this.stop.signal.aborted;
  }

  constructor(private readonly deps: ReleaseDeps) {}

  /** A node commit (World.nodeWatchers): a release starts its hooks and its power-off. */
  readonly watch = (id: string, prev: NodeState | null, next: NodeState | null): void => {
    if (!prev?.project || !next || next.project === prev.project) return;
    this.released(next);
  };

  /**
   * After a start: every release whose power-off is still pending. One whose node a new tenant
   * holds now is not carried out (the earlier process may have powered it off before the new
   * tenant powered it on: nothing says which came last) but recorded as failed, so flagged.
   */
  resumeAll(): void {
    for (const [id, due] of this.deps.rm.releasePowerOffs) {
      const node = this.deps.rm.nodes.get(id);
      if (!node || due.status !== 'pending') continue;
      if (changedHands(node, due.since)) void this.abandon(node, due.since);
      else this.released(node);
    }
  }

  private async abandon(node: NodeState, since: number): Promise<void> {
    const error = `not carried out at a start: node ${node.name} changed hands since its release (project ${node.project} may have powered it on)`;
    this.deps.telemetry.releasePowerOff('error');
    this.deps.log.warn({ node: node.name, err: error }, 'a released node is not powered off: it is flagged in GET /admin/nodes/attention until a power-off succeeds');
    await recordOutcome(() => this.deps.nodes.ask(node.name, { type: 'node.powerOffEnded', by: SYSTEM_USER, since, error }), this.stop.signal);
  }

  close(): void {
    this.stop.abort();
    for (const t of this.retries.values()) clearTimeout(t);
    this.retries.clear();
  }

  private released(node: NodeState): void {
    if (this.closed) return;
    for (const hook of this.hooks) {
      void Promise.resolve().then(() => hook(node)).catch((err) => this.deps.log.warn({ node: node.name, err: errorText(err) }, 'a release hook failed'));
    }
    if (node.releasePowerOff?.status === 'pending') void this.powerOff(node, node.releasePowerOff.since);
  }

  /**
   * `refused`: the lease guard's refusal of an earlier try, and `mark`, the power calls ended
   * (PowerControl.ended) when the first try was queued. A try again is made only while the
   * release is the node's last change of hands and no power call on the node has ended since
   * that first try (the maintenance service may power on a node in the pool; a new tenant may
   * power on a node it reserved): compared in the order calls end, not by wall-clock times,
   * which a clock step back or another machine's clock (a release it committed) would misorder.
   * When its turn at the BMC comes without that, it is recorded as failed.
   */
  private async powerOff(node: NodeState, since: number, refused?: { error: string; mark: number }): Promise<void> {
    const { rm, power, nodes, telemetry, log } = this.deps;
    const key = `${node.name}\u0000${since}`;
    if (this.running.has(key) || this.retries.has(key)) return;
    this.running.add(key);
    const mark = refused?.mark ?? power.ended;
    /** The release's power-off is still due from this runner (see above). */
    const stillDue = () => {
      const now = rm.nodes.get(node.name);
      return now?.incarnation === node.incarnation && now.project === node.project
        && now.releasePowerOff?.since === since && now.releasePowerOff.status === 'pending'
        && (power.seen(node.name, node.incarnation)?.call ?? 0) <= mark;
    };
    try {
      let error: string | null = null;
      try {
        // Queued behind every earlier call to this BMC and ahead of every later one (a new
        // tenant's power-on comes after it). When its turn comes the node must still be this
        // registration, and for a try again the release must still be due.
        await power.off(node.obm, {
          isAdmin: true,
          node: { name: node.name, incarnation: node.incarnation },
          recheck: () => {
            if (rm.nodes.get(node.name)?.incarnation !== node.incarnation) throw notFound(`node ${node.name}`);
            if (refused !== undefined && !stillDue()) {
              throw conflict(`refused while this process could not act (${refused.error}), and not tried again: the node changed hands or its power was acted on since its release`);
            }
          },
        });
      } catch (err) {
        if (rm.nodes.get(node.name)?.incarnation !== node.incarnation) return;
        // Refused before anything reached the BMC because this process may not act now (the lease
        // guard): no failure of the BMC. Tried again later, unless the process steps down
        // (close(): the next active process carries it out, as every pending one).
        if (err instanceof HiltError && err.type === 'ServiceUnavailableError' && !this.closed && stillDue()) {
          this.retries.set(key, setTimeout(() => {
            this.retries.delete(key);
            void this.powerOff(node, since, { error: errorText(err), mark });
          }, RETRY_MS));
          return;
        }
        error = errorText(err);
      }
      if (this.closed) return;
      telemetry.releasePowerOff(error === null ? 'ok' : 'error');
      if (error === null) log.info({ node: node.name }, 'powered off a released node');
      else log.warn({ node: node.name, err: error }, 'could not power off a released node: it is flagged in GET /admin/nodes/attention until a power-off succeeds');
      await recordOutcome(() => nodes.ask(node.name, { type: 'node.powerOffEnded', by: SYSTEM_USER, since, error }), this.stop.signal);
    } finally {
      this.running.delete(key);
    }
  }
}
