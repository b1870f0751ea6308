import { PersistenceEngine, PersistedEvent, PersistedSnapshot, JournalEntry, StoredEntity, HistoryQuery, HistoryPosition, Rewrite } from './engine';

/**
 * In-memory engine: for unit tests of actors and the conformance kit's reference run
 * (HILT_STORAGE=memory: nothing survives the process). Data is copied in and out, as a real
 * engine's encoding would, so no caller can change what is stored by mutating an object.
 */
const copy = <T>(v: T): T => structuredClone(v);

/** The order of history(), ascending: createdAt, then key, then sequence number. */
function compare(a: HistoryPosition, b: HistoryPosition): number {
  return a.createdAt - b.createdAt || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0) || a.sequenceNumber - b.sequenceNumber;
}

export class MemoryPersistenceEngine implements PersistenceEngine {
  readonly noBackup = 'the memory engine keeps nothing to back up: its data ends with the process';
  private readonly eventsByKey = new Map<string, PersistedEvent[]>();
  private readonly snapshots = new Map<string, PersistedSnapshot>();
  /** every event in the order of history(), ascending (events nearly always arrive in that order) */
  private readonly byTime: PersistedEvent[] = [];

  /** Index of the first event at or after `p` in byTime (binary search). */
  private lowerBound(p: HistoryPosition): number {
    let lo = 0;
    let hi = this.byTime.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(this.byTime[mid], p) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  async *events(key: string, offset = 0): AsyncIterable<PersistedEvent> {
    yield* this.eventsAfter(key, offset);
  }

  private eventsAfter(key: string, offset: number): PersistedEvent[] {
    return (this.eventsByKey.get(key) ?? []).filter((e) => e.sequenceNumber > offset).map(copy);
  }

  async persist(events: PersistedEvent[]): Promise<void> {
    for (const event of events) {
      const list = this.eventsByKey.get(event.key) ?? [];
      const stored = copy(event);
      list.push(stored);
      list.sort((a, b) => a.sequenceNumber - b.sequenceNumber);
      this.eventsByKey.set(event.key, list);
      this.byTime.splice(this.lowerBound(stored), 0, stored);
    }
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
      yield { sequenceNumber: e.sequenceNumber, createdAt: e.createdAt, data: copy(e.data) };
    }
  }

  async recover(key: string): Promise<StoredEntity> {
    const snapshot = await this.latestSnapshot(key);
    return { key, snapshot, events: this.eventsAfter(key, snapshot?.sequenceNumber ?? 0) };
  }

  async *recoverAll(prefix: string): AsyncIterable<StoredEntity> {
    for (const key of this.sortedKeys(prefix)) yield this.recover(key);
  }

  async *history(query: HistoryQuery): AsyncIterable<PersistedEvent> {
    const prefix = query.prefix ?? '';
    // Start just below the upper bound: `until` (exclusive) or `before` (exclusive), whichever is lower.
    let i = this.byTime.length - 1;
    if (query.until !== undefined) i = Math.min(i, this.lowerBound({ createdAt: query.until, key: '', sequenceNumber: -Infinity }) - 1);
    if (query.before) i = Math.min(i, this.lowerBound(query.before) - 1);
    while (i >= 0) {
      const e = this.byTime[i];
      if (query.since !== undefined && e.createdAt < query.since) return;
      if (e.key.startsWith(prefix)) {
        yield copy(e);
        // Events persisted meanwhile may have moved it: go on from where it stands now.
        i = this.lowerBound(e) - 1;
      } else {
        i--;
      }
    }
  }

  async close(): Promise<void> {}
}
