/** Shared JSON schemas: names, empty bodies, empty query strings, the error body. */

/**
 * The one name rule (docs/api-conventions.md §1, Names), for every name of every kind in paths,
 * bodies and query strings: 1 to NAME_MAX_BYTES bytes of UTF-8, no control characters (C0,
 * DEL, C1: they would not round-trip through logs and terminals) and no lone surrogate (it has
 * no UTF-8 form, so it could not be stored as it was given).
 *
 * The byte bound makes every storage key built from names fit LMDB's key limit (1,978 bytes):
 * the longest is a port's, `port:<switch>/<port>`, where escaping `%` and `/` at most triples
 * each name (actors/ids.ts): 5 + 3·255 + 1 + 3·255 = 1,536 bytes, plus the event key's sequence
 * number (test/actors/persistence/names.test.ts checks the worst case of every kind). 255 bytes is
 * also the longest file name on Linux.
 */
export const NAME_MAX_BYTES = 255;
export const NAME_FORMAT = 'hilt-name';
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f]|\p{Cs}/u;

/** Why `s` is not a name, or null when it is one. */
export function nameProblem(s: unknown): string | null {
  if (typeof s !== 'string') return 'must be a string';
  if (s.length === 0) return 'must not be empty';
  if (Buffer.byteLength(s, 'utf8') > NAME_MAX_BYTES) return `must be at most ${NAME_MAX_BYTES} bytes of UTF-8`;
  if (FORBIDDEN.test(s)) return 'must not contain control characters or lone surrogates';
  return null;
}

export const isName = (s: unknown): boolean => nameProblem(s) === null;

/** The rule's wording in a 400's message. */
export const NAME_RULE = `must be a name: 1 to ${NAME_MAX_BYTES} bytes of UTF-8 without control characters`;

// No minLength or maxLength: the format checks both (in bytes), and its 400 states the rule.
export const name = {
  type: 'string',
  format: NAME_FORMAT,
  description: `A name: 1 to ${NAME_MAX_BYTES} bytes of UTF-8, without control characters (docs/api-conventions.md §1)`,
} as const;

/**
 * A name in a body that names an existing object: looked up as given (docs/api-conventions.md
 * §1), so one that cannot exist ("", or beyond the name rule) is an unknown object, a 404, not a
 * malformed request. Names that create an object keep `name` (400).
 */
export const lookupName = {
  type: 'string',
  description: 'the name of an existing object, looked up as given: one that cannot exist ("", or beyond the name rule) is unknown (404)',
} as const;


/** Adds the name formats to an Ajv instance (fastify's validator). */
export function addNameFormats<A extends { addFormat(name: string, f: { type: 'string'; validate: (s: string) => boolean }): unknown }>(ajv: A): A {
  ajv.addFormat(NAME_FORMAT, { type: 'string', validate: isName });
  return ajv;
}

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
      enum: ['BadArgumentError', 'AuthorizationError', 'ForbiddenError', 'NotFoundError', 'DuplicateError', 'AllocationError', 'BlockedError', 'IllegalStateError',
        'ProjectMismatchError', 'RequestTooLargeError', 'OBMError', 'HeadnodeError', 'ServiceUnavailableError', 'ServerError', 'TooManyRequestsError', 'GoneError'],
    },
    msg: { type: 'string' },
  },
} as const;

const ERROR_WHEN: Record<number, string> = {
  400: 'Malformed request: body, query or path (BadArgumentError)',
  401: 'No or bad credentials, or the caller lacks the right (AuthorizationError)',
  403: 'The caller may read but not change: an auditor, a project\'s reader, a read-only token (ForbiddenError)',
  404: 'A named object does not exist (NotFoundError)',
  409: 'A conflict with the current state (DuplicateError, AllocationError, BlockedError, IllegalStateError, ProjectMismatchError)',
  410: 'The event id is not one this store keeps; the body\'s `oldest` names the oldest it keeps (GoneError)',
  413: 'The body is larger than 1 MiB (RequestTooLargeError)',
  429: 'Too many failed logins for this user name: try again after Retry-After seconds; or a node\'s live console has HILT_CONSOLE_VIEWERS viewers (TooManyRequestsError)',
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
 * (validation), 401 (authentication), 429 (throttled logins) and 500; a change also 413 (its body) and 503 (storage,
 * actors); `errors` adds the call's own (404, 409, 502).
 */
export function responses(kind: Kind, success: Record<number, object>, ...errors: number[]): Record<number, object> {
  const statuses = new Set([400, 401, ...errors, 429, 500, ...(kind === 'change' ? [403, 413, 503] : [])]);
  const out: Record<number, object> = { ...success };
  for (const s of [...statuses].sort()) out[s] = { description: ERROR_WHEN[s], $ref: 'HiltError#' };
  return out;
}
