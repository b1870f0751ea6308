/**
 * Mock OBM driver, for labs and demos: no hardware, every call succeeds and the power state
 * and next boot device are remembered per BMC host so operators can inspect them. Its serial
 * console is a line that echoes what is typed and tells each power change as a boot would.
 */
import type { DriverFields } from '../registry';
import { requiredStrings, SCHEMA_BASE } from '../schema';
import type { BootDevice, ConsoleIo, ConsoleLink, ObmDriver, ObmDriverEntry, PowerState } from './types';

/** `bootdev`: `default` until set; a power cycle sets `pxe`; boot_device sets pxe, disk or none. */
export interface MockBmcState { power: PowerState; bootdev: string; cycles: number }

export class MockObmDriver implements ObmDriver {
  private readonly bmcs = new Map<string, MockBmcState>();
  /** open consoles per BMC host */
  private readonly consoles = new Map<string, Set<ConsoleIo>>();

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
    this.boot(String(fields.host));
  }

  async powerOff(fields: DriverFields): Promise<void> {
    this.state(String(fields.host)).power = 'off';
    this.say(String(fields.host), 'reboot: Power down\r\n');
  }

  async powerOn(fields: DriverFields): Promise<void> {
    this.state(String(fields.host)).power = 'on';
    this.boot(String(fields.host));
  }

  async openConsole(fields: DriverFields, io: ConsoleIo): Promise<ConsoleLink> {
    const host = String(fields.host);
    let set = this.consoles.get(host);
    if (!set) this.consoles.set(host, (set = new Set()));
    set.add(io);
    let open = true;
    queueMicrotask(() => io.data(Buffer.from(`mock serial console of ${host} (power ${this.state(host).power})\r\n`)));
    return {
      write: (bytes) => {
        // A terminal's echo, with Enter as a new line.
        if (open) io.data(Buffer.from(bytes.toString('latin1').replace(/\r/g, '\r\n'), 'latin1'));
        return true;
      },
      close: () => {
        if (!open) return;
        open = false;
        set.delete(io);
        queueMicrotask(() => io.ended('the mock console was closed'));
      },
    };
  }

  private say(host: string, text: string): void {
    for (const io of this.consoles.get(host) ?? []) io.data(Buffer.from(text));
  }

  private boot(host: string): void {
    this.say(host, `\r\nmock BIOS: booting from ${this.state(host).bootdev}\r\nPXE boot: no DHCP offer (mock)\r\n`);
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
