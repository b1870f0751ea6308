/**
 * Statuses read back from a nic's journal (actors/nic/history.ts): each operation named by the
 * registration it belongs to, read from the journal itself, also when the nic's live state, read
 * before the journal, is of an earlier registration (the nic deleted and registered again while
 * a listing's journal read was under way, as it can be on PostgreSQL).
 */
import { expect } from 'chai';
import { findStatus, listStatuses, type NicJournals } from '../../../actors/nic/history';
import type { NetworkAction, NicState } from '../../../actors/nic/protocol';
import type { NodeState } from '../../../actors/node/protocol';
import type { ReadModel } from '../../../actors/readmodel';
import type { JournalEntry } from '../../../actors/persistence/engine';

const NODE = { name: 'n1', incarnation: 'N1', project: 'p' } as NodeState;

const op = (seq: number, acceptedAt: number): NetworkAction => ({
  seq, nic: 'eth0', type: 'modify_port', channel: 'vlan/native', newNetwork: 'w', switch: 's1', port: 'gi1/0/1', status: 'PENDING', acceptedAt,
});

/** The journal of eth0 of n1, oldest first: registration A with operation 1, deleted; B with operation 2. */
const EVENTS = [
  { type: 'NicRegistered', macaddr: 'm', incarnation: 'A', nodeIncarnation: 'N1' },
  { type: 'NetworkActionQueued', action: op(1, 1000) },
  { type: 'NetworkActionDone', seq: 1, at: 1001 },
  { type: 'NicDeleted', incarnation: 'A', nodeIncarnation: 'N1' },
  { type: 'NicRegistered', macaddr: 'm', incarnation: 'B', nodeIncarnation: 'N1' },
  { type: 'NetworkActionQueued', action: op(2, 2000) },
  { type: 'NetworkActionDone', seq: 2, at: 2001 },
];

/** The read model as a listing that started before registration B found it: eth0 still A. */
function journals(live: NicState | undefined, events: unknown[] = EVENTS, read = { events: 0 }): NicJournals {
  const rm = {
    completeStatuses: new Map<string, string>(),
    nicDeletions: 0,
    nodes: new Map([[NODE.name, NODE]]),
    nic: (node: string, nic: string) => (node === 'n1' && nic === 'eth0' ? live : undefined),
    nicsOf: () => (live ? [live] : []),
  } as unknown as ReadModel;
  return {
    rm,
    nics: {
      async *journal(_id: string, limit: number): AsyncIterable<JournalEntry> {
        const newestFirst = events.map((data, i) => ({ sequenceNumber: i + 1, createdAt: 0, data, position: i + 1 })).reverse();
        for (const e of newestFirst.slice(0, limit)) {
          await new Promise((r) => setImmediate(r));
          read.events++;
          yield e;
        }
      },
      storedIds: async () => ['n1/eth0'],
    },
  };
}

const registrationA: NicState = {
  node: 'n1', name: 'eth0', incarnation: 'A', nodeIncarnation: 'N1', registeredAt: 0, macaddr: 'm', networks: {}, pending: null, lastSeq: 1,
  actions: [{ ...op(1, 1000), status: 'DONE', finishedAt: 1001 }],
};

describe('statuses read back from a nic\'s journal', () => {
  it('names each operation by the registration the journal puts it in, when the live state is of an earlier one', async () => {
    const listed = await listStatuses(journals(registrationA), NODE);
    expect(listed.map((s) => [s.action.seq, s.nicIncarnation, s.action.status])).to.deep.equal([[2, 'B', 'DONE'], [1, 'A', 'DONE']]);
    // Operation 2 is B's: asked for as A's, it is not there.
    expect(await findStatus(journals(registrationA), 'n1', 'eth0', 'A', 2)).to.equal(undefined);
    expect((await findStatus(journals(registrationA), 'n1', 'eth0', 'B', 2))?.status).to.equal('DONE');
  });

  it('reads no further than it needs when the live state is current (a nic with 2,000 operations)', async () => {
    const events: unknown[] = [{ type: 'NicRegistered', macaddr: 'm', incarnation: 'C', nodeIncarnation: 'N1' }];
    for (let seq = 1; seq <= 2000; seq++) events.push({ type: 'NetworkActionQueued', action: op(seq, 10_000 + seq) }, { type: 'NetworkActionDone', seq, at: 10_000 + seq });
    const kept = Array.from({ length: 32 }, (_, i) => ({ ...op(1969 + i, 10_000 + 1969 + i), status: 'DONE' as const, finishedAt: 10_000 + 1969 + i }));
    const live = { ...registrationA, incarnation: 'C', lastSeq: 2000, actions: kept };
    const read = { events: 0 };
    // The 40th newest: past the state's 32, a few events into the journal.
    expect((await findStatus(journals(live, events, read), 'n1', 'eth0', 'C', 1961))?.status).to.equal('DONE');
    expect(read.events).to.be.below(100);
    read.events = 0;
    const listed = await listStatuses(journals(live, events, read), NODE, 5);
    expect(listed.map((s) => [s.action.seq, s.nicIncarnation])).to.deep.equal([[2000, 'C'], [1999, 'C'], [1998, 'C'], [1997, 'C'], [1996, 'C']]);
    expect(read.events).to.be.below(20);
  });

  it('names them the same when the live state is current, and when the nic is gone', async () => {
    const registrationB = { ...registrationA, incarnation: 'B', lastSeq: 2, actions: [{ ...op(2, 2000), status: 'DONE' as const, finishedAt: 2001 }] };
    const expected = [[2, 'B', 'DONE'], [1, 'A', 'DONE']];
    expect((await listStatuses(journals(registrationB), NODE)).map((s) => [s.action.seq, s.nicIncarnation, s.action.status])).to.deep.equal(expected);
    const deleted = [...EVENTS, { type: 'NicDeleted', incarnation: 'B', nodeIncarnation: 'N1' }];
    expect((await listStatuses(journals(undefined, deleted), NODE)).map((s) => [s.action.seq, s.nicIncarnation, s.action.status])).to.deep.equal(expected);
  });
});
