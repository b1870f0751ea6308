/**
 * The system-wide audit log (GET /admin/audit, the dashboard's audit page, `hilt admin audit`):
 * every mutation, newest first, read from the actors' journals through the runtime
 * (ActorRuntime.history: the storage engine's time index, or one entity's journal), with
 * secrets redacted.
 *
 * Filters: an object (kind and name) and a time range are served by the index itself; a user is
 * filtered while reading, within a budget of AUDIT_SCAN events per page: a page may then hold
 * fewer entries than asked for and still have a `next` (the caller goes on from there).
 * A cursor is the position of the last event a page examined, so pages never overlap or skip,
 * however many changes are committed between two requests.
 */
import type { RouteWorld } from '../actors/world';
import type { HistoryEntry } from '../actors/runtime';
import type { NetworkAction, NicEvent } from '../actors/nic/protocol';
import type { NodeEvent } from '../actors/node/protocol';
import type { PortEvent } from '../actors/port/protocol';
import type { SwitchEvent } from '../actors/switch/protocol';
import type { ProjectEvent } from '../actors/project/protocol';
import type { NetworkEvent } from '../actors/network/protocol';
import type { UserEvent } from '../actors/user/protocol';
import type { HeadnodeEvent } from '../actors/headnode/protocol';
import { daysInMonth } from '../lib/time';
import type { WebhookEvent } from '../actors/webhook/protocol';
import { badArgument } from './errors';
import { redact } from './redact';
import { splitId } from '../actors/ids';
import { nameProblem, NAME_RULE } from './schemas/common';

/** Kinds whose id joins two names. */
const TWO_NAMES = new Set(['nic', 'port']);

/** Events examined per page at most when filtering by user. */
export const AUDIT_SCAN = 20_000;
export const AUDIT_LIMIT_DEFAULT = 100;
export const AUDIT_LIMIT_MAX = 1000;

export interface AuditQuery {
  kind?: string;
  /** the entity's id (with kind): one name, or `<node>/<nic>` and `<switch>/<port>` */
  name?: string;
  user?: string;
  /** ms since the epoch, inclusive */
  since?: number;
  /** ms since the epoch, exclusive */
  until?: number;
  limit?: number;
  cursor?: string;
  /** events examined per page at most with a user filter (default AUDIT_SCAN; tests make it small) */
  scan?: number;
}

export interface AuditEntry {
  /** ISO 8601 */
  at: string;
  /** who: a user, or the service itself (`switch`: a network operation's outcome, `recovery`, `monitor`, `bootstrap`, `upgrade`, `hilt`: the tenant lifecycle) */
  by: string | null;
  kind: string;
  /** the entity (as in /admin/actors/<kind>/<id>) */
  name: string;
  sequenceNumber: number;
  /** the API call that made the change, in HIL's names; null for the service's own work */
  call: string | null;
  /** what changed: the event, secrets redacted */
  event: Record<string, unknown>;
}

export interface AuditPage {
  entries: AuditEntry[];
  /** give it as `cursor` for the next (older) page; null: nothing older matches */
  next: string | null;
}

/** The service's own work, not a user's call. */
export const SERVICE: ReadonlySet<string> = new Set(['switch', 'recovery', 'monitor', 'bootstrap', 'upgrade', 'hilt']);

/** Every event any actor stores (older formats' included): CALLS must name a call for each. */
type AnyEvent = NodeEvent | NicEvent | PortEvent | SwitchEvent | ProjectEvent | NetworkEvent | UserEvent | HeadnodeEvent | WebhookEvent;

/** The call of HIL's API (or hilt's own) that makes each event. */
const CALLS: Record<AnyEvent['type'], string | null | ((e: Record<string, unknown>) => string)> = {
  ProjectCreated: 'project_create',
  ProjectDeleted: 'project_delete',
  NodeRegistered: 'node_register',
  NodeDeleted: 'node_delete',
  NodeAssigned: 'project_connect_node',
  NodeReleased: 'project_detach_node',
  NodeMetadataSet: 'node_set_metadata',
  NodeMetadataDeleted: 'node_delete_metadata',
  NodeConsoleStarted: 'start_console',
  NodeConsoleStopped: 'stop_console',
  NodeConsoleAttached: 'console_attach',
  NodeLeaseSet: 'node_set_lease',
  NodeLeaseDeleted: 'node_delete_lease',
  NodeLeaseExpired: null,
  ReleasePowerOffSucceeded: null,
  ReleasePowerOffFailed: null,
  MaintenanceNoticeDelivered: null,
  MaintenanceNoticeFailed: null,
  ProjectQuotaSet: 'project_set_quota',
  NicRegistered: 'node_register_nic',
  NicDeleted: 'node_delete_nic',
  NetworkActionQueued: (e) => {
    const a = e.action as NetworkAction | undefined;
    if (a?.type === 'revert_port') return 'port_revert';
    if (a?.type === 'reapply_port') return 'admin_reapply';
    return a?.newNetwork ? 'node_connect_network' : 'node_detach_network';
  },
  NetworkActionDone: null,
  NetworkActionFailed: null,
  NicNetworkForceDetached: 'admin_force_detach',
  PortRegistered: 'port_register',
  PortDeleted: 'port_delete',
  PortWired: 'port_connect_nic',
  PortUnwired: 'port_detach_nic',
  PortConfigured: null,
  PortInDoubt: null,
  PortDoubtCleared: null,
  PortDoubtClearedByHand: 'admin_clear_doubt',
  SwitchRegistered: 'switch_register',
  SwitchDeleted: 'switch_delete',
  SwitchHostKeyRecorded: null,
  SwitchHostKeyCleared: 'switch_forget_host_key',
  NetworkCreated: 'network_create',
  NetworkDeleted: 'network_delete',
  AccessGranted: 'network_grant_project_access',
  AccessRevoked: 'network_revoke_project_access',
  UserCreated: 'user_create',
  UserDeleted: 'user_delete',
  UserJoined: 'user_add_project',
  UserLeft: 'user_remove_project',
  UserAdminSet: 'user_set_admin',
  UserRoleSet: 'user_set_role',
  TokenCreated: 'token_create',
  TokenRevoked: 'token_revoke',
  TokenUsed: null,
  HeadnodeCreated: 'headnode_create',
  HnicCreated: 'headnode_create_hnic',
  HnicDeleted: 'headnode_delete_hnic',
  HnicNetworkConnected: 'headnode_connect_network',
  HnicNetworkDetached: 'headnode_detach_network',
  HeadnodeStartRequested: 'headnode_start',
  HeadnodeStarted: 'headnode_start',
  HeadnodeStartFailed: 'headnode_start',
  HeadnodeStopRequested: 'headnode_stop',
  HeadnodeStopped: 'headnode_stop',
  HeadnodeStopFailed: 'headnode_stop',
  HeadnodeDied: null,
  HeadnodeDeleteRequested: 'headnode_delete',
  HeadnodeDeleteFailed: 'headnode_delete',
  HeadnodeDeleted: 'headnode_delete',
  NodeUpgraded: null,
  SwitchUpgraded: null,
  WebhookCreated: 'webhook_create',
  WebhookDeleted: 'webhook_delete',
  WebhookFailing: null,
  WebhookResumed: 'webhook_resume',
};

