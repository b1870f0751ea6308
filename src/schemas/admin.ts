import { params, noQuery, noBody, body, str } from './common';

export const listActors = { querystring: noQuery } as const;
/** `/admin/actors/<kind>/<id>` and `…/<id>/journal?limit=N`; the id is one name, or two for nics and ports. */
export const actor = {
  params: { type: 'object', required: ['kind', '*'], properties: { kind: params('kind').properties.kind, '*': { type: 'string', minLength: 1 } } },
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: { limit: { type: 'string', pattern: '^[1-9][0-9]{0,4}$' } },
  },
} as const;
export const noQueryOnly = { querystring: noQuery } as const;
export const reapply = { params: params('node', 'nic'), body: noBody, querystring: noQuery } as const;
export const forceDetach = { params: params('node', 'nic'), body: body(['network'], { network: str }), querystring: noQuery } as const;
/** `GET /admin/switch/<switch>/drift`, `POST /admin/switch/<switch>/repair` (no body). */
export const switchDrift = { params: params('switch'), querystring: noQuery } as const;
export const switchRepair = { params: params('switch'), body: noBody, querystring: noQuery } as const;
