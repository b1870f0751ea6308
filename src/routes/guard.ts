/** Authorization and lookup helpers shared by the routes (the caller's rights: src/auth/caller.ts). */
import { forbidden, notFound, unauthorized } from '../errors';
import { quote } from '../../lib/text';
import { isName } from '../schemas/common';
import { callerNow, readsOnly, type Caller } from '../auth/caller';
import type { ReadModel } from '../../actors/readmodel';
import type { AskOptions } from '../../actors/behavior';

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
 * The ask of a change authorized through project P: checked again when its turn comes in the
 * actor, since the caller may have left P (or lost its admin flag, its token) while the change
 * waited behind others. A project gone meanwhile is the actor's to answer (404 or 409).
 */
export function stillIn(rm: ReadModel, caller: Caller, project: string): AskOptions {
  return {
    still: () => {
      if (rm.projects.has(project)) requireProject(stillThere(rm, caller), project);
    },
  };
}

/** stillIn for a call on a node: through its project, or (a free node) an admin's call. */
export function stillOn(rm: ReadModel, caller: Caller, project: string | null | undefined): AskOptions {
  if (project) return stillIn(rm, caller, project);
  return { still: () => requireAdmin(stillThere(rm, caller)) };
}

/** The caller's rights as they are now (auth/caller.ts callerNow), or a 401 when its user or token is gone. */
export function stillThere(rm: ReadModel, caller: Caller, read = false): Caller {
  const now = callerNow(rm, caller, read);
  if (!now) throw unauthorized('the caller (its user or its token) no longer exists');
  return now;
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
