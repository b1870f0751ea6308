/** Node actor protocol: the node owns its project assignment and its nics. */

/** A node's OBM settings: the driver's type identifier and that driver's own fields. */
export interface Obm {
  type: string;
  fields: Record<string, unknown>;
}

/** How NodeRegistered events written before drivers had fields of their own carry the OBM. */
export interface LegacyObm { type: string; host: string; user: string; password: string }

/** Every OBM record as stored, whatever its age. */
export function upcastObm(obm: Obm | LegacyObm): Obm {
  if ('fields' in obm) return obm;
  const { type, ...fields } = obm;
  return { type, fields };
}

/** A network operation on one nic's switch port (HIL's "networking action"). */
export interface NetworkAction {
  /** per node, in acceptance order; with the node's incarnation it makes the status id */
  seq: number;
  nic: string;
  type: 'modify_port' | 'revert_port' | 'reapply_port';
  /** the attachment's channel; '' for a revert */
  channel: string;
  /** network attached by this action, or null for a detach or a revert */
  newNetwork: string | null;
  /** network removed by a detach */
  oldNetwork?: string;
  /** VLAN of the network concerned (resolved when accepted) */
  vlan?: number;
  /** reapply_port: the whole port configuration the service holds for the nic */
  config?: { native: number | null; tagged: number[] };
  switch: string;
  port: string;
  status: 'PENDING' | 'DONE' | 'ERROR';
  error?: string;
  acceptedAt: number;
  finishedAt?: number;
}

export interface NicState {
  macaddr: string;
  /** channel → network name; changed only when the switch reported success */
  networks: Record<string, string>;
  /** the nic's single pending operation */
  pending: NetworkAction | null;
}

export interface NodeState {
  name: string;
  /** random id per registration: status ids of a deleted node never match a re-registered one */
  incarnation: string;
  project: string | null;
  obm: Obm;
  metadata?: Record<string, unknown>;
  nics: Record<string, NicState>;
  /** the next action's seq */
  nextSeq: number;
  /** recent actions, oldest first (at most RECENT_ACTIONS; pending ones are always kept; older ones: history.ts) */
  actions: NetworkAction[];
}

/** Statuses kept in the node's state; older ones are read from its journal (history.ts). */
export const RECENT_ACTIONS = 32;

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
  | { type: 'node.unwireNic'; by: string; nic: string; switch: string; port: string }
  /** node_connect_network / node_detach_network / port_revert: replies with the action's seq */
  /** `project`: the node's project the caller was authorized for (null: an admin, who may act on any) */
  | { type: 'node.connectNetwork'; by: string; project: string | null; nic: string; network: string; channel: string }
  | { type: 'node.detachNetwork'; by: string; project: string | null; nic: string; network: string }
  | { type: 'node.revertPort'; by: string; nic: string }
  /** admin repair: re-apply the port configuration from the service's state */
  | { type: 'node.reapplyPort'; by: string; nic: string }
  /** admin repair for a dead switch: drop a network from the nic in the service's state only */
  | { type: 'node.forceDetach'; by: string; nic: string; network: string }
  /** from the switch sessions: the action's outcome */
  | { type: 'node.actionFinished'; by: string; seq: number; error: string | null };

export type NodeEvent =
  | { type: 'NodeRegistered'; obm: Obm | LegacyObm; metadata?: Record<string, unknown>; incarnation: string }
  | { type: 'NodeDeleted' }
  | { type: 'NicRegistered'; nic: string; macaddr: string }
  | { type: 'NicDeleted'; nic: string }
  | { type: 'NodeAssigned'; project: string }
  | { type: 'NodeReleased'; project: string }
  | { type: 'NetworkActionQueued'; action: NetworkAction }
  | { type: 'NetworkActionDone'; seq: number }
  | { type: 'NetworkActionFailed'; seq: number; error: string }
  | { type: 'NicNetworkForceDetached'; nic: string; channel: string; network: string };
