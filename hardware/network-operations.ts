/**
 * Carries out the nics' pending network operations, outside their mailboxes (docs/actors.md, rule 4):
 * it hands an operation to its port actor (nic → port), waits for the outcome and records it in
 * the nic (`nic.actionFinished`). A node's operations are applied in the order it accepted them,
 * also across its nics: at most one operation per node is with a port, the lowest-numbered
 * pending one, and the next goes only once the outcome is committed. It holds no durable state:
 * after a restart, resumeAll() hands on every operation still pending in storage (the port's
 * changes are idempotent, so a repeat does not change the outcome).
 */
import type { Asker } from '../actors/runtime';
import type { ReadModel } from '../actors/readmodel';
import { nicId, portId } from '../actors/ids';
import type { PortChange, PortCommand, PortReplies } from '../actors/port/protocol';
import { NATIVE, NetworkAction, NicCommand, NicReplies, NicState } from '../actors/nic/protocol';
import type { OperationType, Telemetry } from '../actors/telemetry';
import { operationTrace } from './op-trace';
import { backoff, sleep } from '../lib/time';

/** An operation's type as metrics and the dashboard name it. */
export function operationType(a: NetworkAction): OperationType {
  if (a.type === 'revert_port') return 'revert';
  if (a.type === 'reapply_port') return 'reapply';
  return a.newNetwork ? 'connect' : 'detach';
}

/**
 * Reports what a commit of a nic did to its network operations: one accepted (a new pending
 * one), one finished (the pending one ended DONE or ERROR). Called after each commit, never
 * during recovery, so each is reported once.
 */
export function reportOperations(prev: NicState | null, next: NicState | null, telemetry: Telemetry): void {
  const was = prev?.pending;
  const now = next?.pending;
  if (now && now.seq !== was?.seq) telemetry.operationAccepted(now.switch, operationType(now));
  if (was && now?.seq !== was.seq) {
    const done = next?.actions.find((a) => a.seq === was.seq);
    if (done && done.status !== 'PENDING') {
      telemetry.operationFinished(was.switch, operationType(was), done.status, Math.max(0, (done.finishedAt ?? Date.now()) - done.acceptedAt) / 1000);
    }
  }
}

export interface NetworkOperationsDeps {
  rm: ReadModel;
  nics: Asker<NicCommand, NicReplies>;
  ports: Asker<PortCommand, PortReplies> & { preload?(ids: Iterable<string>): Promise<void> };
  /** false once this process may no longer act as the active one (its lease lost; absent: always may) */
  mayAct?: () => boolean;
}

/** How often an operation whose process may not act for the moment looks again. */
export const MAY_ACT_POLL_MS = 250;

/** The port change an operation asks for; null when it cannot be carried out. */
function changeOf(a: NetworkAction): PortChange | null {
  if (a.type === 'revert_port') return { kind: 'revert' };
  if (a.type === 'reapply_port') return { kind: 'reapply' };
  if (a.vlan === undefined) return null;
  return { kind: a.newNetwork ? 'attach' : 'detach', native: a.channel === NATIVE, vlan: a.vlan };
}

export class NetworkOperations {
  /** nodes with an operation at a port now */
  private readonly inFlight = new Set<string>();
  /** operations handed on again at the start (`<nic id>#<seq>`) and not yet at their port: an earlier process may have carried them out */
  private readonly resumed = new Set<string>();
  private closing = false;

  constructor(private readonly deps: NetworkOperationsDeps) {}

  /** Hand the node's oldest pending operation to its port, unless one of the node's is there already. */
  handOn(node: string): void {
    if (this.inFlight.has(node) || this.closing) return;
    const { rm } = this.deps;
    let next: NetworkAction | undefined;
    for (const nic of rm.pendingByNode.get(node)) {
      const p = rm.nic(node, nic)?.pending;
      if (p && (!next || p.seq < next.seq || (p.seq === next.seq && p.nic < next.nic))) next = p;
    }
    if (!next) return;
    const action = next;
    operationTrace.mark(node, 'acceptDurable');
    this.inFlight.add(node);
    void this.carryOut(node, action).then((recorded) => {
      this.inFlight.delete(node);
      // Not recorded (shutting down): the operation stays PENDING in storage and is resumed at the next start.
      if (recorded) this.handOn(node);
    });
  }

  /**
   * After a start, before the API serves: hand on every operation that was pending, in the order
   * they were accepted (the oldest pending operation of each node first), so that each switch's
   * queue gets them in that order, ahead of anything accepted after the start (whatever the
   * engine: see the ports' preload below). In the order the
   * store lists the nics (by key: on0, on1, on10 … on2), the same node's operation came last after
   * every restart, and a service restarted often enough never reached it.
   */
  async resumeAll(): Promise<void> {
    const { rm } = this.deps;
    const pending = (node: string) => [...rm.pendingByNode.get(node)].flatMap((nic) => rm.nic(node, nic)?.pending ?? []);
    const oldest = (node: string) => Math.min(...pending(node).map((p) => p.acceptedAt));
    const nodes = [...rm.pendingByNode.keys()].map((node) => ({ node, at: oldest(node) })).sort((a, b) => a.at - b.at);
    // Their ports are read from storage first: each hand-on then reaches its switch's queue in
    // this turn, in this order, before the API serves anything (EntityRegistry.preload).
    await this.deps.ports.preload?.(nodes.flatMap(({ node }) => pending(node).map((p) => portId(p.switch, p.port))));
    for (const { node } of nodes) for (const p of pending(node)) this.resumed.add(`${nicId(node, p.nic)}#${p.seq}`);
    for (const { node } of nodes) this.handOn(node);
  }

  close(): void {
    this.closing = true;
  }

  private async carryOut(node: string, action: NetworkAction): Promise<boolean> {
    const change = changeOf(action);
    let error: string | null;
    if (!change) {
      error = 'the network of this operation has no VLAN id';
    } else {
      try {
        error = await this.deps.ports.ask(portId(action.switch, action.port),
          { type: 'port.apply', by: 'switch', node, nic: action.nic, change, resumed: this.resumed.delete(`${nicId(node, action.nic)}#${action.seq}`) }, { hardware: true });
      } catch (err) {
        error = (err as Error).message;
      }
    }
    operationTrace.mark(node, 'portAnswered');
    if (this.closing) return false;
    // A process that may not act records no outcome: its switch call may have been refused for
    // that alone, and an ERROR committed while its token is still current would end an operation
    // the next active process is to carry out. Once it may act again (a renewal that came late)
    // the operation is carried out again, as resumed (the call may have reached the port); once
    // it steps down (close()) it stays PENDING and the next active process resumes it.
    if (this.deps.mayAct && !this.deps.mayAct()) {
      while (!this.closing && !this.deps.mayAct()) await sleep(MAY_ACT_POLL_MS);
      if (this.closing) return false;
      this.resumed.add(`${nicId(node, action.nic)}#${action.seq}`);
      return this.carryOut(node, action);
    }
    return this.record(node, action, error);
  }

  /** Commit the outcome; retried with backoff, since a lost outcome would stall the node. */
  private async record(node: string, action: NetworkAction, error: string | null): Promise<boolean> {
    for (let attempt = 0; !this.closing; attempt++) {
      try {
        await this.deps.nics.ask(nicId(node, action.nic), { type: 'nic.actionFinished', by: 'switch', seq: action.seq, error });
        return true;
      } catch {
        await sleep(backoff(attempt, 50, 5_000));
      }
    }
    return false;
  }
}
