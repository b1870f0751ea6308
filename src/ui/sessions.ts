/**
 * Dashboard sessions: a login with hilt's users and passwords gives a random token, kept by the
 * browser in an HttpOnly, SameSite=Strict cookie scoped to /ui, with a CSRF token that every
 * change must echo in a header. Sessions live in the service's memory: a restart logs everyone
 * out. A session ends at its expiry (HILT_UI_SESSION_MINUTES after the login), at logout, and as
 * soon as its user is deleted or gets a new password. Only a SHA-256 of each token is kept.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ReadModel } from '../../actors/readmodel';
import { userCaller, type Caller } from '../auth/caller';

export const COOKIE = 'hilt_ui';

interface Session {
  user: string;
  /** the password hash the login matched: a new password ends the session */
  hash: string;
  csrf: string;
  expires: number;
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

  /** A new session for a user who just logged in; the token goes into the cookie. */
  create(user: string, hash: string): { token: string; csrf: string; expires: number } {
    const token = randomBytes(32).toString('base64url');
    const csrf = randomBytes(32).toString('base64url');
    const expires = Date.now() + this.lifetimeMs;
    this.sessions.set(digest(token), { user, hash, csrf, expires });
    return { token, csrf, expires };
  }

  /** The session's caller (admin flag and projects as they are now), or undefined when it is over. */
  get(token: string | undefined): { caller: Caller; csrf: string; expires: number } | undefined {
    if (!token) return undefined;
    const key = digest(token);
    const s = this.sessions.get(key);
    if (!s) return undefined;
    const u = this.rm.users.get(s.user);
    if (s.expires <= Date.now() || !u || u.passwordHash !== s.hash) {
      this.sessions.delete(key);
      return undefined;
    }
    return { caller: userCaller(u), csrf: s.csrf, expires: s.expires };
  }

  end(token: string | undefined): void {
    if (token) this.sessions.delete(digest(token));
  }

  size(): number {
    return this.sessions.size;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [k, s] of this.sessions) if (s.expires <= now) this.sessions.delete(k);
  }

  close(): void {
    clearInterval(this.sweeper);
    this.sessions.clear();
  }
}
