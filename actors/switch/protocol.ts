/**
 * Switch actor protocol: the switch owns its registration (type and driver fields) and
 * serializes the registration and deletion of its ports, which it asks (switch → port), so a
 * switch with ports is never deleted. Its ports' facts are the port actors' own.
 */
export interface SwitchState {
  name: string;
  type: string;
  /** driver fields (hostname, username, password, ...); the password is never returned */
  fields: Record<string, unknown>;
}

export type SwitchCommand =
  | { type: 'switch.register'; by: string; switchType: string; fields: Record<string, unknown> }
  | { type: 'switch.delete'; by: string }
  | { type: 'switch.registerPort'; by: string; port: string }
  | { type: 'switch.deletePort'; by: string; port: string };

export interface SwitchReplies {
  'switch.register': void;
  'switch.delete': void;
  'switch.registerPort': void;
  'switch.deletePort': void;
}

export type SwitchEvent =
  | { type: 'SwitchRegistered'; switchType: string; fields: Record<string, unknown> }
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
