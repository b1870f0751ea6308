/**
 * OpenID Connect bearer tokens (docs/identity.md): a JWT signed by HILT_OIDC_ISSUER for
 * HILT_OIDC_AUDIENCE. The signature and the claims are checked by jose (RS256 or ES256 only;
 * `iss`, `aud`, `exp` required, `exp` and `nbf` with 60 s of leeway); nothing here parses a
 * signature. The issuer's keys come from its discovery document's `jwks_uri` (or
 * HILT_OIDC_JWKS_URL), over HTTPS only (HILT_OIDC_CA_FILE: the CA of its certificate), and are
 * kept; a token whose key id is unknown has them fetched again, at most once a minute (a key
 * rotation at the issuer is picked up; a flood of made-up key ids costs one fetch a minute), and
 * so do keys ten minutes old (a key the issuer withdrew stops being accepted; an issuer that
 * cannot be reached then leaves the kept keys in use, tried again a minute later). A fetch is
 * bounded in time and size; with no keys at all, a token is a 503 (VerifierUnavailable), not a
 * failed login.
 *
 * The caller is the user claim (HILT_OIDC_USER_CLAIM); its rights come from the groups claim:
 * the admin group, the auditor group, `<prefix><P>` (a member of P) and `<prefix><P>-readers`
 * (a reader of P), for projects that exist at the time of the call. Such a user needs no record
 * in the database.
 */
import { readFileSync } from 'node:fs';
import type { Agent } from 'undici';
import type { createLocalJWKSet, JSONWebKeySet, JWTPayload } from 'jose';
import type { ReadModel } from '../../actors/readmodel';
import { oidcCaller, type Caller, type OidcGroupNames } from './caller';
import { VerifierUnavailable, type BearerVerifier } from './basic';
import { isName } from '../schemas/common';
import { SERVICE } from '../audit';
import { lazyModule } from '../../lib/lazy';

const undici = lazyModule(() => require('undici') as typeof import('undici'));
const jose = lazyModule(() => require('jose') as typeof import('jose'));

export interface OidcSettings {
  oidcIssuer: string;
  oidcAudience: string;
  oidcJwksUrl?: string;
  oidcCaFile?: string;
  oidcUserClaim: string;
  oidcGroupsClaim: string;
  oidcAdminGroup: string;
  oidcAuditorGroup: string;
  oidcProjectPrefix: string;
}

export interface OidcOptions {
  /** the clock (tests move it) */
  now?: () => number;
  /** keys are fetched again at most this often (default a minute) */
  refetchMs?: number;
  /** keys kept this long are fetched again before a token is checked (default ten minutes) */
  maxAgeMs?: number;
}

const ALGORITHMS = ['RS256', 'ES256'];
const LEEWAY_S = 60;
/** One fetch of the keys, the discovery document and the key set together: every token waits for it. */
const FETCH_TIMEOUT_MS = 5_000;
/** What the issuer may answer, each document (a key set holds a few keys of a few hundred bytes). */
const MAX_BYTES = 1024 * 1024;
/** With no keys at all (the issuer was down), a fetch is tried again sooner. */
const RETRY_EMPTY_MS = 5_000;

class OidcRefusal extends Error {}

export class OidcVerifier implements BearerVerifier {
  private readonly agent: Agent;
  private readonly now: () => number;
  private readonly refetchMs: number;
  private readonly maxAgeMs: number;
  private keys?: ReturnType<typeof createLocalJWKSet>;
  private lastFetch = -Infinity;
  /** when the kept keys were fetched */
  private fetchedAt = -Infinity;
  private fetching?: Promise<void>;
  /** why the last fetch failed (the log says it while there are no keys) */
  private fetchError = '';
  /** fetches of the keys so far (metrics and tests) */
  fetches = 0;
  private readonly names: OidcGroupNames;

  constructor(private readonly s: OidcSettings, private readonly rm: ReadModel, opts: OidcOptions = {}) {
    this.now = opts.now ?? Date.now;
    this.refetchMs = opts.refetchMs ?? 60_000;
    this.maxAgeMs = opts.maxAgeMs ?? 10 * 60_000;
    this.names = { admin: s.oidcAdminGroup, auditor: s.oidcAuditorGroup, projectPrefix: s.oidcProjectPrefix };
    this.agent = new (undici().Agent)({ connect: { ...(s.oidcCaFile ? { ca: readFileSync(s.oidcCaFile) } : {}), timeout: FETCH_TIMEOUT_MS }, headersTimeout: FETCH_TIMEOUT_MS, bodyTimeout: FETCH_TIMEOUT_MS });
  }

  /** The user claim as the token says it, unverified: only the throttle's key. */
  throttleKey(token: string): string | null {
    try {
      const u = jose().decodeJwt(token)[this.s.oidcUserClaim];
      return typeof u === 'string' && u.length <= 255 ? u : null;
    } catch {
      return null;
    }
  }

  async verify(token: string): Promise<Caller> {
    const payload = await this.check(token);
    return this.caller(payload);
  }

