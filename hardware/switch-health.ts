/**
 * What the service last saw of each switch (issue 26: switch lists show it): whether its last
 * session call worked or why not, and the last drift audit's counts. Observations kept in
 * memory, not facts the service owns: after a restart a switch is unknown until it is next used.
 */

export interface SwitchSeen {
  /** the last call on the switch that worked (ms) */
  okAt?: number;
  /** the last call that failed (ms), and why */
  errorAt?: number;
  error?: string;
  /** the last drift audit or repair: when, and its count of each port status (or why it failed) */
  audit?: { at: number; summary?: Record<string, number>; error?: string; failing?: Record<string, string> };
}

export type Reachability = 'reachable' | 'unreachable' | 'unknown';

export class SwitchHealth {
  private readonly seen = new Map<string, SwitchSeen>();

  private entry(sw: string): SwitchSeen {
    let e = this.seen.get(sw);
    if (!e) this.seen.set(sw, (e = {}));
    return e;
  }

  worked(sw: string): void {
    this.entry(sw).okAt = Date.now();
  }

  failed(sw: string, error: string): void {
    Object.assign(this.entry(sw), { errorAt: Date.now(), error });
  }

  /** A drift audit's or repair's report, or why it could not be read; `failing`: port → its status other than in sync. */
  audited(sw: string, outcome: { summary: Record<string, number>; ports: { port: string; status: string }[] } | { error: string }): void {
    const e = this.entry(sw);
    if ('error' in outcome) {
      e.audit = { at: Date.now(), error: outcome.error };
      this.failed(sw, outcome.error);
      return;
    }
    const failing = Object.fromEntries(outcome.ports.filter((p) => p.status !== 'in_sync' && p.status !== 'repaired').map((p) => [p.port, p.status]));
    e.audit = { at: Date.now(), summary: outcome.summary, failing };
    this.worked(sw);
  }

  get(sw: string): SwitchSeen {
    return this.seen.get(sw) ?? {};
  }

  /** Reachable when its latest call worked, unreachable when it failed, unknown before any. */
  static reachability(s: SwitchSeen): Reachability {
    if (s.okAt === undefined && s.errorAt === undefined) return 'unknown';
    return (s.okAt ?? -1) >= (s.errorAt ?? -1) ? 'reachable' : 'unreachable';
  }

  /** A registration of a switch under a name used before starts afresh. */
  forget(sw: string): void {
    this.seen.delete(sw);
  }
}
