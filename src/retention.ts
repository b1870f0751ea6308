/**
 * Journal retention (HILT_JOURNAL_RETENTION_DAYS; docs/operations.md, Journal retention): the
 * events of objects deleted longer ago than the period leave the store, in the background, after
 * they were appended to the archive (src/archive.ts) and flushed to disk.
 *
 * What goes: a key's events up to a deletion (`<Kind>Deleted`, after which every kind's state is
 * null) older than the cutoff: the whole key when nothing came after it, else the earlier lives
 * of a name in use again. What stays: every event of a live object's current life; the nics a
 * live node had in its current registration (its operation statuses are read from their
 * journals: actors/nic/history.ts), until that registration ends; the users, while no user is
 * live (the next start would create the bootstrap admin again: a pass notes the deletions it
 * read meanwhile and removes them at its first pass once a user lives); every event at or after the
 * lowest cursor of the webhooks (webhookHold: a webhook delivers at least once, none skipped),
 * so a webhook that falls behind, or is left failing, holds retention back until it catches up,
 * is resumed or is deleted (a pass that stops at it says so: PassReport.heldBack, logged).
 *
 * How: a pass reads the journal in commit order (feed) from where the last one stopped (a mark),
 * up to the first event at or after the cutoff, in slices of SLICE_EVENTS events. Each slice's
 * expired keys are read, archived, fsynced, then pruned (PersistenceEngine.prune) in chunks of at
 * most PRUNE_EVENTS events and PRUNE_KEYS keys (a long journal in several chunks, each `upTo` the
 * last event it read), and
 * the mark moves on; between chunks the pass yields to the event loop, so a request waits at most
 * one chunk, however long a deleted object's journal, and a stop (close) waits for the chunk under
 * way only: the mark stays before the slice, which the next pass reads again. Each chunk's writes
 * are fenced like every write: only the active process prunes.
 *
 * A pass also ends before the webhooks' hold: what the scan has not read, a later pass reads (a
 * deletion is pruned with the events before it, so one before the hold takes nothing after it).
 * Before each chunk's prune, RETENTION_REMOVED_MARK moves to the highest position it removes: a
 * webhook's worker reads it to know that nothing after its cursor went (src/events/webhooks.ts).
 *
 * A key whose journal takes several chunks is given a snapshot of its deletion (state null)
 * first: until its last chunk goes, an actor waking or a start rebuilding reads that, not the
 * rest of a life whose beginning is gone.
 *
 * A pruned key whose actor is awake needs nothing: its state is null (deleted), and a later
 * registration through it writes after its last sequence number, which replays from null just
 * the same.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { World } from '../actors/world';
import type { Expiry, PersistedEvent } from '../actors/persistence/engine';
import { childPrefix, splitId } from '../actors/ids';
import { auditEntry } from './audit';
import { ArchiveWriter, ArchivedEntry } from './archive';
import { RETENTION_REMOVED_MARK, webhookHold } from './events/webhooks';

const DAY_MS = 86_400_000;
/** The mark of how far passes have read the journal. */
const SCAN_MARK = 'retention:scanned';
/**
 * The users' deletions a pass read while no user was live (key: the deletion's sequence number):
 * the scan has passed them, so a pass comes back to them from here once a user lives.
 */
const KEPT_USERS_MARK = 'retention:users-kept';
/** Events read from the journal per slice (docs/operations.md, Journal retention; bench/README.md). */
const SLICE_EVENTS = 250;
/** Events read, archived (one append) and removed (one transaction) per chunk, at most. */
const PRUNE_EVENTS = 500;
/** Keys per chunk, at most (a prune transaction costs per key too: bench/README.md). */
const PRUNE_KEYS = 32;
/** A pass this long after the start, then every PASS_EVERY_MS. */
const FIRST_PASS_MS = 60_000;
const PASS_EVERY_MS = 3_600_000;

export interface RetentionOptions {
  /** the period in days (0: retention is off) */
  days: number;
  archiveDir: string;
  /** the clock (tests and benches move it) */
  now?: () => number;
  log?: FastifyBaseLogger;
  /** told after a pass (or a failed one) that removed events: the read model's checkpoint is due */
  onRemoved?: () => void;
  /** told before each chunk's removal, with the highest position it removes (the event streams: EventHub.removing) */
  onRemoving?: (upTo: number) => void;
  /** told how each pass ended (metrics: a store that keeps growing because its passes fail is alarmed) */
  onPass?: (ok: boolean) => void;
}

export interface PassReport {
  /** events of the journal read */
  examined: number;
  /** keys pruned (whole or their earlier lives) */
  keys: number;
  /** events removed (each archived first) */
  events: number;
  /**
   * The pass stopped at this webhook's cursor (`position`), with events older than the period
   * after it: they stay until it delivers them (a failing one: until it is resumed or deleted).
   */
  heldBack?: { webhook: string; position: number };
  /** the service stopped it between chunks: the next pass goes on (neither a success nor a failure) */
  stopped?: true;
}

