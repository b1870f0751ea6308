/**
 * Power operations of a node, outside the node actor's mailbox: a BMC that hangs for seconds
 * must not hold up the node's other messages (docs/actors.md, rule 4).
 *
 * Every call runs on a DeviceQueue, one per OBM driver, keyed by the BMC its entry names
 * (`device`) and paced as the entry asks: calls to one BMC never interleave their commands (a
 * whole power cycle is one call), and different BMCs work in parallel. Each call is answered
 * within the OBM timeout of being made, waiting behind earlier calls included: one still
 * waiting then never reaches the BMC, and one running then is aborted (its ipmitool killed).
 */
import { DeviceQueue } from '../device-queue';
import { HiltError } from '../errors';
import type { DriverFields, DriverSet } from '../../drivers/registry';
import { ObmDriver, ObmDriverEntry, ObmError, PowerState } from '../../drivers/obm/types';
import type { Obm } from './protocol';

type Call<T> = (driver: ObmDriver, fields: DriverFields, signal: AbortSignal) => Promise<T>;

export class PowerControl {
  /** per OBM type */
  private readonly queues = new Map<string, DeviceQueue>();

  constructor(private readonly drivers: DriverSet<ObmDriver, ObmDriverEntry>, timeoutMs: number) {
    for (const entry of drivers.registry.entries) {
      this.queues.set(entry.type, new DeviceQueue({
        timeoutMs,
        minIntervalMs: entry.pacing?.minIntervalMs,
        minRunMs: entry.pacing?.minRunMs,
        timeoutError: (_message, t) =>
          new ObmError(`BMC ${t.device} did not answer within ${t.timeoutMs} ms (${t.waiting ? 'still busy with an earlier call' : t.what})`),
      }));
    }
  }

  cycle(obm: Obm, force = false): Promise<void> {
    return this.run(obm, force ? 'power cycle (force)' : 'power cycle', (d, f, s) => d.powerCycle(f, { force }, s));
  }

  off(obm: Obm): Promise<void> {
    return this.run(obm, 'power off', (d, f, s) => d.powerOff(f, s));
  }

  status(obm: Obm): Promise<PowerState> {
    return this.run(obm, 'power status', (d, f, s) => d.powerStatus(f, s));
  }

  private async run<T>(obm: Obm, what: string, call: Call<T>): Promise<T> {
    const found = this.drivers.get(obm.type);
    if (!found) throw new HiltError('OBMError', `no driver is configured for OBM type ${obm.type}`);
    try {
      const device = found.entry.device(obm.fields);
      return await this.queues.get(obm.type)!.run(device, (signal) => call(found.driver, obm.fields, signal), { from: 'submit', what });
    } catch (err) {
      throw err instanceof ObmError ? new HiltError('OBMError', err.message) : err;
    }
  }
}
