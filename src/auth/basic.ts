/**
 * HTTP basic authentication against the users of the database backend.
 *
 * scrypt costs tens of milliseconds by design, so a credential that verified once is
 * remembered: the cache maps a SHA-256 of the Authorization header (never the header itself)
 * to the user and the stored hash it matched. An entry counts only while the user still has
 * exactly that hash, so deleting or re-creating a user invalidates it at once.
 */
import { createHash } from 'node:crypto';
import { ReadModel } from '../../actors/readmodel';
import { unauthorized } from '../errors';
import { verifyPassword } from './password';

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

export class Authenticator {
  private readonly cache = new Map<string, { user: string; hash: string }>();

  constructor(private readonly rm: ReadModel) {}

  async authenticate(header: string | undefined): Promise<Caller> {
    const digest = header ? createHash('sha256').update(header).digest('base64') : '';
    const hit = digest ? this.cache.get(digest) : undefined;
    if (hit) {
      const u = this.rm.users.get(hit.user);
      if (u && u.passwordHash === hit.hash) return { user: u.name, isAdmin: u.isAdmin, projects: u.projects };
      this.cache.delete(digest);
    }
    const cred = parseBasic(header);
    if (!cred) throw unauthorized('authentication required (HTTP basic)');
    const u = this.rm.users.get(cred.user);
    if (!u || !(await verifyPassword(cred.password, u.passwordHash))) throw unauthorized('invalid username or password');
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(digest, { user: u.name, hash: u.passwordHash });
    const now = this.rm.users.get(u.name) ?? u;
    return { user: now.name, isAdmin: now.isAdmin, projects: now.projects };
  }
}
