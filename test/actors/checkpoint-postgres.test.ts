/**
 * The read model's checkpoint (actors/checkpoint.ts) on PostgreSQL, kept in the database
 * (actors/persistence/postgres-checkpoint.ts), against the tests' real PostgreSQL: a start from
 * it and the events after it gives the read model a rebuild gives, whatever was in flight when
 * it was taken; a rewrite (by this process or by the one that took over) clears it, and a write
 * captured before one is never made current; a process whose lease was taken over writes none,
 * and the one that took over starts from the last one its predecessor wrote; it is not used when
 * corrupt, cut short, from another build, or of another store; an unfinished write leaves the
 * previous one current.
 */
import { expect } from 'chai';
import { Client } from 'pg';
import { crc32 } from 'node:zlib';
import { Checkpointer, loadCheckpoint } from '../../actors/checkpoint';
import { rebuildReadModels } from '../../actors/recovery';
import { World } from '../../actors/world';
import { migrateDatabase, PostgresPersistenceEngine } from '../../actors/persistence/postgres';
import { PART_BYTES } from '../../actors/persistence/postgres-checkpoint';
import { RecordingSwitch } from '../helpers/world';
import { ODD_NAMES, opArbOver, populatedWorld } from '../helpers/world-ops';
import { everything } from '../helpers/readmodel-view';
import { freshDatabase, sql } from '../helpers/postgres';
import { both, checkpointAfterRetention, checkpointAfterRetentionOfNewest, checkpointEqualsRebuild, OPTS, retag } from '../helpers/checkpoint-property';

/** The current checkpoint's generation and its parts in the database (null: none current). */
async function stored(url: string): Promise<{ gen: string | null; parts: number; rows: number }> {
  const [c] = await sql<{ gen: string | null; parts: number }>(url, 'SELECT gen, parts FROM hilt_checkpoint WHERE id = 1');
  const [r] = await sql<{ n: string }>(url, 'SELECT count(*) AS n FROM hilt_checkpoint_parts');
  return { gen: c.gen, parts: c.parts, rows: Number(r.n) };
}

/** A rewrite that re-encodes node n3's first event as it is (what matters is the rewrite, not the data). */
async function sameData(engine: PostgresPersistenceEngine): Promise<void> {
  for await (const e of engine.events('node:n3')) {
    return engine.rewrite({ events: [{ key: e.key, sequenceNumber: e.sequenceNumber, data: e.data }], snapshots: [] });
  }
  throw new Error('no event of node:n3');
}

