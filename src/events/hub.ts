/**
 * The event stream's fan-out (GET /events, docs/events.md): it hears every commit of this
 * process's storage engine, in commit order, once durable (PersistenceEngine.onCommit), turns
 * each event into its public form once (one frame of text shared by every stream), and offers
 * it to every open stream. A stream that resumes (`Last-Event-ID`, `?after`, `?since`) reads the
 * journal in the one commit order (feed) from there, or the newest events kept in memory, then
 * goes on live with no gap and no repeat.
 *
 * Nothing here can slow a commit or grow without bound: a listener only appends to a ring of
 * fixed size and writes to sockets; a stream whose unread bytes (in Node's buffers, or queued
 * behind its replay) pass the bound is dropped, and its client resumes from the last id it got.
 * A change of a user's admin flag, role or memberships, a token of theirs revoked, or the user's
 * deletion ends that user's streams at once (not those of an OpenID Connect caller of that name:
 * another identity); a project made or deleted ends the streams of the OpenID Connect callers
 * whose groups name it; a stream opened with a token or an OpenID Connect token ends when it
 * expires: the next connection is authorized anew.
 */
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { ActorRuntime } from '../../actors/runtime';
import type { PersistedEvent } from '../../actors/persistence/engine';
import type { StreamEvent } from './types';
import { Filter, Flush, Frame, frameOf, matches, SharedText, streamKey, textFor, Viewer, visible } from './frames';

// What the routes and tests import from here.
export { Filter, Frame, NO_FILTER, Viewer } from './frames';

export interface HubOptions {
  /** a stream's unread bytes at most; past it the stream is dropped */
  bufferBytes: number;
  /** a comment line on every stream this often, so that proxies and clients see it is alive (with the stream's position as id) */
  heartbeatMs: number;
  /** the newest events kept in memory for streams that resume just behind (the rest from the journal): at most this many… */
  ringSize: number;
  /** …and this many bytes of text */
  ringBytes: number;
  /**
   * Offers to the streams at most once per this many ms: a frame committed after a quiet spell
   * goes out at the end of its turn, but under a stream of commits the frames of a few ms go out
   * together, one write per stream instead of one per commit (each write is a system call per
   * stream, and a wake-up of its reader: with 100 streams, that cost would come out of commit
   * throughput).
   */
  flushMs: number;
  /**
   * The streams' writes a second at most, under a stream of commits: with more streams than
   * writesPerSecond × flushMs / 1000, the interval grows with their number (n streams are written
   * every n / writesPerSecond s). A write costs the service a system call whatever it carries,
   * so their number a second, not the commits', is what streams take from the commits.
   */
  writesPerSecond: number;
}


/** A frame's text as the ring counts it: its members' text too. */
const bytesOf = (f: Frame) => f.text.length + (f.memberText?.length ?? 0);

/** Users whose access changes with this event: their streams end. */
const ACCESS_EVENTS = new Set(['UserLeft', 'UserDeleted', 'UserAdminSet', 'UserJoined', 'UserRoleSet', 'TokenRevoked']);
/** Projects whose creation or deletion changes an OpenID Connect caller's rights (its groups name them). */
const PROJECT_EVENTS = new Set(['ProjectCreated', 'ProjectDeleted']);

export type DropReason = 'buffer' | 'access' | 'closing' | 'removed';

export interface HubTelemetry {
  dropped(reason: DropReason): void;
}

/** One open stream. */
export class Stream {
  /** the last position sent (or skipped: filtered out, not visible) */
  last: number;
  private replaying = true;
  /** frames that came live while the stream was replaying */
  private pending: Frame[] = [];
  private pendingBytes = 0;
  ended = false;
  /** streams of one key want the same frames, and get the same text (see Flush) */
  readonly key: string;

  constructor(
    private readonly hub: EventHub,
    readonly res: ServerResponse,
    readonly viewer: Viewer,
    readonly filter: Filter,
    after: number,
    /** false: no `event:` lines, so that a browser's EventSource gets every event as a message */
    private readonly named = true,
  ) {
    this.last = after;
    this.key = streamKey(viewer, filter, named);
    res.on('close', () => {
      this.ended = true;
      this.hub.remove(this);
    });
  }

  private textOf(f: Frame): string {
    const text = textFor(f, this.viewer);
    return this.named ? text : text.replace(/^event: .*\n/m, '');
  }

  get buffered(): number {
    return this.res.writableLength + this.pendingBytes;
  }

  private wants(f: Frame): boolean {
    return visible(f, this.viewer) && matches(f, this.filter);
  }

