import { params, noBody, noQuery, str, name, responses, done, queued, names } from './common';
import { quote } from '../../lib/text';
import { SWITCH_DRIVERS } from '../../drivers/switch';

export const registerSwitch = {
  params: params('switch'),
  // Driver fields differ per type and are checked after the duplicate check (docs/api-conventions.md §2).
  body: {
    type: 'object', required: ['type'],
    properties: { type: { ...str, description: `the switch's type identifier, with the fields of that type beside it (the README's Switches section); the built-in types: ${SWITCH_DRIVERS.map((e) => e.type).join(', ')}` } },
  },
  querystring: noQuery,
  response: responses('change', { 200: done }, 409),
} as const;
export const deleteSwitch = { params: params('switch'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
/** DELETE /switch/<switch>/host_key: forget an SSH switch's recorded host key (idempotent). */
export const forgetHostKey = { params: params('switch'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404) } as const;
export const listSwitches = { querystring: noQuery, response: responses('read', { 200: names('Every switch') }) } as const;
export const showSwitch = {
  params: params('switch'),
  querystring: noQuery,
  response: responses('read', {
    200: {
      type: 'object',
      required: ['name', 'ports'],
      properties: {
        name: { type: 'string' },
        ports: { type: 'array', items: { type: 'string' } },
        host_key: { type: 'string', nullable: true, description: 'an SSH switch only: the fingerprint of its host key (SHA256:…), null until the first login records it' },
      },
    },
  }, 404),
} as const;

/** `*` is the rest of the path: port names may contain `/` (docs/api-conventions.md §1). */
const portParams = { type: 'object', required: ['switch', '*'], properties: { switch: name, '*': name } } as const;
/** `<port>/<action>`: the port name is checked by hand once the action is split off (the route's preValidation). */
const portActionParams = {
  type: 'object', required: ['switch', '*'],
  properties: { switch: name, '*': { type: 'string', minLength: 1, maxLength: 1024, description: '<port>/connect_nic, <port>/detach_nic or <port>/revert' } },
} as const;
/** register and delete */
export const portNoBody = { params: portParams, body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
export const showPort = {
  params: portParams,
  querystring: noQuery,
  response: responses('read', {
    200: {
      type: 'object',
      description: 'The wired nic and its networks; {} for an unwired port',
      properties: { node: { type: 'string' }, nic: { type: 'string' }, networks: { type: 'object', additionalProperties: { type: 'string' } } },
    },
  }, 404),
} as const;
/** POST .../connect_nic takes {node, nic}; detach_nic and revert take nothing: checked per action. */
export const portAction = {
  params: portActionParams,
  body: { type: 'object', description: 'connect_nic: {node, nic}; detach_nic and revert: none' },
  querystring: noQuery,
  response: responses('change', { 200: done, 202: queued }, 404, 409),
} as const;
/**
 * The port wildcard swallows the action segment, so fastify cannot pick a body schema per
 * action; this is connect_nic's {node, nic} schema, checked by hand with the same rules.
 */
export function checkConnectNicBody(b: Record<string, unknown>): string | null {
  for (const k of Object.keys(b)) if (k !== 'node' && k !== 'nic') return `body must NOT have additional property ${quote(k)}`;
  for (const k of ['node', 'nic']) {
    if (!(k in b)) return `body must have required property '${k}'`;
    // Looked up as given: a name that cannot exist is a 404 (routes/switches.ts).
    if (typeof b[k] !== 'string') return `body/${k} must be string`;
  }
  return null;
}
