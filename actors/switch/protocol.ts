/** Switch actor protocol: the switch owns its ports and which nic each port is wired to. */
export interface Wire { node: string; nic: string }

export interface SwitchState {
  name: string;
  type: string;
  /** driver fields (hostname, username, password, ...); the password is never returned */
  fields: Record<string, unknown>;
  /** port name → wired nic, or null when unwired */
  ports: Record<string, Wire | null>;
}

export type SwitchCommand =
  | { type: 'switch.register'; by: string; switchType: string; fields: Record<string, unknown> }
  | { type: 'switch.delete'; by: string }
  | { type: 'switch.registerPort'; by: string; port: string }
  | { type: 'switch.deletePort'; by: string; port: string }
  /** from the node actor (node → switch) */
  | { type: 'switch.wirePort'; by: string; port: string; node: string; nic: string }
  | { type: 'switch.unwirePort'; by: string; port: string; node: string; nic: string };

export type SwitchEvent =
  | { type: 'SwitchRegistered'; switchType: string; fields: Record<string, unknown> }
  | { type: 'SwitchDeleted' }
  | { type: 'PortRegistered'; port: string }
  | { type: 'PortDeleted'; port: string }
  | { type: 'PortWired'; port: string; node: string; nic: string }
  | { type: 'PortUnwired'; port: string };
