/**
 * Per-key serial execution outside any mailbox: operations on one key (a node's BMC, a
 * headnode's VM) run one after another, different keys in parallel. A failed operation does
 * not stop the ones queued behind it.
 */
export class SerialQueues {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, op: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const result = prev.then(op);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => { if (this.tails.get(key) === tail) this.tails.delete(key); });
    return result;
  }

  /** Something is queued or running for this key. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }

  /** Resolves once everything queued now has finished. */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.tails.values()]);
  }
}
