/**
 * Who reads a node's network operations (docs/api-conventions.md §8). A nic keeps its recent
 * operations across a release, so the project that holds a node next would read what the one
 * before did on it (its private networks' names, its failures). An admin (an auditor reading)
 * reads every operation; anyone else only those accepted while the project the node belongs to
 * now held it, and none of a free node. An operation recorded before operations kept their
 * project is read as the node's current project's (a client polling across the upgrade keeps
 * its status).
 */
import type { Caller } from '../auth/caller';
import type { NetworkAction } from '../../actors/nic/protocol';
import type { NodeState } from '../../actors/node/protocol';
import { isMember } from './guard';

export function readsOperation(c: Caller, node: NodeState, a: Pick<NetworkAction, 'project'>): boolean {
  if (c.isAdmin) return true;
  if (!node.project || !isMember(c, node.project)) return false;
  return a.project === undefined || a.project === node.project;
}

/** The caller's filter of a node's operations. */
export const operationsOf = (c: Caller, node: NodeState) => (a: Pick<NetworkAction, 'project'>): boolean => readsOperation(c, node, a);

/**
 * What a non-admin reads of a failed operation's reason. The reason is the switch's or driver's
 * own text (its CLI's answer, the port, the switch's address), and a project's members are not
 * told the wiring (show_node gives them no port or switch): they learn that the switch did not
 * make the change, and an admin reads why in the same operation's status.
 */
export const MEMBERS_ERROR = 'the switch did not make the change; an administrator can read why in this operation\'s status';

/** A failed operation's reason as the caller reads it (undefined: none). */
export function errorFor(c: Pick<Caller, 'isAdmin'>, error: string | undefined): string | undefined {
  return error === undefined || c.isAdmin ? error : MEMBERS_ERROR;
}
