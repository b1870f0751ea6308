import { params, noBody, noQuery, str, name } from './common';

export const registerSwitch = {
  params: params('switch'),
  // Driver fields differ per type and are checked after the duplicate check (docs/api-conventions.md §2).
  body: { type: 'object', required: ['type'], properties: { type: str } },
  querystring: noQuery,
} as const;
export const deleteSwitch = { params: params('switch'), body: noBody, querystring: noQuery } as const;
export const listSwitches = { querystring: noQuery } as const;
export const showSwitch = { params: params('switch'), querystring: noQuery } as const;

/** `*` is the rest of the path: port names may contain `/` (docs/api-conventions.md §1). */
const portParams = { type: 'object', required: ['switch', '*'], properties: { switch: name, '*': name } } as const;
export const portNoBody = { params: portParams, body: noBody, querystring: noQuery } as const;
export const showPort = { params: portParams, querystring: noQuery } as const;
/** POST .../connect_nic takes {node, nic}; detach_nic and revert take nothing: checked per action. */
export const portAction = { params: portParams, body: { type: 'object' }, querystring: noQuery } as const;
/**
 * The port wildcard swallows the action segment, so fastify cannot pick a body schema per
 * action; this is connect_nic's {node, nic} schema, checked by hand with the same rules.
 */
export function checkConnectNicBody(b: Record<string, unknown>): string | null {
  for (const k of Object.keys(b)) if (k !== 'node' && k !== 'nic') return `body must NOT have additional property '${k}'`;
  for (const k of ['node', 'nic']) {
    if (!(k in b)) return `body must have required property '${k}'`;
    if (typeof b[k] !== 'string') return `body/${k} must be string`;
  }
  return null;
}
