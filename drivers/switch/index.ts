/** The switch drivers the service offers: adding one is its file plus one line here. */
import type { SwitchDriverEntry } from './types';
import { mock } from './mock';
import { ovs } from './ovs';

export const SWITCH_DRIVERS: readonly SwitchDriverEntry[] = [mock, ovs];
