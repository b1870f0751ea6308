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
