import { params, body, noBody, noQuery, str, bool } from './common';

export const registerNode = {
  params: params('node'),
  body: body(['obm'], {
    obm: { type: 'object' },
    // Flat label → value pairs, as HIL's node metadata; nesting is refused so that nothing a
    // client stores can be too deep to encode, show or redact.
    metadata: { type: 'object', maxProperties: 100, additionalProperties: { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] } },
  }),
  querystring: noQuery,
} as const;
export const deleteNode = { params: params('node'), body: noBody, querystring: noQuery } as const;
export const registerNic = { params: params('node', 'nic'), body: body(['macaddr'], { macaddr: str }), querystring: noQuery } as const;
export const deleteNic = { params: params('node', 'nic'), body: noBody, querystring: noQuery } as const;
export const powerCycle = { params: params('node'), body: body([], { force: bool }), querystring: noQuery } as const;
export const powerOff = { params: params('node'), body: noBody, querystring: noQuery } as const;
export const powerOn = { params: params('node'), body: noBody, querystring: noQuery } as const;
/** Any string: which devices are valid is checked after authorization (docs/api-conventions.md §3). */
export const setBootDevice = { params: params('node'), body: body(['bootdev'], { bootdev: str }), querystring: noQuery } as const;
export const powerStatus = { params: params('node'), querystring: noQuery } as const;
export const listNodes = {
  params: { type: 'object', required: ['is_free'], properties: { is_free: { type: 'string', enum: ['all', 'free'] } } },
  querystring: noQuery,
} as const;
export const showNode = { params: params('node'), querystring: noQuery } as const;
