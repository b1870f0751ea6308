/**
 * Project actor protocol. The project is first in the ask order: every call that makes
 * something refer to project P (a node joins P, a network is created for P or granted to P,
 * a user joins P, a headnode is created for P) is serialized by P's actor, so project_delete
 * sees them all.
 */
import type { NetworkCreate } from '../network/protocol';

export interface ProjectState { name: string }

/** Every command of the project is the API's: the routes send them all. */
export type ProjectPublicCommand = ProjectCommand;

export type ProjectCommand =
  | { type: 'project.create'; by: string }
  | { type: 'project.delete'; by: string }
  | { type: 'project.connectNode'; by: string; node: string }
  | { type: 'project.detachNode'; by: string; node: string }
  | { type: 'project.createNetwork'; by: string; network: string; spec: NetworkCreate }
  | { type: 'project.grantNetwork'; by: string; network: string }
  | { type: 'project.createHeadnode'; by: string; headnode: string; baseImg: string }
  | { type: 'project.addUser'; by: string; user: string }
  | { type: 'project.removeUser'; by: string; user: string };

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
}

export type ProjectEvent =
  | { type: 'ProjectCreated' }
  | { type: 'ProjectDeleted' };
