/**
 * Switch actor protocol: the switch owns its registration (type and driver fields) and the
 * fingerprint of its SSH host key, and serializes the registration and deletion of its ports,
 * which it asks (switch → port), so a switch with ports is never deleted. Its ports' facts are
 * the port actors' own.
 *
 * The host key is recorded by the switch sessions (hardware/switch-sessions.ts, not an actor) at
 * the first login that finds none recorded (trust on first use), or pinned at registration;
 * an admin clears it when the switch's key really changed.
 */
export interface SwitchState {
  name: string;
  type: string;
  /** driver fields (hostname, username, password, ...); the password is never returned */
  fields: Record<string, unknown>;
  /** fingerprint of the switch's SSH host key (`SHA256:…`), pinned at registration or recorded at the first login */
  hostKey?: string;
}

/** What the API's routes may send. */
export type SwitchPublicCommand =
  | { type: 'switch.register'; by: string; switchType: string; fields: Record<string, unknown>; hostKey?: string }
  /** forget the recorded key: the next login trusts the key it finds */
  | { type: 'switch.clearHostKey'; by: string }
  | { type: 'switch.delete'; by: string }
  | { type: 'switch.registerPort'; by: string; port: string }
  | { type: 'switch.deletePort'; by: string; port: string }
  /** an admin clears a port's doubt by hand, for a switch gone for good (refused when the port is not in doubt) */
  | { type: 'switch.clearPortDoubt'; by: string; port: string };

/** What only the switch's corridor sends (hardware/switch-sessions.ts). */
export type SwitchInternalCommand =
  /** a login found no key recorded and trusted this one: record it (refused if another one was recorded meanwhile) */
  | { type: 'switch.recordHostKey'; by: string; fingerprint: string };

export type SwitchCommand = SwitchPublicCommand | SwitchInternalCommand;

export interface SwitchReplies {
  'switch.register': void;
  'switch.recordHostKey': void;
  'switch.clearHostKey': void;
  'switch.delete': void;
  'switch.registerPort': void;
  'switch.deletePort': void;
  'switch.clearPortDoubt': void;
}

export type SwitchEvent =
  | { type: 'SwitchRegistered'; switchType: string; fields: Record<string, unknown>; hostKey?: string }
  | { type: 'SwitchHostKeyRecorded'; fingerprint: string }
  | { type: 'SwitchHostKeyCleared' }
  | { type: 'SwitchDeleted' }
  /** the data-format upgrade (actors/persistence/upgrade.ts) sets the switch's whole state */
  | { type: 'SwitchUpgraded'; state: SwitchState | null }
  | LegacySwitchEvent;

/**
 * Events of the first data format, when a switch held its ports: still in old journals. The
 * upgrade copied what they say into the port actors; a switch's state ignores them.
 */
export type LegacySwitchEvent =
  | { type: 'PortRegistered'; port: string }
  | { type: 'PortDeleted'; port: string }
  | { type: 'PortWired'; port: string; node: string; nic: string }
  | { type: 'PortUnwired'; port: string };
