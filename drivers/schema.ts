/** HIL's type identifiers share this base; drivers add `/v0/obm/<name>` or `/v0/switches/<name>`. */
export const SCHEMA_BASE = 'http://schema.massopencloud.org/haas';

/** JSON schema of registration fields that are all required strings, with no others. */
export function requiredStrings(...names: string[]): object {
  return {
    type: 'object',
    additionalProperties: false,
    required: names,
    properties: Object.fromEntries(names.map((n) => [n, { type: 'string' }])),
  };
}
