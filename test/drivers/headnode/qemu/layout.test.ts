/**
 * The names of a headnode's tap devices (drivers/headnode/qemu/layout.ts): 15 characters at most
 * (IFNAMSIZ), of characters an interface name may hold, with 65 bits of hash, and base-32 digits
 * that are the bits of the hash (against a plain bit-string reference).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { base32, QemuLayout } from '../../../../drivers/headnode/qemu/layout';

/** Base 32 by way of a string of bits: slow and plain. */
function reference(bytes: Uint8Array, digits: number): string {
  const bits = [...bytes].map((b) => b.toString(2).padStart(8, '0')).join('');
  let out = '';
  for (let i = 0; i < digits; i++) out += 'abcdefghijklmnopqrstuvwxyz234567'[parseInt(bits.slice(i * 5, i * 5 + 5), 2)];
  return out;
}

describe('QemuLayout: tap names', () => {
  it('base32 gives the bits of the bytes, five a digit', () => {
    fc.assert(fc.property(fc.uint8Array({ minLength: 9, maxLength: 32 }), (bytes) => {
      expect(base32(Buffer.from(bytes), 13)).to.equal(reference(bytes, 13));
    }));
  });

  it('names a tap in 15 characters an interface name may hold, a different one for each hnic of each headnode', () => {
    const layout = new QemuLayout('/var/lib/hilt/headnodes');
    const seen = new Map<string, string>();
    for (let h = 0; h < 200; h++) {
      for (const hnic of ['eth0', 'eth1', 'a/b', 'ü']) {
        const tap = layout.tapName(`hn-${h}`, hnic);
        expect(tap).to.match(/^hn[a-z2-7]{13}$/);
        expect(seen.get(tap), tap).to.equal(undefined);
        seen.set(tap, `${h}/${hnic}`);
      }
    }
    // The state folder is part of it: two services on one host do not share a tap.
    expect(new QemuLayout('/srv/other').tapName('hn-0', 'eth0')).to.not.equal(layout.tapName('hn-0', 'eth0'));
  });
});
