/**
 * The headnode drivers, each named by its HILT_HEADNODE_DRIVER value. A new one is a file that
 * exports its entry plus a line in this list.
 */
import { DriverRegistry } from '../registry';
import { mockHeadnode } from './mock';
import { qemuHeadnode } from './qemu';
import type { HeadnodeDriver } from './types';

export const HEADNODE_DRIVERS = new DriverRegistry<HeadnodeDriver>('headnode', [qemuHeadnode, mockHeadnode]);
