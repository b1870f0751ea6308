/** ConsoleLogs: each node's console log in the data folder, bounded, deleted whole. */
import { expect } from 'chai';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConsoleLogs, logFileName } from '../../hardware/console-log';
import { escapeSolInput } from '../../drivers/obm/ipmi-sol';
import { refusingDeletions } from '../helpers/faulty-fs';

describe('ConsoleLogs', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-console-log-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps the last `limit` bytes, and never more than twice that on disk', async () => {
    const logs = new ConsoleLogs(join(dir, 'consoles'), 1024);
    for (let i = 0; i < 100; i++) await logs.append('n1', Buffer.from(`line ${String(i).padStart(3, '0')} ${'x'.repeat(40)}\r\n`));
    const text = (await logs.read('n1'))!.toString();
    expect(text.length).to.be.at.most(1024);
    expect(text.length).to.be.greaterThan(900);
    expect(text.endsWith(`line 099 ${'x'.repeat(40)}\r\n`)).to.equal(true);
    expect(text).not.to.include('line 050');
    const onDisk = readdirSync(join(dir, 'consoles')).reduce((n, f) => n + statSync(join(dir, 'consoles', f)).size, 0);
    expect(onDisk).to.be.at.most(2048);
    await logs.close();
  });

  it('cuts a read on a whole UTF-8 character', async () => {
    const logs = new ConsoleLogs(join(dir, 'consoles'), 1024);
    await logs.append('n1', Buffer.from('é'.repeat(700)));
    const got = (await logs.read('n1'))!;
    expect(got.length).to.be.at.most(1024);
    expect(got.toString('utf8')).to.match(/^é+$/);
    await logs.close();
  });

  it('answers null for a node without a log, an empty log once created, and deletes both files', async () => {
    const logs = new ConsoleLogs(join(dir, 'consoles'), 1024);
    expect(await logs.read('n1')).to.equal(null);
    await logs.create('n1', 'r1');
    expect((await logs.read('n1'))!.length).to.equal(0);
    for (let i = 0; i < 30; i++) await logs.append('n1', Buffer.alloc(100, 0x41));
    expect(existsSync(join(dir, 'consoles', `${logFileName('n1')}.1`))).to.equal(true);
    await logs.remove('n1');
    expect(readdirSync(join(dir, 'consoles'))).to.deep.equal([]);
    expect(await logs.read('n1')).to.equal(null);
    await logs.close();
  });

  it('names files so that no node name leaves the folder, and sweeps the logs of nodes that do not record', async () => {
    for (const name of ['..', '.', 'a/b', 'x'.repeat(255), '%2e%2e', 'é €']) {
      const f = logFileName(name);
      expect(f).to.match(/^[A-Za-z0-9_%-]+\.log$/);
      expect(f.length).to.be.at.most(210);
    }
    expect(logFileName('a/b')).not.to.equal(logFileName('a%2Fb'));
    const logs = new ConsoleLogs(join(dir, 'consoles'), 1024);
    await logs.create('keep', 'r1');
    await logs.append('keep', Buffer.from('k'));
    await logs.create('gone', 'r2');
    await logs.create('earlier', 'r3');
    await logs.append('earlier', Buffer.from('e'));
    writeFileSync(join(dir, 'consoles', 'stray'), 'x');
    await logs.close();
    // `earlier` records now, but another recording than the one its log is of.
    const removed = logs.sweep(new Map([['keep', 'r1'], ['earlier', 'r4']]));
    expect(removed.sort()).to.deep.equal([logFileName('gone'), `${logFileName('gone')}.recording`, logFileName('earlier'), `${logFileName('earlier')}.recording`, 'stray'].sort());
    expect(readdirSync(join(dir, 'consoles')).sort()).to.deep.equal([logFileName('keep'), `${logFileName('keep')}.recording`].sort());
    expect((await logs.read('keep'))!.toString()).to.equal('k');
    expect(await logs.read('earlier')).to.equal(null);
  });

  it('never continues nor serves the log of another recording that it could not delete (a disk that keeps refusing): refused until it can be deleted', async () => {
    const logs = new ConsoleLogs(join(dir, 'consoles'), 1024);
    await logs.create('n1', 'r1');
    await logs.append('n1', Buffer.from('the first tenant\'s secret\r\n'));
    const undo = refusingDeletions(dir);
    try {
      // The recording ends, and its log stays; then the next one starts, and it stays still.
      let err = await logs.remove('n1').then(() => null, (e: Error) => e);
      expect(err?.message).to.include('EACCES');
      err = await logs.create('n1', 'r2').then(() => null, (e: Error) => e);
      expect(err?.message, 'the new recording has no log').to.include('EACCES');
      err = await logs.append('n1', Buffer.from('the next tenant\'s output\r\n')).then(() => null, (e: Error) => e);
      expect(err?.message, 'not appended to the old log').to.include('could not be deleted');
      err = await logs.read('n1').then((b) => { throw new Error(`served: ${String(b)}`); }, (e: Error) => e);
      expect(err?.message, 'not served').to.include('could not be deleted');
      expect(readFileSync(join(dir, 'consoles', logFileName('n1')), 'utf8')).to.equal('the first tenant\'s secret\r\n');
    } finally {
      undo();
    }
    // The disk deletes again: the new recording's log starts empty, and records.
    expect(String((await logs.read('n1')) ?? '')).to.equal('');
    expect(readFileSync(join(dir, 'consoles', `${logFileName('n1')}.recording`), 'utf8')).to.equal('r2');
    await logs.append('n1', Buffer.from('the next tenant\'s output\r\n'));
    expect(String(await logs.read('n1'))).to.equal('the next tenant\'s output\r\n');
    await logs.close();
  });

  it('gives a node named as the digest file of a name too long for a file a log of its own; every other name keeps its file', async () => {
    const long = 'é'.repeat(40);
    const digest = logFileName(long).replace(/\.log$/, '');
    expect(digest).to.match(/^sha256-[0-9a-f]{64}$/);
    expect(logFileName(digest)).not.to.equal(logFileName(long));
    expect(logFileName(digest)).to.match(/^[A-Za-z0-9_%-]+\.log$/);
    expect(logFileName('sha256-')).not.to.equal('sha256-.log');
    expect(logFileName('node-07')).to.equal('node-07.log');
    expect(logFileName('sha256')).to.equal('sha256.log');
    expect(logFileName('a.b')).to.equal('a%2Eb.log');
    const logs = new ConsoleLogs(join(dir, 'consoles'), 1024);
    await logs.create(digest, 'r1');
    await logs.append(digest, Buffer.from('the first tenant\'s secret'));
    await logs.create(long, 'r2');
    await logs.append(long, Buffer.from('another node'));
    expect((await logs.read(long))!.toString(), 'two nodes, two logs').to.equal('another node');
    expect((await logs.read(digest))!.toString()).to.equal('the first tenant\'s secret');
    await logs.close();
  });

  it('makes a recording\'s name durable when it is written (the file, then the folder), once per recording, not per chunk', async () => {
    const synced: string[] = [];
    const logs = new ConsoleLogs(join(dir, 'consoles'), 1024, async (p) => { synced.push(p); });
    await logs.create('n1', 'r1');
    const named = join(dir, 'consoles', `${logFileName('n1')}.recording`);
    expect(readFileSync(named, 'utf8')).to.equal('r1');
    expect(synced).to.deep.equal([named, join(dir, 'consoles')]);
    for (let i = 0; i < 30; i++) await logs.append('n1', Buffer.alloc(100, 0x41));
    await logs.remove('n1');
    await logs.create('n1', 'r2');
    expect(readFileSync(named, 'utf8')).to.equal('r2');
    expect(synced).to.deep.equal([named, join(dir, 'consoles'), named, join(dir, 'consoles')]);
    await logs.close();
  });
});

describe('escapeSolInput (ipmitool\'s escape character)', () => {
  it('doubles a ~ right after a newline or at the start, and no other', () => {
    const state = { atLineStart: true };
    expect(escapeSolInput(Buffer.from('~.a~b\r~.'), state).toString()).to.equal('~~.a~b\r~~.');
    expect(state.atLineStart).to.equal(false);
    expect(escapeSolInput(Buffer.from('\n'), state).toString()).to.equal('\n');
    expect(escapeSolInput(Buffer.from('~~'), state).toString()).to.equal('~~~');
  });
});
