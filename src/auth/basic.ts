/**
 * HTTP basic authentication against the users of the database backend.
 *
 * scrypt costs tens of milliseconds by design, so a credential that verified once is
 * remembered: the cache maps a SHA-256 of the Authorization header (never the header itself)
 * to the user and the stored hash it matched. An entry counts only while the user still has
 * exactly that hash, so deleting or re-creating a user invalidates it at once.
 *
 * A login for a name that is not a user is verified against a dummy hash, so that it costs
 * what a wrong password costs (its timing tells nothing about which names exist). Failed logins
 * are throttled per user name (./throttle.ts: 429 with Retry-After) and logged, without the
 * password; every scrypt waits for one of a few slots (./password.ts).
 */
import { createHash } from 'node:crypto';
import { ReadModel } from '../../actors/readmodel';
import { HiltError, unauthorized } from '../errors';
import { quote } from '../../lib/text';
import { dummyHash, verifyPassword } from './password';
import { LoginThrottle, ThrottleOptions } from './throttle';

/** Where a login comes from, for the log. */
export interface LoginContext {
  log?: { warn(obj: object, msg: string): void };
  ip?: string;
}

export interface Caller {
  user: string;
  isAdmin: boolean;
  /** projects the caller is a member of */
  projects: readonly string[];
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const CACHE_MAX = 10_000;

/** Parse `Basic <base64(user:password)>`; null when malformed in any way. */
export function parseBasic(header: string | undefined): { user: string; password: string } | null {
  if (!header) return null;
  const m = /^basic +(\S+)\s*$/i.exec(header);
  if (!m || !BASE64.test(m[1]) || m[1].length % 4 !== 0) return null;
  let text: string;
  try {
    text = utf8.decode(Buffer.from(m[1], 'base64'));
  } catch {
    return null;
  }
  const i = text.indexOf(':');
  if (i < 0) return null;
  return { user: text.slice(0, i), password: text.slice(i + 1) };
}

/** 429: the name is locked for now. */
function throttled(seconds: number): HiltError {
  return new HiltError('TooManyRequestsError', `too many failed logins for this user name; try again in ${seconds} s`, { retryAfter: seconds });
}

export class Authenticator {
  private readonly cache = new Map<string, { user: string; hash: string }>();
  readonly throttle: LoginThrottle;

  constructor(private readonly rm: ReadModel, throttle: Partial<ThrottleOptions> = {}) {
    this.throttle = new LoginThrottle(throttle);
    // Made now, so that the first login for an unknown name costs no more than any other.
    void dummyHash();
  }

  async authenticate(header: string | undefined, ctx: LoginContext = {}): Promise<Caller> {
    const digest = header ? createHash('sha256').update(header).digest('base64') : '';
    const hit = digest ? this.cache.get(digest) : undefined;
    if (hit) {
      const u = this.rm.users.get(hit.user);
      if (u && u.passwordHash === hit.hash) {
        // A locked name is locked for every attempt, remembered credentials too: otherwise a
        // correct guess during the lock would answer 200 and the lock would stop nothing.
        const wait = this.throttle.retryAfter(u.name);
        if (wait !== null) throw throttled(wait);
        return { user: u.name, isAdmin: u.isAdmin, projects: u.projects };
      }
      this.cache.delete(digest);
    }
    const cred = parseBasic(header);
    if (!cred) throw unauthorized('authentication required (HTTP basic)');
    const check = () => {
      const wait = this.throttle.retryAfter(cred.user);
      if (wait !== null) throw throttled(wait);
    };
    check();
    const u = this.rm.users.get(cred.user);
    // The same work whether the name exists or not; the lock is checked again once the scrypt
    // slot is had (failures may have locked the name while this login waited for it).
    const ok = (await verifyPassword(cred.password, u?.passwordHash ?? (await dummyHash()), { before: check })) && !!u;
    if (!ok) {
      const outcome = this.throttle.fail(cred.user);
      const who = { user: quote(cred.user), remote: ctx.ip, failures: outcome.failures };
      if (outcome.lockedForMs) ctx.log?.warn({ ...who, lockedForSeconds: outcome.lockedForMs / 1000 }, 'too many failed logins for one user name: its logins are refused for a while');
      else ctx.log?.warn(who, 'login failed');
      throw unauthorized('invalid username or password');
    }
    this.throttle.succeed(cred.user);
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(digest, { user: u.name, hash: u.passwordHash });
    const now = this.rm.users.get(u.name) ?? u;
    return { user: now.name, isAdmin: now.isAdmin, projects: now.projects };
  }
}
