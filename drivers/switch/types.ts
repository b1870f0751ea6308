/**
 * Switch driver contract. A driver knows nothing about actors or HTTP, and holds no queue and
 * no timer: the service (hardware/switch-sessions.ts) opens one session per switch at a time,
 * applies every queued operation of that switch in it, and bounds each call with a deadline;
 * at the deadline it aborts the signal given to `open` (a driver stops logging in) or closes the
 * session (a driver must then end its pending calls). Calls reject with SwitchError; the
 * operation then ends ERROR with the message. Operations must be idempotent: after a crash the
 * service applies a pending one again.
 *
 * After a failed call the service sets the port back to its own configuration, unless the call
 * is known to have sent the switch nothing that could change a port: a failed login, or a
 * session whose `changesSent` did not move during the call.
 */
import type { DriverEntry, DriverFields } from '../registry';

export interface SwitchInfo {
  name: string;
  type: string;
  /** the driver's registration fields (e.g. hostname, username, password) */
  fields: DriverFields;
  /**
   * The fingerprint of the switch's SSH host key as the service recorded it (`SHA256:…`, as
   * `ssh-keygen -l` prints it), read from the switch actor's committed state when the session
   * is opened; absent: none is recorded yet, and the first login's key is trusted (and then
   * recorded, see SwitchSession.hostKey).
   */
  hostKey?: string;
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
  /**
   * Read-backs only, from a driver that has `setEnabled`: whether the port is administratively
   * up (`no shutdown`). Absent: the driver cannot tell (it leaves the port as it is).
   */
  enabled?: boolean;
}

/** A port's LLDP neighbour as the switch reports it. */
export interface LldpNeighbor {
  /** the neighbour's chassis id (often its MAC address) */
  chassisId: string;
  /** the neighbour's port id (often the nic's MAC address or its name) */
  portId: string;
  systemName?: string;
}

/** What a switch's own tables say is plugged into one port (wiring validation). */
export interface PortWiring {
  /** MAC addresses the switch learned on the port, lowercase `aa:bb:cc:dd:ee:ff`, ascending */
  macs: string[];
  /** its LLDP neighbours (usually none or one) */
  lldp: LldpNeighbor[];
}

/** What a session may log (the service's logger, or nothing); every line is free of secrets. */
export interface SwitchLog {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** What the service lends a session beside the switch and the signal. */
export interface SessionContext {
  log?: SwitchLog;
}

export interface SwitchSession {
  /**
   * The fingerprint of the host key the switch presented at this session's login (drivers that
   * speak SSH). When the switch had none recorded, the service records this one (trust on first
   * use); a driver refuses a key that differs from a recorded one at login.
   */
  readonly hostKey?: string;
  setNative(port: string, vlan: number): Promise<void>;
  removeNative(port: string): Promise<void>;
  addTagged(port: string, vlan: number): Promise<void>;
  removeTagged(port: string, vlan: number): Promise<void>;
  /** remove every VLAN from the port */
  resetPort(port: string): Promise<void>;
  getPortVlans(port: string): Promise<PortVlans>;
  /**
   * Optional: bring the port administratively up (`no shutdown`) or down (`shutdown`). A driver
   * that has it also reads `enabled` back in getPortVlans. One that cannot (say so in its file)
   * leaves ports as they are.
   */
  setEnabled?(port: string, enabled: boolean): Promise<void>;
  /**
   * Optional: the learned MAC addresses and LLDP neighbours of these ports, read in as few
   * commands as the switch allows (a port the switch knows nothing about has empty lists).
   * Also lists other ports the switch learned MACs on (`unwired` ports in the report).
   */
  readWiring?(ports: string[]): Promise<Map<string, PortWiring>>;
  /**
   * Optional: how many commands that may change a port this session has sent so far, counted
   * when each is sent (not when it is answered). Reading a port, entering a port's
   * configuration and commands the switch refused before any change do not count. A driver
   * without it: every change call counts from its start, answered or not.
   */
  readonly changesSent?: number;
  /**
   * Optional, switches whose changes take effect only at a commit (a candidate configuration:
   * Junos, Cumulus NVUE). Their change calls stage the change and resolve; nothing reaches a port
   * before `commit`, which the service calls once for the changes of several queued operations
   * (hardware/switch-sessions.ts). getPortVlans of a staged port answers the reading the change
   * must leave. After a failed change call the staged changes are those of the calls before it
   * (the driver took the failed one's out), or the session is broken and `commit` rejects.
   */
  readonly uncommitted?: ReadonlySet<string>;
  /**
   * Apply every staged change at once, then read each staged port back: resolves with the ports
   * that do not read as asked and why (empty: all did). Rejects when the switch refused the
   * commit (every staged change is then discarded: SwitchError.nothingSent when the switch says
   * its configuration did not change) or the session failed.
   */
  commit?(): Promise<Map<string, string>>;
  /**
   * Log out. A session whose last call is still running (the service gave up on it) is cut at
   * once; an idle one may finish its work first (e.g. save the switch's configuration), until
   * `signal` aborts.
   */
  close(signal?: AbortSignal): Promise<void>;
}

export interface SwitchDriver {
  /** Log in to the switch; give up when `signal` aborts. */
  open(sw: SwitchInfo, signal: AbortSignal, ctx?: SessionContext): Promise<SwitchSession>;
}

/** A switch driver's registry entry (drivers/registry.ts), plus its port-name format. */
export interface SwitchDriverEntry<D extends SwitchDriver = SwitchDriver> extends DriverEntry<D> {
  /** Port names the switch has (checked at port registration). */
  readonly portName: RegExp;
  /** The port-name format in words, for the refusal of a bad name (e.g. `Ethernet1/12 or Ethernet1/0/10`). */
  readonly portFormat?: string;
  /** The switch family in words (`Juniper Junos (ELS)`), for the dashboard. */
  readonly family?: string;
  /**
   * The switch is reached over SSH: the service keeps its host key's fingerprint (show_switch
   * shows it), and the registration may pin one in advance in the optional field HOST_KEY_FIELD,
   * which the service takes out of the driver's fields and gives to the switch actor.
   */
  readonly sshHostKey?: boolean;
  /**
   * A nic on this switch carries a tagged VLAN only beside a native one, and its native VLAN
   * leaves last (HIL's Brocade and Dell OS9 drivers: a port without an untagged VLAN of the
   * service's is untagged in the switch's default VLAN, which every other such port shares).
   * The nic actor refuses, with 409, a connect or detach that would break the rule.
   */
  readonly nativeFirst?: boolean;
}

/** The registration field that pins an SSH switch's host key fingerprint (`SHA256:…`). */
export const HOST_KEY_FIELD = 'host_key';

export class SwitchError extends Error {
  override name = 'SwitchError';
  /**
   * The failed call is known to have sent the switch nothing that could change a port (set by
   * the service's sessions, hardware/switch-sessions.ts): the port is as it was, and is not set back.
   */
  readonly nothingSent: boolean;

  constructor(message: string, opts: { nothingSent?: boolean } = {}) {
    super(message);
    this.nothingSent = opts.nothingSent ?? false;
  }
}
