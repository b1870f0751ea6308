/** Lists worth reading (issue 26): a row per node or switch with its state, for the CLI's and the dashboard's tables. */
import { noQuery, responses } from './common';

const time = { type: 'string', format: 'date-time', nullable: true } as const;

/** A node's power as the service last saw it (a power call or a status read); `unknown` before any. */
export const powerSeen = {
  type: 'object',
  required: ['state', 'at'],
  properties: {
    state: { type: 'string', enum: ['on', 'off', 'unknown'] },
    at: time,
    error: { type: 'string', description: 'the last power call\'s failure, when it failed' },
    error_at: time,
  },
} as const;

export const lastOperation = {
  type: 'object',
  nullable: true,
  required: ['status_id', 'short_id', 'status', 'type', 'nic'],
  properties: {
    status_id: { type: 'string' },
    short_id: { type: 'string' },
    status: { type: 'string', enum: ['PENDING', 'DONE', 'ERROR'] },
    type: { type: 'string' },
    nic: { type: 'string' },
    network: { type: 'string', nullable: true },
    error: { type: 'string' },
    accepted_at: time,
    finished_at: time,
  },
} as const;

export const nodeRow = {
  type: 'object',
  required: ['name', 'project', 'power', 'networks', 'nics', 'pending', 'last_operation'],
  properties: {
    name: { type: 'string' },
    project: { type: 'string', nullable: true },
    power: powerSeen,
    networks: { type: 'array', items: { type: 'string' } },
    nics: { type: 'integer' },
    pending: { type: 'integer', description: 'nics with an operation in flight' },
    last_operation: lastOperation,
    lease_expires_at: time,
    metadata: { type: 'object', additionalProperties: true },
    obm: { type: 'string', description: 'the BMC driver (admins only)' },
  },
} as const;

export const nodeDetails = {
  params: { type: 'object', required: ['is_free'], properties: { is_free: { type: 'string', enum: ['all', 'free'] } } },
  querystring: noQuery,
  response: responses('read', {
    200: {
      type: 'object',
      description: 'The nodes the caller may see, a row each; `others`: how many nodes of other projects list_nodes also names',
      required: ['nodes', 'others'],
      properties: { nodes: { type: 'array', items: nodeRow }, others: { type: 'integer' } },
    },
  }),
} as const;

export const switchRow = {
  type: 'object',
  required: ['name', 'type', 'host', 'ports', 'wired', 'reachability', 'failing_ports'],
  properties: {
    name: { type: 'string' },
    type: { type: 'string', description: 'the driver (the last part of its type)' },
    host: { type: 'string', nullable: true },
    ports: { type: 'integer' },
    wired: { type: 'integer' },
    pending: { type: 'integer' },
    reachability: { type: 'string', enum: ['reachable', 'unreachable', 'unknown'] },
    last_ok_at: time,
    last_error: { type: 'string', nullable: true },
    last_error_at: time,
    audit: {
      type: 'object',
      nullable: true,
      properties: { at: time, summary: { type: 'object', additionalProperties: { type: 'integer' } }, error: { type: 'string' } },
    },
    failing_ports: { type: 'integer', description: 'ports whose last operation failed or that the last audit did not find in sync' },
    failing: { type: 'object', additionalProperties: { type: 'string' }, description: 'port → why it is counted as failing' },
  },
} as const;

export const switchDetails = {
  querystring: noQuery,
  response: responses('read', { 200: { type: 'array', description: 'Every switch, a row each, with what the service last saw of it', items: switchRow } }),
} as const;
