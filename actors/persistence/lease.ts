/**
 * Active/standby on PostgreSQL: the lease that makes exactly one hilt process active among all
 * that point at one database (docs/high-availability.md).
 *
 * The lease is the single row of `hilt_lease`: a fencing token, its holder, the holder's TTL and
 * when the holder last renewed it (the database's now(), which only tells renewals apart: no
 * wall clock decides anything, so a step of one, the database's included, moves nothing).
 * - A candidate (a standby) polls the row. It takes the lease when the row's renewal has not
 *   changed for the holder's TTL since it first saw it, by its own monotonic clock, or at once
 *   when the holder's session is gone (the holder keeps a session-level advisory lock keyed by
 *   its token on the connection that renews: PostgreSQL drops it as soon as that connection
 *   ends, e.g. when the process was killed). Taking it is one compare-and-set that increments
 *   the token, and only if the row still holds the renewal seen.
 * - The holder renews every second or so (a third of the TTL at most). It counts its lease as
 *   valid until the TTL after it *sent* its last successful renewal, by its own monotonic clock
 *   (which keeps running while the process is paused), so it stops believing in the lease no
 *   later than a candidate can take it. It loses the lease when a renewal finds another token,
 *   when its renewing connection breaks, or when that validity runs out (renewals failing, or the
 *   process paused past it).
 * - A candidate that takes the lease at once (its holder's session gone) makes no hardware call
 *   until the holder's TTL has passed since it first saw the holder's last renewal (`mayAct`): a session can end on the
 *   database's side while its process still runs (a network partition, a proxy, a database
 *   failover to a server that holds no advisory locks), and that process goes on acting until its
 *   own clock tells it. The new active writes (fenced) meanwhile; its hardware calls wait or are
 *   refused with a 503, as a deposed process's are.
 * - Safety does not rest on those clocks: every write carries the token and is refused in its own
 *   transaction once the token changed (actors/persistence/postgres-schema.ts, hilt_write).
 *
 * A clean stop releases the lease (marks it lapsed) so that a standby takes over at once.
 */
import { performance } from 'node:perf_hooks';
import type { Client } from 'pg';
import { connect, PostgresSettings } from './postgres';
import { LEASE_LOCK_CLASS } from './postgres-schema';
import { sleep } from '../../lib/time';

export interface LeaseOptions {
  ttlMs: number;
  /** this process's name in the lease row and the log (e.g. host:pid) */
  holder: string;
  /** how often a candidate looks at the lease (default: a tenth of the TTL, 50 to 500 ms) */
  pollMs?: number;
  /** how often the holder renews (default: a third of the TTL, at most 1 s) */
  renewMs?: number;
  /**
   * false, for tests only: the holder never concludes by itself that it lost the lease (neither
   * by its clock nor by a renewal that finds another token), so that the database's fencing is
   * all that stops a deposed process. Its hardware calls are then unguarded.
   */
  selfCheck?: boolean;
}

/** The lease row as a candidate sees it. */
export interface LeaseRow { token: number; holder: string | null; ttlMs: number }

const lockKey = (token: number) => token % 2147483647;

/** A lease this process holds: its token, whether it still holds it, and how it ended. */
export class HeldLease {
  private validUntil: number;
  private ended?: string;
  /** release() asked the database to mark it lapsed: a standby may take it and act at once */
  private releasing = false;
  private timer?: NodeJS.Timeout;
  private expiry?: NodeJS.Timeout;
  private renewing = false;
  private readonly lostWaiters: ((reason: string) => void)[] = [];
  /** resolves with the reason once the lease is lost or released */
  readonly lost: Promise<string>;

  constructor(
    readonly token: number,
    private readonly client: Client,
    private readonly ttlMs: number,
    renewMs: number,
    sentAt: number,
    private readonly selfCheck = true,
    /** performance.now() from which hardware calls may be made: when the previous holder's own view of its lease ends */
    private readonly actsFrom = 0,
  ) {
    this.validUntil = sentAt + ttlMs;
    this.lost = new Promise((resolve) => this.lostWaiters.push(resolve));
    this.timer = setInterval(() => void this.tick(), renewMs);
    this.armExpiry();
    client.on('error', () => this.lose('the connection that holds the lease broke'));
    client.on('end', () => this.lose('the connection that holds the lease ended'));
  }

