/**
 * Dashboard sessions: a login with hilt's users and passwords (or with an API token or an OpenID
 * Connect token, docs/identity.md) gives a random token, kept by the
 * browser in an HttpOnly, SameSite=Strict cookie scoped to /ui, with a CSRF token that every
 * change must echo in a header. Sessions live in the service's memory: a restart logs everyone
 * out. A session ends at its expiry (HILT_UI_SESSION_MINUTES after the login), at logout, and as
 * soon as its user is deleted or gets a new password, or the token it was opened with is
 * revoked or expires. Only a SHA-256 of each token is kept. What was opened under a session
 * (the dashboard's event streams) is ended with it: at logout, and when the session is found
 * over.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ReadModel } from '../../actors/readmodel';
import { callerNow, expiryOf, userCaller, type Caller } from '../auth/caller';

export const COOKIE = 'hilt_ui';

interface Session {
  user: string;
  /** a password login: the hash it matched (a new password ends the session) */
  hash?: string;
  /** a token login: the caller it gave, derived again at each request (src/auth/caller.ts) */
  caller?: Caller;
  csrf: string;
  expires: number;
  /** what ends with the session (hold()) */
  held?: Set<() => void>;
}

const digest = (token: string) => createHash('sha256').update(token).digest('base64url');

/** Compares two strings in time independent of where they differ. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class UiSessions {
  private readonly sessions = new Map<string, Session>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly rm: ReadModel, readonly lifetimeMs: number) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(lifetimeMs, 60_000)).unref();
  }

  /** A new session for a caller who just logged in (with a password: the hash it matched); the token goes into the cookie. */
  create(who: Caller | string, hash?: string): { token: string; csrf: string; expires: number } {
    const caller: Caller = typeof who === 'string' ? { user: who, isAdmin: false, projects: [] } : who;
    const token = randomBytes(32).toString('base64url');
    const csrf = randomBytes(32).toString('base64url');
    // A session opened with a token (an API token, an OpenID Connect token) ends with it at the latest.
    const expires = Math.min(Date.now() + this.lifetimeMs, expiryOf(this.rm, caller) ?? Infinity);
    this.sessions.set(digest(token), { user: caller.user, ...(hash !== undefined ? { hash } : { caller }), csrf, expires });
    return { token, csrf, expires };
  }

  /** The session's caller (admin flag and projects as they are now), or undefined when it is over. */
  get(token: string | undefined): { caller: Caller; csrf: string; expires: number } | undefined {
    if (!token) return undefined;
    const key = digest(token);
    const s = this.sessions.get(key);
    if (!s) return undefined;
    const u = this.rm.users.get(s.user);
    const caller = s.caller ? callerNow(this.rm, s.caller) : u && u.passwordHash === s.hash ? userCaller(u) : undefined;
    if (s.expires <= Date.now() || !caller) {
      this.over(key, s);
      return undefined;
    }
    return { caller, csrf: s.csrf, expires: s.expires };
  }

  /**
   * Ties something opened under a live session (a stream) to it: `end` runs when the session
   * ends (logout, or found over). The function returned unties it (the stream closed first).
   */
  hold(token: string, end: () => void): () => void {
    const s = this.sessions.get(digest(token));
    if (!s) {
      end();
      return () => undefined;
    }
    (s.held ??= new Set()).add(end);
    return () => s.held?.delete(end);
  }

  end(token: string | undefined): void {
    if (!token) return;
    const key = digest(token);
    const s = this.sessions.get(key);
    if (s) this.over(key, s);
  }

  private over(key: string, s: Session): void {
    this.sessions.delete(key);
    const held = s.held;
    s.held = undefined;
    for (const end of held ?? []) end();
  }

  size(): number {
    return this.sessions.size;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [k, s] of this.sessions) if (s.expires <= now) this.over(k, s);
  }

  close(): void {
    clearInterval(this.sweeper);
    this.sessions.clear();
  }
}
