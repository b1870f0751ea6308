/**
 * The suite-wide secrets capture (issue 11 item 10). Every password a test helper sends (a
 * caller's, and every `password`, `secret` or `token` field of a body: user, BMC and switch
 * passwords), the configured admin passwords and the Basic credentials made of them are
 * registered as secrets; every response body the helpers read (test/helpers/server.ts, the fuzz
 * and CLI helpers), every log line of the in-process servers (test/helpers/server.ts tees their
 * pino stream here, at level info when a test asked for none) and the whole output of every
 * child-process server (test/helpers/process.ts) is scanned when it is recorded. A secret is
 * registered before the service can see it, so scanning at record time misses nothing.
 * test/helpers/secrets-check.ts, a root hook that runs after the suite's last test, fails the
 * run if any secret appeared anywhere.
 *
 * Not scanned: passwords shorter than 8 characters or of fewer than 4 distinct characters (`pw`,
 * `x` repeated: they occur in ordinary text and in the long names tests use), and the one line a
 * service prints on purpose, the generated bootstrap admin password (README, Start).
 */
const MIN = 8;
const secrets = new Set<string>();
let pattern: RegExp | null = null;
const found: { secret: string; where: string; excerpt: string }[] = [];
export const scanned = { texts: 0, chars: 0 };

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Too plain to tell apart from ordinary text: short, or of fewer than four distinct characters (`xxxx…`). */
const plain = (s: string) => s.length < MIN || new Set(s).size < 4;

export function addSecret(s: unknown): void {
  if (typeof s !== 'string' || plain(s) || secrets.has(s)) return;
  secrets.add(s);
  pattern = null;
}

/** The Basic credentials of a user (their base64 form, as in an Authorization header). */
export function addCredentials(user: string, password: string): void {
  if (plain(password)) return;
  addSecret(password);
  const token = Buffer.from(`${user}:${password}`, 'utf8').toString('base64');
  if (!secrets.has(token)) {
    secrets.add(token);
    pattern = null;
  }
}

const SECRET_KEY = /password|secret|token/i;

/** Every secret-looking field of a request body, at any depth. */
export function addBodySecrets(body: unknown, depth = 0): void {
  if (!body || typeof body !== 'object' || depth > 8) return;
  for (const [k, v] of Object.entries(body)) {
    if (typeof v === 'string' && SECRET_KEY.test(k)) addSecret(v);
    else addBodySecrets(v, depth + 1);
  }
}

/** Scans `text` (a response body, log lines, a process's output) for every secret known now. */
export function record(text: string | Buffer | undefined, where = 'a response'): void {
  if (!text) return;
  const s = typeof text === 'string' ? text : text.toString('utf8');
  scanned.texts++;
  scanned.chars += s.length;
  if (!secrets.size) return;
  pattern ??= new RegExp([...secrets].sort((a, b) => b.length - a.length).map(escape).join('|'), 'g');
  pattern.lastIndex = 0;
  const m = pattern.exec(s);
  if (m && found.length < 20) {
    const at = m.index;
    found.push({ secret: m[0], where, excerpt: s.slice(Math.max(0, at - 120), at + m[0].length + 60) });
  }
}

/** A process's output without the line that shows the generated bootstrap password on purpose. */
export function recordProcessOutput(out: string, where: string): void {
  record(out.split('\n').filter((l) => !/^hilt: created the bootstrap admin .* with password: /.test(l)).join('\n'), where);
}

/** A pino destination that also records every line. */
export function tee(stream?: { write(line: string): void }): { write(line: string): void } {
  return {
    write(line: string) {
      record(line, 'a log line');
      stream?.write(line);
    },
  };
}

export function findings(): { secret: string; where: string; excerpt: string }[] {
  return [...found];
}

export function secretCount(): number {
  return secrets.size;
}
