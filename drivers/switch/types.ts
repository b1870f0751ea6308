/**
 * Switch driver contract. A driver knows nothing about actors or HTTP, and holds no queue and
 * no timer: the service (actors/switch/sessions.ts) opens one session per switch at a time,
 * applies every queued operation of that switch in it, and bounds each call with a deadline;
 * at the deadline it aborts the signal given to `open` (a driver stops logging in) or closes the
 * session (a driver must then end its pending calls). Calls reject with SwitchError; the
 * operation then ends ERROR with the message. Operations must be idempotent: after a crash the
 * service applies a pending one again.
 */
import type { DriverEntry, DriverFields } from '../registry';

export interface SwitchInfo {
  name: string;
  type: string;
  /** the driver's registration fields (e.g. hostname, username, password) */
  fields: DriverFields;
}

export interface PortVlans {
  /** untagged VLAN, or null */
  native: number | null;
  /** tagged VLANs, ascending */
  tagged: number[];
  /**
   * Read-backs only, optional: what else the switch has on the port that the two fields above
   * cannot say and the service never sets, in the switch's own terms (e.g. `trunks every VLAN`).
   * A port with any never matches a configuration the service holds (the drift audit flags it).
   */
  other?: string[];
}

export interface SwitchSession {
  setNative(port: string, vlan: number): Promise<void>;
  removeNative(port: string): Promise<void>;
  addTagged(port: string, vlan: number): Promise<void>;
  removeTagged(port: string, vlan: number): Promise<void>;
  /** remove every VLAN from the port */
  resetPort(port: string): Promise<void>;
  getPortVlans(port: string): Promise<PortVlans>;
  close(): Promise<void>;
}

export interface SwitchDriver {
  /** Log in to the switch; give up when `signal` aborts. */
  open(sw: SwitchInfo, signal: AbortSignal): Promise<SwitchSession>;
}

/** A switch driver's registry entry (drivers/registry.ts), plus its port-name format. */
export interface SwitchDriverEntry<D extends SwitchDriver = SwitchDriver> extends DriverEntry<D> {
  /** Port names the switch has (checked at port registration). */
  readonly portName: RegExp;
}

export class SwitchError extends Error {
  override name = 'SwitchError';
}
