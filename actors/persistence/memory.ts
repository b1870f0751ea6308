import { PersistenceEngine, PersistedEvent, PersistedSnapshot, JournalEntry, StoredEntity } from './engine';

/**
 * In-memory engine: for unit tests of actors and the conformance kit's reference run
 * (HILT_STORAGE=memory: nothing survives the process). Data is copied in and out, as a real
 * engine's encoding would, so no caller can change what is stored by mutating an object.
 */
const copy = <T>(v: T): T => structuredClone(v);

export class MemoryPersistenceEngine implements PersistenceEngine {
  private readonly eventsByKey = new Map<string, PersistedEvent[]>();
  private readonly snapshots = new Map<string, PersistedSnapshot>();

  async *events(key: string, offset = 0): AsyncIterable<PersistedEvent> {
    yield* this.eventsAfter(key, offset);
  }

  private eventsAfter(key: string, offset: number): PersistedEvent[] {
    return (this.eventsByKey.get(key) ?? []).filter((e) => e.sequenceNumber > offset).map(copy);
  }

  async persist(events: PersistedEvent[]): Promise<void> {
    for (const event of events) {
      const list = this.eventsByKey.get(event.key) ?? [];
      list.push(copy(event));
      list.sort((a, b) => a.sequenceNumber - b.sequenceNumber);
      this.eventsByKey.set(event.key, list);
    }
  }

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

  async close(): Promise<void> {}
}
