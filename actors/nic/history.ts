/**
 * Operation statuses of nics, recent and old: the one place that reads them back. A nic's state
 * keeps only its RECENT_ACTIONS newest operations (and every pending one): a full history in
 * every nic's state would cost a data centre gigabytes of memory and fatten every snapshot. The
 * statuses must stay available (at least the last 1,000 per node: docs/api-conventions.md §8),
 * so older ones are read back from the nic's journal, which keeps them all, also after the
 * nic is deleted (journal retention keeps a deleted nic's journal while its node lives in the
 * registration the nic belonged to: src/retention.ts).
 *
 * A nic's journal holds every registration of its name: the events after a NicRegistered belong
 * to that registration (its incarnation), and a status names the registration it belongs to.
 */
import type { JournalEntry } from '../persistence/engine';
import type { Stamp } from '../runtime';
import type { ReadModel } from '../readmodel';
import type { NodeState } from '../node/protocol';
import { childPrefix, nicId, splitId } from '../ids';
import { RECENT_ACTIONS, type NetworkAction, type NicEvent } from './protocol';

/** Statuses a listing shows at most (at least the last 1,000 are kept). */
export const LISTED_ACTIONS = 1000;
/** Events read back per nic at most: 1,000 operations take about 2,000, plus the nic's other events. */
const SCAN_LIMIT = 5000;

/** What reading statuses needs: the committed view and the nics' journals. */
export interface NicJournals {
  rm: ReadModel;
  nics: {
    journal(id: string, limit: number): AsyncIterable<JournalEntry>;
    storedIds(idPrefix: string): Promise<string[]>;
  };
}

/** A status as its node's clients know it. */
export interface StatusOf { action: NetworkAction; nicIncarnation: string }

/** An operation read back, with the registration of the nic and of the node it belongs to. */
interface Read { action: NetworkAction; incarnation?: string; nodeIncarnation?: string }

/**
 * A nic's operations, newest first, as its journal is read: lazily, so a caller that has found
 * what it wanted stops reading. The events after a NicRegistered belong to that registration.
 * Read newest first, the newest registration's operations come first: they are the live
 * registration's once one of them is among the live state's (its newest operations), and are
 * named by it from there on. Until then they are held: the live state, read before the journal,
 * may be of an earlier registration when the nic was deleted and registered again meanwhile (the
 * journal's read is asynchronous on PostgreSQL); then the newest registration's NicRegistered,
 * read right after its operations, names them (or, if the scan ends first, the live state).
 * Older registrations' operations are named by the NicDeleted that ended theirs, read before them.
 */
async function* operations(journals: NicJournals, node: string, nic: string): AsyncGenerator<Read> {
  const live = journals.rm.nic(node, nic);
  const liveKnows = new Set(live?.actions.map((a) => `${a.seq}@${a.acceptedAt}`));
  let incarnation: string | undefined;
  let nodeIncarnation: string | undefined;
  /** the newest registration's operations, until they are known to be the live one's or its NicRegistered names them */
  let held: NetworkAction[] | undefined = [];
  const outcomes = new Map<number, Partial<NetworkAction>>();
  for await (const entry of journals.nics.journal(nicId(node, nic), SCAN_LIMIT)) {
    const e = entry.data as NicEvent & Stamp;
    switch (e.type) {
      case 'NetworkActionDone':
        outcomes.set(e.seq, { status: 'DONE', finishedAt: e.at });
        break;
      case 'NetworkActionFailed':
        outcomes.set(e.seq, { status: 'ERROR', error: e.error, finishedAt: e.at });
        break;
      case 'NetworkActionQueued': {
        const action = { ...e.action, ...outcomes.get(e.action.seq) };
        if (held && live && liveKnows.has(`${action.seq}@${action.acceptedAt}`)) {
          // The live registration's, and so are those read before it (no registration between).
          incarnation = live.incarnation;
          nodeIncarnation = live.nodeIncarnation;
          for (const a of held) yield { action: a, incarnation, nodeIncarnation };
          held = undefined;
        }
        if (held) held.push(action);
        else yield { action, incarnation, nodeIncarnation };
        break;
      }
      case 'NicDeleted':
        // Nothing comes after a deletion but a new registration: nothing is held here.
        if (held) for (const action of held) yield { action, incarnation: undefined, nodeIncarnation: undefined };
        held = undefined;
        incarnation = e.incarnation;
        nodeIncarnation = e.nodeIncarnation;
        outcomes.clear();
        break;
      case 'NicRegistered':
        if (held) for (const action of held) yield { action, incarnation: e.incarnation ?? live?.incarnation, nodeIncarnation: e.nodeIncarnation ?? live?.nodeIncarnation };
        held = undefined;
        // Older events belong to an earlier registration, named by its NicDeleted.
        incarnation = nodeIncarnation = undefined;
        outcomes.clear();
        break;
      default:
        break;
    }
  }
  // The scan ended inside the newest registration (more events than it reads): the live state names it.
  if (held) for (const action of held) yield { action, incarnation: live?.incarnation, nodeIncarnation: live?.nodeIncarnation };
}

