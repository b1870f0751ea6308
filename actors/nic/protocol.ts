/**
 * Nic actor protocol (`nic:<node>/<nic>`). The nic owns its registration (macaddr), the
 * networks it carries per channel, its single pending network operation and the statuses of
 * its operations. Every command comes from its node actor (node → nic), except the outcome of
 * an operation, which the network operations runner reports (hardware/network-operations.ts). The
 * nic asks its switch port (nic → port) for wiring changes.
 */

/** The untagged channel of a nic; a tagged one is `vlan/<id>` of its network. */
export const NATIVE = 'vlan/native';

/** A network operation on the nic's switch port (HIL's "networking action"). */
export interface NetworkAction {
  /** numbered per node, in acceptance order: a node's operations are applied in this order */
  seq: number;
  nic: string;
  type: 'modify_port' | 'revert_port' | 'reapply_port';
  /** the attachment's channel; '' for a revert or a re-apply */
  channel: string;
  /** network attached by this action, or null for a detach, a revert or a re-apply */
  newNetwork: string | null;
  /** network removed by a detach */
  oldNetwork?: string;
  /** VLAN of the network concerned (resolved when accepted) */
  vlan?: number;
  /** written by the first data format for a re-apply; the port's own configuration is used now */
  config?: { native: number | null; tagged: number[] };
  switch: string;
  port: string;
  status: 'PENDING' | 'DONE' | 'ERROR';
  error?: string;
  acceptedAt: number;
  finishedAt?: number;
  /**
   * The project that held the node when the operation was accepted (null: none, an admin's
   * operation on a free node). A nic's history outlives a release: only that project's members
   * (and admins) read the operation (src/routes/operation-access.ts). Absent in operations
   * recorded before it was kept.
   */
  project?: string | null;
  /**
   * Numbered by its node in the first data format: its status id names it by node and number
   * alone, and the upgrade copied it into this nic (actors/persistence/upgrade.ts).
   */
  firstFormat?: true;
}

/** What a status id names: the nic (by registration) and the operation's number. */
export interface NicStatusRef { nic: string; incarnation: string; seq: number }

export interface NicState {
  node: string;
  name: string;
  /** random id per registration: a nic registered again under its name is a new nic */
  incarnation: string;
  /** the node's incarnation when the nic was registered */
  nodeIncarnation: string;
  /** when it was registered: a node lists its nics in this order */
  registeredAt: number;
  macaddr: string;
  /** channel → network name; changed only when the switch reported success */
  networks: Record<string, string>;
  /** the nic's single pending operation */
  pending: NetworkAction | null;
  /** seq of the newest operation (0: none) */
  lastSeq: number;
  /** recent operations, oldest first: at most RECENT_ACTIONS and every pending one (older ones: history.ts) */
  actions: NetworkAction[];
}

/** Statuses kept in the nic's state; older ones are read from its journal (history.ts). */
export const RECENT_ACTIONS = 32;

/** An operation as the node accepts it; the nic completes it (seq, port, status, time). */
export type NewAction = Pick<NetworkAction, 'type' | 'channel' | 'newNetwork' | 'oldNetwork' | 'vlan'>;

/**
 * Every command of the nic comes from inside the world: the node (node → nic), which serializes
 * each call involving its nics, and the network operations runner (`nic.actionFinished`).
 * The routes send none: they reach a nic through its node.
 */
export type NicCommand =
  | { type: 'nic.register'; by: string; macaddr: string; nodeIncarnation: string }
  | { type: 'nic.delete'; by: string }
  | { type: 'nic.wire'; by: string; switch: string; port: string }
  | { type: 'nic.unwire'; by: string; switch: string; port: string }
  /** connect: the nic checks its own facts against the network, for the node's `project` */
  | { type: 'nic.connect'; by: string; seq: number; project: string; network: string; channel: string }
  | { type: 'nic.detach'; by: string; seq: number; network: string }
  | { type: 'nic.revert'; by: string; seq: number }
  | { type: 'nic.reapply'; by: string; seq: number }
  | { type: 'nic.forceDetach'; by: string; network: string }
  /** from the operations runner: the port's outcome of the operation `seq` */
  | { type: 'nic.actionFinished'; by: string; seq: number; error: string | null };

export interface NicReplies {
  'nic.register': void;
  'nic.delete': void;
  'nic.wire': void;
  'nic.unwire': void;
  'nic.connect': NicStatusRef;
  'nic.detach': NicStatusRef;
  'nic.revert': NicStatusRef;
  'nic.reapply': NicStatusRef;
  'nic.forceDetach': void;
  'nic.actionFinished': void;
}

export type NicEvent =
  | { type: 'NicRegistered'; macaddr: string; incarnation: string; nodeIncarnation: string }
  /** names the registration it ends (so a journal read newest first knows whose events follow) */
  | { type: 'NicDeleted'; incarnation?: string; nodeIncarnation?: string }
  | { type: 'NetworkActionQueued'; action: NetworkAction }
  | { type: 'NetworkActionDone'; seq: number }
  | { type: 'NetworkActionFailed'; seq: number; error: string }
  | { type: 'NicNetworkForceDetached'; channel: string; network: string };
