/** HIL's type identifiers share this base; drivers add `/v0/obm/<name>` or `/v0/switches/<name>`. */
export const SCHEMA_BASE = 'http://schema.massopencloud.org/haas';
