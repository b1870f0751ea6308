/**
 * isoTime (src/events/types.ts): an event's time as the stream shows it, the same text as
 * `new Date(ms).toISOString()` for any time, with the second's part kept between calls.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { isoTime } from '../../src/events/types';

describe('the time of a streamed event', () => {
  it('is toISOString\'s text, for times in order, out of order and outside 1970–9999 (property)', () => {
    const ms = fc.oneof(
      fc.integer({ min: 0, max: 253402300799999 }),
      // Neighbours of one second, as a stream's events are.
      fc.integer({ min: 1764228595000, max: 1764228597999 }),
      fc.integer({ min: -62198755200000, max: 8640000000000000 }),
      fc.double({ min: 0, max: 2e12, noNaN: true }),
    );
    fc.assert(fc.property(fc.array(ms, { minLength: 1, maxLength: 20 }), (times) => {
      for (const t of times) expect(isoTime(t)).to.equal(new Date(t).toISOString());
    }), { numRuns: 1000 });
    expect(isoTime(1764228595007)).to.equal('2025-11-27T07:29:55.007Z');
    expect(isoTime(1764228595287)).to.equal('2025-11-27T07:29:55.287Z');
    expect(isoTime(1764228596000)).to.equal('2025-11-27T07:29:56.000Z');
  });
});
