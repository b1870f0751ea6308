/**
 * The registration fields of a REST switch, as HIL took them (`hostname` a base URL with its
 * scheme, `username`, `password`, `interface_type`), plus hilt's `verify_tls` and `ca_cert` (as
 * the Redfish driver takes them). Checked whole at switch_register (400), so that a session never
 * meets fields it cannot use.
 */
import type { DriverFields } from '../../registry';
import { caCertProblem } from '../../tls';
import { isUrlHost } from '../../host';
import type { HttpTarget } from './session';

export const REST_FIELDS = {
  type: 'object',
  additionalProperties: false,
  required: ['hostname', 'username', 'password', 'interface_type'],
  properties: {
    hostname: { type: 'string' },
    username: { type: 'string' },
    password: { type: 'string' },
    interface_type: { type: 'string' },
    verify_tls: { type: 'boolean' },
    ca_cert: { type: 'string' },
  },
} as const;

const CONTROL = /[\u0000-\u001f\u007f]/;

/** The switch's origin from `hostname`, or why it is refused (HIL concatenated it with the API's paths). */
export function parseBaseUrl(hostname: unknown, example: string): URL | string {
  if (typeof hostname !== 'string' || hostname === '') return `hostname must be the switch's base URL, e.g. ${example}`;
  if (CONTROL.test(hostname) || /\s/.test(hostname)) return 'hostname must not contain spaces or control characters';
  if (!/^https?:\/\//i.test(hostname)) return `hostname ${JSON.stringify(hostname)} must start with https:// or http:// (e.g. ${example})`;
  let url: URL;
  try {
    url = new URL(hostname);
  } catch {
    return `hostname ${JSON.stringify(hostname)} is not a URL (e.g. ${example})`;
  }
  if (url.username || url.password) return 'hostname must not carry credentials: give them as username and password';
  if (!url.hostname) return `hostname ${JSON.stringify(hostname)} names no switch`;
  if (!isUrlHost(url)) return `hostname ${JSON.stringify(hostname)}: ${JSON.stringify(url.hostname)} is not a host name or address`;
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) {
    return `hostname ${JSON.stringify(hostname)} must be the base URL only (scheme, name and port), e.g. ${example}`;
  }
  return url;
}

/** What is wrong with a REST switch's fields (beyond their types), or null. */
export function restFieldsProblem(fields: DriverFields, interfaceTypes: readonly string[], example: string): string | null {
  const url = parseBaseUrl(fields.hostname, example);
  if (typeof url === 'string') return url;
  if (!fields.username || CONTROL.test(String(fields.username))) return 'username must be a non-empty string without control characters';
  if (!fields.password) return 'password must not be empty';
  if (!interfaceTypes.includes(String(fields.interface_type))) {
    return `interface_type ${JSON.stringify(String(fields.interface_type).slice(0, 64))} is not one of ${interfaceTypes.join(', ')}`;
  }
  if (fields.ca_cert !== undefined) {
    if (url.protocol !== 'https:') return 'ca_cert is for a switch reached over https://';
    if (fields.verify_tls === false) return 'ca_cert and verify_tls false contradict each other: give one of them';
    const problem = caCertProblem(fields.ca_cert);
    if (problem) return problem;
  }
  return null;
}

/** The session's target from fields that passed restFieldsProblem. */
export function restTarget(name: string, fields: DriverFields): HttpTarget {
  const url = new URL(String(fields.hostname));
  return {
    name,
    origin: url.origin,
    username: String(fields.username),
    password: String(fields.password),
    tls: { verify: fields.verify_tls !== false, ...(typeof fields.ca_cert === 'string' ? { ca: fields.ca_cert } : {}) },
  };
}
