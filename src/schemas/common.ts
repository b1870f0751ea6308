/** Shared JSON schemas: names, empty bodies, empty query strings, the error body. */
export const name = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  // Control characters would not round-trip through logs and terminals.
  pattern: '^[^\\u0000-\\u001f\\u007f]+$',
} as const;

export const noBody = { type: 'object', additionalProperties: false, maxProperties: 0 } as const;
export const noQuery = { type: 'object', additionalProperties: false, maxProperties: 0 } as const;

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
