/**
 * Who is calling and what they may do (docs/identity.md): the one place where a user's role,
 * memberships and credential (password, API token, OpenID Connect token, dashboard session)
 * become a Caller, and where a Caller's rights are read for one request.
 *
 * The routes check `isAdmin` and `projects` (src/routes/guard.ts). For a read (GET, HEAD) the
 * caller is first widened by what it may read only: an auditor reads as an admin, a reader of P
 * as a member of P. For a change, a read-only caller (an auditor, a read-only token, a user who
 * only reads projects) is refused with 403 before the route runs, and a reader of P changing P
 * is refused with 403 by the guard.
 */
import type { ReadModel } from '../../actors/readmodel';
import type { TokenGrant, UserState } from '../../actors/user/protocol';

/** How the caller proved who it is: enough to derive its rights again from the current state. */
export type Via =
  /** `passwordHash`: the stored hash the password matched (kept in memory only): the user made again, with a new password, is not this caller */
  | { kind: 'password'; passwordHash?: string }
  | { kind: 'token'; id: string }
  /** an OpenID Connect token: its rights come from its groups claim (oidcCaller), until it expires */
  | OidcVia;

/** What an OpenID Connect token's groups mean (HILT_OIDC_ADMIN_GROUP, _AUDITOR_GROUP, _PROJECT_PREFIX). */
export interface OidcGroupNames { admin: string; auditor: string; projectPrefix: string }

export interface OidcVia {
  kind: 'oidc';
  expiresAt: number;
  /** the token's groups that mean something here (verified with the token) */
  groups: readonly string[];
  names: OidcGroupNames;
}

export interface Caller {
  user: string;
  /** may change anything */
  isAdmin: boolean;
  /** projects the caller is a member of: it reads and changes their things */
  projects: readonly string[];
  /** reads everything an admin reads (an auditor; an admin's read-only token) */
  auditor?: boolean;
  /** projects the caller reads only */
  reads?: readonly string[];
  /** changes nothing: 403 on every change */
  readOnly?: boolean;
  via?: Via;
  /** a read's caller (forRead): the caller before it was widened, whose rights a change takes */
  unwidened?: Caller;
}

/** What a user may do with its password (or a dashboard session of it). */
export function userCaller(u: UserState): Caller {
  const readerOf = u.readerOf ?? [];
  const via: Via = { kind: 'password', passwordHash: u.passwordHash };
  if (u.auditor) return { user: u.name, isAdmin: false, projects: [], auditor: true, reads: [...u.projects, ...readerOf], readOnly: true, via };
  return {
    user: u.name, isAdmin: u.isAdmin, projects: u.projects, reads: readerOf,
    // Only reads to its name: nothing it could change.
    readOnly: !u.isAdmin && u.projects.length === 0 && readerOf.length > 0,
    via,
  };
}

/** The user's rights narrowed by one of its tokens: to its project, to reading. */
export function tokenCaller(u: UserState, t: TokenGrant): Caller {
  const base = userCaller(u);
  const via: Via = { kind: 'token', id: t.id };
  if (t.project !== undefined) {
    const member = u.projects.includes(t.project) && !u.auditor;
    const readOnly = t.readOnly || !member;
    return { user: u.name, isAdmin: false, projects: readOnly ? [] : [t.project], reads: readOnly ? [t.project] : [], readOnly, via };
  }
  if (!t.readOnly) return { ...base, via };
  // A read-only token of an admin is an auditor.
  if (u.isAdmin || u.auditor) return { user: u.name, isAdmin: false, projects: [], auditor: true, reads: [], readOnly: true, via };
  return { user: u.name, isAdmin: false, projects: [], reads: [...u.projects, ...(u.readerOf ?? [])], readOnly: true, via };
}

/** When the caller's credentials end by themselves (a token's or an OpenID Connect token's expiry); undefined: never. */
export function expiryOf(rm: ReadModel, c: Caller): number | undefined {
  const via = c.via;
  if (via?.kind === 'oidc') return via.expiresAt;
  if (via?.kind === 'token') return rm.users.get(c.user)?.tokens?.find((t) => t.id === via.id)?.expiresAt;
  return undefined;
}

const READERS = '-readers';

