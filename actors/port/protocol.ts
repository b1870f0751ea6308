/**
 * Switch port actor protocol (`port:<switch>/<port>`). The port owns its registration, which
 * nic it is wired to, and the VLAN configuration the service holds for it; it is the only
 * caller of hardware for that port, through its switch's session. Registration and deletion
 * come from its switch actor (switch → port); wiring and operations from its nic (nic → port).
 */

/** A port's whole VLAN configuration. */
export interface PortConfig { native: number | null; tagged: number[] }

export const EMPTY_CONFIG: PortConfig = { native: null, tagged: [] };

export interface Wire { node: string; nic: string }

export interface PortState {
  switch: string;
  name: string;
  /** when it was registered: a switch lists its ports in this order */
  registeredAt: number;
  /** the wired nic, or null */
  wire: Wire | null;
  /** what the service holds for the port: changed only after the switch applied it; nothing while unwired */
  config: PortConfig;
  /**
   * In doubt: the switch may carry more on the port than `config` (a change that failed after it
   * may have reached the port, its set-back not confirmed yet): the VLANs it may carry beyond it,
   * ascending, and since when. Absent while the port is known to carry its record. Cleared only
   * once the switch confirmed the port carries exactly what the service holds
   * (hardware/port-hardware.ts).
   */
  doubt?: { vlans: number[]; since: number };
  /**
   * A doubt an admin cleared by hand (`PortDoubtClearedByHand`): the VLANs it was of, and since
   * when. The admin vouched the port carries nothing more, so it holds nothing back; but a switch
   * that was only unreachable may come back with them, so the port is still set back to its
   * record (with backoff, and at each start) until the switch confirms it (`PortDoubtCleared`).
   */
  setBackOwed?: { vlans: number[]; since: number };
}

/** One operation's change to the port. */
export type PortChange =
  | { kind: 'attach'; native: boolean; vlan: number }
  | { kind: 'detach'; native: boolean; vlan: number }
  /** remove every VLAN */
  | { kind: 'revert' }
  /** set the port to the configuration the service holds (repairs drift) */
  | { kind: 'reapply' };

/** What the switch has on a port (a read-back: see PortVlans in drivers/switch/types.ts); `enabled`: administratively up, where the driver reads it. */
export interface PortFound { native: number | null; tagged: number[]; other?: string[]; enabled?: boolean }

/** What the service wants on a port: its configuration and, under HILT_INACTIVE_PORTS=shutdown, its administrative state (up while it carries a network). */
export interface PortExpected extends PortConfig { enabled?: boolean }

/**
 * One port in a drift audit or repair (hardware/drift-audit.ts): the configuration the service
 * holds (`expected`), what the switch had (`actual`, null when it could not be read or was not
 * read), and the verdict. A port with an operation pending or under way is not read (`pending`).
 */
export interface PortCheck {
  status: 'in_sync' | 'drifted' | 'pending' | 'unreadable' | 'repaired' | 'failed';
  expected: PortExpected;
  actual: PortFound | null;
  /** why it could not be read or repaired */
  error?: string;
}

/**
 * Every command of the port comes from inside the world: the switch (register, delete, an admin's clear of a doubt), the
 * nic (wiring, changes, force-detach), the port's corridor (`port.configured`) and the drift
 * audit (`port.check`). The routes send none.
 */
export type PortCommand =
  | { type: 'port.register'; by: string }
  | { type: 'port.delete'; by: string }
  | { type: 'port.wire'; by: string; node: string; nic: string }
  | { type: 'port.unwire'; by: string; node: string; nic: string }
  /**
   * Carry out a change on the hardware for the wired nic. Answered when the switch is done:
   * null, or why it failed (a port the change may have reached is then set back to the
   * configuration the service holds: hardware/port-hardware.ts). `resumed`: handed on again at a
   * start, so an earlier process may have carried it out already, in part or whole.
   */
  | { type: 'port.apply'; by: string; node: string; nic: string; change: PortChange; resumed?: boolean }
  /** the switch may carry `vlans` on the port beyond its record: the port is in doubt (durable before the outcome is) */
  | { type: 'port.doubt'; by: string; vlans: number[] }
  /**
   * the switch confirmed the port carries exactly what the service holds: no longer in doubt (nor owing a set-back).
   * `forgets`: the port's force-detaches counted when the switch turn confirmed it (a clear of a
   * record a force-detach has since changed is dropped: PortHardware.forgetCount).
   */
  | { type: 'port.settled'; by: string; forgets?: number }
  /** an admin clears the doubt by hand (its switch is gone for good): refused when not in doubt; the set-back is still owed */
  | { type: 'port.clearDoubt'; by: string }
  /**
   * Set a port in doubt (or owing a set-back) back to the configuration the service holds (read
   * back, converge, read back again: a drift repair), through its switch's queue. Answered when
   * the switch is done: null once the port carries its record (the doubt is then cleared), else why not.
   */
  | { type: 'port.settle'; by: string }
  /** record the configuration the switch now has, for the nic it was changed for (ignored once the wiring changed) */
  | { type: 'port.configured'; by: string; config: PortConfig; wire: Wire | null }
  /**
   * force-detach: forget a VLAN without telling the switch. The switch may still carry it: the
   * port is in doubt of it until a set-back the switch confirms (queued at once), or an admin's clear.
   */
  | { type: 'port.forget'; by: string; native: boolean; vlan: number }
  /**
   * Drift audit: read the port back from the switch and compare it with the configuration the
   * service holds; with `repair`, set a drifted port to that configuration (in the same switch
   * call). A port with an operation pending or under way is left alone. `batch`: the audit's
   * SwitchSessions batch. Answered when the switch is done.
   */
  | { type: 'port.check'; by: string; repair: boolean; batch?: string };

export interface PortReplies {
  'port.register': void;
  'port.delete': void;
  'port.wire': void;
  'port.unwire': void;
  'port.apply': string | null;
  'port.configured': void;
  'port.doubt': void;
  'port.settled': void;
  'port.clearDoubt': void;
  'port.settle': string | null;
  'port.forget': void;
  'port.check': PortCheck;
}

export type PortEvent =
  | { type: 'PortRegistered' }
  | { type: 'PortDeleted' }
  | { type: 'PortWired'; node: string; nic: string }
  | { type: 'PortUnwired' }
  | { type: 'PortConfigured'; config: PortConfig }
  /** the switch may carry these VLANs on the port beyond its record (added to any doubt already held) */
  | { type: 'PortInDoubt'; vlans: number[] }
  /** the switch confirmed the port carries exactly its record (no longer in doubt, nor owing a set-back) */
  | { type: 'PortDoubtCleared' }
  /** an admin cleared the doubt by hand (the event's `by`), for a switch gone for good: `vlans` it was in doubt of (its set-back still owed) */
  | { type: 'PortDoubtClearedByHand'; vlans: number[] };