/** `<Kind>Deleted`: the event that ends an object's life (its state is null after it). */
const endOf = (kind: string) => `${kind[0].toUpperCase()}${kind.slice(1)}Deleted`;

export class Retention {
  private timer?: NodeJS.Timeout;
  private running?: Promise<PassReport>;
  private closed = false;
  /** events removed since onRemoved was last told */
  private removed = false;
  private readonly archive: ArchiveWriter;
  private readonly now: () => number;

  constructor(private readonly world: World, private readonly opts: RetentionOptions) {
    this.archive = new ArchiveWriter(opts.archiveDir, world.runtime.engine);
    this.now = opts.now ?? Date.now;
  }

  /** Passes in the background: one soon after the start, then hourly (none when the period is 0). */
  start(): void {
    if (!this.opts.days) return;
    const next = (ms: number) => {
      this.timer = setTimeout(() => {
        this.pass().then((r) => {
          if (r.events) this.opts.log?.info(r, 'journal retention: archived and removed the events of objects deleted longer ago than the period');
          if (r.heldBack) {
            const w = this.world.rm.webhooks.get(r.heldBack.webhook);
            this.opts.log?.warn({ ...r.heldBack, failing: w?.failing ?? null }, `journal retention: held back by webhook ${r.heldBack.webhook}, whose cursor (${r.heldBack.position}) is older than the period: nothing from it on is removed until the webhook delivers it${w?.failing ? ' (it is failing: resume or delete it)' : ''}`);
          }
        }, (err: Error) => this.opts.log?.warn({ err: err.message }, 'journal retention: a pass failed; the next one goes on from where it stopped')).finally(() => {
          if (!this.closed) next(PASS_EVERY_MS);
        });
      }, ms);
      this.timer.unref();
    };
    next(FIRST_PASS_MS);
  }

  /** One pass now (a pass already running is the one answered). */
  pass(): Promise<PassReport> {
    this.running ??= this.run().then((r) => {
      if (!r.stopped) this.opts.onPass?.(true);
      return r;
    }, (err: unknown) => {
      this.opts.onPass?.(false);
      throw err;
    }).finally(() => {
      this.running = undefined;
      if (this.removed) {
        this.removed = false;
        this.opts.onRemoved?.();
      }
    });
    return this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }

  private async run(): Promise<PassReport> {
    const report: PassReport = { examined: 0, keys: 0, events: 0 };
    if (!this.opts.days) return report;
    const engine = this.world.runtime.engine;
    const cutoff = this.now() - this.opts.days * DAY_MS;
    let cursor = ((await engine.mark(SCAN_MARK)) as number | undefined) ?? 0;
    // Read once for the pass: cursors only move on, and a webhook created meanwhile starts at its
    // creation, which is newer than the cutoff (the pass never reads that far).
    const webhooks = await webhookHold(this.world);
    const hold = webhooks?.position ?? Number.POSITIVE_INFINITY;
    const keptUsers = new Map(Object.entries(((await engine.mark(KEPT_USERS_MARK)) as Record<string, number> | undefined) ?? {}));
    if (keptUsers.size && this.world.rm.users.size) {
      // Before the cutoff and the hold when read (a hold only moves on): they go now.
      const done = await this.prune(keptUsers);
      report.keys += done.keys;
      report.events += done.events;
      // The rest at the next pass (the mark still names them).
      if (done.stopped) return { ...report, stopped: true };
      keptUsers.clear();
      await engine.setMark(KEPT_USERS_MARK, {});
    }
    for (let more = true; more && !this.closed;) {
      const expired = new Map<string, number>();
      const slice: PersistedEvent[] = [];
      more = false;
      for await (const e of engine.feed(cursor)) {
        // The first event at or after the cutoff: the pass ends before it.
        if (e.createdAt >= cutoff) break;
        // The first a webhook still needs (at its cursor or after): the pass ends before it too.
        if (e.position! >= hold) {
          report.heldBack = webhooks;
          break;
        }
        slice.push(e);
        if (slice.length === SLICE_EVENTS) {
          more = true;
          break;
        }
      }
      if (!slice.length) break;
      for (let i = 0; i < slice.length; i++) {
        await this.expire(slice[i], expired, keptUsers);
        if (i % 32 === 31) await yieldToRequests();
      }
      const done = await this.prune(expired);
      report.keys += done.keys;
      report.events += done.events;
      // The scan stays before the slice: the next pass reads it again and removes what is left.
      if (done.stopped) return { ...report, stopped: true };
      report.examined += slice.length;
      cursor = slice[slice.length - 1].position!;
      // Before the scan moves past them: a crash in between notes them again (the same).
      if (keptUsers.size) await engine.setMark(KEPT_USERS_MARK, Object.fromEntries(keptUsers));
      await engine.setMark(SCAN_MARK, cursor);
      await yieldToRequests();
    }
    return report;
  }

