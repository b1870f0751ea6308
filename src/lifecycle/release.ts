/**
 * What follows a release (docs/lifecycle.md): the node is powered off and its console log goes.
 * project_detach_node answers as soon as the release is durable; the node actor recorded the
 * power-off as pending in the same commit, and this runner carries it out outside every mailbox
 * (docs/actors.md, rule 4), on the BMC's device queue with the usual deadline
 * (hardware/power.ts), then records the outcome in the node (`node.powerOffEnded`). A failed one
 * flags the node (GET /admin/nodes/attention) until a later power-off succeeds. After a restart,
 * every power-off still pending in storage is carried out (rule 7).
 *
 * Release hooks: code that must act on every release registers one (`hooks`). Serial consoles
 * stop and delete the node's console log there. A hook runs once per release, and again after a
 * restart for a release whose power-off was still pending; it must be idempotent and quick to
 * start (it is not waited for), and its failure is logged, never fatal.
 */
import type { Asker } from '../../actors/runtime';
import type { ReadModel } from '../../actors/readmodel';
import type { NodeCommand, NodeReplies, NodeState } from '../../actors/node/protocol';
import type { PowerControl } from '../../hardware/power';
import { notFound } from '../../actors/errors';
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

export class ReleaseRunner {
  /** called once for each release (see the file's comment) */
  readonly hooks: ReleaseHook[] = [];
  /** `node\0since` of the power-offs under way */
  private readonly running = new Set<string>();
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

  /** After a start: every release whose power-off is still pending. */
  resumeAll(): void {
    for (const [id, due] of this.deps.rm.releasePowerOffs) {
      const node = this.deps.rm.nodes.get(id);
      if (node && due.status === 'pending') this.released(node);
    }
  }

  close(): void {
    this.stop.abort();
  }

  private released(node: NodeState): void {
    if (this.closed) return;
    for (const hook of this.hooks) {
      void Promise.resolve().then(() => hook(node)).catch((err) => this.deps.log.warn({ node: node.name, err: errorText(err) }, 'a release hook failed'));
    }
    if (node.releasePowerOff?.status === 'pending') void this.powerOff(node, node.releasePowerOff.since);
  }

  private async powerOff(node: NodeState, since: number): Promise<void> {
    const { rm, power, nodes, telemetry, log } = this.deps;
    const key = `${node.name}\u0000${since}`;
    if (this.running.has(key)) return;
    this.running.add(key);
    try {
      let error: string | null = null;
      try {
        // Queued behind every earlier call to this BMC and ahead of every later one (a new
        // tenant's power-on comes after it). When its turn comes the node must still be this
        // registration.
        await power.off(node.obm, {
          isAdmin: true,
          recheck: () => {
            if (rm.nodes.get(node.name)?.incarnation !== node.incarnation) throw notFound(`node ${node.name}`);
          },
        });
      } catch (err) {
        if (rm.nodes.get(node.name)?.incarnation !== node.incarnation) return;
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
