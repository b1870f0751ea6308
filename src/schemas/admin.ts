import { params, noQuery, noBody, body, responses, queued, done, names, lookupName } from './common';

export const listActors = {
  querystring: noQuery,
  response: responses('read', {
    200: {
      type: 'object',
      description: 'kind → its live actors, with the messages in each mailbox',
      additionalProperties: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, mailbox: { type: 'integer' } } } },
    },
  }),
} as const;
/** `/admin/actors/<kind>/<id>` and `…/<id>/journal?limit=N`; the id is one name, or two for nics and ports. */
export const actor = {
  params: { type: 'object', required: ['kind', '*'], properties: { kind: params('kind').properties.kind, '*': { type: 'string', minLength: 1, maxLength: 2048 } } },
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: { limit: { type: 'string', pattern: '^[1-9][0-9]{0,4}$', description: 'journal only: how many events (default 100)' } },
  },
  response: responses('read', {
    200: {
      description: 'The entity (`<id>`) or its journal (`<id>/journal`), secrets redacted',
      anyOf: [
        {
          type: 'object',
          required: ['kind', 'id', 'live', 'sequenceNumber', 'state'],
          properties: { kind: { type: 'string' }, id: { type: 'string' }, live: { type: 'boolean' }, sequenceNumber: { type: 'integer' }, state: { type: 'object', nullable: true } },
        },
        {
          type: 'array',
          items: {
            type: 'object',
            properties: { sequenceNumber: { type: 'integer' }, at: { type: 'string', format: 'date-time' }, by: { type: 'string', nullable: true }, event: { type: 'object' } },
          },
        },
      ],
    },
  }, 404),
} as const;
export const listExtensions = { querystring: noQuery, response: responses('read', { 200: names('The active drivers and extensions') }) } as const;
export const reapply = { params: params('node', 'nic'), body: noBody, querystring: noQuery, response: responses('change', { 202: queued }, 404, 409) } as const;
export const forceDetach = { params: params('node', 'nic'), body: body(['network'], { network: lookupName }), querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
/** A port's VLANs, as the service holds them or as a switch reports them (`other`: what no VLAN list describes). */
const vlans = {
  type: 'object',
  required: ['native', 'tagged'],
  properties: {
    native: { type: 'integer', nullable: true },
    tagged: { type: 'array', items: { type: 'integer' } },
    other: { type: 'array', items: { type: 'string' } },
    enabled: { type: 'boolean', description: 'administratively up: the state the service wants (HILT_INACTIVE_PORTS=shutdown), or the one the switch has (where its driver reads it)' },
  },
} as const;
/** The drift audit's and the repair's answer (docs/api-conventions.md §12). */
const driftReport = {
  type: 'object',
  required: ['switch', 'ports', 'summary'],
  properties: {
    switch: { type: 'string' },
    ports: {
      type: 'array',
      items: {
        type: 'object',
        required: ['port', 'nic', 'status', 'expected', 'actual'],
        properties: {
          port: { type: 'string' },
          nic: { type: 'object', nullable: true, required: ['node', 'nic'], properties: { node: { type: 'string' }, nic: { type: 'string' } } },
          status: { type: 'string', enum: ['in_sync', 'drifted', 'pending', 'unreadable', 'repaired', 'failed'] },
          expected: vlans,
          actual: { ...vlans, nullable: true },
          differences: { type: 'array', items: { type: 'string' } },
          error: { type: 'string' },
        },
      },
    },
    summary: { type: 'object', additionalProperties: { type: 'integer' } },
  },
} as const;
/** `GET /admin/switch/<switch>/drift`, `POST /admin/switch/<switch>/repair` (no body). */
export const switchDrift = { params: params('switch'), querystring: noQuery, response: responses('read', { 200: driftReport }, 404, 502) } as const;
export const switchRepair = { params: params('switch'), body: noBody, querystring: noQuery, response: responses('change', { 200: driftReport }, 404, 502) } as const;
/**
 * `POST /admin/switch/<switch>/port/<port>/clear_doubt` (no body): `*` is `<port>/clear_doubt`,
 * since port names may contain `/`; the port name is checked by hand once the action is split off.
 */
export const clearPortDoubt = {
  params: {
    type: 'object', required: ['switch', '*'],
    properties: { switch: params('switch').properties.switch, '*': { type: 'string', minLength: 1, maxLength: 1024, description: '<port>/clear_doubt' } },
  },
  body: noBody,
  querystring: noQuery,
  response: responses('change', { 200: done }, 404, 409),
} as const;
