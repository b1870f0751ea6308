/**
 * Power operations of a node, serialized per node (two calls never interleave their BMC
 * commands) but outside the node actor's mailbox: a BMC that hangs for seconds must not
 * hold up the node's other messages (DESIGN.md rule 4). Every call is answered within the OBM
 * timeout (decisions.md §11), also one queued behind a call to a hung BMC: it then fails
 * without ever reaching the BMC.
 */
import { HiltError } from '../../src/errors';
import { obmKind, ObmKind } from '../../drivers/obm/registry';
import { ObmDriver, ObmError, ObmInfo, PowerState } from '../../drivers/obm/types';
import { SerialQueues } from '../serial';

/** A queued call that reaches the BMC with less time left than this gives up instead. */
const MIN_LEFT_MS = 50;

export class PowerControl {
  private readonly queues = new SerialQueues();

  constructor(private readonly drivers: Partial<Record<ObmKind, ObmDriver>>, private readonly timeoutMs = 10_000) {}

  cycle(node: string, obm: ObmInfo & { type: string }, force = false): Promise<void> {
    return this.run(node, obm, (d) => d.powerCycle(obm, { force }));
  }

  off(node: string, obm: ObmInfo & { type: string }): Promise<void> {
    return this.run(node, obm, (d) => d.powerOff(obm));
  }

  status(node: string, obm: ObmInfo & { type: string }): Promise<PowerState> {
    return this.run(node, obm, (d) => d.powerStatus(obm));
  }

  private run<T>(node: string, obm: { type: string }, op: (d: ObmDriver) => Promise<T>): Promise<T> {
    const kind = obmKind(obm.type);
    const driver = kind && this.drivers[kind];
    if (!driver) return Promise.reject(new HiltError('OBMError', `no driver is configured for OBM type ${obm.type}`));
    const deadline = Date.now() + this.timeoutMs;
    let started = false;
    const call = this.queues.run(node, async () => {
      if (deadline - Date.now() < MIN_LEFT_MS) throw new ObmError(`the BMC of node ${node} was still busy with an earlier call for ${this.timeoutMs} ms`);
      started = true;
      return op(driver);
    });
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new HiltError('OBMError', started
          ? `the BMC of node ${node} did not answer within ${this.timeoutMs} ms`
          : `the BMC of node ${node} was still busy with an earlier call for ${this.timeoutMs} ms`));
      }, Math.max(0, deadline - Date.now()));
      call.then(resolve, (err: unknown) => reject(err instanceof ObmError ? new HiltError('OBMError', err.message) : err))
        .finally(() => clearTimeout(timer));
    });
  }
}
