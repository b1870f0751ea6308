/**
 * Power operations of a node, outside the node actor's mailbox: a BMC that hangs for seconds
 * must not hold up the node's other messages (DESIGN.md rule 4). The driver serializes the
 * calls of one BMC and answers each within its timeout, waiting included (drivers/obm/types.ts),
 * so two calls for a node never interleave their commands and none waits longer than the
 * timeout behind a hung one.
 */
import { HiltError } from '../../src/errors';
import { obmKind, ObmKind } from '../../drivers/obm/registry';
import { ObmDriver, ObmError, ObmInfo, PowerState } from '../../drivers/obm/types';

export class PowerControl {
  constructor(private readonly drivers: Partial<Record<ObmKind, ObmDriver>>) {}

  cycle(obm: ObmInfo & { type: string }, force = false): Promise<void> {
    return this.run(obm, (d) => d.powerCycle(obm, { force }));
  }

  off(obm: ObmInfo & { type: string }): Promise<void> {
    return this.run(obm, (d) => d.powerOff(obm));
  }

  status(obm: ObmInfo & { type: string }): Promise<PowerState> {
    return this.run(obm, (d) => d.powerStatus(obm));
  }

  private async run<T>(obm: { type: string }, op: (d: ObmDriver) => Promise<T>): Promise<T> {
    const kind = obmKind(obm.type);
    const driver = kind && this.drivers[kind];
    if (!driver) throw new HiltError('OBMError', `no driver is configured for OBM type ${obm.type}`);
    try {
      return await op(driver);
    } catch (err) {
      throw err instanceof ObmError ? new HiltError('OBMError', err.message) : err;
    }
  }
}
