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

/**
 * The actions of the node's current incarnation, newest first, read lazily from the journal
 * (`key` is the node actor's persistence key). Stop iterating and the rest is not read.
 */
export function* actionsFromJournal(engine: PersistenceEngine, key: string): Generator<NetworkAction> {
  const outcomes = new Map<number, Partial<NetworkAction>>();
  for (const entry of engine.journal(key, SCAN_LIMIT)) {
    const e = entry.data as NodeEvent & Stamp;
    if (e.type === 'NodeRegistered') return; // older events belong to an earlier node of this name
    if (e.type === 'NetworkActionDone') outcomes.set(e.seq, { status: 'DONE', finishedAt: e.at });
    else if (e.type === 'NetworkActionFailed') outcomes.set(e.seq, { status: 'ERROR', error: e.error, finishedAt: e.at });
    else if (e.type === 'NetworkActionQueued') yield { ...e.action, ...outcomes.get(e.action.seq) };
  }
}

/** The newest `max` actions. */
export function listActions(engine: PersistenceEngine, key: string, max = LISTED_ACTIONS): NetworkAction[] {
  const out: NetworkAction[] = [];
  for (const a of actionsFromJournal(engine, key)) {
    out.push(a);
    if (out.length >= max) break;
  }
  return out;
}

/** One action by its seq: the scan stops once it has passed it (actions are journaled in seq order). */
export function findAction(engine: PersistenceEngine, key: string, seq: number): NetworkAction | undefined {
  for (const a of actionsFromJournal(engine, key)) {
    if (a.seq <= seq) return a.seq === seq ? a : undefined;
  }
  return undefined;
}
