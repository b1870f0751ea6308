import { params, body, noQuery, str, responses, queued, lookupName } from './common';

export const connectNetwork = {
  params: params('node', 'nic'),
  // Any string: a channel the network does not have is a 409 in the check chain, never a 400
  // (docs/api-conventions.md §8); the body limit bounds it.
  body: body(['network'], { network: lookupName, channel: str }),
  querystring: noQuery,
  response: responses('change', { 202: queued }, 404, 409),
} as const;
export const detachNetwork = { params: params('node', 'nic'), body: body(['network'], { network: lookupName }), querystring: noQuery, response: responses('change', { 202: queued }, 404, 409) } as const;

/** A network operation's status (docs/api-conventions.md §8). */
export const actionStatus = {
  type: 'object',
  required: ['status', 'node', 'nic', 'type', 'channel', 'new_network'],
  properties: {
    status: { type: 'string', enum: ['PENDING', 'DONE', 'ERROR'] },
    node: { type: 'string' },
    nic: { type: 'string' },
    type: { type: 'string', enum: ['modify_port', 'revert_port', 'reapply_port'] },
    channel: { type: 'string' },
    new_network: { type: 'string', nullable: true },
    error: { type: 'string', description: 'why it failed (ERROR only)' },
  },
} as const;
/**
 * A status id: base64url of the names it carries (docs/api-conventions.md §8), so longer than a
 * name (two names of 255 bytes, JSON-escaped, come to about 1,500 characters).
 */
// No pattern: the id is opaque, so any text not handed out is an unknown id (404), not a bad request.
const statusIdParams = { type: 'object', required: ['status_id'], properties: { status_id: { type: 'string', minLength: 1, maxLength: 2048 } } } as const;
export const showAction = { params: statusIdParams, querystring: noQuery, response: responses('read', { 200: actionStatus }, 404) } as const;
export const listActions = {
  params: params('node'),
  querystring: noQuery,
  response: responses('read', {
    200: {
      type: 'array',
      description: 'The node\'s operations, newest first',
      items: {
        type: 'object',
        required: [...actionStatus.required, 'status_id', 'accepted_at', 'finished_at'],
        properties: {
          status_id: { type: 'string' },
          short_id: { type: 'string', description: 'the short form tables print: 8 hex digits, stable' },
          ...actionStatus.properties,
          accepted_at: { type: 'string', format: 'date-time' },
          finished_at: { type: 'string', format: 'date-time', nullable: true },
        },
      },
    },
  }, 404),
} as const;

/**
 * Every node's operations the caller may see (issue 26): those in flight, then the newest
 * finished ones (the last 1,000 of the service), newest first; `status` filters them.
 */
export const listAllActions = {
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      status: { type: 'string', enum: ['PENDING', 'DONE', 'ERROR'] },
      limit: { type: 'string', pattern: '^[1-9][0-9]{0,3}$', description: 'how many (1 to 1000, default 100)' },
    },
  },
  response: responses('read', { 200: { ...listActions.response[200], description: 'Operations of every node the caller may see, newest first' } }, 400),
} as const;
