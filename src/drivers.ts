/**
 * The service's drivers, all three kinds built here: for switches and BMCs, each kind's registry
 * (the entries of drivers/<kind>/index.ts, plus any a test or lab adds) and one instance of each
 * driver; for headnode VMs, the one driver HILT_HEADNODE_DRIVER names (or one a test gives).
 */
import { DriverRegistry, DriverSet, fieldList } from '../drivers/registry';
import type { Config } from './config';
import { SWITCH_DRIVERS } from '../drivers/switch';
import { OBM_DRIVERS } from '../drivers/obm';
import { HEADNODE_DRIVERS } from '../drivers/headnode';
import type { SwitchDriver, SwitchDriverEntry } from '../drivers/switch/types';
import type { ObmDriver, ObmDriverEntry } from '../drivers/obm/types';
import type { HeadnodeDriver } from '../drivers/headnode/types';

export interface Drivers {
  switches: DriverSet<SwitchDriver, SwitchDriverEntry>;
  obm: DriverSet<ObmDriver, ObmDriverEntry>;
  /** the headnode VMs' driver, and its name for metrics (`custom` when a test gave it) */
  headnode: { driver: HeadnodeDriver; name: string };
}

/** Drivers beyond the built-in ones, offered exactly like them (their types must be new). */
export interface ExtraDrivers {
  switch?: readonly SwitchDriverEntry[];
  obm?: readonly ObmDriverEntry[];
  /** replaces the configured headnode driver */
  headnode?: HeadnodeDriver;
}

/** OBM fields arrive inside node_register's `obm` object. */
const OBM_WORDING = { fieldPrefix: 'obm.', typeRequired: true, unexpected: (_type: string, extra: string[]) => `unexpected OBM field(s): ${fieldList(extra)}` };

export function startDrivers(config: Config, extra: ExtraDrivers = {}): Drivers {
  const ctx = { settings: config };
  return {
    switches: new DriverSet(new DriverRegistry<SwitchDriver, SwitchDriverEntry>('switch', [...SWITCH_DRIVERS, ...(extra.switch ?? [])]), ctx),
    obm: new DriverSet(new DriverRegistry<ObmDriver, ObmDriverEntry>('OBM', [...OBM_DRIVERS, ...(extra.obm ?? [])], OBM_WORDING), ctx),
    headnode: extra.headnode ? { driver: extra.headnode, name: 'custom' } : { driver: headnodeDriver(config), name: config.headnodeDriver },
  };
}

function headnodeDriver(config: Config): HeadnodeDriver {
  const entry = HEADNODE_DRIVERS.get(config.headnodeDriver);
  if (!entry) throw new Error(`unknown headnode driver "${config.headnodeDriver}" (known: ${HEADNODE_DRIVERS.types().join(', ')})`);
  return entry.create({ settings: config });
}

export async function closeDrivers(drivers: Drivers): Promise<void> {
  await drivers.switches.close();
  await drivers.obm.close();
}
