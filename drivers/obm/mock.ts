/**
 * Mock OBM driver, for labs and demos: no hardware, every call succeeds and the power state
 * and next boot device are remembered per BMC host so operators can inspect them.
 */
import type { DriverFields } from '../registry';
import { requiredStrings, SCHEMA_BASE } from '../schema';
import type { BootDevice, ObmDriver, ObmDriverEntry, PowerState } from './types';

/** `bootdev`: `default` until set; a power cycle sets `pxe`; boot_device sets pxe, disk or none. */
export interface MockBmcState { power: PowerState; bootdev: string; cycles: number }

export class MockObmDriver implements ObmDriver {
  private readonly bmcs = new Map<string, MockBmcState>();

  state(host: string): MockBmcState {
    let s = this.bmcs.get(host);
    if (!s) this.bmcs.set(host, (s = { power: 'off', bootdev: 'default', cycles: 0 }));
    return s;
  }

  async powerCycle(fields: DriverFields): Promise<void> {
    const s = this.state(String(fields.host));
    s.bootdev = 'pxe';
    s.power = 'on';
    s.cycles++;
  }

  async powerOff(fields: DriverFields): Promise<void> {
    this.state(String(fields.host)).power = 'off';
  }

  async powerOn(fields: DriverFields): Promise<void> {
    this.state(String(fields.host)).power = 'on';
  }

  async powerStatus(fields: DriverFields): Promise<PowerState> {
    return this.state(String(fields.host)).power;
  }

  async setBootDevice(fields: DriverFields, device: BootDevice): Promise<void> {
    this.state(String(fields.host)).bootdev = device;
  }
}

export const mock: ObmDriverEntry<MockObmDriver> = {
  type: `${SCHEMA_BASE}/v0/obm/mock`,
  extension: 'hilt.obm.mock',
  fields: requiredStrings('host', 'user', 'password'),
  create: () => new MockObmDriver(),
  device: (fields) => String(fields.host),
  // The mock BMC's power state and boot device, for labs and demos.
  inspect: (driver, { fields }) => ({ mockBmc: driver.state(String(fields.host)) }),
};
