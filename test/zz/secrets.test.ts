/**
 * The last file of the suite (mocha runs files in name order): no password the tests used
 * (user, BMC, switch, the admins') appeared in any response body, log line or process output
 * that the helpers saw (test/helpers/secrets.ts says what is captured).
 */
import { expect } from 'chai';
import { findings, scanned, secretCount } from '../helpers/secrets';

describe('secrets: the suite\'s answers and logs hold none of its passwords', () => {
  it('scanned every response body, log line and server output of the run for every password used', function () {
    // Run alone (one file), there is nothing to check.
    if (scanned.texts < 1000) this.skip();
    console.log(`      ${secretCount()} secrets, ${scanned.texts} texts (${(scanned.chars / 1e6).toFixed(1)} MB) scanned`);
    expect(findings(), JSON.stringify(findings(), null, 2)).to.deep.equal([]);
  });
});
