/** The OBM drivers the service offers: adding one is its file plus one line here. */
import type { ObmDriverEntry } from './types';
import { ipmi } from './ipmitool';
import { mock } from './mock';
import { redfish } from './redfish';

export const OBM_DRIVERS: readonly ObmDriverEntry[] = [ipmi, mock, redfish];
