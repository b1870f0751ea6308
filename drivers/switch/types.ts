/**
 * Switch driver contract. A driver knows nothing about actors or HTTP. The service opens one
 * session per switch at a time and applies every queued operation of that switch in it
 * (real switches misbehave under concurrent CLI sessions). Every call is bounded by the
 * driver's timeout and rejects with SwitchError; the operation then ends ERROR with the message.
 * Operations must be idempotent: after a crash the service applies a pending one again.
 */
export interface SwitchInfo {
  name: string;
  type: string;
  /** registration fields (hostname, username, password, ...) */
  fields: Record<string, string>;
}

export interface PortVlans {
  /** untagged VLAN, or null */
  native: number | null;
  /** tagged VLANs, ascending */
  tagged: number[];
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
  open(sw: SwitchInfo): Promise<SwitchSession>;
}

export class SwitchError extends Error {
  override name = 'SwitchError';
}
