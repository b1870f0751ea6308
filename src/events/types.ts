/**
 * The public form of a committed change (docs/events.md): one stored event → one stream event
 * `{id, at, by, kind, name, type, project, data}`. `id` is the event's position in the store's
 * one commit order (opaque to clients, strictly increasing); `type` a stable dotted name.
 */
import type { HistoryEntry } from '../../actors/runtime';
import type { NodeEvent } from '../../actors/node/protocol';
import type { NicEvent } from '../../actors/nic/protocol';
import type { PortEvent } from '../../actors/port/protocol';
import type { SwitchEvent } from '../../actors/switch/protocol';
import type { ProjectEvent } from '../../actors/project/protocol';
import type { NetworkEvent } from '../../actors/network/protocol';
import type { UserEvent } from '../../actors/user/protocol';
import type { HeadnodeEvent } from '../../actors/headnode/protocol';
import type { WebhookEvent } from '../../actors/webhook/protocol';
import { redactedCopy } from '../redact';
import { SERVICE } from '../audit';
import { MEMBERS_ERROR } from '../routes/operation-access';

export interface StreamEvent {
  id: string;
  /** RFC 3339 with milliseconds */
  at: string;
  /** the user who made the change, or `hilt` for the service's own work */
  by: string;
  kind: string;
  name: string;
  type: string;
  /** the project it concerns, where one applies */
  project: string | null;
  data: Record<string, unknown>;
}

type StoredType = (NodeEvent | NicEvent | PortEvent | SwitchEvent | ProjectEvent | NetworkEvent | UserEvent | HeadnodeEvent | WebhookEvent)['type'];

/**
 * The dotted name of each stored event type of today's kinds (the compiler keeps it complete).
 * A kind's first-format events and events of kinds added later get `<kind>.<snake_case>`.
 */
export const EVENT_TYPES: Record<StoredType, string> = {
  ProjectCreated: 'project.created',
  ProjectDeleted: 'project.deleted',
  NodeRegistered: 'node.registered',
  NodeDeleted: 'node.deleted',
  NodeAssigned: 'project.node_added',
  NodeReleased: 'project.node_removed',
  NodeMetadataSet: 'node.metadata_set',
  NodeMetadataDeleted: 'node.metadata_deleted',
  NodeUpgraded: 'node.upgraded',
  NodeLeaseSet: 'lease.set',
  NodeLeaseDeleted: 'lease.deleted',
  NodeLeaseExpired: 'lease.expired',
  ReleasePowerOffSucceeded: 'node.release_powered_off',
  ReleasePowerOffFailed: 'node.release_power_off_failed',
  MaintenanceNoticeDelivered: 'node.maintenance_notice_delivered',
  MaintenanceNoticeFailed: 'node.maintenance_notice_failed',
  ProjectQuotaSet: 'project.quota_set',
  NicRegistered: 'nic.registered',
  NicDeleted: 'nic.deleted',
  NetworkActionQueued: 'networking_action.accepted',
  NetworkActionDone: 'networking_action.finished',
  NetworkActionFailed: 'networking_action.finished',
  NicNetworkForceDetached: 'nic.network_detached',
  PortRegistered: 'port.registered',
  PortDeleted: 'port.deleted',
  PortWired: 'port.nic_connected',
  PortUnwired: 'port.nic_detached',
  PortConfigured: 'port.configured',
  PortInDoubt: 'port.in_doubt',
  PortDoubtCleared: 'port.doubt_cleared',
  PortDoubtClearedByHand: 'port.doubt_cleared_by_hand',
  SwitchRegistered: 'switch.registered',
  SwitchDeleted: 'switch.deleted',
  SwitchHostKeyRecorded: 'switch.host_key_recorded',
  SwitchHostKeyCleared: 'switch.host_key_cleared',
  SwitchUpgraded: 'switch.upgraded',
  NetworkCreated: 'network.created',
  NetworkDeleted: 'network.deleted',
  AccessGranted: 'network.access_granted',
  AccessRevoked: 'network.access_revoked',
  UserCreated: 'user.created',
  UserDeleted: 'user.deleted',
  UserAdminSet: 'user.admin_set',
  UserRoleSet: 'user.role_set',
  TokenCreated: 'user.token_created',
  TokenRevoked: 'user.token_revoked',
  TokenUsed: 'user.token_used',
  NodeConsoleStarted: 'node.console_started',
  NodeConsoleStopped: 'node.console_stopped',
  NodeConsoleAttached: 'node.console_attached',
  UserJoined: 'project.user_added',
  UserLeft: 'project.user_removed',
  HeadnodeCreated: 'headnode.created',
  HnicCreated: 'headnode.hnic_created',
  HnicDeleted: 'headnode.hnic_deleted',
  HnicNetworkConnected: 'headnode.network_attached',
  HnicNetworkDetached: 'headnode.network_detached',
  HeadnodeStartRequested: 'headnode.start_requested',
  HeadnodeStarted: 'headnode.started',
  HeadnodeStartFailed: 'headnode.start_failed',
  HeadnodeStopRequested: 'headnode.stop_requested',
  HeadnodeStopped: 'headnode.stopped',
  HeadnodeStopFailed: 'headnode.stop_failed',
  HeadnodeDied: 'headnode.died',
  HeadnodeDeleteRequested: 'headnode.delete_requested',
  HeadnodeDeleteFailed: 'headnode.delete_failed',
  HeadnodeDeleted: 'headnode.deleted',
  WebhookCreated: 'webhook.created',
  WebhookDeleted: 'webhook.deleted',
  WebhookFailing: 'webhook.failing',
  WebhookResumed: 'webhook.resumed',
};

