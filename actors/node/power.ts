/**
 * Power operations of a node, serialized per node (two calls never interleave their BMC
 * commands) but outside the node actor's mailbox: a BMC that hangs for seconds must not
 * hold up the node's other messages (DESIGN.md rule 4).
 */
import { HiltError } from '../../src/errors';
import { obmKind, ObmKind } from '../../drivers/obm/registry';
import { ObmDriver, ObmError, ObmInfo, PowerState } from '../../drivers/obm/types';
import { SerialQueues } from '../serial';

export class PowerControl {
  private readonly queues = new SerialQueues();

  constructor(private readonly drivers: Partial<Record<ObmKind, ObmDriver>>) {}

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
    return this.queues.run(node, () => op(driver)).catch((err: unknown) => {
      if (err instanceof ObmError) throw new HiltError('OBMError', err.message);
      throw err;
    });
  }
}
