import { PersistenceEngine, PersistedEvent, PersistedSnapshot, JournalEntry } from './engine';

/** In-memory engine: for unit tests of actors and for the conformance kit's reference run. */
export class MemoryPersistenceEngine implements PersistenceEngine {
  private readonly eventsByKey = new Map<string, PersistedEvent[]>();
  private readonly snapshots = new Map<string, PersistedSnapshot>();

  events(key: string, offset = 0, limit?: number): PersistedEvent[] {
    const all = (this.eventsByKey.get(key) ?? []).filter((e) => e.sequenceNumber > offset);
    return limit === undefined ? all : all.slice(0, limit);
  }

  async persist(event: PersistedEvent): Promise<void> {
    const list = this.eventsByKey.get(event.key) ?? [];
    list.push(event);
    list.sort((a, b) => a.sequenceNumber - b.sequenceNumber);
    this.eventsByKey.set(event.key, list);
  }

  async latestSnapshot(key: string): Promise<PersistedSnapshot | undefined> {
    return this.snapshots.get(key);
  }

  async takeSnapshot(snapshot: PersistedSnapshot): Promise<void> {
    const cur = this.snapshots.get(snapshot.key);
    if (!cur || cur.sequenceNumber < snapshot.sequenceNumber) this.snapshots.set(snapshot.key, snapshot);
  }

  head(key: string): number {
    const list = this.eventsByKey.get(key);
    return list && list.length ? list[list.length - 1].sequenceNumber : 0;
  }

  keys(prefix: string): string[] {
    return [...this.eventsByKey.keys()].filter((k) => k.startsWith(prefix)).sort();
  }

  journal(key: string, limit: number): JournalEntry[] {
    return (this.eventsByKey.get(key) ?? []).slice(-limit).reverse()
      .map((e) => ({ sequenceNumber: e.sequenceNumber, createdAt: e.createdAt, data: e.data }));
  }

  async close(): Promise<void> {}
}
