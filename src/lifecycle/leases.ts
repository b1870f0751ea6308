/**
 * Timed reservations (docs/lifecycle.md). The node owns its lease (`lease` in its state, set,
 * moved and removed through its mailbox, dropped by its release); this runner owns no fact: it
 * keeps one timer for the earliest lease and, when a lease passes, carries out its expiry as the
 * system user, each step through the ordinary calls and so in the audit log:
 *
 * 1. the node records that the lease passed (`node.leaseExpired`): from then on no network is
 *    connected to it and the lease no longer moves;
 * 2. while an operation of the node is pending, it waits for it to end;
 * 3. every network of every nic is detached (`node.detachNetwork`, normal network operations):
 *    one at a time on each nic (a nic takes one operation at a time), the nics in parallel,
 *    each round at once after the last while the networks get fewer. One that fails (a switch
 *    down) is tried again with backoff, and the node is flagged in GET /admin/nodes/attention
 *    until a round makes progress again;
 * 4. the node is released from its project exactly as project_detach_node releases it (power-off,
 *    release hooks, maintenance pool).
 *
 * Expiry is durable because the lease is: after a start, every lease already passed (while the
 * service was stopped, or during an expiry a crash interrupted) is acted on at once.
 */
import { NATIVE } from '../../actors/nic/protocol';
import type { Asker } from '../../actors/runtime';
import type { ReadModel } from '../../actors/readmodel';
import type { Lease, NodeCommand, NodeReplies, NodeState } from '../../actors/node/protocol';
import type { ProjectCommand, ProjectReplies } from '../../actors/project/protocol';
import { HiltError } from '../../actors/errors';
import { errorText, LifecycleLog, LifecycleTelemetry, recordOutcome, SYSTEM_USER } from './common';
import { backoff, sleep } from '../../lib/time';

export interface LeaseDeps {
  rm: ReadModel;
  nodes: Asker<NodeCommand, NodeReplies>;
  projects: Asker<ProjectCommand, ProjectReplies>;
  telemetry: LifecycleTelemetry;
  log: LifecycleLog;
}

/** An expiry under way, and what holds it up (for GET /admin/nodes/attention). */
export interface Expiring { lease: Lease; since: number; problem?: string }

/**
 * The longest a timer is set for; a far one is set again on the way. A lease ends by the wall
 * clock, a timer runs on the monotonic one: a forward step of the wall clock (NTP) is noticed
 * within this, and the node refuses a renewal from the lease's end on (actors/node/actor.ts).
 */
const MAX_TIMER_MS = 10_000;
/** A nic's pending operation is looked at again at least this often (besides each nic commit). */
const RECHECK_MS = 1_000;

export class LeaseExpiry {
  private timer?: NodeJS.Timeout;
  private timerAt = Infinity;
  /** node → its expiry under way */
  readonly expiring = new Map<string, Expiring>();
  /** node → wakes its expiry when one of its nics commits */
  private readonly wakers = new Map<string, () => void>();
  /** aborted by close(): every wait of the runner ends */
  private readonly stop = new AbortController();
  private get closed(): boolean {
    return this.stop.signal.aborted;
  }

  constructor(private readonly deps: LeaseDeps) {}

  /** A node commit (World.nodeWatchers): a lease set, moved or gone changes the earliest one. */
  readonly watchNode = (_id: string, prev: NodeState | null, next: NodeState | null): void => {
    if (prev?.lease?.expiresAt !== next?.lease?.expiresAt) this.reschedule();
  };

  /** A nic commit (World.nicWatchers): an expiry waiting on the node's operations looks again. */
  readonly watchNic = (node: string): void => {
    this.wakers.get(node)?.();
  };

  /** After a start: every lease passed is acted on now, the others when they pass. */
  start(): void {
    this.tick();
  }

  close(): void {
    this.stop.abort();
    clearTimeout(this.timer);
    for (const wake of this.wakers.values()) wake();
  }

  private reschedule(): void {
    if (this.closed) return;
    let first = Infinity;
    for (const [id, lease] of this.deps.rm.leases) if (!this.expiring.has(id) && lease.expiresAt < first) first = lease.expiresAt;
    if (first === this.timerAt) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = first;
    if (first === Infinity) return;
    this.timer = setTimeout(() => this.tick(), Math.min(MAX_TIMER_MS, Math.max(0, first - Date.now())));
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    if (this.closed) return;
    const now = Date.now();
    for (const [id, lease] of this.deps.rm.leases) if (lease.expiresAt <= now && !this.expiring.has(id)) void this.expire(id, lease);
    this.reschedule();
  }

