/**
 * The service's drivers: for each kind, its registry (the entries of drivers/<kind>/index.ts,
 * plus any a test or lab adds) and one instance of each driver.
 */
import { fieldList } from '../drivers/registry';
import type { Config } from './config';
import { DriverRegistry, DriverSet } from '../drivers/registry';
import { SWITCH_DRIVERS } from '../drivers/switch';
import { OBM_DRIVERS } from '../drivers/obm';
import type { SwitchDriver, SwitchDriverEntry } from '../drivers/switch/types';
import type { ObmDriver, ObmDriverEntry } from '../drivers/obm/types';

export interface Drivers {
  switches: DriverSet<SwitchDriver, SwitchDriverEntry>;
  obm: DriverSet<ObmDriver, ObmDriverEntry>;
}

/** Drivers beyond the built-in ones, offered exactly like them (their types must be new). */
export interface ExtraDrivers {
  switch?: readonly SwitchDriverEntry[];
  obm?: readonly ObmDriverEntry[];
}

/** OBM fields arrive inside node_register's `obm` object. */
const OBM_WORDING = { fieldPrefix: 'obm.', typeRequired: true, unexpected: (_type: string, extra: string[]) => `unexpected OBM field(s): ${fieldList(extra)}` };

export function startDrivers(config: Config, extra: ExtraDrivers = {}): Drivers {
  const ctx = { config };
  return {
    switches: new DriverSet(new DriverRegistry<SwitchDriver, SwitchDriverEntry>('switch', [...SWITCH_DRIVERS, ...(extra.switch ?? [])]), ctx),
    obm: new DriverSet(new DriverRegistry<ObmDriver, ObmDriverEntry>('OBM', [...OBM_DRIVERS, ...(extra.obm ?? [])], OBM_WORDING), ctx),
  };
}

export async function closeDrivers(drivers: Drivers): Promise<void> {
  await drivers.switches.close();
  await drivers.obm.close();
}
