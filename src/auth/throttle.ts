/**
 * Login throttling per user name (docs/api.md, Logins): after `maxFailures` failed logins for one name
 * within `windowMs`, every attempt for that name is answered 429 with Retry-After until the lock
 * ends. Each lock of a name lasts twice the one before (from `lockMs`, at most `maxLockMs`); a
 * successful login, or `forgetMs` without a failure, starts the name afresh. Nothing is locked for
 * good: the real user logs in once the lock has ended.
 *
 * Names that are not users are throttled alike (so a 429 tells nothing about which names exist).
 * The table is bounded (`maxNames`): when full, names that are not locked go first.
 */
import { createHash } from 'node:crypto';

export interface ThrottleOptions {
  maxFailures: number;
  windowMs: number;
  lockMs: number;
  maxLockMs: number;
  forgetMs: number;
  maxNames: number;
  now: () => number;
}

export const THROTTLE_DEFAULTS: ThrottleOptions = {
  maxFailures: 10,
  windowMs: 60_000,
  lockMs: 60_000,
  maxLockMs: 300_000,
  forgetMs: 15 * 60_000,
  maxNames: 10_000,
  now: Date.now,
};

interface Entry {
  /** times of the failures within the window, oldest first */
  failures: number[];
  lockedUntil: number;
  /** locks so far (each doubles the next) */
  strikes: number;
  lastFailure: number;
}

export interface FailureOutcome {
  /** failures of the name within the window, this one included */
  failures: number;
  /** set when this failure locked the name: for how long */
  lockedForMs?: number;
}

export class LoginThrottle {
  readonly opts: ThrottleOptions;
  private readonly names = new Map<string, Entry>();

  constructor(opts: Partial<ThrottleOptions> = {}) {
    this.opts = { ...THROTTLE_DEFAULTS, ...opts };
  }

  /** A long name (never a user's: names are at most 255 bytes) is kept as its digest. */
  private key(name: string): string {
    return name.length <= 255 ? name : `sha256:${createHash('sha256').update(name).digest('hex')}`;
  }

  /** Seconds until the name may try again, or null when it may now. */
  retryAfter(name: string): number | null {
    const e = this.names.get(this.key(name));
    if (!e) return null;
    const left = e.lockedUntil - this.opts.now();
    return left > 0 ? Math.ceil(left / 1000) : null;
  }

  fail(name: string): FailureOutcome {
    const now = this.opts.now();
    const k = this.key(name);
    let e = this.names.get(k);
    if (e && now - e.lastFailure > this.opts.forgetMs && e.lockedUntil <= now) {
      this.names.delete(k);
      e = undefined;
    }
    if (!e) {
      this.makeRoom(now);
      e = { failures: [], lockedUntil: 0, strikes: 0, lastFailure: now };
      this.names.set(k, e);
    }
    e.lastFailure = now;
    e.failures.push(now);
    while (e.failures.length && now - e.failures[0] >= this.opts.windowMs) e.failures.shift();
    const failures = e.failures.length;
    if (failures >= this.opts.maxFailures && e.lockedUntil <= now) {
      const lockedForMs = Math.min(this.opts.maxLockMs, this.opts.lockMs * 2 ** e.strikes);
      e.strikes++;
      e.lockedUntil = now + lockedForMs;
      e.failures = [];
      return { failures, lockedForMs };
    }
    return { failures };
  }

  succeed(name: string): void {
    this.names.delete(this.key(name));
  }

  get size(): number {
    return this.names.size;
  }

  /** Before adding a name to a full table: forget names that are not locked, oldest first. */
  private makeRoom(now: number): void {
    if (this.names.size < this.opts.maxNames) return;
    for (const [k, e] of this.names) {
      if (e.lockedUntil <= now) {
        this.names.delete(k);
        if (this.names.size < this.opts.maxNames) return;
      }
    }
    // Every name is locked: the oldest goes.
    const first = this.names.keys().next();
    if (!first.done) this.names.delete(first.value);
  }
}
