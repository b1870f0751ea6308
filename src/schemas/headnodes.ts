import { params, body, noBody, noQuery, name, responses, done, names, lookupName } from './common';

const headnode = params('headnode');
const hnic = params('headnode', 'hnic');

export const createHeadnode = {
  params: headnode,
  body: body(['project', 'base_img'], { project: lookupName, base_img: name }),
  querystring: noQuery,
  response: responses('change', { 200: done }, 404, 409, 502),
} as const;
/** delete, start, stop */
export const headnodeCall = { params: headnode, body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404, 409, 502) } as const;
export const showHeadnode = {
  params: headnode,
  querystring: noQuery,
  response: responses('read', {
    200: {
      type: 'object',
      description: 'show_headnode (docs/api-conventions.md §9)',
      required: ['name', 'project', 'hnics', 'vncport'],
      properties: {
        name: { type: 'string' },
        project: { type: 'string' },
        hnics: { type: 'array', items: { type: 'string' } },
        vncport: { type: 'integer', nullable: true },
        base_img: { type: 'string' },
        status: { type: 'string', enum: ['created', 'starting', 'running', 'stopping', 'stopped', 'died', 'deleting'] },
        error: { type: 'string', nullable: true },
        networks: { type: 'object', description: 'hnic → network or null', additionalProperties: { type: 'string', nullable: true } },
      },
    },
  }, 404),
} as const;
export const hnicCall = { params: hnic, body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
export const connectHnic = { params: hnic, body: body(['network'], { network: lookupName }), querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
export const listImages = { querystring: noQuery, response: responses('read', { 200: names('The installed base images') }, 502) } as const;
