/**
 * Headnode actor protocol: the headnode owns its project, base image, hnics (with the network
 * of each) and the lifecycle of its VM as the service knows it.
 *
 * Lifecycle (status):
 *   created ──start──▶ starting ──▶ running ──stop──▶ stopping ──▶ stopped ──start──▶ starting …
 *      │                  │ failed: back to created (never ran) or stopped       running ──▶ died (the VM exited by itself)
 *      │                  │ failed, and powering the VM off failed too: stopping (the power-off is owed)
 *      └─ any state ──delete──▶ deleting ──▶ (gone)                               died ──start──▶ starting …
 * The transitional states (starting, stopping, deleting) are recorded before the hardware is
 * touched, so that after a crash the service knows what it was doing and finishes it
 * (HeadnodeControl.recover). hnics and networks change only in `created`: once a start
 * succeeded the headnode is frozen for good (spec, Headnode rule 1).
 */
export type HeadnodeStatus = 'created' | 'starting' | 'running' | 'stopping' | 'stopped' | 'died' | 'deleting';

export interface Hnic {
  name: string;
  /** attached network (native channel), or null */
  network: string | null;
}

export interface HeadnodeState {
  name: string;
  project: string;
  baseImg: string;
  /** in creation order: the VM's network cards in this order */
  hnics: Hnic[];
  /** set by the first successful start; never cleared */
  frozen: boolean;
  status: HeadnodeStatus;
  vncport: number | null;
  /** why the last start, stop or delete failed, or why the VM died; null after a success */
  error: string | null;
}

/** What a start needs to boot the VM (read together with the status change). */
export interface BootSpec {
  baseImg: string;
  hnics: { name: string; vlan: number | null }[];
}

/** What the API's routes may send (a VM's start, stop and delete go through HeadnodeControl). */
export type HeadnodePublicCommand =
  | { type: 'headnode.createHnic'; by: string; hnic: string }
  | { type: 'headnode.deleteHnic'; by: string; hnic: string }
  | { type: 'headnode.connectNetwork'; by: string; hnic: string; network: string }
  | { type: 'headnode.detachNetwork'; by: string; hnic: string };

export type HeadnodeCommand = HeadnodePublicCommand | HeadnodeInternalCommand;

/** What only the project actor and the headnode's corridor (hardware/headnode-control.ts) send. */
export type HeadnodeInternalCommand =
  /**
   * from the project actor (project → headnode), so project_delete cannot miss it; `overQuota`:
   * the project holds its quota of headnodes, a new name is refused with this message
   */
  | { type: 'headnode.create'; by: string; project: string; baseImg: string; overQuota?: string }
  /** HeadnodeControl: record the intent (replies with the BootSpec for a start), then the outcome */
  | { type: 'headnode.beginStart'; by: string }
  /** mayRun: the start failed and so did powering the VM off, so it may still run */
  | { type: 'headnode.endStart'; by: string; vncport: number | null; error: string | null; mayRun?: boolean }
  | { type: 'headnode.beginStop'; by: string }
  | { type: 'headnode.endStop'; by: string; error: string | null }
  | { type: 'headnode.beginDelete'; by: string }
  | { type: 'headnode.endDelete'; by: string; error: string | null }
  /** HeadnodeControl's monitor and recovery: what the driver found */
  | { type: 'headnode.observed'; by: string; running: boolean; vncport: number | null; error: string | null; mayRun?: boolean };

export interface HeadnodeReplies {
  'headnode.create': void;
  'headnode.createHnic': void;
  'headnode.deleteHnic': void;
  'headnode.connectNetwork': void;
  'headnode.detachNetwork': void;
  /** what the VM needs, read in the same turn as the status change */
  'headnode.beginStart': BootSpec;
  'headnode.endStart': void;
  'headnode.beginStop': void;
  'headnode.endStop': void;
  'headnode.beginDelete': void;
  'headnode.endDelete': void;
  'headnode.observed': void;
}

export type HeadnodeEvent =
  | { type: 'HeadnodeCreated'; project: string; baseImg: string }
  | { type: 'HnicCreated'; hnic: string }
  | { type: 'HnicDeleted'; hnic: string }
  | { type: 'HnicNetworkConnected'; hnic: string; network: string }
  | { type: 'HnicNetworkDetached'; hnic: string }
  | { type: 'HeadnodeStartRequested' }
  | { type: 'HeadnodeStarted'; vncport: number | null }
  /** mayRun: the VM could not be powered off after the failure (absent in older events: it was) */
  | { type: 'HeadnodeStartFailed'; error: string; mayRun?: true }
  | { type: 'HeadnodeStopRequested' }
  | { type: 'HeadnodeStopped' }
  | { type: 'HeadnodeStopFailed'; error: string }
  | { type: 'HeadnodeDied'; error: string; mayRun?: true }
  | { type: 'HeadnodeDeleteRequested' }
  | { type: 'HeadnodeDeleteFailed'; error: string }
  | { type: 'HeadnodeDeleted' };
