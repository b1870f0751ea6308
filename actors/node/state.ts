/**
 * A node's state from its events: the pure apply that a live actor, a rebuild and a checkpoint's
 * replay share. What this module and its imports compile to names the checkpoint's build
 * (actors/checkpoint.ts): keep it free of anything but the state's derivation.
 */
import { assertNever, type Stamp } from '../behavior';
import { upcastObm, type MetadataValue, type NodeEvent, type NodeState } from './protocol';

/**
 * The node's metadata with one label set or removed. Built with defineProperty-like semantics
 * (Object.fromEntries), so a label such as `__proto__` is an ordinary own key.
 */
function withLabel(metadata: Record<string, unknown> | undefined, label: string, value?: MetadataValue): Record<string, unknown> {
  const entries = Object.entries(metadata ?? {}).filter(([k]) => k !== label);
  if (value !== undefined) entries.push([label, value]);
  return Object.fromEntries(entries);
}

/** The state without the given optional keys (a state object never holds a key set to undefined). */
function without(state: NodeState, ...keys: ('lease' | 'releasePowerOff' | 'maintenance' | 'console')[]): NodeState {
  const out = { ...state };
  for (const k of keys) delete out[k];
  return out;
}

/**
 * After a release: the next holder (the maintenance pool, or none), no lease, no console
 * recording (its log is deleted: hardware/consoles.ts), and what is due now.
 */
function released(state: NodeState, e: Extract<NodeEvent, { type: 'NodeReleased' }>, at: number): NodeState {
  const next: NodeState = { ...without(state, 'lease', 'maintenance', 'console'), project: e.into ?? null };
  if (e.powerOff) next.releasePowerOff = { status: 'pending', since: at };
  if (e.into) next.maintenance = { from: e.project, since: at, attempts: 0 };
  return next;
}

export function applyNode(state: NodeState | null, e: NodeEvent & Stamp, id: string): NodeState | null {
  switch (e.type) {
    case 'NodeRegistered':
      return { name: id, incarnation: e.incarnation, project: null, obm: upcastObm(e.obm), ...(e.metadata ? { metadata: e.metadata } : {}) };
    case 'NodeDeleted':
      return null;
    // A change of hands ends the console's recording (its log is deleted: hardware/consoles.ts).
    case 'NodeAssigned':
      return state && { ...without(state, 'console'), project: e.project };
    case 'NodeReleased':
      return state && released(state, e, e.at ?? 0);
    case 'NodeMetadataSet':
      return state && { ...state, metadata: withLabel(state.metadata, e.label, e.value) };
    case 'NodeMetadataDeleted':
      return state && { ...state, metadata: withLabel(state.metadata, e.label) };
    case 'NodeConsoleStarted':
      return state && { ...state, console: { by: e.by ?? 'unknown', since: e.at ?? 0 } };
    case 'NodeConsoleStopped':
      return state && without(state, 'console');
    case 'NodeConsoleAttached':
      return state;
    case 'NodeLeaseSet':
      return state && { ...state, lease: { project: e.project, expiresAt: e.expiresAt } };
    case 'NodeLeaseDeleted':
      return state && without(state, 'lease');
    case 'NodeLeaseExpired':
      return state?.lease?.expiresAt === e.expiresAt ? { ...state, lease: { ...state.lease, expired: true } } : state;
    case 'ReleasePowerOffSucceeded':
      return state?.releasePowerOff && (e.since === undefined || state.releasePowerOff.since === e.since) ? without(state, 'releasePowerOff') : state;
    case 'ReleasePowerOffFailed':
      return state?.releasePowerOff?.since === e.since ? { ...state, releasePowerOff: { status: 'failed', since: e.since, error: e.error } } : state;
    case 'MaintenanceNoticeDelivered':
      return state?.maintenance?.since === e.since ? { ...state, maintenance: { ...state.maintenance, deliveredAt: e.at ?? 0 } } : state;
    case 'MaintenanceNoticeFailed':
      return state?.maintenance?.since === e.since
        ? { ...state, maintenance: { ...state.maintenance, attempts: state.maintenance.attempts + 1, lastError: e.error, lastAttemptAt: e.at ?? 0 } }
        : state;
    case 'NodeUpgraded':
      return e.state;
    // The first data format's nic events: the nic actors hold those facts now.
    case 'NicRegistered':
    case 'NicDeleted':
    case 'NetworkActionQueued':
    case 'NetworkActionDone':
    case 'NetworkActionFailed':
    case 'NicNetworkForceDetached':
      return state;
    default:
      return assertNever(e);
  }
}
