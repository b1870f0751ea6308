import { params, body, noBody, noQuery, str, bool, responses, done, names, nameProblem, NAME_RULE } from './common';
import { quote } from '../../lib/text';

/** A metadata value: flat, so that nothing a client stores can be too deep to encode, show or redact. */
const metadataValue = { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] } as const;

/** show_node (docs/api-conventions.md §5); `port` and `switch` only for admins, `metadata` when the node has any. */
const nodeBody = {
  type: 'object',
  required: ['name', 'project', 'nics'],
  properties: {
    name: { type: 'string' },
    project: { type: 'string', nullable: true },
    nics: {
      type: 'array',
      items: {
        type: 'object',
        required: ['label', 'macaddr', 'networks'],
        properties: {
          label: { type: 'string' },
          macaddr: { type: 'string' },
          networks: { type: 'object', description: 'channel → network', additionalProperties: { type: 'string' } },
          port: { type: 'string', nullable: true, description: 'admins only' },
          switch: { type: 'string', nullable: true, description: 'admins only' },
        },
      },
    },
    metadata: { type: 'object', additionalProperties: metadataValue },
  },
} as const;

export const registerNode = {
  params: params('node'),
  body: body(['obm'], {
    obm: { type: 'object' },
    // Flat label → value pairs, as HIL's node metadata.
    // Its keys are labels, names too: checked by metadataLabelsProblem (OpenAPI 3.0 has no propertyNames).
    metadata: { type: 'object', maxProperties: 100, additionalProperties: metadataValue },
  }),
  querystring: noQuery,
  response: responses('change', { 200: done }, 409),
} as const;
export const deleteNode = { params: params('node'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
export const registerNic = { params: params('node', 'nic'), body: body(['macaddr'], { macaddr: str }), querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
export const deleteNic = { params: params('node', 'nic'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
export const powerCycle = { params: params('node'), body: body([], { force: bool }), querystring: noQuery, response: responses('change', { 200: done }, 404, 502) } as const;
export const powerOff = { params: params('node'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404, 502) } as const;
export const powerOn = { params: params('node'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404, 502) } as const;
/** Any string: which devices are valid is checked after authorization (docs/api-conventions.md §3). */
export const setBootDevice = { params: params('node'), body: body(['bootdev'], { bootdev: str }), querystring: noQuery, response: responses('change', { 200: done }, 400, 404, 502) } as const;
export const powerStatus = {
  params: params('node'),
  querystring: noQuery,
  response: responses('read', { 200: { type: 'object', required: ['power_status'], properties: { power_status: { type: 'string', enum: ['on', 'off'] } } } }, 404, 502),
} as const;
export const listNodes = {
  params: { type: 'object', required: ['is_free'], properties: { is_free: { type: 'string', enum: ['all', 'free'] } } },
  querystring: noQuery,
  response: responses('read', { 200: names('Node names') }),
} as const;
export const showNode = { params: params('node'), querystring: noQuery, response: responses('read', { 200: nodeBody }, 404) } as const;
/** node_set_metadata / node_delete_metadata (docs/api-conventions.md §5), as HIL defined them. */
export const setMetadata = { params: params('node', 'label'), body: body(['value'], { value: metadataValue }), querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
export const deleteMetadata = { params: params('node', 'label'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404) } as const;

/** node_register's metadata labels follow the name rule, as the label of node_set_metadata does. */
export function metadataLabelsProblem(body: unknown): string | null {
  const md = (body as { metadata?: unknown } | null)?.metadata;
  if (!md || typeof md !== 'object' || Array.isArray(md)) return null;
  for (const k of Object.keys(md)) if (nameProblem(k)) return `body/metadata label ${quote(k)} ${NAME_RULE}`;
  return null;
}