  /** Until one of the node's nics commits, or RECHECK_MS. */
  private settled(node: string, ms = RECHECK_MS): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakers.set(node, done);
    }).finally(() => this.wakers.delete(node));
  }

  private async expire(id: string, lease: Lease): Promise<void> {
    const { rm, nodes, projects, telemetry, log } = this.deps;
    const state: Expiring = { lease, since: Date.now() };
    this.expiring.set(id, state);
    const holds = () => {
      const l = rm.nodes.get(id)?.lease;
      return !this.closed && l?.project === lease.project && l.expiresAt === lease.expiresAt;
    };
    const trouble = (what: string, err: unknown) => {
      state.problem = `${what}: ${errorText(err)}`;
      log.warn({ node: id, project: lease.project, err: errorText(err) }, `lease expiry: ${what}`);
    };
    try {
      if (!lease.expired) {
        let refusal: unknown;
        const ask = () => nodes.ask(id, { type: 'node.leaseExpired', by: SYSTEM_USER, expiresAt: lease.expiresAt }).catch((err: unknown) => {
          refusal = err;
          throw err;
        });
        // Refused for good while the lease still holds (a bug): flagged, and tried again after
        // the pause below, not at once by the next tick.
        if (!(await recordOutcome(ask, this.stop.signal))) {
          if (holds()) throw refusal;
          return;
        }
        if (!holds()) return;
        telemetry.leaseExpired();
        log.info({ node: id, project: lease.project, expiredAt: new Date(lease.expiresAt).toISOString() }, 'a lease passed: releasing its node');
      }
      // `left`: networks attached when the last round began; `fired`: the detaches it queued.
      let fired: { nic: string; network: string; incarnation: string; seq: number }[] = [];
      for (let round = 0, left = Infinity; holds(); ) {
        if (rm.pendingByNode.has(id)) {
          await this.settled(id);
          continue;
        }
        // Tagged networks first, native ones last: some switches carry a tagged VLAN only beside
        // a native one, and refuse the native detach before (SwitchDriverEntry.nativeFirst).
        const nics = rm.nicsOf(id);
        const attached = nics.flatMap((nic) => Object.entries(nic.networks)
          .sort(([a], [b]) => Number(a === NATIVE) - Number(b === NATIVE))
          .map(([, network]) => ({ nic: nic.name, network })));
        if (attached.length) {
          // Fewer attached than the round before: progress, go on at once. Else a detach failed
          // (the switch refused it, or the node refused the call) and left its network attached:
          // try again, later each time.
          const progress = attached.length < left;
          if (progress) {
            round = 0;
            delete state.problem;
          }
          for (const f of fired) {
            const done = nics.find((n) => n.incarnation === f.incarnation)?.actions.find((a) => a.seq === f.seq);
            if (done?.status === 'ERROR') trouble(`could not detach network ${f.network} from nic ${f.nic}`, done.error ?? 'the switch operation failed');
          }
          fired = [];
          if (!progress) await sleep(backoff(round++, 1000, 60_000), this.stop.signal);
          left = attached.length;
          if (!holds()) break;
          // A nic takes one operation at a time: one detach per nic per round (its first: tagged
          // before native), the nics in parallel.
          const next = new Map<string, { nic: string; network: string }>();
          for (const a of attached) if (!next.has(a.nic)) next.set(a.nic, a);
          for (const { nic, network } of next.values()) {
            try {
              const ref = await nodes.ask(id, { type: 'node.detachNetwork', by: SYSTEM_USER, project: null, nic, network });
              fired.push({ nic, network, incarnation: ref.incarnation, seq: ref.seq });
            } catch (err) {
              trouble(`could not detach network ${network} from nic ${nic}`, err);
            }
          }
          continue;
        }
        try {
          // The node releases it only while this lease still holds it, decided in its mailbox.
          await projects.ask(lease.project, { type: 'project.detachNode', by: SYSTEM_USER, node: id, expiredLease: lease.expiresAt });
          return;
        } catch (err) {
          // Released (and maybe reserved again) by its project meanwhile: nothing left to do.
          if (!holds()) return;
          // A call that raced the expiry (a pending operation, an attachment) is met on the next round.
          if (!(err instanceof HiltError) || (err.type !== 'BlockedError' && err.type !== 'ServiceUnavailableError')) {
            trouble('could not release the node', err);
          }
          await sleep(RECHECK_MS, this.stop.signal);
        }
      }
    } catch (err) {
      trouble('the expiry failed', err);
      // Not at once again: the next tick would meet the same failure.
      await sleep(5_000, this.stop.signal);
    } finally {
      this.expiring.delete(id);
      this.reschedule();
    }
  }
}
