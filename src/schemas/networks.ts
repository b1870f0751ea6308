import { params, body, noBody, noQuery, str, name } from './common';

export const createNetwork = {
  params: params('network'),
  body: body(['owner', 'access', 'net_id'], { owner: str, access: str, net_id: str }),
  querystring: noQuery,
} as const;
export const deleteNetwork = { params: params('network'), body: noBody, querystring: noQuery } as const;
export const showNetwork = { params: params('network'), querystring: noQuery } as const;
export const listNetworks = { querystring: noQuery } as const;
export const attachments = {
  params: params('network'),
  querystring: { type: 'object', additionalProperties: false, properties: { project: name } },
} as const;
export const access = { params: params('network', 'project'), body: noBody, querystring: noQuery } as const;
