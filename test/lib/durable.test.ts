/** lib/durable.ts: a folder made is durable once its parent is fsynced, each folder of a mkdir -p too. */
import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fsyncPath, mkdirDurable } from '../../lib/durable';

describe('lib/durable: mkdirDurable', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-durable-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('fsyncs the parent of each folder it made, top first, and nothing when the folder was there', () => {
    const synced: string[] = [];
    const record = (p: string) => { synced.push(p); fsyncPath(p); };
    expect(mkdirDurable(join(dir, 'a', 'b', 'c'), 0o700, record)).to.equal(true);
    expect(synced).to.deep.equal([dir, join(dir, 'a'), join(dir, 'a', 'b')]);
    expect(statSync(join(dir, 'a', 'b', 'c')).mode & 0o777).to.equal(0o700);
    synced.length = 0;
    expect(mkdirDurable(join(dir, 'a', 'b', 'c'), 0o700, record)).to.equal(false);
    expect(mkdirDurable(join(dir, 'a', 'x', '..', 'b', 'd'), 0o700, record)).to.equal(true);
    expect(existsSync(join(dir, 'a', 'b', 'd'))).to.equal(true);
    expect(synced).to.include(join(dir, 'a', 'b'));
  });
});
