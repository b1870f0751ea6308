/**
 * lib/sealed.ts: nonces come from a pool of random bytes (filled once per 256 values); every
 * value still gets its own nonce, across refills, and opens again.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Keyring, KEY_BYTES } from '../../lib/sealed';

describe('lib/sealed: a nonce per value from the pool', () => {
  it('gives 2,000 values (several refills of the pool) 2,000 different nonces, and each opens to its plaintext', () => {
    const ring = new Keyring(randomBytes(KEY_BYTES));
    const nonces = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const v = ring.seal(`password ${i}`);
      nonces.add(v.$sealed.split(':')[2]);
      expect(ring.open(v)).to.equal(`password ${i}`);
    }
    expect(nonces.size).to.equal(2000);
    for (const n of nonces) expect(Buffer.from(n, 'base64url')).to.have.length(12);
  });
});

describe('lib/sealed: the authentication tag', () => {
  it('opens a value only with its whole 16-byte tag: a tag cut short (GCM would check its first bytes alone) is refused', () => {
    const ring = new Keyring(randomBytes(KEY_BYTES));
    const v = ring.seal('bmc password');
    const parts = v.$sealed.split(':');
    const tag = Buffer.from(parts[4], 'base64url');
    expect(tag).to.have.length(16);
    for (const n of [4, 8, 12, 15]) {
      const cut = { $sealed: [...parts.slice(0, 4), tag.subarray(0, n).toString('base64url')].join(':') };
      expect(() => ring.open(cut), `a ${n}-byte tag`).to.throw(/does not open/);
    }
    expect(ring.open(v)).to.equal('bmc password');
  });
});
