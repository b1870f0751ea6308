/** Authorization and lookup helpers shared by the routes. */
import { notFound, unauthorized } from '../errors';
import type { Caller } from '../auth/basic';

export function isMember(c: Caller, project: string): boolean {
  return c.isAdmin || c.projects.includes(project);
}

export function requireAdmin(c: Caller): void {
  if (!c.isAdmin) throw unauthorized('this call needs administrative access');
}

export function requireProject(c: Caller, project: string): void {
  if (!isMember(c, project)) throw unauthorized(`this call needs access to project ${project}`);
}

/** The committed object, or a 404 naming it. */
export function found<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw notFound(what);
  return value;
}