  /**
   * Frames committed live, oldest first: one write for all those it wants. Within a flush, the
   * streams of one key (the same viewer's access, filters and naming) want the same frames: the
   * first of them works out which and makes their text, encoded once for all of them.
   */
  offer(frames: readonly Frame[], flush?: Flush): void {
    if (this.ended) return;
    if (this.replaying) {
      // Held behind the replay: the same bound, on what earlier flushes left held.
      if (this.behind(this.pendingBytes)) return;
      for (const f of frames) {
        if (f.position <= this.last) continue;
        this.pending.push(f);
        this.pendingBytes += f.text.length;
      }
      return;
    }
    if (flush && frames[0].position > this.last) {
      // The common case: none of them sent yet.
      this.last = frames[frames.length - 1].position;
      const shared = flush.textFor(this);
      if (shared) this.writeShared(shared);
      return;
    }
    const text = this.textAfter(frames);
    if (text) this.write(text);
  }

  /** The text of those of `frames` after `last` this stream wants; `last` moves past them all. */
  private textAfter(frames: readonly Frame[]): string {
    let text = '';
    for (const f of frames) {
      if (f.position <= this.last) continue;
      this.last = f.position;
      if (this.wants(f)) text += this.textOf(f);
    }
    return text;
  }

  /** The text of those of `frames` this stream wants (undefined: none). */
  textOfAll(frames: readonly Frame[]): string | undefined {
    let text = '';
    for (const f of frames) if (this.wants(f)) text += this.textOf(f);
    return text || undefined;
  }

  /**
   * Text every stream gets. Once a response's headers are out and nothing of it waits in the
   * http module, its writes go to its socket as they are: the text, already framed as one HTTP
   * chunk when the response is chunked, goes there directly, in order after anything written
   * before. That skips the http module's work per write (framing, corking, a tick), which with
   * 100 streams was the larger half of a write's cost in the service.
   */
  private writeShared(shared: SharedText): void {
    if (this.ended) return;
    const res = this.res;
    const socket = res.socket;
    const chunked = (res as { chunkedEncoding?: boolean }).chunkedEncoding;
    if (!res.headersSent || !socket || !socket.writable || res.writableLength !== socket.writableLength || chunked === undefined) return this.write(shared.body());
    if (this.behind(socket.writableLength)) return;
    socket.write(chunked ? shared.chunk() : shared.body());
  }

  /**
   * The heartbeat, with the stream's position as its id (a block without data: an EventSource
   * takes the id and dispatches nothing): a client that wants few events resumes from where the
   * stream is, not from the last event it got, which journal retention may have passed since
   * (a 410, though it missed nothing). Everything up to `last` is written or not wanted.
   */
  beat(): void {
    this.write(`id: ${this.last}\n: heartbeat\n\n`);
  }

  write(text: string | Buffer): void {
    if (this.ended || this.behind(this.res.writableLength)) return;
    this.res.write(text);
  }

  /**
   * Drops the stream if what earlier writes left unread passes the bound. A write's own bytes do
   * not count: with many streams the flush interval grows (HubOptions.writesPerSecond) and one
   * flush's text can be larger than the bound, and a consumer that reads everything must not be
   * dropped for it. A stream holds at most the bound and one flush.
   */
  private behind(unread: number): boolean {
    if (unread <= this.hub.opts.bufferBytes) return false;
    this.drop('buffer');
    return true;
  }

  /** Send the frames after `last` from memory or the journal, then what came meanwhile, then go live. */
  async replay(): Promise<void> {
    for await (const f of this.hub.framesAfter(this.last)) {
      if (this.ended) return;
      if (f.position <= this.last) continue;
      this.last = f.position;
      if (!this.wants(f)) continue;
      if (!this.res.write(this.textOf(f))) await drained(this.res);
    }
    if (this.ended) return;
    const pending = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    this.replaying = false;
    // What came meanwhile, and the mark that what follows is live (a client that only wanted
    // what was there may stop at it), in one write: a second write in the same turn would count
    // the first one's bytes as unread.
    this.write(`${this.textAfter(pending)}: live\n\n`);
  }

  /**
   * End the stream: `buffer` cuts it, the others say why first. `resumeAt`: the position before
   * the event that ended it, given as the id to resume from (its client may have no id yet, or
   * an older one than what was skipped since), so that the next connection replays that event
   * and what followed with the rights it has then.
   */
  drop(reason: DropReason, resumeAt?: number): void {
    if (this.ended) return;
    this.ended = true;
    this.pending = [];
    this.pendingBytes = 0;
    this.hub.dropped(this, reason);
    if (reason === 'buffer') {
      // Its buffers are full: nothing more can reach it in order. The client resumes from its last id.
      this.res.destroy();
    } else {
      // Everything up to `last` was written or not wanted.
      const id = resumeAt === undefined ? '' : `id: ${Math.min(this.last, resumeAt)}\n`;
      this.res.end(`${id}: ${DROP_NOTES[reason]}: connect again\n\n`);
    }
  }
}