const NAMES = new Set(Object.values(EVENT_TYPES));
const PREFIXES = new Set([...NAMES].map((t) => t.split('.')[0]));

/**
 * Whether a type filter (`?type=`, a webhook's `types`) names a type events have: a name of the
 * table, or `<prefix>.*` of one. Anything else would match nothing, silently (a typo).
 */
export function knownTypeFilter(t: string): boolean {
  return NAMES.has(t) || (t.endsWith('.*') && PREFIXES.has(t.slice(0, -2)));
}

/** `NodeMetadataSet` of kind node → `node.metadata_set`; the kind's own name is dropped from the front. */
export function typeName(kind: string, type: string): string {
  const known = (EVENT_TYPES as Record<string, string>)[type];
  if (known) return known;
  const words = type.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase().split('_');
  if (words[0] === kind && words.length > 1) words.shift();
  return `${kind}.${words.join('_')}`;
}

/** Projects an event concerns, for events stored before the runtime recorded them (by their own fields). */
function oldProjects(e: HistoryEntry): string[] {
  if (e.kind === 'project') return [e.id];
  const p = e.event.project ?? (e.event.type === 'NetworkCreated' ? e.event.owner : undefined);
  return typeof p === 'string' && p && p !== 'admin' ? [p] : [];
}

/** The projects whose members may see the event (admins see every event). */
export function projectsOf(e: HistoryEntry): string[] {
  return e.about?.projects ?? oldProjects(e);
}

/** The last second formatted by isoTime, and its text up to the milliseconds. */
let second = NaN;
let secondText = '';

/**
 * `new Date(ms).toISOString()`, the second's part made once per second: each event streamed
 * has its time formatted, and events come many to a second.
 */
export function isoTime(ms: number): string {
  // Whole milliseconds of years 1970–9999 only (toISOString's text has another shape outside them).
  if (!Number.isInteger(ms) || ms < 0 || ms >= 253402300800000) return new Date(ms).toISOString();
  const s = Math.floor(ms / 1000);
  if (s !== second) {
    second = s;
    secondText = new Date(s * 1000).toISOString().slice(0, 20);
  }
  const milli = ms - s * 1000;
  return `${secondText}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}

/** The stored event (as the runtime reads it back) in its public form: secrets redacted. */
export function streamEvent(e: HistoryEntry): StreamEvent {
  const data = redactedCopy(e.event, 'type');
  if (e.about?.operation) data.operation = e.about.operation;
  return {
    id: String(e.position),
    at: isoTime(e.at),
    by: e.by === null || SERVICE.has(e.by) ? 'hilt' : e.by,
    kind: e.kind,
    name: e.id,
    type: typeName(e.kind, e.event.type),
    project: projectsOf(e)[0] ?? null,
    data,
  };
}

/** A failed release power-off's reason as a project's members read it (membersEvent). */
export const RELEASE_POWER_OFF_MEMBERS_ERROR = 'the power-off after the node\'s release failed; an administrator can read why in GET /admin/nodes/attention';

/**
 * The event as a project's members read it, where that differs (undefined: it does not): a
 * network operation's events without the switch and port it goes through, nor the switch's own
 * words of a failure (src/routes/operation-access.ts, errorFor), nor a BMC's words of a failed
 * release power-off. Admins read it whole.
 */
export function membersEvent(e: StreamEvent): StreamEvent | undefined {
  // A release power-off's failure is the BMC's own words, its address and user in them: members
  // (the next tenant, the maintenance pool's service) read that it failed (docs/api-conventions.md §11).
  if (e.kind === 'node' && e.type === EVENT_TYPES.ReleasePowerOffFailed && e.data.error !== undefined) {
    return { ...e, data: { ...e.data, error: RELEASE_POWER_OFF_MEMBERS_ERROR } };
  }
  if (e.kind !== 'nic') return undefined;
  const { action, error, operation } = e.data as { action?: Record<string, unknown>; error?: unknown; operation?: Record<string, unknown> };
  const wired = !!action && typeof action === 'object' && ('switch' in action || 'port' in action || 'error' in action);
  const failed = error !== undefined || (!!operation && typeof operation === 'object' && operation.error !== undefined);
  if (!wired && !failed) return undefined;
  const data = { ...e.data };
  if (wired) {
    const { switch: _sw, port: _port, error: why, ...rest } = action!;
    data.action = why === undefined ? rest : { ...rest, error: MEMBERS_ERROR };
  }
  if (error !== undefined) data.error = MEMBERS_ERROR;
  if (operation && typeof operation === 'object' && operation.error !== undefined) data.operation = { ...operation, error: MEMBERS_ERROR };
  return { ...e, data };
}
