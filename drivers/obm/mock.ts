/**
 * Mock OBM driver, for labs and demos: no hardware, every call succeeds and the power state
 * and next boot device are remembered per BMC host so operators can inspect them.
 */
import type { ObmDriver, ObmInfo, PowerState } from './types';

export interface MockBmcState { power: PowerState; bootdev: string; cycles: number }

export class MockObmDriver implements ObmDriver {
  private readonly bmcs = new Map<string, MockBmcState>();

  state(host: string): MockBmcState {
    let s = this.bmcs.get(host);
    if (!s) this.bmcs.set(host, (s = { power: 'off', bootdev: 'default', cycles: 0 }));
    return s;
  }

  async powerCycle(info: ObmInfo): Promise<void> {
    const s = this.state(info.host);
    s.bootdev = 'pxe';
    s.power = 'on';
    s.cycles++;
  }

  async powerOff(info: ObmInfo): Promise<void> {
    this.state(info.host).power = 'off';
  }

  async powerStatus(info: ObmInfo): Promise<PowerState> {
    return this.state(info.host).power;
  }
}
