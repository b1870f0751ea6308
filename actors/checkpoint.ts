/**
 * The read model's checkpoint (docs/checkpoint.md): the committed state of every entity, written
 * beside the store (the engine's CheckpointSlot) with the position in the store's one commit
 * order it reflects, so that a start reads it and replays only the events after that position
 * (feed) through each kind's pure apply, instead of every key's snapshot and events. The read
 * model is derived data: a checkpoint that is missing, unreadable, from another format or build,
 * or not provably of this store (its last event is not the one at its position) is ignored and
 * the start rebuilds from the journal as before.
 *
 * The position is a watermark kept while the service runs (`Checkpointer`): the engine tells
 * every durable commit in commit order (onCommit), each registry tells what it applied to the
 * read models (CommitTracking); the watermark passes an event once it is applied. Events applied
 * ahead of it (actors commit concurrently) are listed in the checkpoint by key and sequence
 * number, and skipped when it is replayed. A capture is one synchronous read of the read models
 * (their states are immutable), encoded and written in slices between which requests run.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { crc32 } from 'node:zlib';
import { Packr } from 'msgpackr';
// msgpackr's separate decoder without native string extraction (see loadCheckpoint); the same
// API as its main one, which declares the types.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Unpackr } = require('msgpackr/unpack-no-eval') as typeof import('msgpackr/unpack');
import type { World } from './world';
import type { CommitTracking } from './runtime';
import type { CheckpointSource, PersistedEvent, PersistenceEngine } from './persistence/engine';
import { escapeKeys, unescapeKeys } from './persistence/keys';
import { readModelKinds, type ReadModelKind } from './readmodel-kinds';

/** The file's layout; a checkpoint of another format is ignored. */
const FORMAT = 4;
/** States per encoded chunk: one slice of a background write. */
const CHUNK = 512;
/**
 * Frames decoded between two turns of the event loop at start: a lease (PostgreSQL) is renewed
 * by a timer, and a load of seconds in one turn let it lapse on a loaded machine (the process
 * stepped down and started again, forever). 32 frames of 512 states: tens of ms.
 */
const FRAMES_PER_TURN = 32;
/** Events waiting for the watermark beyond which tracking gives up (something commits outside the registries). */
const MAX_WAITING = 200_000;

interface Header {
  format: number;
  build: string;
  /** every event at or below it is in the states */
  position: number;
  /**
   * the position of the event it names (key, seq, createdAt), which the store must still hold:
   * `position`, or, once journal retention removed the events from there up to `position`, the
   * newest event below them
   */
  at: number;
  key: string;
  seq: number;
  createdAt: number;
  /** keys whose events up to this sequence number are in the states although above `position` */
  ahead: [string, number][];
  /** states per kind */
  counts: Record<string, number>;
}

/** One chunk: a kind's ids and states; `x`: some state's keys are escaped (persistence/keys.ts). */
interface Chunk { k: string; ids: string[]; s: unknown[]; x?: 1 }

let codeId: string | undefined;
let msgpackrId: string | undefined;
/**
 * This build's identity as far as checkpoints go: a hash of the compiled code that decides what
 * a checkpoint's states are (each kind's apply, `actors/<kind>/state.js`; this module's encoding
 * and `readmodel-kinds.js`' packing) and of every module of the project they require, and
 * msgpackr's version (`msgpackr`: injected by tests), which encodes and decodes the file. A
 * checkpoint written by a build whose hash differs is ignored: its states may not be what this
 * build's applies give, nor its bytes what this msgpackr reads back. A release that changes
 * only other code (decisions, routes, drivers, the read model's indexes, which a start rebuilds
 * from the states) starts from its predecessor's checkpoint instead of rebuilding from the journal.
 */
export function currentBuild(msgpackr = msgpackrVersion()): string {
  if (!codeId) {
    const roots = [__filename, join(__dirname, 'readmodel-kinds.js')];
    for (const name of readdirSync(__dirname).sort()) {
      const state = join(__dirname, name, 'state.js');
      if (existsSync(state)) roots.push(state);
    }
    codeId = codeHash(roots, dirname(__dirname));
  }
  return buildOf(codeId, msgpackr);
}