  /**
   * Lost the moment its validity ends (not at the next renewal's tick, up to renewMs later):
   * the step-down, which ends the console sessions and the API's answers from memory, follows.
   */
  private armExpiry(): void {
    if (!this.selfCheck || this.ended) return;
    clearTimeout(this.expiry);
    this.expiry = setTimeout(() => {
      if (performance.now() >= this.validUntil) this.lose(`the lease was not renewed within its TTL of ${this.ttlMs} ms`);
      else this.armExpiry();
    }, Math.max(0, Math.ceil(this.validUntil - performance.now())));
  }

  /** Whether this process may still act as the active one (its own clock's view; writes are fenced regardless). */
  held(): boolean {
    return !this.ended && !this.releasing && (!this.selfCheck || performance.now() < this.validUntil);
  }

  /**
   * Whether this process may make hardware calls: it holds the lease, and the process it took the
   * lease over from (its session gone) can no longer believe it holds it.
   */
  mayAct(): boolean {
    return this.held() && performance.now() >= this.actsFrom;
  }

  /** How long, from now, before the previous holder's view of its lease ends (0 once it has). */
  get holdOffMs(): number {
    return Math.max(0, this.actsFrom - performance.now());
  }

  /** Why it was lost, once it was. */
  get reason(): string | undefined {
    return this.ended;
  }

  private async tick(): Promise<void> {
    if (this.ended) return;
    if (this.selfCheck && performance.now() >= this.validUntil) return this.lose(`the lease was not renewed within its TTL of ${this.ttlMs} ms`);
    if (this.renewing) return;
    this.renewing = true;
    const sent = performance.now();
    try {
      // A new value each time: a candidate sees the lease live while the value changes.
      const r = await this.client.query('UPDATE hilt_lease SET renewed_at = now() WHERE id = 1 AND token = $1', [this.token]);
      if (this.ended) return;
      if (r.rowCount !== 1) return this.selfCheck ? this.lose('another hilt process took the lease over') : undefined;
      this.validUntil = Math.max(this.validUntil, sent + this.ttlMs);
      this.armExpiry();
    } catch {
      // A failed renewal is retried on the next tick until the validity runs out; a broken
      // connection ends the lease through its event.
    } finally {
      this.renewing = false;
    }
  }

  /** Stop holding: no more renewals; the connection (and its advisory lock) is closed. */
  lose(reason: string): void {
    if (this.ended) return;
    this.ended = reason;
    clearInterval(this.timer);
    clearTimeout(this.expiry);
    this.client.end().catch(() => undefined);
    for (const w of this.lostWaiters) w(reason);
  }

  /** A clean stop: mark the lease lapsed (a standby takes over at once), then let go. */
  async release(): Promise<void> {
    if (this.ended) return;
    clearInterval(this.timer);
    // Not held from here on: the lapse may commit before its answer comes back, and a standby
    // that sees it takes the lease and acts at once.
    this.releasing = true;
    await this.client.query("UPDATE hilt_lease SET renewed_at = '-infinity' WHERE id = 1 AND token = $1", [this.token]).catch(() => undefined);
    this.lose('released');
  }
}

/** A process that wants the lease: acquire() waits until it holds it. */
export class LeaseCandidate {
  readonly pollMs: number;
  readonly renewMs: number;
  /** the lease row's token and renewal as first seen, and when (performance.now(), at the answer) */
  private seen?: { token: number; renewed: string; at: number };

  constructor(private readonly settings: PostgresSettings, private readonly opts: LeaseOptions) {
    this.pollMs = opts.pollMs ?? Math.min(500, Math.max(50, Math.round(opts.ttlMs / 10)));
    this.renewMs = opts.renewMs ?? Math.min(1000, Math.max(20, Math.round(opts.ttlMs / 3)));
  }

  /**
   * Wait until this process holds the lease (polling every pollMs), or until `signal` aborts
   * (then null). Errors reaching the database are reported to `onError` and retried.
   */
  async acquire(signal?: AbortSignal, onError?: (err: Error) => void): Promise<HeldLease | null> {
    let client: Client | undefined;
    let broken = false;
    try {
      while (!signal?.aborted) {
        try {
          if (!client || broken) {
            // Not waited for: a connection that stopped answering may never finish its goodbye.
            client?.end().catch(() => undefined);
            broken = false;
            // Bounded on the client too: a connection whose packets are dropped answers nothing,
            // not even the server's timeout, and would hold this candidate (and its close) for good.
            const bound = Math.max(1000, this.opts.ttlMs);
            client = await connect(this.settings, 'lease', () => (broken = true), { query_timeout: bound + 1000 });
            // Bounded waits: a takeover waits only for writes already in flight.
            await client.query(`SET lock_timeout = ${Math.max(100, this.opts.ttlMs)}`);
            await client.query(`SET statement_timeout = ${bound}`);
          }
          const held = await this.tryAcquire(client);
          if (held) {
            client = undefined; // it belongs to the lease now
            return held;
          }
        } catch (err) {
          broken = true;
          onError?.(err as Error);
        }
        await sleep(this.pollMs, signal);
      }
      return null;
    } finally {
      if (broken) client?.end().catch(() => undefined);
      else await client?.end().catch(() => undefined);
    }
  }

