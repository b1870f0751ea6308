/** The whole inventory in one read (issue 26: `hilt export` and `hilt import`), secrets left out. */
import { noQuery, responses } from './common';

const driverFields = { type: 'object', additionalProperties: true, description: 'the driver\'s registration fields, secrets left out' } as const;

export const inventory = {
  querystring: noQuery,
  response: responses('read', {
    200: {
      type: 'object',
      required: ['switches', 'nodes'],
      properties: {
        switches: {
          type: 'array',
          items: {
            type: 'object',
            required: ['name', 'type', 'fields', 'ports'],
            properties: {
              name: { type: 'string' },
              type: { type: 'string' },
              fields: driverFields,
              host_key: { type: 'string', description: 'an SSH switch only: the fingerprint of its host key (SHA256:…), pinned or recorded; absent while none is' },
              ports: { type: 'array', items: { type: 'string' } },
            },
          },
        },
        nodes: {
          type: 'array',
          items: {
            type: 'object',
            required: ['name', 'obm', 'metadata', 'nics'],
            properties: {
              name: { type: 'string' },
              obm: { type: 'object', required: ['type', 'fields'], properties: { type: { type: 'string' }, fields: driverFields } },
              metadata: { type: 'object', additionalProperties: true },
              nics: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['name', 'macaddr', 'switch', 'port'],
                  properties: { name: { type: 'string' }, macaddr: { type: 'string' }, switch: { type: 'string', nullable: true }, port: { type: 'string', nullable: true } },
                },
              },
            },
          },
        },
      },
    },
  }),
} as const;
