/** Wiring validation (docs/switch-ports.md): a switch's report, every switch's, and the proposals for unwired ports. */
import { params, noQuery, noBody, responses } from './common';

const verdict = { type: 'string', enum: ['ok', 'mismatch', 'unseen', 'unwired'] } as const;
const counts = {
  type: 'object',
  description: 'ports per verdict',
  properties: { ok: { type: 'integer' }, mismatch: { type: 'integer' }, unseen: { type: 'integer' }, unwired: { type: 'integer' } },
} as const;
const nicRef = {
  type: 'object',
  required: ['node', 'nic', 'macaddr'],
  properties: { node: { type: 'string' }, nic: { type: 'string' }, macaddr: { type: 'string' } },
} as const;
const neighbor = {
  type: 'object',
  required: ['chassisId', 'portId'],
  properties: { chassisId: { type: 'string' }, portId: { type: 'string' }, systemName: { type: 'string' } },
} as const;
const portLine = {
  type: 'object',
  required: ['port', 'nic', 'macs', 'lldp', 'verdict'],
  properties: {
    port: { type: 'string' },
    nic: { ...nicRef, nullable: true, description: 'the nic the service wires to the port, or null' },
    macs: { type: 'array', items: { type: 'string' }, description: 'MACs the switch learned on the port' },
    lldp: { type: 'array', items: neighbor, description: 'its LLDP neighbours' },
    verdict,
    details: { type: 'array', items: { type: 'string' }, description: 'what was seen where, in words' },
  },
} as const;
const report = {
  type: 'object',
  required: ['switch', 'ports', 'summary'],
  properties: { switch: { type: 'string' }, ports: { type: 'array', items: portLine }, summary: counts },
} as const;
const all = {
  type: 'object',
  required: ['summary', 'switches'],
  properties: {
    summary: {
      type: 'object',
      description: 'verdicts over every switch checked; switches checked, unsupported (no driver support) and failed',
      properties: { ...counts.properties, switches: { type: 'integer' }, unsupported: { type: 'integer' }, failed: { type: 'integer' } },
    },
    switches: {
      type: 'array',
      items: {
        type: 'object',
        required: ['switch', 'status'],
        properties: {
          switch: { type: 'string' },
          status: { type: 'string', enum: ['checked', 'unsupported', 'failed'] },
          summary: counts,
          problems: { type: 'array', items: portLine, description: 'ports whose verdict is mismatch or unwired' },
          error: { type: 'string' },
        },
      },
    },
  },
} as const;
const proposals = {
  type: 'object',
  required: ['switch', 'proposals', 'unknown', 'ambiguous'],
  properties: {
    switch: { type: 'string' },
    proposals: {
      type: 'array',
      items: {
        type: 'object',
        required: ['port', 'node', 'nic', 'macaddr', 'evidence', 'nic_wired_to', 'apply'],
        properties: {
          port: { type: 'string' }, node: { type: 'string' }, nic: { type: 'string' }, macaddr: { type: 'string' },
          evidence: { type: 'array', items: { type: 'string', enum: ['mac', 'lldp'] } },
          nic_wired_to: {
            type: 'object', nullable: true, description: 'where the service wires that nic now (detach it there first), or null',
            properties: { switch: { type: 'string' }, port: { type: 'string' } },
          },
          apply: { type: 'string', description: 'the call that applies it (never made by the service)' },
        },
      },
    },
    unknown: { type: 'array', items: { type: 'object', properties: { port: { type: 'string' }, macs: { type: 'array', items: { type: 'string' } } } } },
    ambiguous: { type: 'array', items: { type: 'object', properties: { port: { type: 'string' }, nics: { type: 'array', items: nicRef } } } },
  },
} as const;

/** `GET /admin/switch/<switch>/wiring` */
export const switchWiring = { params: params('switch'), querystring: noQuery, response: responses('read', { 200: report }, 404, 409, 502) } as const;
/** `GET /admin/wiring` */
export const allWiring = { querystring: noQuery, response: responses('read', { 200: all }) } as const;
/** `POST /admin/switch/<switch>/wiring/propose` (no body) */
export const proposeWiring = { params: params('switch'), body: noBody, querystring: noQuery, response: responses('change', { 200: proposals }, 404, 409, 502) } as const;
