/**
 * The times the audit log and the event stream are asked from (`since`, `until`): a time
 * without an offset is UTC, whatever the server's time zone, as a date alone is.
 */
import { expect } from 'chai';
import { parseTime } from '../../src/audit';

describe('parseTime (since, until)', () => {
  const utc = (y: number, mo: number, d: number, h = 0, mi = 0) => {
    const t = new Date(0);
    t.setUTCFullYear(y, mo - 1, d);
    t.setUTCHours(h, mi);
    return t.getTime();
  };

  it('reads a time without an offset as UTC in any time zone of the server, and one with an offset as it says', () => {
    const zone = process.env.TZ;
    try {
      for (const tz of ['America/New_York', 'Asia/Kolkata', 'UTC']) {
        process.env.TZ = tz;
        expect(parseTime('since', '2026-01-31T12:00'), tz).to.equal(utc(2026, 1, 31, 12));
        expect(parseTime('since', '2026-01-31T12:00:30.5'), tz).to.equal(utc(2026, 1, 31, 12) + 30_500);
        expect(parseTime('since', '2026-01-31'), tz).to.equal(utc(2026, 1, 31));
        expect(parseTime('since', '2026-01-31T12:00:00+02:00'), tz).to.equal(utc(2026, 1, 31, 10));
        expect(parseTime('since', '2026-01-31T12:00:00Z'), tz).to.equal(utc(2026, 1, 31, 12));
      }
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it('takes a day of its month only, in every year (0000-02-29 is one; 1900-02-29 and 2026-02-30 are not)', () => {
    expect(parseTime('since', '0000-02-29')).to.equal(utc(0, 2, 29));
    expect(parseTime('since', '2024-02-29T00:00Z')).to.equal(utc(2024, 2, 29));
    for (const bad of ['1900-02-29', '2026-02-30', '2026-13-01', 'yesterday', '2026-01-31T25:00']) {
      expect(() => parseTime('since', bad), bad).to.throw(/since must be an ISO 8601 date-time/);
    }
  });
});
