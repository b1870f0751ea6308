import { params, body, noBody, noQuery, bool, name, responses, done } from './common';

const token = {
  type: 'object',
  description: 'An API token (never its secret)',
  required: ['id', 'user', 'description', 'project', 'read_only', 'created_at', 'expires_at', 'last_used_at', 'expired'],
  properties: {
    id: { type: 'string' },
    user: { type: 'string' },
    description: { type: 'string' },
    project: { type: 'string', nullable: true, description: 'the project it acts within, or null' },
    read_only: { type: 'boolean' },
    created_at: { type: 'string', format: 'date-time' },
    expires_at: { type: 'string', format: 'date-time' },
    last_used_at: { type: 'string', format: 'date-time', nullable: true },
    expired: { type: 'boolean' },
  },
} as const;

export const createToken = {
  body: body([], {
    expires_in: { type: 'integer', minimum: 1, description: 'seconds (default 86400, at most HILT_TOKEN_MAX_SECONDS)' },
    project: name,
    read_only: bool,
    description: { type: 'string', maxLength: 200 },
  }),
  querystring: noQuery,
  response: responses('change', {
    200: {
      type: 'object',
      description: 'The new token: its secret is shown this once',
      required: ['id', 'token', 'expires_at'],
      properties: { id: { type: 'string' }, token: { type: 'string' }, expires_at: { type: 'string', format: 'date-time' } },
    },
  }, 404, 409),
} as const;

export const listTokens = {
  querystring: { type: 'object', additionalProperties: false, properties: { user: { ...name, description: 'another user\'s tokens (an admin or an auditor)' } } },
  response: responses('read', { 200: { type: 'array', items: token } }, 404),
} as const;

export const revokeToken = { params: params('id'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404) } as const;
