/**
 * The read model's two ordered lists against the plain sort they shortcut (actors/readmodel.ts):
 * RecentOperations drops an action older than everything a full list keeps, NicsByNode appends a
 * nic registered after the others without sorting.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { NicsByNode, RecentOperations } from '../../actors/readmodel';
import type { NetworkAction, NicState } from '../../actors/nic/protocol';

const newestFirst = (a: NetworkAction, b: NetworkAction) => (b.finishedAt ?? 0) - (a.finishedAt ?? 0) || b.acceptedAt - a.acceptedAt;

describe('RecentOperations', () => {
  it('keeps the newest `max` actions, in the order a stable sort of every action added gives', () => {
    // Few distinct times: many ties, where the order of adding decides.
    const step = fc.oneof(
      fc.record({ finishedAt: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }), acceptedAt: fc.integer({ min: 0, max: 6 }) }),
      fc.constant('read' as const),
    );
    fc.assert(fc.property(fc.integer({ min: 1, max: 4 }), fc.array(step, { maxLength: 60 }), (max, steps) => {
      const recent = new RecentOperations(max);
      const all: NetworkAction[] = [];
      for (const [i, s] of steps.entries()) {
        if (s === 'read') {
          const want = [...all].sort(newestFirst).slice(0, max).map((a) => a.seq);
          expect(recent.newest().map((a) => a.seq)).to.deep.equal(want);
          continue;
        }
        const a = { seq: i, nic: 'eth0', type: 'modify_port', channel: 'vlan/native', newNetwork: 'w', switch: 's', port: 'p', status: 'DONE', ...s } as NetworkAction;
        all.push(a);
        recent.add('n1', a, 'inc');
      }
      const got = recent.newest();
      expect(got.map((a) => a.seq)).to.deep.equal([...all].sort(newestFirst).slice(0, max).map((a) => a.seq));
      for (const a of got) expect(a).to.include({ node: 'n1', nicIncarnation: 'inc' });
    }), { numRuns: 500 });
  });
});

describe('NicsByNode', () => {
  it('keeps each node\'s nics in registration order (names break ties) through sets in any order and deletes', () => {
    const op = fc.record({ node: fc.constantFrom('a', 'b'), name: fc.constantFrom('e0', 'e1', 'e2', 'e3'), registeredAt: fc.integer({ min: 0, max: 3 }), del: fc.boolean() });
    fc.assert(fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      const ix = new NicsByNode();
      const ref = new Map<string, NicState>();
      for (const o of ops) {
        const key = `${o.node}/${o.name}`;
        const prev = ref.get(key);
        if (o.del) {
          if (prev) ix.delete(prev);
          ref.delete(key);
        } else {
          const nic = { node: o.node, name: o.name, registeredAt: prev?.registeredAt ?? o.registeredAt } as NicState;
          ix.set(nic);
          ref.set(key, nic);
        }
        for (const node of ['a', 'b']) {
          const want = [...ref.values()].filter((n) => n.node === node)
            .sort((x, y) => x.registeredAt - y.registeredAt || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
          expect(ix.states(node)).to.deep.equal(want);
        }
      }
    }), { numRuns: 500 });
  });
});