/** One status by the nic's registration and the operation's number. */
export async function findStatus(journals: NicJournals, node: string, nic: string, incarnation: string, seq: number): Promise<NetworkAction | undefined> {
  const current = journals.rm.nic(node, nic);
  if (current?.incarnation === incarnation) {
    const recent = current.actions.find((a) => a.seq === seq);
    if (recent) return recent;
  }
  for await (const r of operations(journals, node, nic)) {
    if (r.incarnation === incarnation && r.action.seq === seq) return r.action;
  }
  return undefined;
}

/** The names of every nic a node has had (deleted ones included: their journals stay). */
async function nicNames(journals: NicJournals, node: string): Promise<string[]> {
  return (await journals.nics.storedIds(childPrefix(node))).map((id) => splitId(id)[1]);
}

/** A status of the first data format, named by its node's registration and number alone. */
export async function findFirstFormatStatus(journals: NicJournals, node: NodeState, seq: number): Promise<StatusOf | undefined> {
  for (const nic of journals.rm.nicsOf(node.name)) {
    const recent = nic.actions.find((a) => a.seq === seq && a.firstFormat);
    if (recent) return { action: recent, nicIncarnation: nic.incarnation };
  }
  for (const nic of await nicNames(journals, node.name)) {
    for await (const r of operations(journals, node.name, nic)) {
      if (r.nodeIncarnation === node.incarnation && r.action.seq === seq && r.action.firstFormat) {
        return { action: r.action, nicIncarnation: r.incarnation! };
      }
    }
  }
  return undefined;
}

/** Newest first; of one moment and number, by nic name (the order is the same however they were read). */
function newestFirst(a: StatusOf, b: StatusOf): number {
  return b.action.acceptedAt - a.action.acceptedAt || b.action.seq - a.action.seq || (a.action.nic < b.action.nic ? -1 : a.action.nic > b.action.nic ? 1 : 0);
}

/**
 * The node's statuses as its current nics' states hold them, when they can hold all of them: no
 * nic has trimmed its oldest (fewer than RECENT_ACTIONS kept) and every one belongs to this
 * registration of the node. Undefined otherwise. Whether some deleted nic had statuses too is for
 * the caller to know.
 */
function fromStates(rm: ReadModel, node: NodeState): StatusOf[] | undefined {
  const out: StatusOf[] = [];
  for (const nic of rm.nicsOf(node.name)) {
    if (nic.actions.length >= RECENT_ACTIONS || nic.nodeIncarnation !== node.incarnation) return undefined;
    for (const action of nic.actions) out.push({ action, nicIncarnation: nic.incarnation });
  }
  return out.sort(newestFirst);
}

/** The same statuses, as a listing shows them. */
const sameStatuses = (a: StatusOf[], b: StatusOf[]) =>
  a.length === b.length && a.every((x, i) => x.nicIncarnation === b[i].nicIncarnation && x.action.nic === b[i].action.nic && x.action.seq === b[i].action.seq
    && x.action.status === b[i].action.status && x.action.finishedAt === b[i].action.finishedAt && x.action.error === b[i].action.error && x.action.acceptedAt === b[i].action.acceptedAt);

/**
 * The node's newest statuses (at most `max`), newest first: those of its current registration,
 * from every nic it has had, deleted ones included. Read from the nics' journals the first time
 * after a start (or after one of its nics with operations was deleted); when that reading finds
 * nothing but what the nics' states hold, the node is noted (ReadModel.completeStatuses) and its
 * later listings come from the states alone, as long as they can hold everything: the journals'
 * reading was most of what each listing put into the old generation under load.
 */
export async function listStatuses(journals: NicJournals, node: NodeState, max = LISTED_ACTIONS): Promise<StatusOf[]> {
  const rm = journals.rm;
  if (rm.completeStatuses.get(node.name) === node.incarnation) {
    const known = fromStates(rm, node);
    if (known) return known.slice(0, max);
  }
  const deletions = rm.nicDeletions;
  const out: StatusOf[] = [];
  for (const nic of await nicNames(journals, node.name)) {
    let taken = 0;
    for await (const r of operations(journals, node.name, nic)) {
      if (r.nodeIncarnation !== node.incarnation || r.incarnation === undefined) continue;
      out.push({ action: r.action, nicIncarnation: r.incarnation });
      if (++taken >= max) break;
    }
  }
  out.sort(newestFirst);
  // Nothing but what the states hold, and no nic deleted meanwhile (a commit during the reading
  // makes the two differ, and the node is noted another time).
  const known = rm.nicDeletions === deletions && rm.nodes.get(node.name)?.incarnation === node.incarnation ? fromStates(rm, node) : undefined;
  if (known && sameStatuses(out, known)) rm.completeStatuses.set(node.name, node.incarnation);
  return out.slice(0, max);
}
