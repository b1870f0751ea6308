/**
 * How the dashboard's actions reach the API: the dashboard runs the API's own route in-process
 * (fastify's inject), as its logged-in caller, so an action has exactly the API call's checks,
 * answers and audit trail (`by` is the user). The caller (its rights, e.g. a token's narrower
 * ones) is handed over in memory under a one-time key, which travels in a header after a secret
 * made at each start and never sent anywhere: a request from outside that carries the header
 * without the secret is authenticated as any other, never as the caller it names.
 */
import { randomBytes } from 'node:crypto';
import { sameSecret } from './sessions';
import type { Caller } from '../auth/caller';

export const BRIDGE_HEADER = 'x-hilt-ui-bridge';

export class UiBridge {
  private readonly secret = randomBytes(32).toString('base64url');
  private readonly waiting = new Map<string, Caller>();

  /** The header value that makes one injected request act as `caller` (see take()). */
  header(caller: Caller): string {
    const key = randomBytes(16).toString('base64url');
    this.waiting.set(key, caller);
    // Taken at once by the injected request; never left behind.
    setTimeout(() => this.waiting.delete(key), 60_000).unref();
    return `${this.secret}.${key}`;
  }

  /** The caller an injected request acts as, or undefined (no header, or not ours). Each key works once. */
  take(value: string | string[] | undefined): Caller | undefined {
    if (typeof value !== 'string') return undefined;
    const dot = value.indexOf('.');
    if (dot < 0 || !sameSecret(value.slice(0, dot), this.secret)) return undefined;
    const key = value.slice(dot + 1);
    const caller = this.waiting.get(key);
    this.waiting.delete(key);
    return caller;
  }
}
