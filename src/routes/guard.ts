/** Authorization and lookup helpers shared by the routes (the caller's rights: src/auth/caller.ts). */
import { forbidden, notFound, unauthorized } from '../errors';
import { quote } from '../../lib/text';
import { isName } from '../schemas/common';
import { readsOnly, type Caller } from '../auth/caller';

export function isMember(c: Caller, project: string): boolean {
  return c.isAdmin || c.projects.includes(project);
}

export function requireAdmin(c: Caller): void {
  if (!c.isAdmin) throw unauthorized('this call needs administrative access');
}

export function requireProject(c: Caller, project: string): void {
  if (isMember(c, project)) return;
  // A reader asking to change: it is known, and may only read.
  if (readsOnly(c, project)) throw forbidden(`read-only access to project ${project}: this call changes it`);
  throw unauthorized(`this call needs access to project ${project}`);
}

/**
 * A name a body gives for an existing object (schemas/common.ts, lookupName): one that cannot be
 * a name of anything is an unknown object, a 404 quoting a prefix of it. Checked before the name
 * reaches an actor (an actor's key is built from it).
 */
export function lookedUp(kind: string, name: string): string {
  if (!isName(name)) throw notFound(`${kind} ${quote(name)}`);
  return name;
}

/** The committed object, or a 404 naming it. */
export function found<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw notFound(what);
  return value;
}
