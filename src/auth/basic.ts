/**
 * Authentication of every API call: HTTP basic against the users of the database backend, and
 * bearer tokens (docs/identity.md): hilt's API tokens (./tokens.ts) and, when configured, an
 * OpenID Connect provider's tokens (./oidc.ts). What the caller may do: ./caller.ts.
 *
 * scrypt costs tens of milliseconds by design, so a credential that verified once is
 * remembered: the cache maps a SHA-256 of the Authorization header (never the header itself)
 * to the user and the stored hash it matched. An entry counts only while the user still has
 * exactly that hash, so deleting or re-creating a user invalidates it at once. A verification
 * counts the same way: a password checked against a hash the user no longer has (deleted and
 * created again while the scrypt ran) is refused, and remembered for nothing.
 *
 * A login for a name that is not a user is verified against a dummy hash, so that it costs
 * what a wrong password costs (its timing tells nothing about which names exist). Failed logins
 * are throttled per user name (./throttle.ts: 429 with Retry-After) and logged, without the
 * password; every scrypt waits for one of a few slots (./password.ts).
 */
import { randomBytes } from 'node:crypto';
import { sha256 } from '../../lib/hash';
import { ReadModel } from '../../actors/readmodel';
import type { UserState } from '../../actors/user/protocol';
import { HiltError, unauthorized } from '../errors';
import { quote } from '../../lib/text';
import { dummyHash, verifyPassword } from './password';
import { LoginThrottle, ThrottleOptions } from './throttle';
import { tokenCaller, userCaller, type Caller } from './caller';
import { isHiltToken, parseToken, secretMatches, TokenUses } from './tokens';

export type { Caller } from './caller';

/** Checks a bearer token that is not one of hilt's: an OpenID Connect provider's (./oidc.ts). */
export interface BearerVerifier {
  /**
   * the caller the token names; throws when it is not valid (any reason: the client hears only
   * 401), or VerifierUnavailable when no token can be checked now (the issuer's keys cannot be had)
   */
  verify(token: string): Promise<Caller>;
  /** the throttle's key for the token (its user, read before the signature is checked), or null */
  throttleKey(token: string): string | null;
}

/** No token can be checked now (a 503): not the token's fault, so no failed login of its user. */
export class VerifierUnavailable extends Error {
  constructor(message: string, readonly retryAfter: number) {
    super(message);
  }
}

/** Where a login comes from, for the log. */
export interface LoginContext {
  log?: { warn(obj: object, msg: string): void };
  ip?: string;
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
  /**
   * Verifications under way, by the same digest: requests that bring a header being verified
   * share its scrypt instead of queueing one each (after a restart every client's first request
   * arrives at once, and with one scrypt slot each waited for all those before it).
   */
  private readonly verifying = new Map<string, Promise<boolean>>();
  readonly throttle: LoginThrottle;

  /** OpenID Connect tokens, when configured */
  oidc?: BearerVerifier;
  readonly tokenUses: TokenUses;

  constructor(private readonly rm: ReadModel, throttle: Partial<ThrottleOptions> = {}, recordUse: (user: string, id: string, at: number) => void = () => undefined) {
    this.throttle = new LoginThrottle(throttle);
    this.tokenUses = new TokenUses(recordUse);
    // Made now, so that the first login for an unknown name costs no more than any other.
    void dummyHash();
  }

  async authenticate(header: string | undefined, ctx: LoginContext = {}): Promise<Caller> {
    return this.remembered(header) ?? this.verify(header, ctx);
  }

  /**
   * A password login (HTTP basic) and the stored hash its password matched, which the user still
   * has: the dashboard's session keeps it, and ends when the user's hash changes.
   */
  async password(header: string, ctx: LoginContext = {}): Promise<{ caller: Caller; hash: string }> {
    const u = this.rememberedUser(header) ?? (await this.checkPassword(header, ctx));
    return { caller: userCaller(u), hash: u.passwordHash };
  }

  /**
   * The caller of a credential checked without waiting (every request of a client that logged
   * in before): a remembered basic credential, or one of hilt's API tokens (a map lookup and one
   * hash). Undefined when it takes a slow check or is refused (authenticate() does both); throws
   * the 429 of a locked name. The request path calls this first and goes on at once when it
   * answers, so a remembered caller costs no promise.
   */
  remembered(header: string | undefined): Caller | undefined {
    if (!header) return undefined;
    const bearer = BEARER.exec(header);
    if (bearer) return isHiltToken(bearer[1]) ? this.hiltToken(bearer[1]) : undefined;
    const u = this.rememberedUser(header);
    return u && userCaller(u);
  }

  /** The user of a remembered basic credential, while it still has the hash the credential matched. */
  private rememberedUser(header: string): UserState | undefined {
    const hit = this.cache.get(sha256(header));
    if (!hit) return undefined;
    const u = this.rm.users.get(hit.user);
    if (!u || u.passwordHash !== hit.hash) return undefined;
    // A locked name is locked for every attempt, remembered credentials too: otherwise a
    // correct guess during the lock would answer 200 and the lock would stop nothing.
    const wait = this.throttle.retryAfter(u.name);
    if (wait !== null) throw throttled(wait);
    // No fresh start of the name here: a remembered credential comes with every request of a
    // busy client, and would end the doubling of the locks a guesser earns (docs/identity.md).
    return u;
  }

  /** A credential remembered() did not answer for (call that first): a bearer token, or a password checked by scrypt. */
  async verify(header: string | undefined, ctx: LoginContext): Promise<Caller> {
    const bearer = header ? BEARER.exec(header) : null;
    if (bearer) return this.bearer(bearer[1], ctx);
    return userCaller(await this.checkPassword(header, ctx));
  }

