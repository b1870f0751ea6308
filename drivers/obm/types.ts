/**
 * Out-of-band management (power control) driver contract.
 *
 * A driver knows nothing about actors or HTTP. It may be called concurrently, for one BMC too:
 * it serializes the calls of one BMC itself (their commands never interleave). Every call is
 * bounded by the driver's timeout, counted from the moment it is made (time spent waiting
 * behind an earlier call included), and rejects with ObmError on failure (the HTTP layer maps
 * ObmError to 502 {"type": "OBMError"}).
 */
export interface ObmInfo {
  /** BMC address, optionally `host:port` (IPMI default port 623). */
  host: string;
  user: string;
  /** Never logged, never returned by the API, never placed on a command line. */
  password: string;
}

export type PowerState = 'on' | 'off';

export interface ObmDriver {
  /** Set the next boot device to PXE, then power-cycle a running node or power on a node that is off. */
  powerCycle(info: ObmInfo, opts?: { force?: boolean }): Promise<void>;
  /** Hard power off; no effect when already off. */
  powerOff(info: ObmInfo): Promise<void>;
  powerStatus(info: ObmInfo): Promise<PowerState>;
}

/** A hardware failure: not the client's mistake. `message` is safe to show (no secrets). */
export class ObmError extends Error {
  override name = 'OBMError';
}
