/**
 * The read model's wiring index (actors/readmodel-indexes.ts), kept per node: any sequence of
 * wires set and removed leaves it answering as a map keyed by nic id does (property), names such
 * as `__proto__` and names with `/` included.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { WiringIndex } from '../../actors/readmodel-indexes';
import { nicId } from '../../actors/ids';
import { EMPTY_CONFIG, type PortState } from '../../actors/port/protocol';

const port = (sw: string, name: string): PortState => ({ switch: sw, name, registeredAt: 0, wire: null, config: EMPTY_CONFIG });

describe('the wiring index', () => {
  it('answers as a map keyed by nic id, whatever wires are set, replaced and removed (property)', () => {
    const names = fc.constantFrom('n1', 'n2', '__proto__', 'constructor', 'a/b', 'a');
    const nics = fc.constantFrom('eth0', 'eth1', '__proto__', 'x/y');
    const op = fc.oneof(
      fc.record({ set: fc.constant(true), node: names, nic: nics, port: fc.constantFrom('gi1/0/1', 'gi1/0/2', 'gi1/0/3') }),
      fc.record({ set: fc.constant(false), node: names, nic: nics }),
    );
    fc.assert(fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
      const ix = new WiringIndex();
      const model = new Map<string, PortState>();
      for (const o of ops) {
        if ('port' in o) {
          const p = port('s1', o.port);
          ix.set(o.node, o.nic, p);
          model.set(nicId(o.node, o.nic), p);
        } else {
          ix.delete(o.node, o.nic);
          model.delete(nicId(o.node, o.nic));
        }
        expect(ix.size).to.equal(model.size);
      }
      for (const node of ['n1', 'n2', '__proto__', 'constructor', 'a/b', 'a']) {
        for (const nic of ['eth0', 'eth1', '__proto__', 'x/y']) {
          const p = model.get(nicId(node, nic));
          expect(ix.port(node, nic)).to.equal(p);
          expect(ix.has(node, nic)).to.equal(!!p);
          expect(ix.get(node, nic)).to.deep.equal(p && { switch: p.switch, port: p.name });
        }
      }
      expect(new Map(ix.ports())).to.deep.equal(model);
      expect([...ix.keys()].sort()).to.deep.equal([...model.keys()].sort());
    }), { numRuns: 300 });
  });

  it('is empty after clear', () => {
    const ix = new WiringIndex();
    ix.set('n1', 'eth0', port('s1', 'gi1/0/1'));
    ix.clear();
    expect([ix.size, ix.has('n1', 'eth0'), [...ix.ports()]]).to.deep.equal([0, false, []]);
  });
});
