/**
 * Headnode (project VM) driver contract. A driver knows nothing about actors or HTTP, and it
 * neither queues calls nor bounds their time: HeadnodeControl runs the calls for one headnode one
 * at a time through the device queue, which gives each a deadline.
 *
 * Every call takes an AbortSignal. When it aborts, the driver ends what it is doing (kills the
 * helper program it runs, stops waiting on QEMU) and rejects with the signal's reason; what it
 * leaves half done (a VM it was booting, say) is for the caller to power off.
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
  listImages(signal: AbortSignal): Promise<string[]>;
  /** Prepare the VM's disk (copy-on-write overlay of the base image). Idempotent. */
  create(name: string, baseImage: string, signal: AbortSignal): Promise<void>;
  /** Boot the VM with one network interface per hnic. Resolves once the VM runs. */
  start(name: string, hnics: HnicSpec[], signal: AbortSignal): Promise<HeadnodeStatus>;
  /** Forced power off (no clean shutdown). Idempotent. */
  stop(name: string, signal: AbortSignal): Promise<void>;
  /** Whether the guest runs now (a paused guest, or one whose QEMU does not answer, does not), and its VNC port. */
  status(name: string, signal: AbortSignal): Promise<HeadnodeStatus>;
  /**
   * Does the VM's process still exist? Unlike status(), a VM that is paused or slow to answer
   * counts as alive: only a VM that is gone is dead.
   */
  isAlive(name: string, signal: AbortSignal): Promise<boolean>;
  /**
   * After a service restart: for a headnode the service believes is running, adopt the VM if it
   * still runs, else start it again. Returns the resulting status.
   */
  recover(name: string, hnics: HnicSpec[], signal: AbortSignal): Promise<HeadnodeStatus>;
  /** Stop the VM if running and remove its disk and network interfaces. Idempotent. */
  destroy(name: string, signal: AbortSignal): Promise<void>;
  /** Stop every VM this driver started (service shutdown in tests). */
  close(signal: AbortSignal): Promise<void>;
}

/**
 * The registration fields of every headnode driver: none. Clients never register headnode
 * drivers; the service runs the one HILT_HEADNODE_DRIVER names.
 */
export const NO_FIELDS = { type: 'object', additionalProperties: false } as const;

/** A base image name: the stem of its file NAME.qcow2. */
export const IMAGE_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;

export class HeadnodeError extends Error {
  override name = 'HeadnodeError';
}
