/**
 * A node's older network actions, read back from its journal. The node's state keeps only the
 * RECENT_ACTIONS newest ones (and every pending one): a full history in every node's state
 * would cost a data centre gigabytes of memory (about 200 MB per 1,000 nodes with 1,000
 * actions each) and fatten every snapshot. decisions.md §8 asks for at least the last 1,000
 * statuses per node; the journal keeps them all.
 */
import type { PersistenceEngine } from '../persistence/engine';
import type { Stamp } from '../runtime';
import type { NetworkAction, NodeEvent } from './protocol';

/** Statuses a listing shows at most (decisions.md §8: at least the last 1,000 are kept). */
export const LISTED_ACTIONS = 1000;
/** Events read back at most: 1,000 actions take about 2,000, plus the node's other events. */
const SCAN_LIMIT = 5000;

/** The node's actions of its current incarnation, newest first, at most `max`. */
export function actionsFromJournal(engine: PersistenceEngine, node: string, max = LISTED_ACTIONS): NetworkAction[] {
  const out: NetworkAction[] = [];
  const outcomes = new Map<number, Partial<NetworkAction>>();
  for (const entry of engine.journal(`node:${node}`, SCAN_LIMIT)) {
    const e = entry.data as NodeEvent & Stamp;
    if (e.type === 'NodeRegistered') break; // older events belong to an earlier node of this name
    if (e.type === 'NetworkActionDone') outcomes.set(e.seq, { status: 'DONE', finishedAt: e.at });
    else if (e.type === 'NetworkActionFailed') outcomes.set(e.seq, { status: 'ERROR', error: e.error, finishedAt: e.at });
    else if (e.type === 'NetworkActionQueued') {
      out.push({ ...e.action, ...outcomes.get(e.action.seq) });
      if (out.length >= max) break;
    }
  }
  return out;
}
