/**
 * The suite's last word, as a root hook (mocha loads this file with --require, .mocharc.json and
 * the PostgreSQL run alike): once every test of the run has finished, no password the tests used
 * (user, BMC, switch, the admins') may have appeared in any response body, log line or process
 * output that the helpers saw (test/helpers/secrets.ts says what is captured). A run of a few
 * files, which scans little, checks nothing.
 */
import { expect } from 'chai';
import { findings, scanned, secretCount } from './secrets';

export const mochaHooks = {
  afterAll(): void {
    if (scanned.texts < 1000) return;
    console.log(`\n  secrets: ${secretCount()} secrets, ${scanned.texts} texts (${(scanned.chars / 1e6).toFixed(1)} MB) scanned; none may appear`);
    expect(findings(), `a secret appeared in an answer, a log line or a process's output:\n${JSON.stringify(findings(), null, 2)}`).to.deep.equal([]);
  },
};
