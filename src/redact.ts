/** Secrets never leave the service: replace them wherever state or events are shown or logged. */
export const SECRET_KEY = /password|secret|token/i;

export const REDACTED = '[redacted]';

/** A copy of a value with every secret's value replaced (own enumerable keys, as Object.entries). */
export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value && typeof value === 'object') return redactedCopy(value as Record<string, unknown>);
  return value;
}

/** redact's copy of an object, without the key `omit` if given (an event's type, which the stream shows apart). */
export function redactedCopy(value: Record<string, unknown>, omit?: string): Record<string, unknown> {
  // A loop over the keys, not entries → fromEntries: each event streamed goes through here,
  // and the arrays of pairs were a fifth of making its frame.
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value)) {
    if (k === omit) continue;
    const v = SECRET_KEY.test(k) ? REDACTED : redact(value[k]);
    // An own "__proto__" stays a plain property (an assignment would set the prototype).
    if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out;
}

/** pino redact paths for request logging. */
export const LOG_REDACT_PATHS = ['req.headers.authorization', 'headers.authorization', 'req.headers.cookie', 'headers.cookie', 'req.headers["x-hilt-ui-bridge"]', 'headers["x-hilt-ui-bridge"]', '*.password', '*.passwordHash', '*.obm.password', '*.obm.fields.password'];

/** A key of a query string, decoded when it can be (`pass%77ord` is `password`). */
function queryKey(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}

/** An API token's secret (src/auth/tokens.ts), wherever it stands: its id is kept, to say which token it was. */
const API_TOKEN = /hilt_([0-9a-f]{16})_[A-Za-z0-9_-]{43}/g;

/**
 * A request's URL with the values of its query's secret parameters replaced, and any API token's
 * secret: no call takes a credential there, but a client may send one (`?access_token=`, a whole
 * token where its id belongs: `DELETE /auth/tokens/<token>`), and the URL is logged.
 */
export function redactedUrl(raw: string): string {
  const url = raw.includes('hilt_') ? raw.replace(API_TOKEN, `hilt_$1_${REDACTED}`) : raw;
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url.slice(q + 1).replace(/(^|&)([^=&]*)=[^&]*/g, (m, sep: string, key: string) => (SECRET_KEY.test(queryKey(key)) ? `${sep}${key}=${REDACTED}` : m));
  return url.slice(0, q + 1) + query;
}

/** fastify's own serializer of a request (the same fields), its URL without secrets. */
function request(req: { method?: string; url?: string; headers?: Record<string, unknown>; host?: string; ip?: string; socket?: { remotePort?: number } }) {
  return {
    method: req.method, url: typeof req.url === 'string' ? redactedUrl(req.url) : req.url, version: req.headers?.['accept-version'] as string | undefined,
    host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort,
  };
}

/** The service's pino options; `stream` lets tests read what would be logged. */
export function loggerOptions(level: string, stream?: { write(line: string): void }) {
  return { level, redact: { paths: LOG_REDACT_PATHS, censor: REDACTED }, serializers: { req: request }, ...(stream ? { stream } : {}) };
}
