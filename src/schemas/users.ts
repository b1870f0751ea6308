import { params, body, noBody, noQuery, str, bool, responses, done, lookupName } from './common';

const userRole = { type: 'string', enum: ['admin', 'auditor', 'user'], description: 'admin: changes anything; auditor: reads what an admin reads, changes nothing; user: per project' } as const;
const projectRole = { type: 'string', enum: ['member', 'reader'], description: 'member (default): reads and changes the project\'s things; reader: reads them only' } as const;

export const createUser = {
  params: params('username'),
  // The spec's key is `is-admin`; HIL's v0.2 client sends `is_admin` (docs/api-conventions.md §10, §12);
  // `role` (docs/identity.md) says more than either, and goes alone.
  body: {
    ...body(['password'], { password: str, 'is-admin': bool, is_admin: bool, role: userRole }),
    not: { anyOf: [{ required: ['is-admin', 'is_admin'] }, { required: ['role', 'is-admin'] }, { required: ['role', 'is_admin'] }] },
  },
  querystring: noQuery,
  response: responses('change', { 200: done }, 409),
} as const;
export const deleteUser = { params: params('username'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404) } as const;
export const membership = {
  params: params('user'), body: body(['project'], { project: lookupName, role: projectRole }), querystring: noQuery, response: responses('change', { 200: done }, 404, 409),
} as const;
export const removeMembership = { params: params('user'), body: body(['project'], { project: lookupName }), querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
/** HIL's user_set_admin `{is_admin}`, or `{role}`: one of the two. */
export const setAdmin = {
  params: params('user'),
  body: { ...body([], { is_admin: bool, role: userRole }), oneOf: [{ required: ['is_admin'] }, { required: ['role'] }] },
  querystring: noQuery,
  response: responses('change', { 200: done }, 404, 409),
} as const;
export const showUser = {
  params: params('user'),
  querystring: noQuery,
  response: responses('read', {
    200: {
      type: 'object',
      required: ['name', 'role', 'is_admin', 'projects'],
      properties: {
        name: { type: 'string' },
        role: userRole,
        is_admin: { type: 'boolean' },
        projects: { type: 'object', description: 'project → the user\'s role in it', additionalProperties: projectRole },
      },
    },
  }, 404),
} as const;
