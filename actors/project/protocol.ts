/**
 * Project actor protocol. The project is first in the ask order: every call that makes
 * something refer to project P (a node joins P, a network is created for P or granted to P,
 * a user joins P, a headnode is created for P) is serialized by P's actor, so project_delete
 * sees them all.
 */
import type { NetworkCreate } from '../network/protocol';

/** A project's limits (docs/lifecycle.md): absent, no limit. */
export interface Quota { nodes?: number; networks?: number; headnodes?: number }

export interface ProjectState { name: string; quota?: Quota }

/** What a project's maintenance and release settings are, for the project actor (docs/lifecycle.md). */
export interface ReleasePolicy {
  /** the maintenance pool's project, if there is a pool */
  maintenanceProject?: string;
  /** a release powers the node off */
  powerOff: boolean;
}

/** Every command of the project is the API's: the routes send them all. */
export type ProjectPublicCommand = ProjectCommand;

export type ProjectCommand =
  | { type: 'project.create'; by: string }
  | { type: 'project.delete'; by: string }
  | { type: 'project.connectNode'; by: string; node: string }
  /** `expiredLease`: sent by a lease's expiry (src/lifecycle/leases.ts), see node.release */
  | { type: 'project.detachNode'; by: string; node: string; expiredLease?: number }
  | { type: 'project.createNetwork'; by: string; network: string; spec: NetworkCreate }
  /** `owner`: see network.grant */
  | { type: 'project.grantNetwork'; by: string; network: string; owner?: string }
  | { type: 'project.createHeadnode'; by: string; headnode: string; baseImg: string }
  | { type: 'project.addUser'; by: string; user: string; role?: import('../user/protocol').ProjectRole }
  | { type: 'project.removeUser'; by: string; user: string }
  /** `null` removes a limit, an absent key leaves it */
  | { type: 'project.setQuota'; by: string; nodes?: number | null; networks?: number | null; headnodes?: number | null };

export interface ProjectReplies {
  'project.create': void;
  'project.delete': void;
  'project.connectNode': void;
  'project.detachNode': void;
  'project.createNetwork': void;
  'project.grantNetwork': void;
  'project.createHeadnode': void;
  'project.addUser': void;
  'project.removeUser': void;
  'project.setQuota': void;
}

export type ProjectEvent =
  | { type: 'ProjectCreated' }
  | { type: 'ProjectDeleted' }
  /** `headnodes` absent in events of earlier releases: that limit left as it was */
  | { type: 'ProjectQuotaSet'; nodes?: number | null; networks?: number | null; headnodes?: number | null };