/**
 * An OpenID Connect caller's rights from its token's groups, for the projects that exist now: a
 * group counts only for a project that exists at the time of the call (docs/identity.md), so a
 * caller kept across calls (a dashboard session) is mapped again at each one.
 */
export function oidcCaller(rm: ReadModel, user: string, via: OidcVia): Caller {
  const { groups, names } = via;
  const isAdmin = groups.includes(names.admin);
  const auditor = !isAdmin && groups.includes(names.auditor);
  const projects: string[] = [];
  const reads: string[] = [];
  for (const g of groups) {
    if (!g.startsWith(names.projectPrefix)) continue;
    const rest = g.slice(names.projectPrefix.length);
    // `<P>-readers` names a reader of P when P exists; otherwise the group names a project itself.
    const readOf = rest.endsWith(READERS) ? rest.slice(0, -READERS.length) : undefined;
    if (readOf !== undefined && rm.projects.has(readOf)) reads.push(readOf);
    else if (rm.projects.has(rest)) projects.push(rest);
  }
  const member = auditor ? [] : [...new Set(projects)];
  const read = [...new Set([...reads, ...(auditor ? projects : [])])].filter((r) => !member.includes(r));
  return {
    user, isAdmin, projects: member, reads: read, ...(auditor ? { auditor: true } : {}),
    readOnly: auditor || (!isAdmin && member.length === 0 && read.length > 0),
    via,
  };
}

/**
 * The projects whose creation or deletion changes what an OpenID Connect caller's groups give it
 * (oidcCaller): `<prefix>P` names P; `<prefix>P-readers` names P, and `P-readers` while P is missing.
 */
export function oidcProjectNames(via: OidcVia): string[] {
  const out = new Set<string>();
  for (const g of via.groups) {
    if (!g.startsWith(via.names.projectPrefix)) continue;
    const rest = g.slice(via.names.projectPrefix.length);
    out.add(rest);
    if (rest.endsWith(READERS)) out.add(rest.slice(0, -READERS.length));
  }
  return [...out];
}

const READS = new Set(['GET', 'HEAD']);
export const isRead = (method: string): boolean => READS.has(method);

/**
 * The caller as a read sees it: an auditor as an admin, a reader of P as a member of P. It keeps
 * the caller it widened, so that what a read may change (starting a console's recording, typing
 * on it) is checked on the real rights (callerNow).
 */
export function forRead(c: Caller): Caller {
  if (c.unwidened || (!c.auditor && !c.reads?.length)) return c;
  return { ...c, isAdmin: c.isAdmin || !!c.auditor, projects: c.reads?.length ? [...c.projects, ...c.reads] : c.projects, unwidened: c };
}

/**
 * Is the caller the database user `name` itself? An OpenID Connect caller never is: a user of the
 * database with its name is another identity (docs/identity.md).
 */
export const isUser = (c: Caller, name: string): boolean => c.user === name && c.via?.kind !== 'oidc';

/** Does the caller only read project P (so a change there is a 403, not a 401)? */
export const readsOnly = (c: Caller, project: string): boolean => !c.isAdmin && !c.projects.includes(project) && (!!c.auditor || !!c.reads?.includes(project));

/**
 * The caller as it is now (a call that waited, e.g. for a BMC, is checked again when its turn
 * comes): undefined when its user, its password, its token or its OpenID Connect token is gone. `read`: the
 * rights of a read; else the caller's own, even when `c` is a read's widened caller.
 */
export function callerNow(rm: ReadModel, c: Caller, read = false): Caller | undefined {
  const via = c.via ?? { kind: 'password' };
  let now: Caller | undefined;
  if (via.kind === 'oidc') {
    // Its token's groups, mapped on the projects as they are now.
    now = via.expiresAt > Date.now() ? oidcCaller(rm, c.user, via) : undefined;
  } else {
    const u = rm.users.get(c.user);
    if (!u) return undefined;
    if (via.kind === 'token') {
      const t = u.tokens?.find((g) => g.id === via.id);
      now = t && t.expiresAt > Date.now() ? tokenCaller(u, t) : undefined;
    } else if (via.passwordHash === undefined || via.passwordHash === u.passwordHash) {
      now = userCaller(u);
    }
  }
  return now && read ? forRead(now) : now;
}
