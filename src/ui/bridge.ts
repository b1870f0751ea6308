/**
 * How the dashboard's actions reach the API: the dashboard runs the API's own route in-process
 * (fastify's inject), as its logged-in user, so an action has exactly the API call's checks,
 * answers and audit trail (`by` is the user). The user travels in a header that holds a secret
 * made at each start and never sent anywhere: a request from outside that carries the header
 * without the secret is authenticated as any other (basic), never as the user it names.
 */
import { randomBytes } from 'node:crypto';
import { sameSecret } from './sessions';

export const BRIDGE_HEADER = 'x-hilt-ui-bridge';

export class UiBridge {
  private readonly secret = randomBytes(32).toString('base64url');

  /** The header value that makes an injected request act as `user`. */
  header(user: string): string {
    return `${this.secret}.${Buffer.from(user, 'utf8').toString('base64url')}`;
  }

  /** The user an injected request acts as, or undefined (no header, or not ours). */
  user(value: string | string[] | undefined): string | undefined {
    if (typeof value !== 'string') return undefined;
    const dot = value.indexOf('.');
    if (dot < 0 || !sameSecret(value.slice(0, dot), this.secret)) return undefined;
    return Buffer.from(value.slice(dot + 1), 'base64url').toString('utf8');
  }
}