/** The call that made an event (null for the service's own work and for unknown events). */
export function callOf(entry: Pick<HistoryEntry, 'by' | 'event'>): string | null {
  if (entry.by !== null && SERVICE.has(entry.by)) return null;
  const c = CALLS[entry.event.type as AnyEvent['type']];
  return typeof c === 'function' ? c(entry.event) : c ?? null;
}

/** A cursor is the position (in the store's one commit order) of the last event a page examined. */
export function encodeCursor(position: number): string {
  return Buffer.from(JSON.stringify([position]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): number {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 1 && Number.isSafeInteger(v[0]) && (v[0] as number) > 0) return v[0] as number;
  } catch {
    // below
  }
  throw badArgument('cursor is not one that a page of the audit log gave');
}

/** Date.parse takes 2026-02-30 for March 2: the day must be one of its month. */
function realDay(v: string): boolean {
  const [y, m, d] = v.slice(0, 10).split('-').map(Number);
  return m >= 1 && m <= 12 && d >= 1 && d <= daysInMonth(y, m);
}

/** An ISO 8601 date-time (or a date) as ms since the epoch, UTC unless it gives an offset; a 400 naming the parameter otherwise. */
export function parseTime(name: string, v: string): number {
  const m = /^\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?)?$/.exec(v);
  // A time without an offset is UTC, as a date alone is (Date.parse would read it in the
  // server's own time zone: the same query would mean another hour on another machine).
  const t = m && realDay(v) ? Date.parse(m[1] !== undefined && m[4] === undefined ? `${v}Z` : v) : NaN;
  if (Number.isNaN(t)) throw badArgument(`${name} must be an ISO 8601 date-time, e.g. 2026-01-31T12:00:00Z`);
  return t;
}

export function auditEntry(e: HistoryEntry): AuditEntry {
  return {
    at: new Date(e.at).toISOString(),
    by: e.by,
    kind: e.kind,
    name: e.id,
    sequenceNumber: e.sequenceNumber,
    call: callOf(e),
    event: redact(e.event) as Record<string, unknown>,
  };
}

/** One page of the audit log. */
export async function auditPage(world: RouteWorld, q: AuditQuery): Promise<AuditPage> {
  if (q.name !== undefined && q.kind === undefined) throw badArgument('name needs kind (e.g. kind=node&name=n1)');
  if (q.kind !== undefined && !world.runtime.registry(q.kind)) throw badArgument(`no kind ${q.kind} (known: ${world.runtime.kindNames().join(', ')})`);
  // A nic's or a port's id holds two names, each bound by the rule (the id may be longer than one).
  if (q.name !== undefined && (TWO_NAMES.has(q.kind!) ? splitId(q.name) : [q.name]).some((n) => nameProblem(n))) {
    throw badArgument(`name ${NAME_RULE}${TWO_NAMES.has(q.kind!) ? ' (each of the two, escaped: <node>/<nic>, <switch>/<port>)' : ''}`);
  }
  const limit = q.limit ?? AUDIT_LIMIT_DEFAULT;
  if (!Number.isInteger(limit) || limit < 1 || limit > AUDIT_LIMIT_MAX) throw badArgument(`limit must be 1 to ${AUDIT_LIMIT_MAX}`);
  const before = q.cursor !== undefined ? decodeCursor(q.cursor) : undefined;
  const scan = q.scan ?? AUDIT_SCAN;
  const entries: AuditEntry[] = [];
  let examined = 0;
  let last: number | undefined;
  let more = false;
  for await (const e of world.runtime.history({ kind: q.kind, id: q.name, since: q.since, until: q.until, before })) {
    // A full page, or the user filter's budget spent: there may be more.
    if (entries.length === limit || (q.user !== undefined && examined === scan)) {
      more = true;
      break;
    }
    examined++;
    last = e.position;
    if (q.user !== undefined && e.by !== q.user) continue;
    entries.push(auditEntry(e));
  }
  return { entries, next: more && last !== undefined ? encodeCursor(last) : null };
}
