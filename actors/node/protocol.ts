/**
 * Node actor protocol. The node owns its registration (OBM settings, metadata), which project
 * holds it, and the numbering of its network operations; it serializes every call that
 * involves its nics, which it asks in turn (node → nic): a nic's facts are its own actor's
 * (actors/nic/protocol.ts).
 */
import type { NicStatusRef } from '../nic/protocol';

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

/** A reservation's end (docs/lifecycle.md): when it passes, the service releases the node from `project`. */
export interface Lease {
  project: string;
  /** ms since the epoch */
  expiresAt: number;
  /** the service saw it pass: no more networks are connected and the node is being released */
  expired?: true;
}

/**
 * Whether the lease has passed: seen to (recorded), or by its time, which the expiry's timer may
 * reach late (a busy process, a forward step of the clock). The node refuses what would move or
 * use the lease from then on, and the API shows it as expired.
 */
export const leasePassed = (lease: Lease, now = Date.now()): boolean => !!lease.expired || lease.expiresAt <= now;

/** The power-off of a release: `pending` until the BMC answered, `failed` until a later power-off succeeds. */
export interface ReleasePowerOff {
  status: 'pending' | 'failed';
  /** when the release committed (ms since the epoch): names the power-off */
  since: number;
  error?: string;
}

/** The maintenance pool's notice that the node arrived, kept while the node is in the pool. */
export interface MaintenanceNotice {
  /** the project the node was released from */
  from: string;
  /** when it moved into the pool (ms since the epoch): names the notice */
  since: number;
  /** POSTs that failed */
  attempts: number;
  lastError?: string;
  lastAttemptAt?: number;
  /** when the maintenance service took it (the node stays in the pool until it frees it) */
  deliveredAt?: number;
}

export interface NodeState {
  name: string;
  /** random id per registration: status ids of a deleted node never match a re-registered one */
  incarnation: string;
  project: string | null;
  obm: Obm;
  metadata?: Record<string, unknown>;
  /**
   * The node's serial console is being recorded (hardware/consoles.ts keeps one session per
   * node that has this): since when, and who started it. Durable: a 200 to PUT …/console means
   * recording goes on after a restart. Dropped when the node changes hands, so the log, deleted
   * with it, never passes from one tenant to the next.
   */
  console?: ConsoleRecording;
  lease?: Lease;
  releasePowerOff?: ReleasePowerOff;
  maintenance?: MaintenanceNotice;
}

export interface ConsoleRecording {
  by: string;
  /** ms since the epoch */
  since: number;
}

export type NodeCommand = NodePublicCommand | NodeInternalCommand;

/**
 * What only the project actor sends (project → node): a node joins or leaves a project through
 * it; and what the tenant lifecycle's runners send (src/lifecycle/).
 */
export type NodeInternalCommand =
  /** `overQuota`: the project holds its quota of nodes; a free node is refused with this message */
  | { type: 'node.assign'; by: string; project: string; overQuota?: string }
  /**
   * project_detach_node: leave `project`, into the maintenance pool's project when `into` is set
   * (never free in between), and with a power-off to follow when `powerOff`. `expiredLease`: a
   * lease's expiry releases, only while the lease ending then is the node's and has passed.
   */
  | { type: 'node.release'; by: string; project: string; into: string | null; powerOff: boolean; expiredLease?: number }
  /** from the lease runner: the lease ending at `expiresAt` has passed */
  | { type: 'node.leaseExpired'; by: string; expiresAt: number }
  /**
   * A power-off ended: the release's (`since` names it) or, without `since`, any other one that
   * succeeded (it clears a failed release power-off).
   */
  | { type: 'node.powerOffEnded'; by: string; since?: number; error: string | null }
  /** from the maintenance deliveries: a POST of the notice `since` ended (error null: taken) */
  | { type: 'node.noticeAttempted'; by: string; since: number; error: string | null };

