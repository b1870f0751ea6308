/**
 * Closes the window between a node actor accepting a connect to network W (decided against
 * committed state) and that acceptance being committed, against the network actor changing
 * W at the same moment (delete, revoke, grant on a public network). Like the VLAN pool it is
 * synchronous on one JS thread, so check-and-mark is atomic without a mailbox:
 * - a node reserves W for the connect it is about to persist, and releases it once committed
 *   (from then on the read model shows the pending action);
 * - the network actor locks W while it persists a change, and refuses the change while W is
 *   reserved; a node cannot reserve a locked W.
 */
export class NetworkUseBook {
  private readonly reservations = new Map<string, Map<string, string>>();
  private readonly locked = new Set<string>();

  /** false when W is being changed by its network actor */
  reserve(network: string, key: string, project: string): boolean {
    if (this.locked.has(network)) return false;
    let m = this.reservations.get(network);
    if (!m) this.reservations.set(network, (m = new Map()));
    m.set(key, project);
    return true;
  }

  release(network: string, key: string): void {
    const m = this.reservations.get(network);
    if (m && m.delete(key) && m.size === 0) this.reservations.delete(network);
  }

  /** Projects with a connect to W being accepted right now. */
  reservedBy(network: string): string[] {
    return [...(this.reservations.get(network)?.values() ?? [])];
  }

  lock(network: string): void {
    this.locked.add(network);
  }

  unlock(network: string): void {
    this.locked.delete(network);
  }
}