/** A build from its code's hash (codeHash) and msgpackr's version. */
export const buildOf = (code: string, msgpackr: string): string => createHash('sha256').update(`${code}\0msgpackr ${msgpackr}`).digest('hex').slice(0, 32);

/** The version of the msgpackr this process loads (its package.json, which it does not export: found above its entry). */
export function msgpackrVersion(): string {
  if (msgpackrId) return msgpackrId;
  for (let dir = dirname(require.resolve('msgpackr')); ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    const pkg = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string }) : undefined;
    if (pkg?.name === 'msgpackr' && pkg.version) return (msgpackrId = pkg.version);
    if (dirname(dir) === dir) throw new Error('msgpackr\'s package.json was not found');
  }
}

/**
 * The compiled modules that `roots` require of the project, transitively, themselves included,
 * sorted: relative requires only (packages are not followed). A require that names no file is
 * kept as its text.
 */
export function requiredModules(roots: readonly string[]): string[] {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    if (!existsSync(file)) return;
    for (const m of readFileSync(file, 'utf8').matchAll(/require\((["'])(\.{1,2}\/[^"']+)\1\)/g)) {
      const p = resolve(dirname(file), m[2]);
      visit([`${p}.js`, join(p, 'index.js'), p].find((c) => existsSync(c) && statSync(c).isFile()) ?? p);
    }
  };
  for (const r of roots) visit(resolve(r));
  return [...seen].sort();
}

/** A hash of the modules `roots` require (requiredModules), each by its path below `base` and its text. */
export function codeHash(roots: readonly string[], base: string): string {
  const h = createHash('sha256');
  for (const file of requiredModules(roots)) {
    h.update(relative(base, file)).update('\0');
    if (existsSync(file)) h.update(readFileSync(file));
    h.update('\0');
  }
  return h.digest('hex').slice(0, 32);
}

/** A frame: length, CRC-32, bytes. */
function frame(bytes: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32LE(bytes.length, 0);
  head.writeUInt32LE(crc32(bytes), 4);
  return Buffer.concat([head, bytes]);
}

/**
 * The frames of a checkpoint, each checked, read one at a time into one buffer: the file (83 MiB
 * at 100,000 wired nodes) is never whole in memory. A frame yielded is good until the next one
 * is read (copy what must outlive it).
 */
function* frames(src: CheckpointSource, check = true): Generator<Buffer> {
  const head = Buffer.alloc(8);
  let buf = Buffer.allocUnsafe(1 << 20);
  for (let at = 0; at < src.size;) {
    if (src.readAt(head, at) !== 8) throw new Error('truncated');
    const len = head.readUInt32LE(0);
    const sum = head.readUInt32LE(4);
    if (at + 8 + len > src.size) throw new Error('truncated');
    if (len > buf.length) buf = Buffer.allocUnsafe(len);
    const bytes = buf.subarray(0, len);
    if (src.readAt(bytes, at + 8) !== len || (check && crc32(bytes) !== sum)) throw new Error('corrupt');
    yield bytes;
    at += 8 + len;
  }
}

const packr = () => new Packr({ useRecords: true });
const END = packr().pack({ end: true });

/** What a start did with the checkpoint. */
export interface LoadReport {
  used: boolean;
  /** why it was not used */
  why?: string;
  /** its position, when used */
  position?: number;
  /** events after it applied */
  replayed: number;
}

/**
 * Bring the read models up from the checkpoint and the events after it. On any doubt nothing is
 * committed to the read models and `used` is false: the caller rebuilds from the journal.
 */
export async function loadCheckpoint(world: World): Promise<LoadReport> {
  const engine = world.runtime.engine;
  const slot = engine.checkpoints;
  const no = (why: string): LoadReport => ({ used: false, why, replayed: 0 });
  if (!slot) return no('the engine keeps none');
  const src = await slot.read().catch(() => undefined);
  if (!src) return no('none written');
  const byKind = new Map(readModelKinds(world).map((k) => [k.kind, k]));
  let header: Header;
  try {
    // Every frame checked before anything reaches the read models (a first pass), then read
    // again and decoded frame by frame (the same open file: a write renames a new one over it).
    let count = 0;
    let first: Buffer | undefined;
    for (const f of frames(src)) {
      first ??= Buffer.from(f);
      count++;
    }
    if (!first) throw new Error('empty');
    header = JSON.parse(first.toString('utf8')) as Header;
    // A checkpoint of a release before `at` names the event at its position.
    header.at ??= header.position;
    if (header.format !== FORMAT) return no(`format ${header.format}`);
    if (header.build !== currentBuild()) return no('written by another build');
    if (!(header.at <= header.position) || !(await holds(engine, header))) return no(`the store no longer holds its last event (position ${header.at})`);
    // Journal retention removed events after it (a deletion among them, maybe): the replay
    // below would not see them, and an object deleted since would come back. bounds().first
    // is past the highest position removed (engine contract), unless a restore's gap put it
    // further (then `removed` says); with the event it names still held, it is above
    // position + 1 only then.
    const bounds = await engine.bounds();
    const removed = bounds.removed ?? bounds.first - 1;
    if (removed > header.position) return no(`journal retention removed events after it (position ${header.position})`);
    // It names an event below its position: the events between were removed by this store's
    // retention, up to the position. A store that did not (an older copy) may hold them still.
    if (header.at < header.position && removed !== header.position) return no(`the store holds other events than it below its position ${header.position}`);
    // Every string decoded on its own: msgpackr's native extraction (and its string bundles)
    // give substrings of one string per frame, each of which keeps that whole string alive as
    // long as the state holding it (a nic's MAC, a port's id: tens of MiB at 100,000 nodes).
    const unpackr = new Unpackr({ useRecords: true });
    const counts = new Map<string, number>();
    let f = 0;
    for (const bytes of frames(src, false)) {
      if (f++ === 0) continue;
      const chunk = unpackr.unpack(bytes) as Chunk | { end: true };
      if ('end' in chunk) {
        if (f !== count) throw new Error('data after the end');
        break;
      }
      const k = byKind.get(chunk.k);
      if (!k) throw new Error(`unknown kind ${chunk.k}`);
      for (let i = 0; i < chunk.ids.length; i++) {
        const decoded = chunk.x ? unescapeKeys(chunk.s[i]) : chunk.s[i];
        const state = k.share ? k.share(chunk.ids[i], decoded) : decoded;
        k.commit(chunk.ids[i], state);
      }
      counts.set(chunk.k, (counts.get(chunk.k) ?? 0) + chunk.ids.length);
      if (f === count) throw new Error('no end');
      if (f % FRAMES_PER_TURN === 0) await new Promise((r) => setImmediate(r));
    }
    // msgpackr keeps the last buffer it read: let the file's go.
    unpackr.unpack(END);
    for (const k of byKind.values()) if ((counts.get(k.kind) ?? 0) !== (header.counts[k.kind] ?? 0) || k.states.size !== (header.counts[k.kind] ?? 0)) throw new Error(`${k.kind}: count`);
  } catch (err) {
    world.rm.clear();
    return no(`unreadable: ${(err as Error).message}`);
  } finally {
    src.close();
  }
  // The events committed after it, through each kind's pure apply, committed as the actors did.
  const ahead = new Map(header.ahead);
  // Each event its states hold ahead of its position comes after it in this store: one that does
  // not is missing (a backup restored beside a checkpoint taken after it, the event at its
  // position held but not those), and the states would hold a change the store never had.
  let unseen = ahead.size;
  let replayed = 0;
  try {
    for await (const e of engine.feed(header.position)) {
      const colon = e.key.indexOf(':');
      const k = colon < 0 ? undefined : byKind.get(e.key.slice(0, colon));
      const held = ahead.get(e.key) ?? 0;
      if (held === e.sequenceNumber) unseen--;
      if (!k || held >= e.sequenceNumber) continue;
      const id = e.key.slice(colon + 1);
      const prev = k.states.get(id) ?? null;
      k.commit(id, k.apply(prev, e.data, id), prev);
      replayed++;
    }
  } catch (err) {
    world.rm.clear();
    return no(`its events could not be replayed: ${(err as Error).message}`);
  }
  if (unseen) {
    world.rm.clear();
    return no(`the store no longer holds ${unseen} of the events its states hold ahead of its position ${header.position}`);
  }
  return { used: true, position: header.position, replayed };
}

/** Is the event at the header's `at` the one it names? */
async function holds(engine: PersistenceEngine, h: Header): Promise<boolean> {
  for await (const e of engine.feed(h.at - 1)) return e.position === h.at && e.key === h.key && e.sequenceNumber === h.seq && e.createdAt === h.createdAt;
  return false;
}

/** The event at a position (the watermark's fingerprint), if the store holds it. */
async function eventAt(engine: PersistenceEngine, position: number): Promise<PersistedEvent | undefined> {
  if (position <= 0) return undefined;
  for await (const e of engine.feed(position - 1)) return e.position === position ? e : undefined;
  return undefined;
}

/** The newest event at or below a position, if any. */
async function newestEvent(engine: PersistenceEngine, position: number): Promise<PersistedEvent | undefined> {
  for await (const e of engine.history({ before: position + 1 })) return e;
  return undefined;
}

export interface CheckpointOptions {
  /** write one in the background once this many events were applied since the last (HILT_CHECKPOINT_EVENTS) */
  everyEvents: number;
  /** how often that is checked */
  checkMs?: number;
  /** states per encoded chunk, a turn of the event loop each (default 512) */
  chunk?: number;
  /** told of each write's outcome */
  onWritten?: (r: { ok: boolean; ms: number; states: number; position: number; error?: string }) => void;
}

/**
 * Keeps the watermark while the service runs and writes checkpoints: in the background once
 * `everyEvents` events passed it, and at a clean stop (close) when anything did.
 */
export class Checkpointer implements CommitTracking {
  /** durable commits not yet passed, in commit order (the engine's own arrays: never changed) */
  private readonly waiting: (readonly PersistedEvent[])[] = [];
  private waitingAt = 0;
  private waitingCount = 0;
  /** key → highest sequence number applied, for keys applied beyond the watermark */
  private readonly ahead = new Map<string, number>();
  private position = 0;
  private last?: { key: string; seq: number; createdAt: number };
  /** events passed since the last checkpoint written */
  private since: number;
  /** events left the store (journal retention): a checkpoint is owed, even with no event since */
  private owed = false;
  /** tracking gave up (an apply failed, or commits that never reach the read models): no more checkpoints */
  private spoiled = false;
  private writing?: Promise<boolean>;
  /** while a capture reads the read models: per kind, id → its state when the capture began (null: none) */
  private capturing?: Map<string, Map<string, unknown>>;
  private readonly timer: NodeJS.Timeout;
  private readonly unlisten: () => void;
  private closed = false;
  /** the slot's epoch when the checkpoint on disk was written (or found) */
  private keptEpoch: number;
  private readonly registered: (kind: string) => boolean;

  private constructor(private readonly world: World, private readonly opts: CheckpointOptions, since: number) {
    this.since = since;
    const rt = world.runtime;
    this.keptEpoch = rt.engine.checkpoints!.epoch;
    this.registered = (kind) => !!rt.registry(kind);
    rt.tracking = this;
    this.unlisten = rt.engine.onCommit((events) => {
      if (this.spoiled) return;
      this.waiting.push(events);
      this.waitingCount += events.length;
      if (this.waitingCount > MAX_WAITING) this.spoil();
      else this.advance();
    });
    let seenEpoch = this.keptEpoch;
    this.timer = setInterval(() => {
      // After a drop, once no other came for a whole period (a key rotation drops it per object).
      const epoch = rt.engine.checkpoints!.epoch;
      if (this.since >= this.opts.everyEvents || this.owed || (this.dropped() && epoch === seenEpoch)) void this.write();
      seenEpoch = epoch;
    }, opts.checkMs ?? 5000).unref();
  }

  /**
   * Start tracking a world whose read models reflect every durable event (at start, before
   * anything commits). `since`: events the start applied beyond the last checkpoint (Infinity
   * after a rebuild from the journal: one is written soon).
   */
  static async start(world: World, opts: CheckpointOptions, since: number): Promise<Checkpointer | undefined> {
    const engine = world.runtime.engine;
    if (!engine.checkpoints || opts.everyEvents <= 0) return undefined;
    const bounds = await engine.bounds();
    const c = new Checkpointer(world, opts, since);
    // The newest event: at `last`, or below it when no event took `last` (a store restored
    // from a backup and not written since ends in its gap); without it no checkpoint is written.
    const e = (await eventAt(engine, bounds.last)) ?? (await newestEvent(engine, bounds.last));
    // Set unless something committed meanwhile (then the watermark has its own). Past the
    // newest event when retention removed those after it (its checkpoint names the event).
    if (e && !c.last) {
      c.position = Math.max(e.position!, Math.min(bounds.removed ?? bounds.first - 1, bounds.last));
      c.last = { key: e.key, seq: e.sequenceNumber, createdAt: e.createdAt };
    }
    return c;
  }

  /**
   * Journal retention removed events: a checkpoint written before can no longer be used (a
   * start refuses it and rebuilds from the journal), so one is written now, and again at each
   * check until one is.
   */
  due(): void {
    if (this.closed || this.spoiled) return;
    this.owed = true;
    void this.write();
  }

  /** A rewrite dropped the checkpoint since the last was written: one is due, even with no event since. */
  private dropped(): boolean {
    return this.world.runtime.engine.checkpoints!.epoch !== this.keptEpoch;
  }

  applied(key: string, seq: number, prev: unknown): void {
    if (this.spoiled) return;
    if (this.capturing) {
      // Read while a capture goes on: the capture takes the state as it was when it began.
      const colon = key.indexOf(':');
      const before = this.capturing.get(key.slice(0, colon));
      const id = key.slice(colon + 1);
      if (before && !before.has(id)) before.set(id, prev ?? null);
    }
    if ((this.ahead.get(key) ?? 0) < seq) this.ahead.set(key, seq);
    this.advance();
  }

  missed(): void {
    this.spoil();
  }

  private spoil(): void {
    this.spoiled = true;
    this.waiting.length = 0;
    this.ahead.clear();
  }

  /** Pass every waiting event whose key's read model has it. */
  private advance(): void {
    while (this.waiting.length) {
      const batch = this.waiting[0];
      const e = batch[this.waitingAt];
      const colon = e.key.indexOf(':');
      const tracked = colon > 0 && this.registered(e.key.slice(0, colon));
      if (tracked) {
        const applied = this.ahead.get(e.key) ?? 0;
        if (applied < e.sequenceNumber) return;
        if (applied === e.sequenceNumber) this.ahead.delete(e.key);
        this.since++;
      }
      this.position = e.position!;
      this.last = { key: e.key, seq: e.sequenceNumber, createdAt: e.createdAt };
      this.waitingCount--;
      if (++this.waitingAt === batch.length) {
        this.waiting.shift();
        this.waitingAt = 0;
      }
    }
  }

  /** Write a checkpoint now (one at a time); false when none could be taken or it was refused. */
  write(): Promise<boolean> {
    return (this.writing ??= this.writeNow().finally(() => (this.writing = undefined)));
  }

  private async writeNow(): Promise<boolean> {
    const engine = this.world.runtime.engine;
    const slot = engine.checkpoints!;
    // A re-encoding under way has changed the store but not yet the read models.
    const barred = () => this.spoiled || !this.last || this.world.runtime.rewriting > 0;
    if (barred()) return false;
    const t0 = performance.now();
    // The event it names: the watermark's, or the newest below it once journal retention
    // removed that one (an idle store whose newest events were a life that ended).
    const from = this.position;
    let newest: PersistedEvent | undefined;
    try {
      newest = (await eventAt(engine, from)) ?? (await newestEvent(engine, from));
    } catch {
      // The store cannot be read now: the next check tries again.
      return false;
    }
    if (barred() || (!newest && this.position === from)) return false;
    const named = this.position !== from || newest!.position === from
      ? { at: this.position, ...this.last! }
      : { at: newest!.position!, key: newest!.key, seq: newest!.sequenceNumber, createdAt: newest!.createdAt };
    const epoch = slot.epoch;
    const since = this.since;
    this.since = 0;
    const owed = this.owed;
    this.owed = false;
    let ok = false;
    let error: string | undefined;
    let states = 0;
    const kinds = readModelKinds(this.world);
    const header: Header = {
      format: FORMAT, build: currentBuild(), position: this.position, ...named,
      ahead: [...this.ahead], counts: Object.fromEntries(kinds.map((k) => [k.kind, k.states.size])),
    };
    this.capturing = new Map(kinds.map((k) => [k.kind, new Map()]));
    try {
      ok = await slot.write(this.encode(header, kinds, (n) => (states += n)), epoch);
    } catch (err) {
      error = (err as Error).message;
    } finally {
      this.capturing = undefined;
    }
    if (!ok) {
      this.since += since;
      this.owed ||= owed;
    }
    else this.keptEpoch = epoch;
    this.opts.onWritten?.({ ok, ms: Math.round(performance.now() - t0), states, position: header.position, error });
    return ok;
  }

  /**
   * The read models as they were when the capture began, as frames, a chunk per turn of the
   * event loop: the maps are read as they are, except the entities changed since (applied()
   * kept their state from before), and those deleted since are added at the end of their kind.
   */
  private async *encode(header: Header, kinds: ReadModelKind[], counted: (n: number) => void): AsyncGenerator<Uint8Array> {
    yield frame(Buffer.from(JSON.stringify(header), 'utf8'));
    for (const k of kinds) {
      const before = this.capturing!.get(k.kind)!;
      // Every id read: one changed after it was read is not written again from `before`.
      const seen = new Set<string>();
      let ids: string[] = [];
      let states: unknown[] = [];
      const flush = () => {
        const chunk = chunkOf(k.kind, ids, k.pack ? states.map((s, i) => k.pack!(ids[i], s)) : states);
        counted(ids.length);
        ids = [];
        states = [];
        return frame(packr().pack(chunk));
      };
      const size = this.opts.chunk ?? CHUNK;
      let n = 0;
      for (const [id, current] of k.states) {
        // Deleted and created again after it was read: the map gives it once more, at its end.
        if (seen.has(id)) continue;
        let s = current;
        seen.add(id);
        if (before.has(id)) {
          s = before.get(id);
          if (s === null) continue;
        }
        ids.push(id);
        states.push(s);
        if (ids.length === size) yield flush();
        // Between slices, requests run (and may change the maps: applied() keeps what was).
        if (++n % size === 0) await new Promise((r) => setImmediate(r));
      }
      for (const [id, s] of before) {
        if (s === null || seen.has(id)) continue;
        ids.push(id);
        states.push(s);
      }
      if (ids.length) yield flush();
    }
    yield frame(END);
  }

  /** Stop tracking; at a clean stop (nothing in flight), write a last checkpoint if anything changed. */
  async close(final = true): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    await this.writing;
    if (final && (this.since > 0 || this.owed || this.dropped())) await this.write().catch(() => false);
    this.unlisten();
    if (this.world.runtime.tracking === this) this.world.runtime.tracking = undefined;
  }
}

/** A chunk of states, their keys escaped where msgpackr would not give them back. */
function chunkOf(kind: string, ids: string[], states: unknown[]): Chunk {
  const s = states.map(escapeKeys);
  const chunk: Chunk = { k: kind, ids, s };
  if (s.some((x, j) => x !== states[j])) chunk.x = 1;
  return chunk;
}

export type { ReadModelKind };
