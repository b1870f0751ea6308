/** Schemas of the event stream (GET /events) and the webhooks (/admin/webhooks): docs/events.md. */
import { body, done, noBody, noQuery, params, responses, str } from './common';

/** A filter: repeatable, and each value may hold several, comma-separated. */
const multi = (description: string) => ({
  description,
  anyOf: [{ type: 'string', minLength: 1, maxLength: 4096 }, { type: 'array', maxItems: 64, items: { type: 'string', minLength: 1, maxLength: 4096 } }],
}) as const;
const cursor = { type: 'string', pattern: '^[0-9]{1,16}$' } as const;
const time = { type: 'string', minLength: 1, maxLength: 40 } as const;

const event = {
  type: 'object',
  description: 'One committed change (docs/events.md)',
  required: ['id', 'at', 'by', 'kind', 'name', 'type', 'project', 'data'],
  properties: {
    id: { type: 'string', description: 'opaque cursor, strictly increasing within the stream (Last-Event-ID, after=)' },
    at: { type: 'string', format: 'date-time' },
    by: { type: 'string', description: 'the acting user, or hilt for the service\'s own work' },
    kind: str,
    name: { type: 'string', description: 'the object; <node>/<nic> and <switch>/<port> for nics and ports (each name with / and % escaped)' },
    type: { type: 'string', description: 'a stable dotted name: node.registered, project.node_added, networking_action.finished, …' },
    project: { type: 'string', nullable: true },
    data: { type: 'object', additionalProperties: true, description: 'the change, secrets redacted' },
  },
} as const;

export const events = {
  summary: 'The event stream: every committed change, in commit order (Server-Sent Events)',
  description: 'text/event-stream: each event as `id:`, `event:` (its type) and `data:` (the JSON object below); a comment line every 15 s. Resume with the Last-Event-ID header or after=; since= starts at a time.',
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      after: { ...cursor, description: 'start right after this event id (as Last-Event-ID; the header wins)' },
      since: { ...time, description: 'start at the first event at or after this time (RFC 3339)' },
      kind: multi('only these kinds (node, nic, port, switch, project, network, user, headnode, webhook, …)'),
      name: multi('only these objects (names as in the events)'),
      project: multi('only events of these projects'),
      type: multi('only these event types; <kind>.* for all of a kind'),
    },
  },
  response: responses('read', {
    200: { description: 'The stream (text/event-stream), one `data:` line per event', content: { 'text/event-stream': { schema: event } } },
  }, 410),
} as const;

const webhook = {
  type: 'object',
  required: ['id', 'url', 'types', 'projects', 'description', 'created_at', 'created_by', 'state', 'cursor', 'backlog', 'last_success', 'last_error', 'consecutive_failures'],
  properties: {
    id: str,
    url: str,
    types: { type: 'array', items: str, description: 'event types delivered (empty: every type)' },
    projects: { type: 'array', items: str, description: 'projects whose events are delivered (empty: every event)' },
    description: str,
    created_at: { type: 'string', format: 'date-time' },
    created_by: str,
    state: { type: 'string', enum: ['delivering', 'failing'] },
    failing_since: { type: 'string', format: 'date-time', nullable: true },
    cursor: { type: 'string', description: 'the id of the last event delivered (or passed over by the filters)' },
    backlog: { type: 'integer', description: 'events committed after the cursor (each filtered by the webhook\'s filters as it is delivered)' },
    last_success: { type: 'string', format: 'date-time', nullable: true },
    last_error: { type: 'string', nullable: true },
    consecutive_failures: { type: 'integer' },
  },
} as const;

export const createWebhook = {
  summary: 'Subscribe a receiver to the events (admin)',
  querystring: noQuery,
  body: body(['url', 'secret'], {
    url: { type: 'string', minLength: 1, maxLength: 2048, description: 'http:// or https:// URL each event is POSTed to' },
    secret: { type: 'string', minLength: 16, maxLength: 1024, description: 'key of the X-Hilt-Signature HMAC-SHA256; a credential: never shown again' },
    types: { type: 'array', maxItems: 256, items: { type: 'string', minLength: 1, maxLength: 255 }, description: 'only these event types (<kind>.* for a kind); default every type' },
    projects: { type: 'array', maxItems: 256, items: { type: 'string', minLength: 1, maxLength: 255 }, description: 'only events of these projects; default every event' },
    description: { type: 'string', maxLength: 1024 },
  }),
  response: responses('change', { 200: { type: 'object', required: ['id'], properties: { id: str } } }),
} as const;

export const listWebhooks = {
  summary: 'Every webhook and its delivery state (admin)',
  querystring: noQuery,
  response: responses('read', { 200: { type: 'array', items: webhook } }),
} as const;

export const showWebhook = {
  summary: 'A webhook and its delivery state (admin)',
  querystring: noQuery,
  params: params('id'),
  response: responses('read', { 200: webhook }, 404),
} as const;

export const deleteWebhook = {
  summary: 'Delete a webhook (admin)',
  querystring: noQuery,
  params: params('id'),
  body: noBody,
  response: responses('change', { 200: done }, 404),
} as const;

export const resumeWebhook = {
  summary: 'Resume delivery of a failing webhook from its cursor (admin)',
  querystring: noQuery,
  params: params('id'),
  body: noBody,
  response: responses('change', { 200: done }, 404),
} as const;
