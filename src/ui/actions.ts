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
      const channel = typeof b.channel === 'string' && b.channel ? { channel: b.channel } : {};
      return { method: 'POST', url: `${node()}/nic/${enc(str('nic'))}/connect_network`, payload: { network: str('network'), ...channel } };
    }
    case 'detach':
      return { method: 'POST', url: `${node()}/nic/${enc(str('nic'))}/detach_network`, payload: { network: str('network') } };
    case 'power_on':
    case 'power_off':
      return { method: 'POST', url: `${node()}/${b.action}` };
    case 'power_cycle':
      return { method: 'POST', url: `${node()}/power_cycle`, payload: b.force === true ? { force: true } : {} };
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
