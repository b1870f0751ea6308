/**
 * CI smoke run of bench/restart.ts (issue 27): a tiny seeded folder started twice, this build
 * alternating with itself as the `--before` build. Checks that the bench runs and prints every
 * figure, never their values (no timed assertion).
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seed } from '../../bench/seed';
import { runBench } from '../helpers/bench';

describe('bench/restart.ts (smoke, tiny folder)', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'hilt-restart-smoke-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('times the start to the first correct answer, its CPU, and the command line, for two builds in turn', async () => {
    const folder = join(dir, 's10');
    await seed({ folder, log: () => undefined, concurrency: 4, counts: { nodes: 10, nicsPerNode: 2, switches: 1, portsPerSwitch: 20, projects: 2, reserved: 0.5, networks: 2, attachments: 2 } });
    const root = join(__dirname, '..', '..', '..');
    const { code, out } = await runBench('restart.js', {}, ['--folder', folder, '--runs', '1', '--before', root]);
    expect(code, out).to.equal(0);
    const figure = /first answer +\d+ ms, CPU [\d.]+ s \([\d.]+ s once warmed up\); hilt --help \d+ ms, hilt node show \d+ ms$/;
    const lines = out.split('\n');
    expect(lines.filter((l) => /^before /.test(l) && figure.test(l)), out).to.have.length(1);
    expect(lines.filter((l) => /^this build /.test(l) && figure.test(l)), out).to.have.length(1);
    expect(lines.filter((l) => /^(before|this build) +first answer \d+ ms \(min \d+\), CPU [\d.]+ s, once warmed up [\d.]+ s; hilt --help \d+ ms, hilt node show \d+ ms$/.test(l)), out).to.have.length(2);
  });
});
