/** Secrets never leave the service: replace them wherever state or events are shown or logged. */
export const SECRET_KEY = /password|secret|token/i;

export const REDACTED = '[redacted]';

export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_KEY.test(k) ? REDACTED : redact(v)]));
  }
  return value;
}

/** pino redact paths for request logging. */
export const LOG_REDACT_PATHS = ['req.headers.authorization', 'headers.authorization', 'req.headers.cookie', 'headers.cookie', 'req.headers["x-hilt-ui-bridge"]', 'headers["x-hilt-ui-bridge"]', '*.password', '*.passwordHash', '*.obm.password', '*.obm.fields.password'];

/** The service's pino options; `stream` lets tests read what would be logged. */
export function loggerOptions(level: string, stream?: { write(line: string): void }) {
  return { level, redact: { paths: LOG_REDACT_PATHS, censor: REDACTED }, ...(stream ? { stream } : {}) };
}