describe('The read model\'s checkpoint (PostgreSQL)', function () {
  this.timeout(240_000);
  const engines: PostgresPersistenceEngine[] = [];
  afterEach(async () => {
    for (const e of engines.splice(0)) await e.close();
  });
  /** A migrated database and an engine on it (fenced with `fence` when given). */
  async function database(fence?: number) {
    const url = await freshDatabase('hilt_cp');
    await migrateDatabase({ url });
    if (fence !== undefined) await sql(url, 'UPDATE hilt_lease SET token = $1', [fence]);
    return { url, engine: open(url, fence) };
  }
  const open = (url: string, fence?: number) => {
    const e = new PostgresPersistenceEngine({ url, poolSize: 2 }, { fence });
    engines.push(e);
    return e;
  };

  it('a start from it and the events after it equals a rebuild from the journal, whatever was in flight when it was taken', async () => {
    await checkpointEqualsRebuild(async () => {
      const { url, engine } = await database(1);
      return { engine, kept: async () => (await stored(url)).gen !== null };
    }, 15, 2);
  });

  it('equals a rebuild with names of every form: `/`, `%`, unicode, `__proto__`, 255 bytes', async () => {
    await checkpointEqualsRebuild(async () => {
      const { url, engine } = await database(1);
      return { engine, kept: async () => (await stored(url)).gen !== null };
    }, 15, 2, opArbOver(ODD_NAMES, { doubts: true }));
  });

  /** A world with something in it, a checkpoint written, and the engine. */
  async function written(fence?: number, chunk = 2) {
    const { url, engine } = await database(fence);
    const driver = new RecordingSwitch();
    const world = await populatedWorld(engine, driver);
    const cp = (await Checkpointer.start(world, { ...OPTS, chunk }, Infinity))!;
    expect(await cp.write()).to.equal(true);
    return { url, engine, driver, world, cp };
  }

  it('replays only the events after it; a clean stop writes the next one and leaves no other generation behind', async () => {
    const { url, engine, world, cp } = await written();
    const first = await stored(url);
    expect(first.gen).to.not.equal(null);
    expect(first.rows).to.equal(first.parts);
    for (const n of ['x1', 'x2', 'x3']) await world.nodes.ask(n, { type: 'node.register', by: 'admin', obm: { type: 'mock', fields: {} } });
    await world.nodes.ask('x2', { type: 'node.delete', by: 'admin' });
    expect((await both(engine)).report).to.include({ used: true, replayed: 4 });
    await cp.close();
    const second = await stored(url);
    expect(Number(second.gen)).to.be.greaterThan(Number(first.gen));
    expect(second.rows, 'the previous generation deleted').to.equal(second.parts);
    const again = await both(engine);
    expect(again.report).to.include({ used: true, replayed: 0 });
    expect(everything(again.fromCheckpoint.rm)).to.deep.equal(everything(world.rm));
    await world.close();
  });

  it('is read whole across parts of a megabyte (frames cut between them)', async () => {
    // Large states: chunks of 512 nodes with OBM fields of 4 KiB make several parts.
    const { url, engine } = await database();
    const world = new World(engine, { vlanPool: [[100, 103]] });
    const pad = 'x'.repeat(4096);
    for (let i = 0; i < 600; i++) await world.nodes.ask(`big${i}`, { type: 'node.register', by: 'admin', obm: { type: 'mock', fields: { pad: `${i}${pad}` } } });
    const cp = (await Checkpointer.start(world, { ...OPTS, chunk: 512 }, Infinity))!;
    expect(await cp.write()).to.equal(true);
    expect((await stored(url)).parts).to.be.greaterThan(1);
    const { report, fromCheckpoint, rebuilt } = await both(engine);
    expect(report.used, JSON.stringify(report)).to.equal(true);
    expect(everything(fromCheckpoint.rm)).to.deep.equal(everything(rebuilt.rm));
    await cp.close(false);
    await world.close();
  });

  it('is not used once journal retention removed events after it (an object deleted since would come back); one written after is', async () => {
    const { engine, world, cp } = await written();
    await checkpointAfterRetention(engine, world, cp);
    await cp.close(false);
    await world.close();
  });

  it('is used after journal retention removed the store\'s newest events, also from the next start with nothing committed since', async () => {
    const { engine, world, cp } = await written();
    const next = await checkpointAfterRetentionOfNewest(engine, world, cp);
    await next.close(false);
    await world.close();
  });

  it('a rewrite clears it in its transaction, and a write under way when one comes is not kept', async () => {
    const { url, engine, world, cp } = await written();
    await world.nodes.rewrite('n1', retag('new'));
    expect(await stored(url), 'cleared by the rewrite').to.deep.equal({ gen: null, parts: 0, rows: 0 });
    expect((await both(engine)).report).to.include({ used: false, why: 'none written' });
    // A write whose capture came before a rewrite is refused, even if the rewrite is done first,
    // and what it staged goes: its first part is in the database when the rewrite comes.
    let open1!: () => void;
    const gate = new Promise<void>((r) => (open1 = r));
    async function* held(): AsyncGenerator<Uint8Array> {
      yield Buffer.alloc(PART_BYTES, 1);
      await gate;
      yield Buffer.alloc(10, 2);
    }
    const writing = engine.checkpoints.write(held(), engine.checkpoints.epoch);
    while ((await stored(url)).rows === 0) await new Promise((r) => setTimeout(r, 10));
    await world.nodes.rewrite('n2', retag('newer'));
    open1();
    expect(await writing).to.equal(false);
    expect(await stored(url)).to.deep.equal({ gen: null, parts: 0, rows: 0 });
    // Its capture taken before the rewrite, written after: refused without a part staged.
    const epoch = engine.checkpoints.epoch;
    await sameData(engine);
    expect(await engine.checkpoints.write(held(), epoch)).to.equal(false);
    expect(await stored(url)).to.deep.equal({ gen: null, parts: 0, rows: 0 });
    expect(await cp.write()).to.equal(true);
    const { report, fromCheckpoint, rebuilt } = await both(engine);
    expect(report.used).to.equal(true);
    expect(everything(fromCheckpoint.rm)).to.deep.equal(everything(rebuilt.rm));
    expect(fromCheckpoint.rm.nodes.get('n2')!.obm.fields).to.deep.equal({ k: 'newer' });
    // A rewrite by another process on the same database (the one that took over) clears it too.
    const other = open(url);
    await sameData(other);
    expect((await stored(url)).gen).to.equal(null);
    // An upgrade of the stored data drops it (drop(): its own statement, awaited by the next read).
    expect(await cp.write()).to.equal(true);
    engine.checkpoints.drop();
    expect((await both(engine)).report).to.include({ used: false, why: 'none written' });
    expect((await stored(url)).rows).to.equal(0);
    await cp.close(false);
    await world.close();
  });

  it('a commit waits for a rewrite in flight and is refused once it deleted the parts; a rewrite after a commit clears it', async () => {
    const { url, engine, world, cp } = await written();
    const { gen, parts } = await stored(url);
    // Staged by hand: a new generation with the current one's bytes.
    const [{ g }] = await sql<{ g: string }>(url, "SELECT nextval('hilt_checkpoint_gen')::text AS g");
    await sql(url, 'INSERT INTO hilt_checkpoint_parts (gen, part, bytes) SELECT $1, part, bytes FROM hilt_checkpoint_parts WHERE gen = $2', [g, gen]);
    const [{ size }] = await sql<{ size: string }>(url, 'SELECT sum(octet_length(bytes))::text AS size FROM hilt_checkpoint_parts WHERE gen = $1', [g]);
    const rewriter = new Client({ connectionString: url });
    const committer = new Client({ connectionString: url });
    await rewriter.connect();
    await committer.connect();
    try {
      await rewriter.query('BEGIN');
      await rewriter.query('UPDATE hilt_checkpoint SET gen = NULL, parts = 0, size = 0 WHERE id = 1');
      await rewriter.query('DELETE FROM hilt_checkpoint_parts');
      let answered = false;
      const commit = committer.query<{ ok: boolean }>('SELECT hilt_checkpoint_commit(NULL, $1, $2, $3) AS ok', [g, parts, size]).then((r) => ((answered = true), r));
      await new Promise((r) => setTimeout(r, 300));
      expect(answered, 'the commit waits for the rewrite').to.equal(false);
      await rewriter.query('COMMIT');
      expect((await commit).rows[0].ok).to.equal(false);
      expect((await stored(url)).gen).to.equal(null);
      // The other way round: a commit in flight, then a rewrite: the rewrite waits, then clears it.
      expect(await cp.write()).to.equal(true);
      const now = await stored(url);
      await committer.query('BEGIN');
      const [{ g: g2 }] = (await committer.query<{ g: string }>("SELECT nextval('hilt_checkpoint_gen')::text AS g")).rows;
      await committer.query('INSERT INTO hilt_checkpoint_parts (gen, part, bytes) SELECT $1, part, bytes FROM hilt_checkpoint_parts WHERE gen = $2', [g2, now.gen]);
      const [{ size: s2 }] = (await committer.query<{ size: string }>('SELECT sum(octet_length(bytes))::text AS size FROM hilt_checkpoint_parts WHERE gen = $1', [g2])).rows;
      expect((await committer.query<{ ok: boolean }>('SELECT hilt_checkpoint_commit(NULL, $1, $2, $3) AS ok', [g2, now.parts, s2])).rows[0].ok).to.equal(true);
      const rewrite = sameData(engine);
      await new Promise((r) => setTimeout(r, 300));
      await committer.query('COMMIT');
      await rewrite;
      // (The parts the commit inserted are not in the rewrite's snapshot: the next commit deletes them.)
      expect((await stored(url)).gen).to.equal(null);
      expect((await both(engine)).report).to.include({ used: false, why: 'none written' });
    } finally {
      await rewriter.end();
      await committer.end();
    }
    await cp.close(false);
    await world.close();
  });

  it('a write cut short leaves the previous one current, and the next commit deletes what it left', async () => {
    const { url, engine, world, cp } = await written();
    const before = await stored(url);
    // A generation staged and never committed (the process died mid-write).
    const [{ g }] = await sql<{ g: string }>(url, "SELECT nextval('hilt_checkpoint_gen')::text AS g");
    await sql(url, "INSERT INTO hilt_checkpoint_parts (gen, part, bytes) VALUES ($1, 0, '\\x00')", [g]);
    expect((await stored(url)).gen).to.equal(before.gen);
    expect((await both(engine)).report.used).to.equal(true);
    await world.nodes.ask('x1', { type: 'node.register', by: 'admin', obm: { type: 'mock', fields: {} } });
    expect(await cp.write()).to.equal(true);
    const after = await stored(url);
    expect(after.rows).to.equal(after.parts);
    await cp.close(false);
    await world.close();
  });

  it('a process whose lease was taken over writes none; the one that took over starts from its predecessor\'s last', async () => {
    const { url, engine: a, world, cp } = await written(1);
    for (const n of ['x1', 'x2']) await world.nodes.ask(n, { type: 'node.register', by: 'admin', obm: { type: 'mock', fields: {} } });
    expect(await cp.write()).to.equal(true);
    const kept = await stored(url);
    await world.nodes.ask('x3', { type: 'node.register', by: 'admin', obm: { type: 'mock', fields: {} } });
    // Another process takes the lease over (the token moves on).
    await sql(url, 'UPDATE hilt_lease SET token = 2');
    const fencedA = open(url, 1);
    const wa = new World(fencedA, { vlanPool: [[100, 103]] });
    await rebuildReadModels(wa);
    let error: string | undefined;
    const late = (await Checkpointer.start(wa, { ...OPTS, onWritten: (r) => (error = r.error) }, Infinity))!;
    expect(await late.write(), 'refused: not the lease holder').to.equal(false);
    expect(error).to.match(/fencing token 1 is no longer the lease's/);
    expect(await stored(url), 'its parts deleted, the predecessor\'s checkpoint current').to.deep.equal(kept);
    // A's own engine learns it too on its next write.
    expect(await cp.write()).to.equal(false);
    expect(await stored(url)).to.deep.equal(kept);
    await late.close(false);
    await wa.close();
    await cp.close(false);
    await world.close();
    await a.close();
    // B: the events after A's last checkpoint (x3's registration) replayed, the rest from it.
    const b = open(url, 2);
    const { report, fromCheckpoint, rebuilt } = await both(b);
    expect(report).to.include({ used: true, replayed: 1 });
    expect(everything(fromCheckpoint.rm)).to.deep.equal(everything(rebuilt.rm));
    expect(fromCheckpoint.rm.nodes.has('x3')).to.equal(true);
  });

  it('lets the event loop turn while it decodes (the lease is renewed by a timer: a long load in one turn let it lapse)', async () => {
    const { engine } = await database();
    const world = new World(engine, { vlanPool: [[100, 103]] });
    for (let i = 0; i < 100; i++) await world.nodes.ask(`t${i}`, { type: 'node.register', by: 'admin', obm: { type: 'mock', fields: {} } });
    const cp = (await Checkpointer.start(world, OPTS, Infinity))!;
    expect(await cp.write()).to.equal(true);
    await cp.close(false);
    await world.close();
    // Each read of the checkpoint's bytes notes how many turns of the event loop have passed.
    let turns = 0;
    let turning = true;
    const turn = () => {
      turns++;
      if (turning) setImmediate(turn);
    };
    setImmediate(turn);
    const seen: number[] = [];
    const slot = engine.checkpoints;
    const read = slot.read.bind(slot);
    slot.read = async () => {
      const src = await read();
      return src && { size: src.size, readAt: (into: Buffer, at: number) => (seen.push(turns), src.readAt(into, at)), close: () => src.close() };
    };
    const report = await loadCheckpoint(new World(engine, { vlanPool: [[100, 103]] }));
    turning = false;
    expect(report.used, JSON.stringify(report)).to.equal(true);
    // The second pass (the decoding, 50 frames of two states): the loop turned during it.
    const second = seen.slice(seen.length / 2);
    expect(second.length).to.be.greaterThan(64);
    expect(second[second.length - 1]).to.be.greaterThan(second[0]);
  });

  it('is not used when corrupt, cut short, from another build, or of another store', async () => {
    const { url, engine, world, cp } = await written();
    const { gen } = await stored(url);
    const original = await sql<{ part: number; bytes: Buffer }>(url, 'SELECT part, bytes FROM hilt_checkpoint_parts WHERE gen = $1 ORDER BY part', [gen]);
    const whole = Buffer.concat(original.map((r) => r.bytes));
    const put = async (bytes: Buffer) => {
      await sql(url, 'UPDATE hilt_checkpoint_parts SET bytes = $1 WHERE gen = $2 AND part = 0', [bytes, gen]);
      await sql(url, 'DELETE FROM hilt_checkpoint_parts WHERE gen = $1 AND part > 0', [gen]);
    };
    expect(original.length).to.equal(1);
    // One byte changed in the states.
    const bad = Buffer.from(whole);
    bad[bad.length - 40] ^= 0xff;
    await put(bad);
    expect((await both(engine)).report.why).to.match(/^unreadable/);
    // Cut short (its recorded size is the whole).
    await put(whole.subarray(0, whole.length - 3));
    expect((await both(engine)).report.why).to.equal('unreadable: truncated');
    // Another build: its header says so (the frame's CRC made right).
    const len = whole.readUInt32LE(0);
    const header = JSON.parse(whole.subarray(8, 8 + len).toString('utf8'));
    const other = Buffer.from(JSON.stringify({ ...header, build: 'another' }));
    const head = Buffer.alloc(8);
    head.writeUInt32LE(other.length, 0);
    head.writeUInt32LE(crc32(other), 4);
    const foreignBuild = Buffer.concat([head, other, whole.subarray(8 + len)]);
    await sql(url, 'UPDATE hilt_checkpoint SET size = $1 WHERE id = 1', [foreignBuild.length]);
    await put(foreignBuild);
    expect((await both(engine)).report.why).to.equal('written by another build');
    await sql(url, 'UPDATE hilt_checkpoint SET size = $1 WHERE id = 1', [whole.length]);
    await put(whole);
    expect((await both(engine)).report.used).to.equal(true);
    // Copied into another store (a database whose journal differs): it names an event that store does not hold.
    const { url: url2, engine: e2 } = await database();
    const w2 = new World(e2, { vlanPool: [[100, 103]] });
    await w2.nodes.ask('elsewhere', { type: 'node.register', by: 'admin', obm: { type: 'mock', fields: {} } });
    await w2.close();
    await sql(url2, 'INSERT INTO hilt_checkpoint_parts (gen, part, bytes) VALUES (1, 0, $1)', [whole]);
    await sql(url2, 'UPDATE hilt_checkpoint SET gen = 1, parts = 1, size = $1 WHERE id = 1', [whole.length]);
    const r2 = await both(e2);
    expect(r2.report.used).to.equal(false);
    expect(r2.report.why).to.match(/no longer holds its last event/);
    expect(r2.rebuilt.rm.nodes.has('elsewhere')).to.equal(true);
    await cp.close(false);
    await world.close();
  });
});
