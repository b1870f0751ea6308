/**
 * The read model's checkpoint (actors/checkpoint.ts) on LMDB on disk: a start from it and the
 * events after it gives the read model a rebuild from the journal gives, whatever was in flight
 * when it was taken (random worlds: deletions, attachments, operations held pending by the
 * switch, re-encodings of stored data); and it is not used when it cannot be proved current:
 * dropped by a rewrite, refused when a rewrite came during its write, from another build,
 * corrupt, or newer than the store (a restored backup).
 */
import { expect } from 'chai';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { Checkpointer } from '../../actors/checkpoint';
import { LmdbPersistenceEngine } from '../../actors/persistence/lmdb';
import { CHECKPOINT_FILE } from '../../actors/persistence/checkpoint-file';
import { RecordingSwitch } from '../helpers/world';
import { ODD_NAMES, opArbOver, populatedWorld } from '../helpers/world-ops';
import { everything } from '../helpers/readmodel-view';
import { both, checkpointAfterRetention, checkpointAfterRetentionOfNewest, checkpointEqualsRebuild, OPTS, retag } from '../helpers/checkpoint-property';

describe('The read model\'s checkpoint (LMDB)', function () {
  this.timeout(180_000);
  const dirs: string[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'hilt-cp-'));
    dirs.push(d);
    return d;
  };
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('a start from it and the events after it equals a rebuild from the journal, whatever was in flight when it was taken', async () => {
    await checkpointEqualsRebuild(async () => {
      const dir = tempDir();
      return { engine: new LmdbPersistenceEngine(dir, { mapSizeGb: 1 }), kept: async () => existsSync(join(dir, CHECKPOINT_FILE)) };
    }, 25, 3);
  });

  it('equals a rebuild with names of every form: `/`, `%`, unicode, `__proto__`, 255 bytes', async () => {
    await checkpointEqualsRebuild(async () => {
      const dir = tempDir();
      return { engine: new LmdbPersistenceEngine(dir, { mapSizeGb: 1 }), kept: async () => existsSync(join(dir, CHECKPOINT_FILE)) };
    }, 25, 3, opArbOver(ODD_NAMES, { doubts: true }));
  });

  /** A world with something in it, a checkpoint written, and the engine. */
  async function written() {
    const dir = tempDir();
    const engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    const driver = new RecordingSwitch();
    const world = await populatedWorld(engine, driver);
    const cp = (await Checkpointer.start(world, OPTS, Infinity))!;
    expect(await cp.write()).to.equal(true);
    return { dir, engine, driver, world, cp, file: join(dir, CHECKPOINT_FILE) };
  }

  it('replays only the events after it, and a clean stop writes the next one', async () => {
    const { engine, world, cp, file } = await written();
    for (const n of ['x1', 'x2', 'x3']) await world.nodes.ask(n, { type: 'node.register', by: 'admin', obm: { type: 'mock', fields: {} } });
    await world.nodes.ask('x2', { type: 'node.delete', by: 'admin' });
    const before = readFileSync(file);
    expect((await both(engine)).report).to.include({ used: true, replayed: 4 });
    await cp.close();
    expect(readFileSync(file).equals(before)).to.equal(false);
    const again = await both(engine);
    expect(again.report).to.include({ used: true, replayed: 0 });
    expect(everything(again.fromCheckpoint.rm)).to.deep.equal(everything(world.rm));
    await world.close();
    await engine.close();
  });

  it('is not used once journal retention removed events after it (an object deleted since would come back); one written after is', async () => {
    const { engine, world, cp } = await written();
    await checkpointAfterRetention(engine, world, cp);
    await cp.close(false);
    await world.close();
    await engine.close();
  });

  it('is used after journal retention removed the store\'s newest events, also from the next start with nothing committed since; not beside an older copy', async () => {
    const { engine, world, cp, file } = await written();
    // An older store: a backup that holds ghost alive.
    const backup = join(tempDir(), 'copy');
    const next = await checkpointAfterRetentionOfNewest(engine, world, cp, () => engine.backup(backup));
    await next.close(false);
    await world.close();
    await engine.close();
    // Beside the older store it is not used: ghost's deletion is not in it.
    copyFileSync(file, join(backup, CHECKPOINT_FILE));
    const older = new LmdbPersistenceEngine(backup, { mapSizeGb: 1 });
    try {
      const { report, rebuilt } = await both(older);
      expect(rebuilt.rm.nodes.has('ghost')).to.equal(true);
      expect(report.used, JSON.stringify(report)).to.equal(false);
      expect(report.why).to.match(/holds other events than it below its position/);
    } finally {
      await older.close();
    }
  });

  it('a rewrite of stored data drops it, and a write under way when one comes is not kept', async () => {
    const { engine, world, cp, file } = await written();
    expect(existsSync(file)).to.equal(true);
    await world.nodes.rewrite('n1', retag('new'));
    expect(existsSync(file), 'dropped by the rewrite').to.equal(false);
    expect((await both(engine)).report).to.include({ used: false, why: 'none written' });
    // A write whose capture came before a rewrite is refused, even if the rewrite is done first.
    const writing = cp.write();
    await world.nodes.rewrite('n2', retag('newer'));
    expect(await writing).to.equal(false);
    expect(existsSync(file)).to.equal(false);
    // While a rewrite is under way no checkpoint is taken.
    world.runtime.rewriting++;
    expect(await cp.write()).to.equal(false);
    world.runtime.rewriting--;
    expect(await cp.write()).to.equal(true);
    const { report, fromCheckpoint, rebuilt } = await both(engine);
    expect(report.used).to.equal(true);
    expect(everything(fromCheckpoint.rm)).to.deep.equal(everything(rebuilt.rm));
    expect(fromCheckpoint.rm.nodes.get('n2')!.obm.fields).to.deep.equal({ k: 'newer' });
    // A rewrite with no event after it: the clean stop writes the checkpoint it dropped.
    await world.nodes.rewrite('n1', retag('newest'));
    expect(existsSync(file)).to.equal(false);
    await cp.close();
    const last = await both(engine);
    expect(last.report).to.include({ used: true, replayed: 0 });
    expect(last.fromCheckpoint.rm.nodes.get('n1')!.obm.fields).to.deep.equal({ k: 'newest' });
    await world.close();
    await engine.close();
  });

  it('is not used when corrupt, from another build, or of data the store does not hold (a restored backup)', async () => {
    const { engine, world, cp, file } = await written();
    const good = readFileSync(file);
    // One byte changed in the states.
    const bad = Buffer.from(good);
    bad[bad.length - 40] ^= 0xff;
    writeFileSync(file, bad);
    expect((await both(engine)).report.why).to.match(/^unreadable/);
    const len = good.readUInt32LE(0);
    // Cut short: inside its last frame, and after its header alone.
    writeFileSync(file, good.subarray(0, good.length - 3));
    expect((await both(engine)).report.why).to.equal('unreadable: truncated');
    writeFileSync(file, good.subarray(0, 8 + len));
    expect((await both(engine)).report.why).to.match(/^unreadable/);
    // Another build: the header says so (its frame re-checksummed).
    const header = JSON.parse(good.subarray(8, 8 + len).toString('utf8'));
    const other = Buffer.from(JSON.stringify({ ...header, build: 'another' }));
    const head = Buffer.alloc(8);
    head.writeUInt32LE(other.length, 0);
    head.writeUInt32LE(crc32(other), 4);
    writeFileSync(file, Buffer.concat([head, other, good.subarray(8 + len)]));
    expect((await both(engine)).report.why).to.equal('written by another build');
    // A checkpoint of a release before the header's `at` (the event it names at its position) is used.
    const { at, ...older } = header;
    expect(at).to.equal(header.position);
    const olderText = Buffer.from(JSON.stringify(older));
    head.writeUInt32LE(olderText.length, 0);
    head.writeUInt32LE(crc32(olderText), 4);
    writeFileSync(file, Buffer.concat([head, olderText, good.subarray(8 + len)]));
    expect((await both(engine)).report.used).to.equal(true);
    writeFileSync(file, good);
    expect((await both(engine)).report.used).to.equal(true);
    // A backup taken now, then more events and a newer checkpoint: copied beside the restored
    // backup, it names an event the copy does not hold.
    const backup = join(tempDir(), 'copy');
    await engine.backup(backup);
    await world.nodes.ask('x9', { type: 'node.register', by: 'admin', obm: { type: 'mock', fields: {} } });
    expect(await cp.write()).to.equal(true);
    await cp.close(false);
    await world.close();
    await engine.close();
    expect(existsSync(join(backup, CHECKPOINT_FILE)), 'a backup holds no checkpoint').to.equal(false);
    copyFileSync(file, join(backup, CHECKPOINT_FILE));
    const restored = new LmdbPersistenceEngine(backup, { mapSizeGb: 1 });
    try {
      const { report, rebuilt } = await both(restored);
      expect(report.used).to.equal(false);
      expect(report.why).to.match(/no longer holds its last event/);
      expect(rebuilt.rm.nodes.has('x9')).to.equal(false);
    } finally {
      await restored.close();
    }
  });
  it('is not used beside a restored backup that lacks an event it holds ahead of its position', async () => {
    const { dir, engine, world, cp, file } = await written();
    const register = { type: 'node.register', by: 'admin', obm: { type: 'mock', fields: {} } } as const;
    // `slow`'s event is committed but not yet applied when the checkpoint is taken: the watermark
    // stays below it, while `fast`, committed and applied after it, is in the states ahead of it.
    const persist = engine.persist.bind(engine);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let committed!: () => void;
    const slowCommitted = new Promise<void>((r) => (committed = r));
    engine.persist = async (events) => {
      await persist(events);
      if (events[0].key === 'node:slow') {
        committed();
        await gate;
      }
    };
    const slow = world.nodes.ask('slow', register);
    await slowCommitted;
    // The backup holds `slow`'s event, and not `fast`'s.
    const backup = join(tempDir(), 'copy');
    await engine.backup(backup);
    await world.nodes.ask('fast', register);
    expect(await cp.write()).to.equal(true);
    open();
    await slow;
    engine.persist = persist;
    await cp.close(false);
    await world.close();
    await engine.close();
    // That checkpoint copied beside the restored backup: the event at its position is there, `fast`'s is not.
    copyFileSync(file, join(backup, CHECKPOINT_FILE));
    expect(dir).to.not.equal(backup);
    const restored = new LmdbPersistenceEngine(backup, { mapSizeGb: 1 });
    try {
      const { report, fromCheckpoint, rebuilt } = await both(restored);
      expect(rebuilt.rm.nodes.has('fast')).to.equal(false);
      expect(rebuilt.rm.nodes.has('slow')).to.equal(true);
      expect(fromCheckpoint.rm.nodes.has('fast'), JSON.stringify(report)).to.equal(false);
      expect(report.used).to.equal(false);
      expect(report.why).to.match(/no longer holds/);
    } finally {
      await restored.close();
    }
  });

  it('gives back nics and ports written compactly (without the names their ids hold) whatever their names, and a port wired to a nic deleted before it was freed', async () => {
    const dir = tempDir();
    const engine = new LmdbPersistenceEngine(dir, { mapSizeGb: 1 });
    const driver = new RecordingSwitch();
    const world = await populatedWorld(engine, driver);
    const by = 'admin';
    await world.switches.ask('s/2%', { type: 'switch.register', by, switchType: 'mock', fields: {} });
    await world.nodes.ask('n/4%', { type: 'node.register', by, obm: { type: 'mock', fields: {} } });
    for (const [i, nic] of ['e/0%', '__proto__', 'gone'].entries()) {
      const port = ['gi1/0/3', '__proto__', '50%'][i];
      await world.switches.ask('s/2%', { type: 'switch.registerPort', by, port });
      await world.nodes.ask('n/4%', { type: 'node.registerNic', by, nic, macaddr: `mm${i}` });
      await world.nodes.ask('n/4%', { type: 'node.wireNic', by, nic, switch: 's/2%', port });
    }
    // The port's unwire after the nic's deletion is lost (a crash between the two).
    const persist = engine.persist.bind(engine);
    engine.persist = async (events) => {
      if (events.some((e) => e.key.startsWith('port:'))) throw new Error('lost in the crash');
      return persist(events);
    };
    await world.nodes.ask('n/4%', { type: 'node.deleteNic', by, nic: 'gone' }).catch(() => undefined);
    engine.persist = persist;
    expect(world.rm.port('s/2%', '50%')!.wire).to.deep.equal({ node: 'n/4%', nic: 'gone' });
    const cp = (await Checkpointer.start(world, OPTS, Infinity))!;
    expect(await cp.write()).to.equal(true);
    const { report, fromCheckpoint, rebuilt } = await both(engine);
    expect(report).to.include({ used: true, replayed: 0 });
    expect(everything(fromCheckpoint.rm)).to.deep.equal(everything(rebuilt.rm));
    expect(everything(fromCheckpoint.rm)).to.deep.equal(everything(world.rm));
    expect(fromCheckpoint.rm.nicsOf('n/4%').map((n) => n.name)).to.deep.equal(['e/0%', '__proto__']);
    expect(fromCheckpoint.rm.port('s/2%', 'gi1/0/3')!.wire).to.deep.equal({ node: 'n/4%', nic: 'e/0%' });
    expect(fromCheckpoint.rm.port('s/2%', '50%')!.wire).to.deep.equal({ node: 'n/4%', nic: 'gone' });
    expect([...fromCheckpoint.rm.wiredWithoutNic]).to.deep.equal([...world.rm.wiredWithoutNic]).and.to.have.length(1);
    await cp.close();
    await world.close();
    await engine.close();
  });
});