  /** A basic credential checked by scrypt: the user as it is now, which still has the hash the password matched. */
  private async checkPassword(header: string | undefined, ctx: LoginContext): Promise<UserState> {
    const digest = header ? sha256(header) : '';
    // A remembered credential whose user changed its password (or went) is forgotten.
    if (digest) this.cache.delete(digest);
    const cred = parseBasic(header);
    if (!cred) throw unauthorized('authentication required (HTTP basic)');
    const check = () => {
      const wait = this.throttle.retryAfter(cred.user);
      if (wait !== null) throw throttled(wait);
    };
    check();
    const u = this.rm.users.get(cred.user);
    // The same work whether the name exists or not; the lock is checked again once the scrypt
    // slot is had (failures may have locked the name while this login waited for it). Only
    // requests checking the same stored hash share a verdict: one that began before the user
    // was created again with a new password says nothing about the new one.
    const key = `${digest}\n${u?.passwordHash ?? ''}`;
    let verdict = this.verifying.get(key);
    if (!verdict) {
      verdict = (async () => verifyPassword(cred.password, u?.passwordHash ?? (await dummyHash()), { before: check }))();
      this.verifying.set(key, verdict);
      const done = verdict;
      void done.then(() => undefined, () => undefined).finally(() => this.verifying.get(key) === done && this.verifying.delete(key));
    }
    // Each request that shares a failed verification counts as a failed login of its own. A
    // match counts only if the user still has the hash it matched (not deleted, or created again
    // with another password, while the scrypt ran).
    const matched = await verdict;
    const now = this.rm.users.get(cred.user);
    if (!matched || !u || !now || now.passwordHash !== u.passwordHash) {
      const outcome = this.throttle.fail(cred.user);
      const who = { user: quote(cred.user), remote: ctx.ip, failures: outcome.failures };
      if (outcome.lockedForMs) ctx.log?.warn({ ...who, lockedForSeconds: outcome.lockedForMs / 1000 }, 'too many failed logins for one user name: its logins are refused for a while');
      else ctx.log?.warn(who, 'login failed');
      throw unauthorized('invalid username or password');
    }
    this.throttle.succeed(cred.user);
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(digest, { user: now.name, hash: now.passwordHash });
    return now;
  }

  /**
   * A bearer token. Any failure (malformed, unknown, wrong secret, expired, revoked, its user or
   * its project membership gone, a bad OpenID Connect token) is the same 401 after the same work
   * as a wrong password (a slow hash), and counts toward the throttle: per token id for hilt's
   * tokens, per user claim for OpenID Connect's.
   */
  private async bearer(token: string, ctx: LoginContext): Promise<Caller> {
    if (isHiltToken(token) || !this.oidc) {
      const caller = this.hiltToken(token);
      if (caller) return caller;
      const id = parseToken(token)?.id;
      return this.refuse(`token:${id ?? '?'}`, ctx, { token: id ?? '(malformed)' });
    }
    const key = `oidc:${this.oidc.throttleKey(token) ?? '?'}`;
    this.checkLock(key);
    try {
      return await this.oidc.verify(token);
    } catch (err) {
      if (err instanceof VerifierUnavailable) {
        ctx.log?.warn({ remote: ctx.ip, oidc: err.message }, 'a bearer token could not be checked: the identity provider\'s keys cannot be had');
        throw new HiltError('ServiceUnavailableError', 'the identity provider\'s keys cannot be fetched now: try again later', { retryAfter: err.retryAfter });
      }
      return this.refuse(key, ctx, { oidc: (err as Error).message });
    }
  }

  /**
   * One of hilt's API tokens, when valid now (its grant and user in the read model at this
   * moment, so a revocation counts at once), else undefined; throws the 429 of a locked token.
   */
  private hiltToken(token: string): Caller | undefined {
    const parsed = parseToken(token);
    this.checkLock(`token:${parsed?.id ?? '?'}`);
    const owner = parsed ? this.rm.tokenOwners.get(parsed.id) : undefined;
    const u = owner !== undefined ? this.rm.users.get(owner) : undefined;
    const grant = parsed && u?.tokens?.find((t) => t.id === parsed.id);
    if (!grant || grant.expiresAt <= Date.now() || !secretMatches(grant, parsed.secret)) return undefined;
    this.tokenUses.used(u!.name, grant);
    return tokenCaller(u!, grant);
  }

  private checkLock(key: string): void {
    const wait = this.throttle.retryAfter(key);
    if (wait !== null) throw throttled(wait);
  }

  /** A bad bearer token: a wrong password's cost, the throttle told, a line in the log, the 401. */
  private async refuse(key: string, ctx: LoginContext, why: Record<string, string>): Promise<never> {
    await verifyPassword(randomBytes(16).toString('base64'), await dummyHash());
    const outcome = this.throttle.fail(key);
    const who = { credential: quote(key), remote: ctx.ip, failures: outcome.failures, ...why };
    if (outcome.lockedForMs) ctx.log?.warn({ ...who, lockedForSeconds: outcome.lockedForMs / 1000 }, 'too many failed logins with one token: its logins are refused for a while');
    else ctx.log?.warn(who, 'login with a bearer token failed');
    throw unauthorized(BAD_TOKEN);
  }
}

const BEARER = /^bearer +(\S+)\s*$/i;
/** One answer for every bad token: which check failed is for the log only. */
export const BAD_TOKEN = 'invalid or expired token';
