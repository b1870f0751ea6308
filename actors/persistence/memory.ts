import { PersistenceEngine, PersistedEvent, PersistedSnapshot, JournalEntry, StoredEntity, HistoryQuery, OrderBounds, CommitListener, CommitOrder, Rewrite, Expiry, PruneResult } from './engine';

/**
 * In-memory engine: for unit tests of actors and the conformance kit's reference run
 * (HILT_STORAGE=memory: nothing survives the process). Data is copied in and out, as a real
 * engine's encoding would, so no caller can change what is stored by mutating an object.
 */
const copy = <T>(v: T): T => structuredClone(v);

export class MemoryPersistenceEngine implements PersistenceEngine {
  readonly noBackup = 'the memory engine keeps nothing to back up: its data ends with the process';
  private readonly eventsByKey = new Map<string, PersistedEvent[]>();
  private readonly snapshots = new Map<string, PersistedSnapshot>();
  /** every event in commit order: the event at position p is log[p - 1] */
  private readonly log: PersistedEvent[] = [];
  private readonly marks = new Map<string, unknown>();
  private readonly commits = new CommitOrder();
  /** positions prune() removed (their place in `log` stays, for positionAt), and the highest */
  private readonly gone = new Set<number>();
  private prunedTop = 0;

  async *events(key: string, offset = 0): AsyncIterable<PersistedEvent> {
    yield* this.eventsAfter(key, offset);
  }

  private eventsAfter(key: string, offset: number): PersistedEvent[] {
    return (this.eventsByKey.get(key) ?? []).filter((e) => e.sequenceNumber > offset).map(copy);
  }

  async persist(events: PersistedEvent[]): Promise<void> {
    const told: PersistedEvent[] = [];
    // Every event copied before any is stored: one that cannot be (a function) stores none.
    const copies = events.map(copy);
    for (const event of copies) {
      const list = this.eventsByKey.get(event.key) ?? [];
      const stored = { ...event, position: this.log.length + 1 };
      list.push(stored);
      list.sort((a, b) => a.sequenceNumber - b.sequenceNumber);
      this.eventsByKey.set(event.key, list);
      this.log.push(stored);
      told.push(copy(stored));
    }
    if (told.length) this.commits.committed(told);
  }

  async rewrite(changes: Rewrite): Promise<void> {
    // Both checked first: all or nothing, as one transaction.
    const events = changes.events.map((c) => ({ c, e: this.eventsByKey.get(c.key)?.find((e) => e.sequenceNumber === c.sequenceNumber) }));
    for (const { c, e } of events) if (e) e.data = copy(c.data);
    for (const c of changes.snapshots) {
      const s = this.snapshots.get(c.key);
      if (s && s.sequenceNumber === c.sequenceNumber) s.data = copy(c.data);
    }
  }

  async prune(expired: Expiry[]): Promise<PruneResult> {
    let events = 0;
    let keys = 0;
    for (const { key, upTo } of expired) {
      const list = this.eventsByKey.get(key);
      if (!list) continue;
      for (const e of list) {
        if (e.sequenceNumber > upTo) continue;
        this.gone.add(e.position!);
        this.prunedTop = Math.max(this.prunedTop, e.position!);
        events++;
      }
      const snap = this.snapshots.get(key);
      if (snap && snap.sequenceNumber <= upTo) this.snapshots.delete(key);
      const kept = list.filter((e) => e.sequenceNumber > upTo);
      if (kept.length) this.eventsByKey.set(key, kept);
      else if (this.eventsByKey.delete(key)) keys++;
    }
    return { events, keys };
  }

  /** Nothing rewritten is left anywhere: the old objects are garbage. */
  async compact(): Promise<void> {}

  async latestSnapshot(key: string): Promise<PersistedSnapshot | undefined> {
    const s = this.snapshots.get(key);
    return s && copy(s);
  }

  async takeSnapshot(snapshot: PersistedSnapshot): Promise<void> {
    const cur = this.snapshots.get(snapshot.key);
    if (!cur || cur.sequenceNumber < snapshot.sequenceNumber) this.snapshots.set(snapshot.key, copy(snapshot));
  }

  async head(key: string): Promise<number> {
    const list = this.eventsByKey.get(key);
    return list && list.length ? list[list.length - 1].sequenceNumber : 0;
  }

  private sortedKeys(prefix: string): string[] {
    return [...this.eventsByKey.keys()].filter((k) => k.startsWith(prefix)).sort();
  }

  async *keys(prefix: string): AsyncIterable<string> {
    yield* this.sortedKeys(prefix);
  }

  async *journal(key: string, limit: number): AsyncIterable<JournalEntry> {
    const list = this.eventsByKey.get(key) ?? [];
    for (let i = list.length - 1; i >= 0 && i >= list.length - limit; i--) {
      const e = list[i];
      yield { sequenceNumber: e.sequenceNumber, createdAt: e.createdAt, data: copy(e.data), position: e.position! };
    }
  }

  async recover(key: string): Promise<StoredEntity> {
    const snapshot = await this.latestSnapshot(key);
    return { key, snapshot, events: this.eventsAfter(key, snapshot?.sequenceNumber ?? 0) };
  }

  async *recoverAll(prefix: string): AsyncIterable<StoredEntity> {
    for (const key of this.sortedKeys(prefix)) yield this.recover(key);
  }

  /** The number of events before the first one at or after `time` (binary search: times follow positions). */
  async positionAt(time: number): Promise<number> {
    let lo = 0;
    let hi = this.log.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.log[mid].createdAt < time) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  async *history(query: HistoryQuery): AsyncIterable<PersistedEvent> {
    const prefix = query.prefix ?? '';
    let top = this.log.length;
    if (query.before !== undefined) top = Math.min(top, query.before - 1);
    if (query.until !== undefined) top = Math.min(top, await this.positionAt(query.until));
    const bottom = query.since !== undefined ? await this.positionAt(query.since) : 0;
    for (let p = top; p > bottom; p--) {
      const e = this.log[p - 1];
      if (this.gone.has(p) || !e.key.startsWith(prefix)) continue;
      if ((query.since !== undefined && e.createdAt < query.since) || (query.until !== undefined && e.createdAt >= query.until)) continue;
      yield copy(e);
    }
  }

  async *feed(after: number): AsyncIterable<PersistedEvent> {
    for (let p = Math.max(0, after); p < this.log.length; p++) if (!this.gone.has(p + 1)) yield copy(this.log[p]);
  }

  async bounds(): Promise<OrderBounds> {
    return { first: this.prunedTop + 1, last: this.log.length };
  }

  onCommit(listener: CommitListener): () => void {
    return this.commits.listen(listener);
  }

  async mark(name: string): Promise<unknown> {
    return copy(this.marks.get(name));
  }

  async setMark(name: string, value: unknown): Promise<void> {
    this.marks.set(name, copy(value));
  }

  async close(): Promise<void> {}
}
