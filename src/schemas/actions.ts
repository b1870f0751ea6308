import { params, body, noQuery, str, responses, queued } from './common';

export const connectNetwork = {
  params: params('node', 'nic'),
  body: body(['network'], { network: str, channel: str }),
  querystring: noQuery,
  response: responses('change', { 202: queued }, 404, 409),
} as const;
export const detachNetwork = { params: params('node', 'nic'), body: body(['network'], { network: str }), querystring: noQuery, response: responses('change', { 202: queued }, 404, 409) } as const;

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
export const showAction = { params: params('status_id'), querystring: noQuery, response: responses('read', { 200: actionStatus }, 404) } as const;
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
          ...actionStatus.properties,
          accepted_at: { type: 'string', format: 'date-time' },
          finished_at: { type: 'string', format: 'date-time', nullable: true },
        },
      },
    },
  }, 404),
} as const;
