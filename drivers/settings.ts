/**
 * The service's settings that drivers read, and nothing else: drivers import no part of the
 * service (src/config.ts's Config extends this and documents each setting's variable).
 */
export interface DriverSettings {
  /** the service's data folder (drivers that keep files, e.g. the mock switches, use a folder in it) */
  dataDir: string;
  /** headnode base images always offered (docs/api-conventions.md §9), beside the driver's own (NAME.qcow2 in headnodeImagesDir) */
  baseImages: string[];
  /** base image NAME is the file NAME.qcow2 in this folder */
  headnodeImagesDir: string;
  /** OVS bridge the hnics' taps join (datapath_type=netdev where the kernel has no OVS module) */
  ovsBridge: string;
  /** ovsdb-server socket path; unset: ovs-vsctl's default */
  ovsDb?: string;
  headnodeAccel: 'tcg' | 'kvm';
  headnodeMemoryMb: number;
  /** delay of every VM operation of the mock headnode driver */
  mockHeadnodeDelayMs: number;
  mockSwitchDelayMs: number;
  mockSwitchSessionDelayMs: number;
  /** failure injection: `switch/port` entries whose every mock switch operation fails */
  mockSwitchFailPorts: string[];
  /** bound on each switch call: its port change and, when it opens the switch's session, the login (a logout has the same bound) */
  switchTimeoutMs: number;
  /** save the running configuration of a real switch (SSH drivers) at the end of each session that changed it */
  switchSave: boolean;
  ipmiCipherSuite?: string;
  /** bound on each power call, counted from when it is made (waiting behind earlier calls to the BMC included) */
  obmTimeoutMs: number;
}