const DROP_NOTES: Record<Exclude<DropReason, 'buffer'>, string> = {
  access: 'your access changed',
  closing: 'the service is stopping',
  removed: 'journal retention is removing events after this stream\'s position',
};

/** Resolves when the response can take more, or is gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

export class EventHub {
  private readonly streams = new Set<Stream>();
  /** the newest frames, positions ascending, and the bytes of their text */
  private readonly ring: Frame[] = [];
  private ringBytes = 0;
  /** the newest position committed (heard or read at start) */
  last = 0;
  /**
   * The highest position journal retention has removed, or is about to, in this process (it runs
   * on the active one, which serves the streams): a stream that has not read past it may miss
   * what goes, so it may not start or go on before it (removing()).
   */
  removed = 0;
  private stopListening?: () => void;
  private heartbeat?: NodeJS.Timeout;
  /** frames heard and not yet offered; offered together (one write per stream) */
  private batch: Frame[] = [];
  private flushScheduled = false;
  private lastFlush = 0;
  private closed = false;
  /** every event heard, and the time from its commit to its frame being written (bench) */
  onFrame?: (f: Frame & { event: StreamEvent }) => void;

  constructor(readonly runtime: ActorRuntime, readonly opts: HubOptions, private readonly telemetry?: HubTelemetry) {}

  async start(): Promise<void> {
    this.stopListening = this.runtime.engine.onCommit((events) => this.committed(events));
    const { last } = await this.runtime.engine.bounds();
    this.last = Math.max(this.last, last);
    this.heartbeat = setInterval(() => {
      for (const s of this.streams) s.beat();
    }, this.opts.heartbeatMs);
    this.heartbeat.unref();
  }

  get size(): number {
    return this.streams.size;
  }

  /** Bytes held for streams now: unsent in Node's buffers, or queued behind a replay. */
  bufferedBytes(): number {
    let n = 0;
    for (const s of this.streams) n += s.buffered;
    return n;
  }

  /** The frame of a stored event (undefined: a key of no kind, the format marker); `event` is the object sent. */
  frame(e: PersistedEvent): (Frame & { event: StreamEvent }) | undefined {
    const entry = this.runtime.entryOf(e);
    return entry && frameOf(entry);
  }

  /**
   * Per project name, the position of its newest creation (heard, or read from its journal):
   * a project deleted and created again under its name is another project, and its members see
   * none of the earlier one's events (Viewer.from).
   */
  private readonly created = new Map<string, number>();

  private creation(project: string, position: number): void {
    if (position > (this.created.get(project) ?? -1)) this.created.set(project, position);
  }

  /** Learn where each of these projects was created, for those not known yet (before a stream opens). */
  async learnCreations(projects: Iterable<string>): Promise<void> {
    for (const p of projects) {
      if (this.created.has(p)) continue;
      let at = 0;
      for await (const e of this.runtime.engine.events(`project:${p}`)) {
        if ((e.data as { type?: string }).type === 'ProjectCreated') at = e.position ?? 0;
      }
      // A creation heard meanwhile is newer: max.
      this.creation(p, at);
    }
  }

  /**
   * Where each project's events begin for a viewer. One not learned (joined while the stream was
   * being opened) begins now: its earlier events are for the next connection.
   */
  viewer(user: string, admin: boolean, projects: readonly string[], oidc?: readonly string[]): Viewer {
    return {
      user, admin, projects: new Set(projects), from: new Map(projects.map((p) => [p, this.created.get(p) ?? this.last + 1])),
      ...(oidc ? { oidc: new Set(oidc) } : {}),
    };
  }

  private committed(events: readonly PersistedEvent[]): void {
    for (const e of events) {
      if (e.key.startsWith('project:') && (e.data as { type?: string }).type === 'ProjectCreated') this.creation(e.key.slice('project:'.length), e.position ?? 0);
    }
    if (!this.streams.size && !this.onFrame) {
      // No stream listens: no frame is made (a commit would pay for describing its events for
      // nobody). A stream opened later reads what came before it from the journal; the ring goes
      // too, so that it never holds frames with a gap between them.
      for (const e of events) if ((e.position ?? 0) > this.last) this.last = e.position ?? 0;
      this.ring.length = 0;
      this.ringBytes = 0;
      return;
    }
    for (const e of events) {
      const position = e.position ?? 0;
      // The id before it, to resume from: an event's, never one of a gap (a restore's) in between.
      const before = Math.min(this.last, position - 1);
      if (position > this.last) this.last = position;
      const full = this.frame(e);
      if (!full) continue;
      // Only what the streams need stays (the event object goes with this turn).
      const f: Frame = { position: full.position, kind: full.kind, name: full.name, type: full.type, projects: full.projects, text: full.text, memberText: full.memberText };
      this.ring.push(f);
      this.batch.push(f);
      this.scheduleFlush();
      this.ringBytes += bytesOf(f);
      if (this.ring.length > this.opts.ringSize || this.ringBytes > this.opts.ringBytes) this.trimRing();
      this.onFrame?.(full);
      const type = (e.data as { type?: string }).type ?? '';
      // What came before it goes out first; then the streams whose access it changes end, and
      // say where to resume: their next connection replays from there with its rights then.
      if (e.key.startsWith('user:') && ACCESS_EVENTS.has(type)) {
        // A database user's: an OpenID Connect caller of that name is another identity.
        const user = e.key.slice('user:'.length);
        this.flush();
        for (const s of this.streams) if (s.viewer.user === user && !s.viewer.oidc) s.drop('access', before);
      } else if (e.key.startsWith('project:') && PROJECT_EVENTS.has(type)) {
        // An OpenID Connect caller's groups are mapped on the projects that exist: a project they
        // name, made or deleted, changes its rights (an admin's or auditor's sees everything anyway).
        const project = e.key.slice('project:'.length);
        this.flush();
        for (const s of this.streams) if (!s.viewer.admin && s.viewer.oidc?.has(project)) s.drop('access', before);
      }
    }
  }

  /**
   * Past either bound, the oldest frames go down to 7/8 of both at once: one shift of the ring
   * per few hundred events, not one per event (each shift moves every frame kept).
   */
  private trimRing(): void {
    let drop = 0;
    const keep = Math.floor((this.opts.ringSize * 7) / 8);
    const keepBytes = Math.floor((this.opts.ringBytes * 7) / 8);
    while (this.ring.length - drop > 1 && (this.ring.length - drop > keep || this.ringBytes > keepBytes)) this.ringBytes -= bytesOf(this.ring[drop++]);
    this.ring.splice(0, drop);
  }

  /** How long at least between two flushes: `flushMs`, longer with many streams (`writesPerSecond`). */
  get flushInterval(): number {
    return Math.max(this.opts.flushMs, (this.streams.size * 1000) / this.opts.writesPerSecond);
  }

  /** At the end of this turn, or an interval after the last offer if that is later. */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    const wait = this.lastFlush + this.flushInterval - performance.now();
    const run = () => {
      // A timer counts from the time libuv read at the start of its loop turn: one set late in a
      // busy turn fires early by this clock, and the interval is a minimum, so wait the rest.
      const rest = this.lastFlush + this.flushInterval - performance.now();
      if (rest >= 1) return void setTimeout(run, rest);
      this.flushScheduled = false;
      this.flush();
    };
    if (wait > 0) setTimeout(run, wait);
    else setImmediate(run);
  }

  /** Offer the frames heard so far to every stream. */
  private flush(): void {
    const frames = this.batch;
    if (!frames.length) return;
    this.batch = [];
    this.lastFlush = performance.now();
    const flush = new Flush(frames);
    for (const s of this.streams) s.offer(frames, flush);
  }

  /** Frames after a position, oldest first: from memory when the ring reaches back that far, else from the journal. */
  async *framesAfter(after: number): AsyncIterable<Frame> {
    const first = this.ring[0]?.position;
    if (first === undefined || after < first - 1) {
      // Up to the newest durable one: what came since is offered live.
      for await (const e of this.runtime.engine.feed(after)) {
        const f = this.frame(e);
        if (f) yield f;
        if ((e.position ?? 0) >= (this.ring[0]?.position ?? Infinity)) break;
      }
    }
    for (const f of [...this.ring]) if (f.position > after) yield f;
  }

  /**
   * Journal retention is about to remove events at positions up to `upTo`. A stream still before
   * it would skip them without a word as it reads on (the journal it reads no longer has them):
   * it ends instead, and its client's reconnect from its last id is answered 410 (a client past
   * them resumes as ever). A live stream is past them: retention removes only what is older than
   * its period.
   */
  removing(upTo: number): void {
    if (upTo <= this.removed) return;
    this.removed = upTo;
    for (const s of [...this.streams]) if (s.last < upTo) s.drop('removed');
  }

  /** Open a stream for a viewer after a position (its frames follow, then live ones). */
  open(res: ServerResponse, viewer: Viewer, filter: Filter, after: number, named = true): Stream {
    const s = new Stream(this, res, viewer, filter, after, named);
    if (this.closed || after < this.removed) {
      s.drop(this.closed ? 'closing' : 'removed');
      return s;
    }
    this.streams.add(s);
    void s.replay().catch(() => s.drop('closing'));
    return s;
  }

  remove(s: Stream): void {
    this.streams.delete(s);
  }

  dropped(s: Stream, reason: DropReason): void {
    this.streams.delete(s);
    this.telemetry?.dropped(reason);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.heartbeat);
    this.stopListening?.();
    for (const s of [...this.streams]) s.drop('closing');
  }
}
