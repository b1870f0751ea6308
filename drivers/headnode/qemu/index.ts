export { QemuHeadnodeDriver, type QemuHeadnodeOptions } from './driver';
