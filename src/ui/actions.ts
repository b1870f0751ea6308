/**
 * The dashboard's actions where the eye is (issue 26): each one call of the API, run as the
 * session's user through the bridge (src/routes/ui.ts), so the API's own rules decide who may
 * do it: reserve and release a node, connect and detach a network, power and boot device, start
 * a node's console recording, port revert, an admin's clear of a port's doubt, drift repair of a switch, and the registration
 * forms. The dashboard offers each only to whom the API would allow it; the API refuses the
 * rest all the same.
 */
import { badArgument } from '../errors';

export interface BridgeCall { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; url: string; payload?: object }

/**
 * A name as one segment of the API call's path. A string that is not Unicode text (a lone
 * surrogate, which JSON lets a body carry) has no percent-encoding: a 400, as the API answers
 * such a path.
 */
export function enc(name: string): string {
  try {
    return encodeURIComponent(name);
  } catch {
    throw badArgument('a name in the action is not valid Unicode text');
  }
}

/**
 * The fields each action takes besides `action` (src/routes/ui.ts runs the first six). A body
 * with another field is a 400, as an API body with an unknown key is (docs/api-conventions.md,
 * Bodies): a field the page misnamed or mistyped must not be dropped while the rest is done.
 */
const FIELDS: Record<string, readonly string[]> = {
  reapply: ['node', 'nic'], force_detach: ['node', 'nic', 'network'], drift: ['switch'], wiring: ['switch'],
  token_create: ['expires_in', 'description', 'read_only', 'project'], token_revoke: ['id'],
  reserve: ['node', 'project'], release: ['node', 'project'],
  connect: ['node', 'nic', 'network', 'channel'], detach: ['node', 'nic', 'network'],
  power_on: ['node'], power_off: ['node'], power_cycle: ['node', 'force'], boot_device: ['node', 'bootdev'], console_start: ['node'],
  revert: ['switch', 'port'], repair: ['switch'], clear_doubt: ['switch', 'port'],
  register_node: ['node', 'obm'], register_nic: ['node', 'nic', 'macaddr'], register_switch: ['switch', 'type', 'fields'],
  register_port: ['switch', 'port'], wire: ['switch', 'port', 'node', 'nic'],
};

/** The names of the actions, for the message of an unknown one. */
export const ACTIONS = Object.keys(FIELDS);

/** A 400 for an unknown action, a field the action does not take, or an optional field of the wrong type. */
export function checkAction(b: Record<string, unknown>): void {
  const fields = typeof b.action === 'string' && Object.hasOwn(FIELDS, b.action) ? FIELDS[b.action] : undefined;
  if (!fields) throw badArgument(`unknown action (${ACTIONS.join(', ')})`);
  for (const k of Object.keys(b)) if (k !== 'action' && !fields.includes(k)) throw badArgument(`action ${b.action} takes no field ${JSON.stringify(k.slice(0, 64))}`);
  if (b.channel !== undefined && (typeof b.channel !== 'string' || !b.channel)) throw badArgument('channel must be a channel\'s name, e.g. vlan/native');
  if (b.force !== undefined && typeof b.force !== 'boolean') throw badArgument('force must be true or false');
}

/** The call of an action, or undefined when it is not one of these. */
export function dashboardAction(b: Record<string, unknown>): BridgeCall | undefined {
  const str = (k: string) => {
    if (typeof b[k] !== 'string' || !b[k]) throw badArgument(`${k} is missing`);
    return b[k] as string;
  };
  const node = () => `/node/${enc(str('node'))}`;
  const port = () => `/switch/${enc(str('switch'))}/port/${enc(str('port'))}`;
  switch (b.action) {
    case 'reserve':
      return { method: 'POST', url: `/project/${enc(str('project'))}/connect_node`, payload: { node: str('node') } };
    case 'release':
      return { method: 'POST', url: `/project/${enc(str('project'))}/detach_node`, payload: { node: str('node') } };
    case 'connect': {
      const channel = b.channel !== undefined ? { channel: b.channel } : {};
      return { method: 'POST', url: `${node()}/nic/${enc(str('nic'))}/connect_network`, payload: { network: str('network'), ...channel } };
    }
    case 'detach':
      return { method: 'POST', url: `${node()}/nic/${enc(str('nic'))}/detach_network`, payload: { network: str('network') } };
    case 'power_on':
    case 'power_off':
      return { method: 'POST', url: `${node()}/${b.action}` };
    case 'power_cycle':
      return { method: 'POST', url: `${node()}/power_cycle`, payload: b.force !== undefined ? { force: b.force } : {} };
    case 'boot_device':
      return { method: 'PUT', url: `${node()}/boot_device`, payload: { bootdev: str('bootdev') } };
    case 'console_start':
      // The console view's "Start recording" (its stream never starts it): start_console.
      return { method: 'PUT', url: `${node()}/console` };
    case 'revert':
      return { method: 'POST', url: `${port()}/revert` };
    case 'repair':
      return { method: 'POST', url: `/admin/switch/${enc(str('switch'))}/repair` };
    case 'clear_doubt':
      // A port in doubt on a switch gone for good (the Lifecycle view's attention list).
      return { method: 'POST', url: `/admin${port()}/clear_doubt` };
    case 'register_node': {
      const obm = b.obm;
      if (!obm || typeof obm !== 'object' || Array.isArray(obm)) throw badArgument('obm is missing');
      return { method: 'PUT', url: node(), payload: { obm } };
    }
    case 'register_nic':
      return { method: 'PUT', url: `${node()}/nic/${enc(str('nic'))}`, payload: { macaddr: str('macaddr') } };
    case 'register_switch': {
      const fields = b.fields;
      if (!fields || typeof fields !== 'object' || Array.isArray(fields)) throw badArgument('fields is missing');
      // The type is the action's own field: one inside `fields` would override it.
      if (Object.hasOwn(fields, 'type')) throw badArgument('fields must not hold type: give it as the action\'s type');
      return { method: 'PUT', url: `/switch/${enc(str('switch'))}`, payload: { type: str('type'), ...(fields as object) } };
    }
    case 'register_port':
      return { method: 'PUT', url: port() };
    case 'wire':
      return { method: 'POST', url: `${port()}/connect_nic`, payload: { node: str('node'), nic: str('nic') } };
    default:
      return undefined;
  }
}
