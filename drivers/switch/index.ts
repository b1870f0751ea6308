/** The switch drivers the service offers: adding one is its file plus one line here. */
import type { SwitchDriverEntry } from './types';
import { mock } from './mock';

export const SWITCH_DRIVERS: readonly SwitchDriverEntry[] = [mock];
