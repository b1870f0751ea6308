/**
 * The dynamic VLAN pool. Which ids are taken is derived from committed networks (read model)
 * plus ids reserved by creations not yet committed. Node runs this synchronously on one
 * thread, so reserve() is atomic without a mailbox of its own.
 */
import type { ReadModel } from '../readmodel';

export type VlanRange = [number, number];

export class VlanPool {
  private readonly reserved = new Set<number>();

  constructor(private readonly ranges: VlanRange[], private readonly rm: ReadModel) {}

  contains(vlan: number): boolean {
    return this.ranges.some(([lo, hi]) => vlan >= lo && vlan <= hi);
  }

  /**
   * Held by a network, or about to be. Networks outside the pool count too: once
   * HILT_VLAN_POOL changes, the pool may cover an id an admin chose outside the old one.
   */
  inUse(vlan: number): boolean {
    return this.reserved.has(vlan) || this.rm.pooledVlans.has(vlan) || this.rm.unpooledVlans.has(vlan);
  }

  /** Reserve a specific id of the pool, or the lowest free one when `vlan` is null. */
  reserve(vlan: number | null): number | null {
    if (vlan !== null) {
      if (this.inUse(vlan)) return null;
      this.reserved.add(vlan);
      return vlan;
    }
    for (const [lo, hi] of this.ranges) {
      for (let v = lo; v <= hi; v++) {
        if (!this.inUse(v)) {
          this.reserved.add(v);
          return v;
        }
      }
    }
    return null;
  }

  /** Called once the creation committed (the read model now holds the id) or failed. */
  release(vlan: number): void {
    this.reserved.delete(vlan);
  }
}
