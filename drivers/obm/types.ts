/**
 * Out-of-band management (power control) driver contract.
 *
 * A driver knows nothing about actors or HTTP, and holds no queue and no timer: the service
 * (hardware/power.ts) runs the calls of one BMC one at a time, paced as the driver's entry
 * asks, and gives each a deadline. A call receives the node's OBM fields (validated by the
 * entry at registration) and an AbortSignal that aborts at the deadline: the driver then stops
 * what it is doing (kills its child process, closes its connection). Calls reject with ObmError
 * on failure (the HTTP layer maps ObmError to 502 {"type": "OBMError"}).
 */
import type { DriverEntry, DriverFields } from '../registry';

export type PowerState = 'on' | 'off';

/**
 * The boot devices of HIL's node_set_bootdev, for every driver: `pxe` (network), `disk` (the
 * first disk) and `none` (no override: the firmware's own boot order).
 */
export const BOOT_DEVICES = ['pxe', 'disk', 'none'] as const;
export type BootDevice = (typeof BOOT_DEVICES)[number];

export const isBootDevice = (v: unknown): v is BootDevice => (BOOT_DEVICES as readonly unknown[]).includes(v);

export interface ObmDriver {
  /** Set the next boot device to PXE, then power-cycle a running node or power on a node that is off. */
  powerCycle(fields: DriverFields, opts: { force?: boolean }, signal: AbortSignal): Promise<void>;
  /** Hard power off; no effect when already off. */
  powerOff(fields: DriverFields, signal: AbortSignal): Promise<void>;
  /** Power on; no effect when already on (the boot device is left as it is). */
  powerOn(fields: DriverFields, signal: AbortSignal): Promise<void>;
  powerStatus(fields: DriverFields, signal: AbortSignal): Promise<PowerState>;
  /**
   * The device the node boots from from now on, persistently (HIL's set_bootdev: IPMI's
   * `options=persistent`); `none` removes the override. A power cycle's one-time PXE boot
   * replaces it, as it did in HIL.
   */
  setBootDevice(fields: DriverFields, device: BootDevice, signal: AbortSignal): Promise<void>;
  /**
   * The node's serial console (IPMI Serial-over-LAN), for drivers that have one (a driver
   * without it offers no console: the routes answer 409). Ends a console session the BMC may
   * still hold (ours, from before a crash, or another client's), then opens one: resolves once
   * it carries the node's output, rejects with ObmError when it could not open or the signal
   * aborted (nothing is left running then). Once open, the session is no longer the call's: it
   * lives until close() or until it drops, and tells its end through `io.ended`.
   */
  openConsole?(fields: DriverFields, io: ConsoleIo, signal: AbortSignal): Promise<ConsoleLink>;
}

/** Where an open console session's output goes, and how its end is told. */
export interface ConsoleIo {
  /** bytes the node wrote to its serial line */
  data(chunk: Buffer): void;
  /** the session ended (by close() or on its own); `reason` holds no secret */
  ended(reason: string): void;
}

/** An open console session. */
export interface ConsoleLink {
  /** the child process that carries it, when one does (ipmitool) */
  readonly pid?: number;
  /** bytes a viewer typed, for the node's serial input; false: refused, the node has not taken the earlier input yet */
  write(bytes: Buffer): boolean;
  /** ends the session (its child, if any, is gone within a few seconds); `ended` follows */
  close(): void;
}

/** An OBM driver's registry entry (drivers/registry.ts), plus what the service's queue needs. */
export interface ObmDriverEntry<D extends ObmDriver = ObmDriver> extends DriverEntry<D> {
  /**
   * The BMC that a node's fields address (e.g. `host:port`): calls with one key run one at a
   * time. It also names the BMC in messages, so it must hold no secret.
   */
  device(fields: DriverFields): string;
  /**
   * How calls to one BMC are paced: `minIntervalMs` of quiet between two calls (small BMCs
   * drop sessions when hurried), and no call started with less than `minRunMs` left before its
   * deadline (it could only be killed again). Default: no pacing.
   */
  readonly pacing?: { minIntervalMs: number; minRunMs: number };
}

/**
 * A hardware failure: not the client's mistake. `message` is safe to show (no secrets) to an
 * admin. `forMembers`, when given, is the driver's own wording for the node's project: the same
 * failure without text from outside the driver (the network or TLS stack's messages name the
 * BMC's resolved address and port, which the project must not learn).
 */
export class ObmError extends Error {
  override name = 'OBMError';
  readonly forMembers?: string;

  constructor(message: string, opts: { forMembers?: string } = {}) {
    super(message);
    if (opts.forMembers !== undefined) this.forMembers = opts.forMembers;
  }
}
