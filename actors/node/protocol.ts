/** Node actor protocol: the node owns its project assignment and its nics. */
export interface Obm {
  type: string;
  host: string;
  user: string;
  password: string;
}

export interface NicState {
  macaddr: string;
  /** channel → network name; changed only when a switch reports success (issue 3) */
  networks: Record<string, string>;
}

export interface NodeState {
  name: string;
  project: string | null;
  obm: Obm;
  metadata?: Record<string, unknown>;
  nics: Record<string, NicState>;
}

export type NodeCommand =
  | { type: 'node.register'; by: string; obm: Obm; metadata?: Record<string, unknown> }
  | { type: 'node.delete'; by: string }
  | { type: 'node.registerNic'; by: string; nic: string; macaddr: string }
  | { type: 'node.deleteNic'; by: string; nic: string }
  /** from the project actor (project → node) */
  | { type: 'node.assign'; by: string; project: string }
  | { type: 'node.release'; by: string; project: string }
  /** port_connect_nic / port_detach_nic: the node serializes every wiring change of its nics */
  | { type: 'node.wireNic'; by: string; nic: string; switch: string; port: string }
  | { type: 'node.unwireNic'; by: string; nic: string; switch: string; port: string };

export type NodeEvent =
  | { type: 'NodeRegistered'; obm: Obm; metadata?: Record<string, unknown> }
  | { type: 'NodeDeleted' }
  | { type: 'NicRegistered'; nic: string; macaddr: string }
  | { type: 'NicDeleted'; nic: string }
  | { type: 'NodeAssigned'; project: string }
  | { type: 'NodeReleased'; project: string };
