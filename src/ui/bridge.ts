/**
 * How the dashboard's actions reach the API: the dashboard runs the API's own route in-process
 * (fastify's inject), as its logged-in caller, so an action has exactly the API call's checks,
 * answers and audit trail (`by` is the user). The caller (its rights, e.g. a token's narrower
 * ones) is handed over in memory under a one-time key, which travels in a header after a secret
 * made at each start and never sent anywhere: a request from outside that carries the header
 * without the secret is authenticated as any other, never as the caller it names.
 *
 * The call's path travels the same way: the inject parses its URL, which drops a `.` or `..`
 * segment (even as %2E%2E), and names may be `.` or `..`. The service routes an injected
 * request by the path kept here (`path()`, its rewriteUrl), so an action on a node `..` reaches
 * that node, never the path's parent.
 */
import { randomBytes } from 'node:crypto';
import { sameSecret } from './sessions';
import type { Caller } from '../auth/caller';

export const BRIDGE_HEADER = 'x-hilt-ui-bridge';

export class UiBridge {
  private readonly secret = randomBytes(32).toString('base64url');
  private readonly waiting = new Map<string, { caller: Caller; path: string }>();

  /** The header value that makes one injected request act as `caller` on `path` (see take() and path()). */
  header(caller: Caller, path: string): string {
    const key = randomBytes(16).toString('base64url');
    this.waiting.set(key, { caller, path });
    // Taken at once by the injected request; never left behind.
    setTimeout(() => this.waiting.delete(key), 60_000).unref();
    return `${this.secret}.${key}`;
  }

  /** The caller an injected request acts as, or undefined (no header, or not ours). Each key works once. */
  take(value: string | string[] | undefined): Caller | undefined {
    const key = this.key(value);
    if (key === undefined) return undefined;
    const waiting = this.waiting.get(key);
    this.waiting.delete(key);
    return waiting?.caller;
  }

  /** The path an injected request is for, as the dashboard made it; undefined when not ours. */
  path(value: string | string[] | undefined): string | undefined {
    const key = this.key(value);
    return key === undefined ? undefined : this.waiting.get(key)?.path;
  }

  /** Is this one of the dashboard's own in-process calls (its key taken or not)? */
  carries(value: string | string[] | undefined): boolean {
    return this.key(value) !== undefined;
  }

  private key(value: string | string[] | undefined): string | undefined {
    if (typeof value !== 'string') return undefined;
    const dot = value.indexOf('.');
    if (dot < 0 || !sameSecret(value.slice(0, dot), this.secret)) return undefined;
    return value.slice(dot + 1);
  }
}
