/** Schemas of the operators' calls: the audit log and the online backup. */
import { noQuery, body, str, responses, name } from './common';

const KINDS = ['project', 'node', 'nic', 'port', 'switch', 'network', 'user', 'headnode', 'webhook'];
const time = { type: 'string', maxLength: 40, description: 'ISO 8601 date-time, e.g. 2026-01-31T12:00:00Z' } as const;

const entry = {
  type: 'object',
  required: ['at', 'by', 'kind', 'name', 'sequenceNumber', 'call', 'event'],
  properties: {
    at: { type: 'string', format: 'date-time' },
    by: { type: 'string', nullable: true, description: 'the acting user, or the service itself (switch, recovery, monitor, bootstrap, upgrade, hilt: the tenant lifecycle)' },
    kind: { type: 'string', enum: KINDS },
    name: { type: 'string', description: 'the entity, as in /admin/actors/{kind}/{id}' },
    sequenceNumber: { type: 'integer', description: 'the event\'s number in the entity\'s journal' },
    call: { type: 'string', nullable: true, description: 'the API call that made the change (HIL\'s names); null for the service\'s own work' },
    event: { type: 'object', description: 'what changed: the event, secrets redacted', required: ['type'], properties: { type: { type: 'string' } }, additionalProperties: true },
  },
} as const;

export const audit = {
  summary: 'The audit log: every change, newest first',
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      kind: { type: 'string', enum: KINDS, description: 'only this kind of object' },
      name: { type: 'string', minLength: 1, maxLength: 1600, description: 'only this object (with kind): one name, or <node>/<nic> and <switch>/<port> with / and % in each name escaped (%2F, %25)' },
      user: { ...name, description: 'only changes by this user (or by the service: switch, recovery, monitor, bootstrap, upgrade, hilt)' },
      since: { ...time, description: 'only changes at or after this time (ISO 8601)' },
      until: { ...time, description: 'only changes before this time (ISO 8601)' },
      limit: { type: 'string', pattern: '^[1-9][0-9]{0,3}$', description: 'entries per page, 1 to 1000 (default 100)' },
      cursor: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,2000}$', description: 'the `next` of the previous page' },
    },
  },
  response: responses('read', {
    200: {
      type: 'object',
      description: 'One page, newest first. With a user filter a page may hold fewer entries than asked and still have a next.',
      required: ['entries', 'next'],
      properties: { entries: { type: 'array', items: entry }, next: { type: 'string', nullable: true, description: 'the cursor of the next (older) page; null at the end' } },
    },
  }),
} as const;

export const backup = {
  summary: 'An online backup: a consistent copy of the store into a new folder',
  querystring: noQuery,
  body: body(['path'], { path: { ...str, minLength: 1, maxLength: 4096, description: 'an absolute path on the service\'s machine, outside the data folder; must not exist' } }),
  response: responses('change', {
    200: {
      type: 'object',
      required: ['path', 'started_at', 'finished_at'],
      properties: { path: str, started_at: { type: 'string', format: 'date-time' }, finished_at: { type: 'string', format: 'date-time' } },
    },
  }, 409),
} as const;
