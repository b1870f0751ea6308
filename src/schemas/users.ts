import { params, body, noBody, noQuery, str, bool, responses, done, lookupName } from './common';

export const createUser = {
  params: params('username'),
  // The spec's key is `is-admin`; HIL's v0.2 client sends `is_admin` (docs/api-conventions.md §10, §12).
  body: { ...body(['password'], { password: str, 'is-admin': bool, is_admin: bool }), not: { required: ['is-admin', 'is_admin'] } },
  querystring: noQuery,
  response: responses('change', { 200: done }, 409),
} as const;
export const deleteUser = { params: params('username'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404) } as const;
export const membership = { params: params('user'), body: body(['project'], { project: lookupName }), querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
export const setAdmin = { params: params('user'), body: body(['is_admin'], { is_admin: bool }), querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