  /**
   * If this event ends a life that may go, note its key and sequence number (and, for a node, its
   * nics'). The event is before the webhooks' hold, and so is what goes with it: the key's earlier
   * events, and a nic's deletions found through its node (they came before its deletion).
   */
  private async expire(e: PersistedEvent, expired: Map<string, number>, keptUsers: Map<string, number>): Promise<void> {
    const colon = e.key.indexOf(':');
    if (colon < 0) return;
    const kind = e.key.slice(0, colon);
    const id = e.key.slice(colon + 1);
    const data = e.data as { type?: string; nodeIncarnation?: string };
    if (!this.world.runtime.registry(kind) || data.type !== endOf(kind)) return;
    const rm = this.world.rm;
    if (kind === 'user' && !rm.users.size) return note(keptUsers, e.key, e.sequenceNumber);
    if (kind === 'nic') {
      // A nic of the live node's current registration: its node's statuses need it (it goes with that registration).
      if (data.nodeIncarnation !== undefined && rm.nodes.get(splitId(id)[0])?.incarnation === data.nodeIncarnation) return;
    }
    if (kind === 'node') {
      // The nics kept for this registration's statuses: their lives ended before this deletion
      // (a node is deleted without nics), so before the cutoff and the hold as it is. Read oldest
      // first up to it, never into a later registration's life (years of operations, maybe),
      // yielding now and then: a long journal holds no request up. Noted before the node: a pass
      // cut between them (a stop, a crash) leaves the node's deletion, which the next pass reads
      // again and finds its nics through; the node gone first, they would stay for good.
      const engine = this.world.runtime.engine;
      for (const nic of await this.world.nics.storedIds(childPrefix(id))) {
        let upTo = 0;
        let read = 0;
        for await (const j of engine.events(`nic:${nic}`)) {
          if (j.position! > e.position!) break;
          if ((j.data as { type?: string }).type === 'NicDeleted') upTo = j.sequenceNumber;
          if (++read % 256 === 0) await yieldToRequests();
        }
        if (upTo) note(expired, `nic:${nic}`, upTo);
      }
    }
    note(expired, e.key, e.sequenceNumber);
  }

  /**
   * Archive the expired keys' events, then prune them, in chunks of at most PRUNE_EVENTS events
   * (one append: one fsync; one transaction), yielding to the event loop after each: a request
   * waits for one chunk at most (an LMDB read or write transaction runs on the main thread).
   */
  private async prune(expired: Map<string, number>): Promise<{ keys: number; events: number; stopped?: boolean }> {
    const engine = this.world.runtime.engine;
    let events = 0;
    let chunk: Expiry[] = [];
    let entries: ArchivedEntry[] = [];
    let read = 0;
    let top = 0;
    const flush = async () => {
      if (entries.length) await this.archive.append(entries);
      // Before anything goes: a crash after this leaves the mark ahead of what went, never behind.
      if (top > (((await engine.mark(RETENTION_REMOVED_MARK)) as number | undefined) ?? 0)) await engine.setMark(RETENTION_REMOVED_MARK, top);
      if (chunk.length) {
        this.opts.onRemoving?.(top);
        const done = await engine.prune(chunk);
        events += done.events;
        if (done.events) this.removed = true;
      }
      chunk = [];
      entries = [];
      read = 0;
      await yieldToRequests();
    };
    for (const [key, upTo] of expired) {
      let from = 0;
      let snapshot = false;
      for (let whole = false; !whole;) {
        whole = true;
        for await (const e of engine.events(key, from)) {
          if (e.sequenceNumber > upTo) break;
          top = Math.max(top, e.position!);
          const entry = this.world.runtime.entryOf(e);
          if (entry) entries.push({ position: e.position!, ...auditEntry(entry) });
          from = e.sequenceNumber;
          if (++read === PRUNE_EVENTS && from < upTo) {
            whole = false;
            break;
          }
        }
        if (!whole) {
          // A key that takes several chunks: its deletion's snapshot before the first goes.
          if (!snapshot) await engine.takeSnapshot({ key, sequenceNumber: upTo, data: null, createdAt: Date.now() });
          snapshot = true;
          chunk.push({ key, upTo: from });
          await flush();
        } else {
          chunk.push({ key, upTo });
          if (read >= PRUNE_EVENTS || chunk.length >= PRUNE_KEYS) await flush();
        }
        // The service stops: it waits for this chunk, not for the rest of a long journal (a
        // key cut between chunks reads as its deletion's snapshot, as after a crash).
        if (this.closed) {
          await flush();
          return { keys: expired.size, events, stopped: true };
        }
      }
    }
    await flush();
    return { keys: expired.size, events };
  }
}

const yieldToRequests = () => new Promise((r) => setImmediate(r));

function note(expired: Map<string, number>, key: string, seq: number): void {
  if ((expired.get(key) ?? 0) < seq) expired.set(key, seq);
}

/** Where the archive goes: HILT_ARCHIVE_DIR, else `<data folder>/archive`. */
export const archiveDirOf = (config: { dataDir: string; archiveDir?: string }): string => config.archiveDir ?? `${config.dataDir.replace(/\/+$/, '')}/archive`;
