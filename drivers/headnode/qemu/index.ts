import { join } from 'node:path';

import type { DriverEntry } from '../../registry';
import { NO_FIELDS, type HeadnodeDriver } from '../types';
import { QemuHeadnodeDriver } from './driver';

export { QemuHeadnodeDriver, type QemuHeadnodeOptions } from './driver';

/** HILT_HEADNODE_DRIVER=qemu: real VMs on the Open vSwitch bridge of the settings. */
export const qemuHeadnode: DriverEntry<HeadnodeDriver> = {
  type: 'qemu',
  extension: 'hilt.headnodes.qemu',
  fields: NO_FIELDS,
  create: ({ settings: config }) => new QemuHeadnodeDriver({
    imagesDir: config.headnodeImagesDir,
    // Overlays, QMP sockets and VM state files live with the service's data.
    stateDir: join(config.dataDir, 'headnodes'),
    bridge: config.ovsBridge,
    ovsDbSock: config.ovsDb,
    accel: config.headnodeAccel,
    memoryMb: config.headnodeMemoryMb,
  }),
};