  private async check(token: string): Promise<JWTPayload> {
    const opts = {
      issuer: this.s.oidcIssuer, audience: this.s.oidcAudience, algorithms: ALGORITHMS, clockTolerance: LEEWAY_S,
      requiredClaims: ['exp'], currentDate: new Date(this.now()),
    };
    // What is no JWT is refused as it is: it neither waits for nor causes a fetch of the keys.
    try {
      jose().decodeProtectedHeader(token);
      jose().decodeJwt(token);
    } catch {
      throw new OidcRefusal('not a JWT');
    }
    // No keys yet (the issuer down since the start): no token can be checked, which is no
    // token's fault (503, no failed login).
    if (!this.keys) await this.fetchKeys(RETRY_EMPTY_MS).catch(() => false);
    // Kept too long: a key the issuer withdrew must not stay good for as long as no token names
    // an unknown key id. A failed fetch keeps the keys (the issuer down is no reason to refuse).
    else if (this.now() - this.fetchedAt >= this.maxAgeMs) await this.fetchKeys(this.refetchMs).catch(() => false);
    if (!this.keys) throw new VerifierUnavailable(`the issuer's keys could not be fetched: ${this.fetchError}`, RETRY_EMPTY_MS / 1000);
    try {
      return (await jose().jwtVerify(token, this.keys, opts)).payload;
    } catch (err) {
      if (!(err instanceof jose().errors.JWKSNoMatchingKey)) throw err;
      // A key the issuer may have added since: fetched again, at most once a minute.
      if (!(await this.fetchKeys(this.refetchMs))) throw err;
      return (await jose().jwtVerify(token, this.keys, opts)).payload;
    }
  }

  /** Fetch the keys unless they were fetched less than `minMs` ago; true when fetched now. */
  private async fetchKeys(minMs: number): Promise<boolean> {
    if (this.fetching) {
      await this.fetching;
      return true;
    }
    if (this.now() - this.lastFetch < minMs) return false;
    this.lastFetch = this.now();
    this.fetching = (async () => {
      this.fetches++;
      const deadline = AbortSignal.timeout(FETCH_TIMEOUT_MS);
      const url = this.s.oidcJwksUrl ?? (await this.jwksUri(deadline));
      const jwks = await this.getJson(url, deadline) as JSONWebKeySet;
      if (!jwks || !Array.isArray(jwks.keys)) throw new OidcRefusal(`${url} is not a JWK set`);
      this.keys = jose().createLocalJWKSet(jwks);
      this.fetchedAt = this.now();
    })();
    try {
      await this.fetching;
      return true;
    } catch (err) {
      this.fetchError = (err as Error).message;
      throw err;
    } finally {
      this.fetching = undefined;
    }
  }

  private async jwksUri(deadline: AbortSignal): Promise<string> {
    const url = `${this.s.oidcIssuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const doc = await this.getJson(url, deadline) as { issuer?: unknown; jwks_uri?: unknown };
    if (doc?.issuer !== this.s.oidcIssuer) throw new OidcRefusal(`the discovery document names the issuer ${String(doc?.issuer)}, not ${this.s.oidcIssuer}`);
    if (typeof doc.jwks_uri !== 'string' || !doc.jwks_uri.startsWith('https://')) throw new OidcRefusal('the discovery document has no https:// jwks_uri');
    return doc.jwks_uri;
  }

  /** A document of the issuer, read whole by `deadline` and within MAX_BYTES. */
  private async getJson(url: string, deadline: AbortSignal): Promise<unknown> {
    if (!url.startsWith('https://')) throw new OidcRefusal(`${url} is not an https:// URL`);
    try {
      const r = await undici().request(url, { dispatcher: this.agent, headers: { accept: 'application/json' }, maxRedirections: 0, signal: deadline });
      // A body given up (below) still hears the deadline's abort: an error nobody else waits for.
      r.body.on('error', () => undefined);
      if (r.statusCode !== 200) {
        r.body.destroy();
        throw new OidcRefusal(`${url} answered ${r.statusCode}`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of r.body) {
        size += (chunk as Buffer).length;
        if (size > MAX_BYTES) {
          r.body.destroy();
          throw new OidcRefusal(`${url} answered more than ${MAX_BYTES} bytes`);
        }
        chunks.push(chunk as Buffer);
      }
      return JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch (err) {
      if (deadline.aborted) throw new OidcRefusal(`${url} did not answer within ${FETCH_TIMEOUT_MS / 1000} s`);
      if (err instanceof SyntaxError) throw new OidcRefusal(`${url} did not answer JSON`);
      throw err;
    }
  }

  /** The caller a verified token names, with the rights its groups give. */
  private caller(p: JWTPayload): Caller {
    const user = p[this.s.oidcUserClaim];
    if (typeof user !== 'string' || !isName(user)) throw new OidcRefusal(`the token's ${this.s.oidcUserClaim} claim is not a user name`);
    // Its calls would be recorded as the service's own work (the audit log, the event stream).
    if (SERVICE.has(user)) throw new OidcRefusal(`the token's ${this.s.oidcUserClaim} claim names the service itself (${user})`);
    const raw = p[this.s.oidcGroupsClaim];
    const names = this.names;
    // Only the groups that mean something here are kept (with a dashboard session, for its life).
    const groups = (Array.isArray(raw) ? raw : []).filter((g): g is string => typeof g === 'string'
      && (g === names.admin || g === names.auditor || g.startsWith(names.projectPrefix)));
    return oidcCaller(this.rm, user, { kind: 'oidc', expiresAt: (p.exp ?? 0) * 1000 + LEEWAY_S * 1000, groups: [...new Set(groups)], names });
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}
