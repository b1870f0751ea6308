/**
 * Headnode (project VM) driver contract. A driver knows nothing about actors or HTTP;
 * the headnode actor serializes calls for one headnode.
 * Calls reject with HeadnodeError on failure (mapped to a 5xx by the HTTP layer).
 */
export interface HnicSpec {
  /** hnic name, unique within the headnode */
  name: string;
  /** VLAN id of the attached network, or null when no network is attached */
  vlan: number | null;
}

export interface HeadnodeStatus {
  running: boolean;
  /** VNC TCP port on 127.0.0.1 while running, else null */
  vncport: number | null;
}

export interface HeadnodeDriver {
  /** Names of installed base images (image NAME is the file NAME.qcow2 in the images folder). */
  listImages(): Promise<string[]>;
  /** Prepare the VM's disk (copy-on-write overlay of the base image). Idempotent. */
  create(name: string, baseImage: string): Promise<void>;
  /** Boot the VM with one network interface per hnic. Resolves once the VM runs. */
  start(name: string, hnics: HnicSpec[]): Promise<HeadnodeStatus>;
  /** Forced power off (no clean shutdown). Idempotent. */
  stop(name: string): Promise<void>;
  /** Whether the guest runs now (a paused guest, or one whose QEMU does not answer, does not), and its VNC port. */
  status(name: string): Promise<HeadnodeStatus>;
  /**
   * Does the VM's process still exist? Unlike status(), a VM that is paused or slow to answer
   * counts as alive: only a VM that is gone is dead.
   */
  isAlive(name: string): Promise<boolean>;
  /**
   * After a service restart: for a headnode the service believes is running, adopt the VM if it
   * still runs, else start it again. Returns the resulting status.
   */
  recover(name: string, hnics: HnicSpec[]): Promise<HeadnodeStatus>;
  /** Stop the VM if running and remove its disk and network interfaces. Idempotent. */
  destroy(name: string): Promise<void>;
  /** Stop every VM this driver started (service shutdown in tests). */
  close(): Promise<void>;
}

/** A base image name: the stem of its file NAME.qcow2. */
export const IMAGE_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;

export class HeadnodeError extends Error {
  override name = 'HeadnodeError';
}
