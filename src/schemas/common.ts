/** Shared JSON schemas: names, empty bodies, empty query strings, the error body. */
export const name = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  // Control characters would not round-trip through logs and terminals.
  pattern: '^[^\\u0000-\\u001f\\u007f]+$',
} as const;

export const noBody = { type: 'object', additionalProperties: false, maxProperties: 0 } as const;
// `properties: {}` tells the OpenAPI generator that this object lists no query parameters.
export const noQuery = { type: 'object', additionalProperties: false, maxProperties: 0, properties: {} } as const;

export const errorBody = {
  type: 'object',
  required: ['type', 'msg'],
  properties: { type: { type: 'string' }, msg: { type: 'string' } },
} as const;

export function params<K extends string>(...keys: K[]) {
  return {
    type: 'object',
    required: keys,
    properties: Object.fromEntries(keys.map((k) => [k, name])) as Record<K, typeof name>,
  } as const;
}

export function body(required: readonly string[], properties: Record<string, object>) {
  return { type: 'object', additionalProperties: false, required, properties } as const;
}

export const str = { type: 'string' } as const;
export const bool = { type: 'boolean' } as const;

/*
 * Responses, for the OpenAPI document (GET /openapi.json). They describe what the routes send;
 * they do not shape it: app.ts serializes every answer with JSON.stringify, as before they
 * existed, so a key the schema does not list is still sent.
 */

/** The error body of every error answer (docs/api-conventions.md §1), registered once by app.ts. */
export const errorSchema = {
  $id: 'HiltError',
  type: 'object',
  description: 'Every error answer: the HIL error class and a readable message (docs/api-conventions.md §1)',
  required: ['type', 'msg'],
  properties: {
    type: {
      type: 'string',
      enum: ['BadArgumentError', 'AuthorizationError', 'NotFoundError', 'DuplicateError', 'AllocationError', 'BlockedError', 'IllegalStateError',
        'ProjectMismatchError', 'RequestTooLargeError', 'OBMError', 'HeadnodeError', 'ServiceUnavailableError', 'ServerError'],
    },
    msg: { type: 'string' },
  },
} as const;

const ERROR_WHEN: Record<number, string> = {
  400: 'Malformed request: body, query or path (BadArgumentError)',
  401: 'No or bad credentials, or the caller lacks the right (AuthorizationError)',
  404: 'A named object does not exist (NotFoundError)',
  409: 'A conflict with the current state (DuplicateError, AllocationError, BlockedError, IllegalStateError, ProjectMismatchError)',
  413: 'The body is larger than 1 MiB (RequestTooLargeError)',
  500: 'A bug; details in the service log only (ServerError)',
  502: 'Hardware failed or timed out: a BMC (OBMError), a headnode VM (HeadnodeError) or a switch (SwitchError)',
  503: 'Storage refused the change or an actor did not answer in time; nothing was acknowledged (ServiceUnavailableError)',
};

/** A 200 without a body: a successful change (docs/api-conventions.md §1). */
export const done = { type: 'null', description: 'Done; no body' } as const;
/** The 202 of a queued network operation (docs/api-conventions.md §8). */
export const queued = {
  type: 'object',
  description: 'Queued; poll GET /networking_action/{status_id}',
  required: ['status_id'],
  properties: { status_id: { type: 'string', minLength: 1 } },
} as const;
export const names = (description: string) => ({ type: 'array', description, items: { type: 'string' } }) as const;

type Kind = 'read' | 'change';

/**
 * A route's answers: its successes and the errors it can give. Every call can answer 400
 * (validation), 401 (authentication) and 500; a change also 413 (its body) and 503 (storage,
 * actors); `errors` adds the call's own (404, 409, 502).
 */
export function responses(kind: Kind, success: Record<number, object>, ...errors: number[]): Record<number, object> {
  const statuses = new Set([400, 401, ...errors, 500, ...(kind === 'change' ? [413, 503] : [])]);
  const out: Record<number, object> = { ...success };
  for (const s of [...statuses].sort()) out[s] = { description: ERROR_WHEN[s], $ref: 'HiltError#' };
  return out;
}