  /**
   * One look at the lease: take it if it lapsed or its holder's session is gone. Lapsed is judged
   * by this process's monotonic clock, never the database's (a step of that clock would make a
   * renewing holder's lease look lapsed, or keep a dead one's alive for as long as the step): the
   * row's renewal must have stayed the same for the holder's TTL since this process first saw
   * it. That renewal was sent before the answer that showed it arrived, and its holder counts its
   * TTL from the sending: the holder stops acting before this process takes over.
   */
  private async tryAcquire(client: Client): Promise<HeldLease | null> {
    const { rows } = await client.query<{ token: number; ttl_ms: number; renewed: string; released: boolean }>(
      `SELECT token, ttl_ms, renewed_at::text AS renewed, renewed_at = '-infinity' AS released FROM hilt_lease WHERE id = 1`);
    const now = performance.now();
    const { token, renewed, released } = rows[0];
    const seen = this.seen;
    if (!seen || seen.token !== token || seen.renewed !== renewed) this.seen = { token, renewed, at: now };
    // When the holder's own view of its lease ends at the latest (a released lease: already).
    const actsFrom = released ? 0 : this.seen!.at + Number(rows[0].ttl_ms);
    if (now >= actsFrom) return this.takeOver(client, token, renewed);
    // The holder keeps an advisory lock on its renewing session: if it can be had, that session is gone.
    const free = (await client.query<{ free: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS free', [LEASE_LOCK_CLASS, lockKey(token)])).rows[0].free;
    if (!free) return null;
    try {
      return await this.takeOver(client, token, renewed, actsFrom);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, $2)', [LEASE_LOCK_CLASS, lockKey(token)]).catch(() => undefined);
    }
  }

  /**
   * The compare-and-set: the token seen becomes the next one, held by this process, provided the
   * row was not renewed since the look (a renewal between the look and this statement would
   * leave its holder acting past `actsFrom`, or past a lapse this process saw).
   */
  private async takeOver(client: Client, seen: number, renewed: string, actsFrom = 0): Promise<HeldLease | null> {
    const sent = performance.now();
    // The new token's advisory lock is taken in the same statement: no candidate can see the
    // new token before its holder's lock exists.
    const { rows } = await client.query<{ token: number }>(
      `UPDATE hilt_lease SET token = token + 1, holder = $1, ttl_ms = $2, acquired_at = now(), renewed_at = now()
       WHERE id = 1 AND token = $3 AND renewed_at = $5::timestamptz
       RETURNING token, pg_try_advisory_lock($4, ((token + 0) % 2147483647)::integer) AS locked`,
      [this.opts.holder, this.opts.ttlMs, seen, LEASE_LOCK_CLASS, renewed],
    );
    if (!rows.length) return null;
    this.seen = undefined;
    return new HeldLease(rows[0].token, client, this.opts.ttlMs, this.renewMs, sent, this.opts.selfCheck ?? true, actsFrom);
  }
}

/** Who holds the lease now, as the database says (for operators and tests). */
export async function readLease(settings: PostgresSettings): Promise<LeaseRow & { renewedAgoMs: number | null }> {
  const client = await connect(settings, 'lease reader');
  try {
    const { rows } = await client.query<{ token: number; holder: string | null; ttl_ms: number; ago: number | null }>(
      `SELECT token, holder, ttl_ms,
              CASE WHEN renewed_at = '-infinity' THEN NULL ELSE extract(epoch FROM now() - renewed_at) * 1000 END AS ago
       FROM hilt_lease WHERE id = 1`);
    const r = rows[0];
    return { token: r.token, holder: r.holder, ttlMs: r.ttl_ms, renewedAgoMs: r.ago === null ? null : Number(r.ago) };
  } finally {
    await client.end().catch(() => undefined);
  }
}
