/**
 * A storage engine that passes everything to another, except that reading the keys in `failing`
 * throws (as LMDB's key encoder does for a key that is too long): to show what a storage fault
 * does to the actors and the requests waiting on them.
 */
import type { CommitListener, Expiry, HistoryQuery, PersistenceEngine, PersistedEvent, PersistedSnapshot, PruneResult, Rewrite, StoredEntity } from '../../actors/persistence/engine';

export class FaultInjectingEngine implements PersistenceEngine {
  readonly failing = new Set<string>();
  /** reads of these keys give one more event that no behaviour knows (a bug's stand-in: its replay throws) */
  readonly corrupt = new Set<string>();
  /** writes of these keys are refused (as a full disk would) */
  readonly failingWrites = new Set<string>();

  constructor(readonly inner: PersistenceEngine) {}

  private check(key: string): void {
    if (this.failing.has(key)) throw new RangeError(`String does not fit in target buffer (injected for ${key})`);
  }

  events(key: string, offset?: number): AsyncIterable<PersistedEvent> {
    this.check(key);
    if (!this.corrupt.has(key)) return this.inner.events(key, offset);
    const inner = this.inner;
    return (async function* () {
      let last = offset ?? 0;
      for await (const e of inner.events(key, offset)) {
        last = e.sequenceNumber;
        yield e;
      }
      yield { key, sequenceNumber: last + 1, data: { type: 'NoSuchEvent' }, tags: [], createdAt: 0 };
    })();
  }

  persist(events: PersistedEvent[]): Promise<void> {
    const refused = events.find((e) => this.failingWrites.has(e.key));
    if (refused) return Promise.reject(new Error(`injected write fault for ${refused.key}`));
    return this.inner.persist(events);
  }

  async latestSnapshot(key: string): Promise<PersistedSnapshot | undefined> {
    this.check(key);
    return this.inner.latestSnapshot(key);
  }

  takeSnapshot(snapshot: PersistedSnapshot): Promise<void> {
    return this.inner.takeSnapshot(snapshot);
  }

  head(key: string): Promise<number> {
    return this.inner.head(key);
  }

  keys(prefix: string) {
    return this.inner.keys(prefix);
  }

  journal(key: string, limit: number) {
    return this.inner.journal(key, limit);
  }

  /** What an actor reads when it wakes: the same faults as events() and latestSnapshot(). */
  async recover(key: string): Promise<StoredEntity> {
    this.check(key);
    const stored = await this.inner.recover(key);
    if (!this.corrupt.has(key)) return stored;
    const last = stored.events.at(-1)?.sequenceNumber ?? stored.snapshot?.sequenceNumber ?? 0;
    return { ...stored, events: [...stored.events, { key, sequenceNumber: last + 1, data: { type: 'NoSuchEvent' }, tags: [], createdAt: 0 }] };
  }

  recoverAll(prefix: string) {
    return this.inner.recoverAll(prefix);
  }

  history(query: HistoryQuery) {
    return this.inner.history(query);
  }

  feed(after: number) {
    return this.inner.feed(after);
  }

  bounds() {
    return this.inner.bounds();
  }

  positionAt(time: number) {
    return this.inner.positionAt(time);
  }

  onCommit(listener: CommitListener) {
    return this.inner.onCommit(listener);
  }

  mark(name: string) {
    return this.inner.mark(name);
  }

  setMark(name: string, value: unknown) {
    return this.inner.setMark(name, value);
  }

  rewrite(changes: Rewrite): Promise<void> {
    const refused = changes.events.find((e) => this.failingWrites.has(e.key));
    if (refused) return Promise.reject(new Error(`injected write fault for ${refused.key}`));
    return this.inner.rewrite(changes);
  }

  compact(): Promise<void> {
    return this.inner.compact();
  }

  prune(expired: Expiry[]): Promise<PruneResult> {
    return this.inner.prune(expired);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
