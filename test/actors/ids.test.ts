/** Ids of the entities inside another (actors/ids.ts): an id splits back into its two names. */
import { expect } from 'chai';
import fc from 'fast-check';
import { childPrefix, nicId, splitId } from '../../actors/ids';

describe('nic and port ids', () => {
  it('split back into the two names they join, whatever `%` and `/` the names hold', () => {
    const name = fc.string({ unit: fc.constantFrom('a', '%', '/', '2', 'F', '5'), maxLength: 8 });
    fc.assert(fc.property(name, name, (outer, inner) => {
      const id = nicId(outer, inner);
      expect(splitId(id)).to.deep.equal([outer, inner]);
      expect(id.startsWith(childPrefix(outer))).to.equal(true);
    }), { numRuns: 2000 });
  });
});
