/**
 * API tokens (docs/identity.md). A token is `hilt_<id>_<secret>`: the id (16 hex digits) names
 * the grant, the secret is 32 random bytes (256 bits, base64url). The user actor keeps the
 * grant with the secret's SHA-256 only (a random 256-bit secret needs no slow hash: nothing can
 * be guessed from it), so checking a token is a map lookup and one hash, compared in constant
 * time. The prefix lets secret scanners recognise a leaked token.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { sha256 } from '../../lib/hash';
import type { TokenGrant } from '../../actors/user/protocol';

export const TOKEN_PREFIX = 'hilt_';
const TOKEN = /^hilt_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export const hashSecret = (secret: string): string => sha256(secret, 'hex');

/** A new token: what the caller is shown once, and what is kept. */
export function newToken(): { id: string; token: string; secretHash: string } {
  const id = randomBytes(8).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  return { id, token: `${TOKEN_PREFIX}${id}_${secret}`, secretHash: hashSecret(secret) };
}

/** Looks like one of ours (else: perhaps an OpenID Connect token). */
export const isHiltToken = (s: string): boolean => s.startsWith(TOKEN_PREFIX);

/** `hilt_<id>_<secret>` → its parts, or null when malformed. */
export function parseToken(s: string): { id: string; secret: string } | null {
  const m = TOKEN.exec(s);
  return m ? { id: m[1], secret: m[2] } : null;
}

/** Is `secret` the grant's? In time independent of where they differ. */
export function secretMatches(grant: TokenGrant, secret: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(grant.secretHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** How often a token's use is written to its user's journal at most: the listing shows uses in memory at once. */
export const USE_RECORD_MS = 5 * 60_000;

/**
 * When each token was last used. Every use is remembered in memory (the listing shows it); one
 * every USE_RECORD_MS per token is recorded by the user actor, so that "last used" survives a
 * restart without a write per request.
 */
export class TokenUses {
  private readonly seen = new Map<string, number>();
  private readonly recorded = new Map<string, number>();

  constructor(private readonly record: (user: string, id: string, at: number) => void) {}

  used(user: string, grant: TokenGrant, at = Date.now()): void {
    this.seen.set(grant.id, at);
    const last = Math.max(this.recorded.get(grant.id) ?? 0, grant.lastUsedAt ?? 0);
    if (at - last < USE_RECORD_MS) return;
    this.recorded.set(grant.id, at);
    this.record(user, grant.id, at);
  }

  lastUsed(grant: TokenGrant): number | undefined {
    const m = this.seen.get(grant.id);
    return m === undefined ? grant.lastUsedAt : Math.max(m, grant.lastUsedAt ?? 0);
  }

  forget(id: string): void {
    this.seen.delete(id);
    this.recorded.delete(id);
  }
}
