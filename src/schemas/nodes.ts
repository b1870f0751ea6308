import { params, body, noBody, noQuery, str, bool } from './common';

/** A metadata value: flat, so that nothing a client stores can be too deep to encode, show or redact. */
const metadataValue = { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] } as const;

export const registerNode = {
  params: params('node'),
  body: body(['obm'], {
    obm: { type: 'object' },
    // Flat label → value pairs, as HIL's node metadata.
    metadata: { type: 'object', maxProperties: 100, additionalProperties: metadataValue },
  }),
  querystring: noQuery,
} as const;
export const deleteNode = { params: params('node'), body: noBody, querystring: noQuery } as const;
export const registerNic = { params: params('node', 'nic'), body: body(['macaddr'], { macaddr: str }), querystring: noQuery } as const;
export const deleteNic = { params: params('node', 'nic'), body: noBody, querystring: noQuery } as const;
export const powerCycle = { params: params('node'), body: body([], { force: bool }), querystring: noQuery } as const;
export const powerOff = { params: params('node'), body: noBody, querystring: noQuery } as const;
export const powerStatus = { params: params('node'), querystring: noQuery } as const;
export const listNodes = {
  params: { type: 'object', required: ['is_free'], properties: { is_free: { type: 'string', enum: ['all', 'free'] } } },
  querystring: noQuery,
} as const;
export const showNode = { params: params('node'), querystring: noQuery } as const;
/** node_set_metadata / node_delete_metadata (docs/api-conventions.md §5), as HIL defined them. */
export const setMetadata = { params: params('node', 'label'), body: body(['value'], { value: metadataValue }), querystring: noQuery } as const;
export const deleteMetadata = { params: params('node', 'label'), body: noBody, querystring: noQuery } as const;
