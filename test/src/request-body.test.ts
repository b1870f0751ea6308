/** A body's keys held twice are found whether either is written with escapes or not (src/request-body.ts). */
import { expect } from 'chai';
import fc from 'fast-check';
import { duplicateKey } from '../../src/request-body';

describe('duplicateKey', () => {
  it('finds a key written twice, with or without escapes, at any depth; not one in two objects', () => {
    expect(duplicateKey('{"a":1,"a":2}')).to.equal('a');
    expect(duplicateKey('{"a":1,"\\u0061":2}')).to.equal('a');
    expect(duplicateKey('{"\\u0061":1,"a":2}')).to.equal('a');
    expect(duplicateKey('{"q\\"":1,"q\\u0022":2}')).to.equal('q"');
    expect(duplicateKey('{"x":{"b":[1,{"c":1,"c":2}]}}')).to.equal('c');
    expect(duplicateKey('{"x":{"a":1},"y":{"a":1},"a":"a"}')).to.equal(null);
    expect(duplicateKey('{"a\\\\":1,"a":2}')).to.equal(null);
    expect(duplicateKey('{"k":"\\"k\\":1","k2":1}')).to.equal(null);
  });

  it('agrees with counting the keys JSON.parse sees, on random objects with escaped copies', () => {
    const key = fc.string({ maxLength: 4 });
    fc.assert(fc.property(fc.array(fc.tuple(key, fc.boolean()), { maxLength: 8 }), (entries) => {
      // Each key written plainly or with every character escaped as \uXXXX.
      const esc = (k: string) => `"${[...k].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`;
      const text = `{${entries.map(([k, e], i) => `${e ? esc(k) : JSON.stringify(k)}:${i}`).join(',')}}`;
      const seen = new Set<string>();
      let first: string | null = null;
      for (const [k] of entries) {
        if (seen.has(k)) { first = k; break; }
        seen.add(k);
      }
      expect(duplicateKey(text)).to.equal(first);
    }), { numRuns: 500 });
  });
});
