/**
 * The redfish driver's registration fields, and the BMC they name. Checked whole at
 * node_register (400), so that a power call never meets fields it cannot use.
 */
import type { DriverFields } from '../../registry';
import { ObmError } from '../types';
import { caCertProblem } from '../../tls';
import { isUrlHost } from '../../host';

/** The fields as stored (a type, not an interface: it is a DriverFields record). */
export type RedfishFields = {
  /** The BMC's base URL: `https://name-or-address[:port]` (or `http://`), nothing after the authority. */
  host: string;
  user: string;
  /** Never logged, never returned by the API. */
  password: string;
  /** The ComputerSystem's `@odata.id`, e.g. `/redfish/v1/Systems/1`; absent: the BMC's only system. */
  system?: string;
  /** Verify the BMC's TLS certificate (default true). */
  verify_tls?: boolean;
  /** PEM of the CA (or of the BMC's own self-signed certificate) to trust instead of the system's CAs. */
  ca_cert?: string;
};

export const FIELDS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['host', 'user', 'password'],
  properties: {
    host: { type: 'string' },
    user: { type: 'string' },
    password: { type: 'string' },
    system: { type: 'string' },
    verify_tls: { type: 'boolean' },
    ca_cert: { type: 'string' },
  },
} as const;

/** A node's BMC, as the driver uses it. */
export interface Target {
  /** `https://host:port` as URL.origin spells it: the device queue's key, the name in messages. */
  origin: string;
  user: string;
  password: string;
  /** explicit ComputerSystem path, or undefined: the BMC's only one */
  system?: string;
  /** how to reach it: verify the certificate (against `ca` if given, else the system's CAs) */
  tls: { verify: boolean; ca?: string };
}

const CONTROL = /[\u0000-\u001f\u007f]/;
/** `/redfish/v1/Systems/<id>`, optionally with the trailing slash some BMCs (iLO 4) use. */
const SYSTEM_PATH = /^\/redfish\/v1\/Systems\/[^/?#\s\u0000-\u001f\u007f]+\/?$/;

/**
 * Whether `system` names a ComputerSystem and only that: it matches SYSTEM_PATH, its id is no
 * dot segment and holds no `\` (a `/` to URL parsers) nor `%` (percent-encoded dots and
 * slashes), and the path the URL parser resolves it to (as requests are made) is itself.
 */
function isSystemPath(system: string): boolean {
  if (!SYSTEM_PATH.test(system)) return false;
  const id = system.slice('/redfish/v1/Systems/'.length).replace(/\/$/, '');
  if (id === '.' || id === '..' || /[\\%]/.test(id)) return false;
  let resolved: string;
  try {
    resolved = new URL(system, 'https://bmc.invalid').pathname;
  } catch {
    return false;
  }
  return resolved === system && SYSTEM_PATH.test(resolved);
}

function invalid(why: string): never {
  throw new ObmError(`invalid OBM info: ${why}`);
}

/** The BMC's origin from `host`; throws ObmError for anything but a bare http(s) base URL. */
export function parseBaseUrl(host: unknown): URL {
  if (typeof host !== 'string' || host === '') invalid('host must be the BMC\'s base URL, e.g. https://127.0.0.1:8443');
  if (CONTROL.test(host) || /\s/.test(host)) invalid('host must not contain spaces or control characters');
  // Before any refusal that quotes the host: `user:password@` in it, parsed or not, stays unsaid.
  if (host.includes('@')) invalid('host must not carry credentials: give them as user and password');
  if (!/^https?:\/\//i.test(host)) invalid(`host "${host}" must start with https:// or http://`);
  let url: URL;
  try {
    url = new URL(host);
  } catch {
    invalid(`host "${host}" is not a URL (expected e.g. https://127.0.0.1:8443)`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') invalid(`host "${host}" must start with https:// or http://`);
  if (url.username || url.password) invalid('host must not carry credentials: give them as user and password');
  if (!url.hostname) invalid(`host "${host}" names no BMC`);
  if (!isUrlHost(url)) invalid(`host "${host}": "${url.hostname}" is not a host name or address`);
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) {
    invalid(`host "${host}" must be the base URL only (scheme, name and port); the driver finds /redfish/v1 itself`);
  }
  return url;
}

/** Checks a node's redfish fields whole; messages never contain the password. */
export function parseTarget(fields: DriverFields): Target {
  const f = fields as Partial<Record<keyof RedfishFields, unknown>>;
  const url = parseBaseUrl(f.host);
  const { user, password, system, verify_tls: verify, ca_cert: ca } = f;
  if (typeof user !== 'string' || user === '') invalid('user must be a non-empty string');
  if (user.length > 256 || CONTROL.test(user)) invalid('user must be at most 256 characters without control characters');
  if (typeof password !== 'string' || password === '') invalid('password must be a non-empty string');
  if (password.length > 1024 || password.includes('\0')) invalid('password must be at most 1024 characters without NUL');
  if (system !== undefined && (typeof system !== 'string' || !isSystemPath(system))) {
    invalid('system must be a ComputerSystem\'s @odata.id, e.g. /redfish/v1/Systems/1');
  }
  if (verify !== undefined && typeof verify !== 'boolean') invalid('verify_tls must be true or false');
  if (ca !== undefined) {
    if (typeof ca !== 'string') invalid('ca_cert must be a PEM string');
    if (url.protocol !== 'https:') invalid('ca_cert is for a BMC reached over https://');
    if (verify === false) invalid('ca_cert and verify_tls false contradict each other: give one of them');
    const problem = caCertProblem(ca);
    if (problem) invalid(problem);
  }
  return {
    origin: url.origin,
    user,
    password,
    system: system as string | undefined,
    tls: { verify: verify ?? true, ca: ca as string | undefined },
  };
}
