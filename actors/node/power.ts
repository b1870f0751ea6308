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
import type { Obm } from './protocol';

export class PowerControl {
  constructor(private readonly drivers: Partial<Record<ObmKind, ObmDriver>>) {}

  cycle(obm: Obm, force = false): Promise<void> {
    return this.run(obm, (d, info) => d.powerCycle(info, { force }));
  }

  off(obm: Obm): Promise<void> {
    return this.run(obm, (d, info) => d.powerOff(info));
  }

  status(obm: Obm): Promise<PowerState> {
    return this.run(obm, (d, info) => d.powerStatus(info));
  }

  private async run<T>(obm: Obm, op: (d: ObmDriver, info: ObmInfo) => Promise<T>): Promise<T> {
    const kind = obmKind(obm.type);
    const driver = kind && this.drivers[kind];
    if (!driver) throw new HiltError('OBMError', `no driver is configured for OBM type ${obm.type}`);
    try {
      return await op(driver, obm.fields as unknown as ObmInfo);
    } catch (err) {
      throw err instanceof ObmError ? new HiltError('OBMError', err.message) : err;
    }
  }
}
