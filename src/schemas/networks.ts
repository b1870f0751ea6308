import { params, body, noBody, noQuery, name, str, responses, done, lookupName } from './common';

export const createNetwork = {
  params: params('network'),
  // net_id's value is checked in the call's chain, after the name and authorization (docs/api-conventions.md §7).
  body: body(['owner', 'access', 'net_id'], { owner: lookupName, access: lookupName, net_id: str }),
  querystring: noQuery,
  response: responses('change', { 200: done }, 404, 409),
} as const;
export const deleteNetwork = { params: params('network'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
export const showNetwork = {
  params: params('network'),
  querystring: noQuery,
  response: responses('read', {
    200: {
      type: 'object',
      description: 'show_network (docs/api-conventions.md §7)',
      required: ['name', 'channels', 'owner', 'access', 'connected-nodes'],
      properties: {
        name: { type: 'string' },
        channels: { type: 'array', items: { type: 'string' } },
        owner: { type: 'string', description: 'the owning project, or "admin"' },
        access: { type: 'array', items: { type: 'string' }, nullable: true, description: 'null for a public network' },
        'connected-nodes': { type: 'object', description: 'node → its nics on the network (the nodes the caller may see)', additionalProperties: { type: 'array', items: { type: 'string' } } },
      },
    },
  }, 404),
} as const;
export const listNetworks = {
  querystring: noQuery,
  response: responses('read', {
    200: {
      type: 'object',
      description: 'network → its id and access list',
      additionalProperties: {
        type: 'object',
        required: ['network_id', 'projects'],
        properties: { network_id: { type: 'string' }, projects: { type: 'array', items: { type: 'string' }, nullable: true } },
      },
    },
  }),
} as const;
export const attachments = {
  params: params('network'),
  querystring: { type: 'object', additionalProperties: false, properties: { project: name } },
  response: responses('read', {
    200: {
      type: 'object',
      description: 'node → its completed attachment',
      additionalProperties: {
        type: 'object',
        required: ['nic', 'channel', 'project'],
        properties: { nic: { type: 'string' }, channel: { type: 'string' }, project: { type: 'string' } },
      },
    },
  }, 404),
} as const;
export const access = { params: params('network', 'project'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
