import { params, body, noBody, noQuery, str, bool } from './common';

export const createUser = {
  params: params('username'),
  // The spec's key is `is-admin`; HIL's v0.2 client sends `is_admin` (docs/api-conventions.md §10, §12).
  body: { ...body(['password'], { password: str, 'is-admin': bool, is_admin: bool }), not: { required: ['is-admin', 'is_admin'] } },
  querystring: noQuery,
} as const;
export const deleteUser = { params: params('username'), body: noBody, querystring: noQuery } as const;
export const membership = { params: params('user'), body: body(['project'], { project: str }), querystring: noQuery } as const;
export const setAdmin = { params: params('user'), body: body(['is_admin'], { is_admin: bool }), querystring: noQuery } as const;