/** What the API's routes may send. */
export type NodePublicCommand =
  | { type: 'node.register'; by: string; obm: Obm; metadata?: Record<string, unknown> }
  | { type: 'node.delete'; by: string }
  | { type: 'node.registerNic'; by: string; nic: string; macaddr: string }
  | { type: 'node.deleteNic'; by: string; nic: string }
  /** port_connect_nic / port_detach_nic: the node serializes every wiring change of its nics */
  | { type: 'node.wireNic'; by: string; nic: string; switch: string; port: string }
  | { type: 'node.unwireNic'; by: string; nic: string; switch: string; port: string }
  /**
   * node_connect_network / node_detach_network. `project`: the node's project the caller was
   * authorized through (null: an admin, who may act on any node).
   */
  | { type: 'node.connectNetwork'; by: string; project: string | null; nic: string; network: string; channel: string }
  | { type: 'node.detachNetwork'; by: string; project: string | null; nic: string; network: string }
  /** port_revert */
  | { type: 'node.revertPort'; by: string; nic: string }
  /** admin repair: re-apply the port configuration the service holds */
  | { type: 'node.reapplyPort'; by: string; nic: string }
  /** admin repair for a dead switch: drop a network from the nic in the service's state only */
  | { type: 'node.forceDetach'; by: string; nic: string; network: string }
  /** node_set_metadata: add the label, or replace its value (HIL's PUT /node/<node>/metadata/<label>) */
  | { type: 'node.setMetadata'; by: string; label: string; value: MetadataValue }
  /** node_delete_metadata */
  | { type: 'node.deleteMetadata'; by: string; label: string }
  /**
   * start_console / stop_console (HIL's PUT and DELETE /node/<node>/console), and a viewer's
   * attach to the live console (recorded for the audit log). `project`: as connectNetwork's.
   * `mayStart`: the viewer may start the recording (the rule of PUT …/console): an attach to a
   * console not recorded when its turn comes starts it, or is refused (403) without it.
   */
  | { type: 'node.startConsole'; by: string; project: string | null }
  | { type: 'node.stopConsole'; by: string; project: string | null }
  | { type: 'node.attachConsole'; by: string; project: string | null; mayStart: boolean }
  /** PUT /node/<node>/lease (`project`: as connectNetwork's) */
  | { type: 'node.setLease'; by: string; project: string | null; expiresAt: number }
  | { type: 'node.deleteLease'; by: string; project: string | null };

/** A metadata value: flat, as node_register's `metadata` (docs/api-conventions.md §2). */
export type MetadataValue = string | number | boolean;

/** At most this many labels per node, as node_register allows. */
export const METADATA_MAX_LABELS = 100;

/** What each command answers: the accepted operation's status reference, or nothing. */
export interface NodeReplies {
  'node.register': void;
  'node.delete': void;
  'node.registerNic': void;
  'node.deleteNic': void;
  'node.assign': void;
  'node.release': void;
  'node.wireNic': void;
  'node.unwireNic': void;
  'node.connectNetwork': NicStatusRef;
  'node.detachNetwork': NicStatusRef;
  'node.revertPort': NicStatusRef;
  'node.reapplyPort': NicStatusRef;
  'node.forceDetach': void;
  'node.setMetadata': void;
  'node.deleteMetadata': void;
  'node.startConsole': void;
  'node.stopConsole': void;
  'node.attachConsole': void;
  'node.setLease': void;
  'node.deleteLease': void;
  'node.leaseExpired': void;
  'node.powerOffEnded': void;
  'node.noticeAttempted': void;
}

export type NodeEvent =
  | { type: 'NodeRegistered'; obm: Obm | LegacyObm; metadata?: Record<string, unknown>; incarnation: string }
  | { type: 'NodeDeleted' }
  | { type: 'NodeAssigned'; project: string }
  /** `into`: the maintenance pool's project (a notice is due); `powerOff`: a power-off follows */
  | { type: 'NodeReleased'; project: string; into?: string | null; powerOff?: boolean }
  | { type: 'NodeMetadataSet'; label: string; value: MetadataValue }
  | { type: 'NodeMetadataDeleted'; label: string }
  | { type: 'NodeConsoleStarted' }
  | { type: 'NodeConsoleStopped' }
  /** a viewer attached to the live console (nothing changes: the audit log's record) */
  | { type: 'NodeConsoleAttached' }
  | { type: 'NodeLeaseSet'; project: string; expiresAt: number }
  | { type: 'NodeLeaseDeleted' }
  | { type: 'NodeLeaseExpired'; expiresAt: number }
  | { type: 'ReleasePowerOffSucceeded'; since?: number }
  | { type: 'ReleasePowerOffFailed'; since: number; error: string }
  | { type: 'MaintenanceNoticeDelivered'; since: number }
  | { type: 'MaintenanceNoticeFailed'; since: number; error: string }
  /** the data-format upgrade (actors/persistence/upgrade.ts) sets the node's whole state */
  | { type: 'NodeUpgraded'; state: NodeState | null }
  | LegacyNodeEvent;

/**
 * Events of the first data format, when a node held its nics: still in old journals. The
 * upgrade copied what they say into the nic actors; a node's state ignores them.
 */
export type LegacyNodeEvent =
  | { type: 'NicRegistered'; nic: string; macaddr: string }
  | { type: 'NicDeleted'; nic: string }
  | { type: 'NetworkActionQueued'; action: import('../nic/protocol').NetworkAction }
  | { type: 'NetworkActionDone'; seq: number }
  | { type: 'NetworkActionFailed'; seq: number; error: string }
  | { type: 'NicNetworkForceDetached'; nic: string; channel: string; network: string };
