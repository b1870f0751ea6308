/** The tenant lifecycle's routes (docs/lifecycle.md): leases, quotas, the maintenance pool, nodes that need attention. */
import { params, body, noBody, noQuery, str, responses, done } from './common';
import { daysInMonth } from '../../lib/time';

/** An RFC 3339 date-time with its offset (`2026-05-01T12:00:00Z`, `…+02:00`, fractions allowed). */
export const RFC3339 = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(\.\d{1,9})?([Zz]|[+-](\d\d):(\d\d))$/;

/**
 * The time an RFC 3339 date-time names (ms since the epoch), NaN when it names none. Date.parse
 * alone is not enough: it rolls impossible fields over (`…-11-31` is December 1st, `T24:00:00`
 * the next day), so each field is checked against its range first. A leap second (`:60`) is
 * refused, as Date.parse refuses it.
 */
export function rfc3339Ms(text: string): number {
  const m = RFC3339.exec(text);
  if (!m) return NaN;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || hour > 23 || minute > 59 || second > 59) return NaN;
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return NaN;
  return Date.parse(text);
}

const time = { type: 'string', format: 'date-time' } as const;

const lease = {
  type: 'object',
  required: ['project', 'expires_at', 'expired'],
  properties: {
    project: str,
    expires_at: { ...time, description: 'when the project\'s hold ends' },
    expired: { type: 'boolean', description: 'it has passed: the node is being released' },
  },
} as const;

export const setLease = {
  params: params('node'),
  body: body(['expires_at'], { expires_at: { type: 'string', maxLength: 64, description: 'RFC 3339, in the future and at most HILT_LEASE_MAX_DAYS days away' } }),
  querystring: noQuery,
  response: responses('change', { 200: done }, 404, 409),
} as const;
export const showLease = { params: params('node'), querystring: noQuery, response: responses('read', { 200: lease }, 404) } as const;
export const deleteLease = { params: params('node'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
export const projectLeases = {
  params: params('project'),
  querystring: noQuery,
  response: responses('read', {
    200: {
      type: 'array',
      description: 'The project\'s leases, the first to end first',
      items: { type: 'object', required: ['node', 'expires_at', 'expired'], properties: { node: str, expires_at: time, expired: { type: 'boolean' } } },
    },
  }, 404),
} as const;

/** A limit: a count from 0, or null for none. */
const limit = { type: 'integer', minimum: 0, maximum: 1_000_000, nullable: true } as const;
export const setQuota = {
  params: params('project'),
  body: { ...body([], { nodes: limit, networks: limit, headnodes: limit }), minProperties: 1 },
  querystring: noQuery,
  response: responses('change', { 200: done }, 404),
} as const;
const use = { type: 'object', required: ['limit', 'used'], properties: { limit: { type: 'integer', nullable: true }, used: { type: 'integer' } } } as const;
export const showQuota = {
  params: params('project'),
  querystring: noQuery,
  response: responses('read', { 200: { type: 'object', required: ['nodes', 'networks', 'headnodes'], properties: { nodes: use, networks: use, headnodes: use } } }, 404),
} as const;

export const maintenance = {
  querystring: noQuery,
  response: responses('read', {
    200: {
      type: 'array',
      description: 'Every node in the maintenance pool and its notice to the maintenance service, the longest there first',
      items: {
        type: 'object',
        required: ['node', 'from', 'since', 'attempts', 'last_error', 'delivered_at'],
        properties: {
          node: str,
          from: { type: 'string', description: 'the project it was released from' },
          since: time,
          attempts: { type: 'integer', description: 'POSTs that failed' },
          last_error: { type: 'string', nullable: true },
          last_attempt_at: { ...time, nullable: true },
          delivered_at: { ...time, nullable: true, description: 'when the maintenance service took the notice (null: not yet)' },
        },
      },
    },
  }),
} as const;
export const attention = {
  querystring: noQuery,
  response: responses('read', {
    200: {
      type: 'array',
      description: 'Nodes that need an operator, one entry per problem, the oldest first',
      items: {
        type: 'object',
        required: ['node', 'problem', 'since', 'detail'],
        properties: {
          node: { type: ['string', 'null'], description: 'null: a port in doubt (or owing a set-back) wired to no nic now' },
          problem: { type: 'string', enum: ['release_power_off', 'maintenance_notice', 'lease_expiry', 'port_in_doubt', 'port_set_back_owed'] }, since: time, detail: str,
          switch: { ...str, description: 'port_in_doubt, port_set_back_owed: the switch of the port' }, port: { ...str, description: 'port_in_doubt, port_set_back_owed: the port' },
        },
      },
    },
  }),
} as const;
