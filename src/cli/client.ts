/**
 * The CLI's HTTP client: one call of hilt's REST API, its answer, or an error that says whose
 * failure it was (the exit code follows from that: src/cli/output.ts).
 */

import { request as httpRequest, IncomingMessage, RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';

/**
 * Where a call goes: the endpoint's host, and the path as the CLI made it. Not a URL string: a
 * URL parser drops `.` and `..` segments (even as %2E%2E), and names may be `.` or `..`.
 */
function target(base: URL, pathAndQuery: string): RequestOptions {
  return { protocol: base.protocol, hostname: base.hostname.replace(/^\[(.*)\]$/, '$1'), port: base.port, path: pathAndQuery };
}

/** How long a call may wait without a byte from the server by default: longer than the service's slowest call (a headnode start, HILT_HEADNODE_TIMEOUT_MS: 2 minutes). */
export const DEFAULT_TIMEOUT_S = 180;

/** The server sent nothing for the timeout (the request is destroyed with it). */
class Silent extends Error {}

/**
 * One HTTP exchange. node:http rather than fetch: fetch refuses ports it deems unsafe (6000,
 * 10080, …), and a service may well listen there. `timeoutMs` bounds each wait for the server
 * (connecting, its answer, each part of its body); 0: none.
 */
function send(to: RequestOptions, method: string, headers: Record<string, string>, payload: string | undefined, timeoutMs: number): Promise<{ res: { status: number; statusText: string; type: string; location?: string }; text: string }> {
  return new Promise((resolve, reject) => {
    const request = to.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request({ ...to, method, headers: payload === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(payload)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ res: { status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', type: res.headers['content-type'] ?? '', location: res.headers.location }, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    if (timeoutMs > 0) req.setTimeout(timeoutMs, () => req.destroy(new Silent()));
    req.on('error', reject);
    req.end(payload);
  });
}

/** An error answer of the server: its status and its `{type, msg}` body (docs/api-conventions.md §1). */
export class ApiError extends Error {
  constructor(readonly status: number, readonly type: string, readonly msg: string, readonly call: string) {
    super(`${type}: ${msg}`);
  }
}

/** The server could not be reached, or its answer could not be read. */
export class TransportError extends Error {}

/** A redirect, not followed: the endpoint is not the service, and asking again will not make it one. */
export class Redirected extends TransportError {}

/** A command line the CLI refuses before it calls anything (exit code 2). */
export class UsageError extends Error {}

/**
 * A success whose JSON is not of the shape the command reads (`{}` where a list is due, `null`,
 * a field missing): the endpoint is not the service, or not a version this CLI reads. Exit code
 * 3, as any answer that is not the call's (docs/cli.md).
 */
export class BadAnswer extends Error {
  constructor(readonly endpoint: string, readonly call: string, detail?: string, what = 'JSON that is not what this command reads') {
    super(`${endpoint} answered ${call} with ${what}${detail ? ` (${detail})` : ''}: is it the service's address, and a version of it this hilt reads?`);
  }
}

/** A user's password (HTTP basic), or a bearer token (an API token or an OpenID Connect token: docs/identity.md). */
export type Credentials = { user: string; password: string } | { token: string };

type Want = 'json' | 'change' | 'text';

export interface Answer {
  status: number;
  /** the body as the server sent it ('' when none) */
  text: string;
  /** the body parsed as JSON (undefined when none) */
  body: unknown;
  /** `METHOD /path`, as errors name the call */
  call: string;
}

/**
 * Each path segment percent-encoded: names may hold any character (a port's `/` becomes %2F);
 * a name `.` or `..` too, which would otherwise read as a step in the path.
 */
export function path(...segments: string[]): string {
  return '/' + segments.map((s) => (/^\.\.?$/.test(s) ? s.replace(/\./g, '%2E') : encodeURIComponent(s))).join('/');
}

export class Client {
  private readonly base: string;
  private readonly url: URL;
  /**
   * The last call whose success answered JSON: a TypeError the command meets while it reads that
   * answer is the answer's fault (BadAnswer), said as such rather than as a stack (report).
   */
  lastJsonCall?: string;

  /**
   * `endpoint`: HIL_ENDPOINT or --endpoint, e.g. http://127.0.0.1:5000 (a path after the host,
   * such as /v0, is kept in front of every call).
   */
  /**
   * `timeoutS`: how long a call waits for the server (--timeout, HILT_TIMEOUT) before it fails;
   * 0: no limit. A stream once open (the events, a console) is not bounded by it.
   */
  constructor(endpoint: string, private readonly credentials: () => Promise<Credentials | null>, readonly timeoutS = DEFAULT_TIMEOUT_S) {
    let url: URL;
    // An endpoint may hold a password (http://user:pw@host): errors show it without, to its
    // last @, since a password typed as is may hold / ? # or @.
    const shown = endpoint.replace(/^([^:/?#]+:\/\/[^/?#:@]*):.*@/, '$1:***@');
    try {
      url = new URL(endpoint);
    } catch {
      throw new UsageError(`the endpoint "${shown}" is not a URL (e.g. http://127.0.0.1:5000)`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`the endpoint "${shown}" must be an http:// or https:// URL`);
    // A # ? or @ in a password cuts the URL there: the host (or a port) would be a part of the
    // password, shown in every error after; an endpoint has no @ after its user and password.
    if ((url.pathname + url.search + url.hash).includes('@')) throw new UsageError(`the endpoint "${shown}" has an @ the URL does not read as user:password@host: percent-encode a / ? # or @ in the password (%2F %3F %23 %40)`);
    this.url = url;
    this.base = url.origin + url.pathname.replace(/\/+$/, '');
  }

  /** The user and password the endpoint holds (http://user:pw@host), if it does. */
  get userInfo(): { user: string; password: string } | undefined {
    if (!this.url.username) return undefined;
    return { user: decodeURIComponent(this.url.username), password: decodeURIComponent(this.url.password) };
  }

  /** The failure of a call the server did not answer in time (exit code 3, as an unreachable server). */
  silent(call: string): TransportError {
    return new TransportError(`${this.base} did not answer ${call} within ${this.timeoutS} s (--timeout or HILT_TIMEOUT sets the limit in seconds; 0: none)`);
  }

  /**
   * A redirect (a proxy sending http to https, a moved service): not followed, so that the
   * credentials go nowhere but to the endpoint given; the endpoint is not the service (exit 3).
   */
  redirected(call: string, status: number, location: string | undefined): Redirected {
    const to = location ? ` to ${location.replace(/^([^:/?#]+:\/\/)[^/?#]*@/, '$1')}` : '';
    return new Redirected(`${this.base} answered ${call} with a redirect (${status})${to}: hilt does not follow it; give the service's own address as the endpoint`);
  }

  /** The path of a call behind the endpoint's own path (e.g. /v0). */
  private prefixed(p: string): string {
    return this.url.pathname.replace(/\/+$/, '') + p;
  }

  /** Asks for the caller's password now, if it must be asked for (before a command asks for another secret). */
  async login(): Promise<void> {
    await this.credentials();
  }

  get endpoint(): string {
    return this.base;
  }

  /**
   * `want`: what a success must hold. 'json': JSON (a read, a call that answers a status id);
   * 'change': nothing, or JSON; 'text': any text (a console log).
   */
  async call(method: string, p: string, body?: unknown, query?: Record<string, string | undefined>, want: Want = 'change'): Promise<Answer> {
    const qs = new URLSearchParams(Object.entries(query ?? {}).filter((e): e is [string, string] => e[1] !== undefined)).toString();
    const to = target(this.url, this.prefixed(p) + (qs ? `?${qs}` : ''));
    const headers: Record<string, string> = { accept: 'application/json' };
    const authorization = await this.authorization();
    if (authorization) headers.authorization = authorization;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: { status: number; statusText: string; type: string; location?: string };
    let text: string;
    try {
      ({ res, text } = await send(to, method, headers, body === undefined ? undefined : JSON.stringify(body), this.timeoutS * 1000));
    } catch (err) {
      if (err instanceof Silent) throw this.silent(`${method} ${p}`);
      const e = err as NodeJS.ErrnoException;
      throw new TransportError(`cannot reach ${this.base}: ${e.code ?? e.message}`);
    }
    let parsed: unknown;
    let isJson = false;
    if (text) {
      try {
        parsed = JSON.parse(text);
        isJson = true;
      } catch {
        parsed = undefined;
      }
    }
    const call = `${method} ${p}`;
    if (res.status >= 300 && res.status < 400) throw this.redirected(call, res.status, res.location);
    if (res.status >= 200 && res.status < 300) {
      // Judged by the body, not its type: HIL's server (Flask) sends its JSON, and its empty
      // answers, as text/html. Anything else means the endpoint is not the service (a web
      // server, a proxy's page): said so, rather than a stack trace where a field was read.
      if (want !== 'text' && !isJson && (text || want === 'json')) {
        const what = /^\s*</.test(text) ? 'a web page, not the service\'s JSON' : `${text ? 'text that is not JSON' : 'nothing'} where the service answers JSON`;
        throw new TransportError(`${this.base} answered ${call} with ${what}: is it the service's address?`);
      }
      if (isJson) this.lastJsonCall = call;
      return { status: res.status, text, body: parsed, call };
    }
    const e = parsed as { type?: unknown; msg?: unknown } | undefined;
    if (e && typeof e.type === 'string' && typeof e.msg === 'string') throw new ApiError(res.status, e.type, e.msg, call);
    throw new ApiError(res.status, `HTTP ${res.status}`, text.trim().slice(0, 500) || res.statusText, call);
  }

  /**
   * A GET whose answer is read as it comes (the event stream): the open response once its status
   * is 200, else the error as call() throws it. `signal` ends it. The timeout bounds the wait for
   * the answer's head only: a quiet stream is not cut.
   */
  async open(p: string, query: [string, string][], headers: Record<string, string>, signal?: AbortSignal): Promise<IncomingMessage> {
    const qs = new URLSearchParams(query).toString();
    const to = target(this.url, this.prefixed(p) + (qs ? `?${qs}` : ''));
    const h: Record<string, string> = { ...headers };
    const authorization = await this.authorization();
    if (authorization) h.authorization = authorization;
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = (to.protocol === 'https:' ? httpsRequest : httpRequest)({ ...to, headers: h, signal }, (res) => {
        req.setTimeout(0);
        resolve(res);
      });
      if (this.timeoutS > 0) req.setTimeout(this.timeoutS * 1000, () => req.destroy(new Silent()));
      req.on('error', (err: NodeJS.ErrnoException) => reject(err instanceof Silent ? this.silent(`GET ${p}`) : new TransportError(`cannot reach ${this.base}: ${err.code ?? err.message}`)));
      req.end();
    });
    if (res.statusCode === 200) return res;
    if (res.statusCode !== undefined && res.statusCode >= 300 && res.statusCode < 400) {
      res.resume();
      throw this.redirected(`GET ${p}`, res.statusCode, res.headers.location);
    }
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let e: { type?: unknown; msg?: unknown } | undefined;
    try {
      e = JSON.parse(text) as typeof e;
    } catch {
      e = undefined;
    }
    if (e && typeof e.type === 'string' && typeof e.msg === 'string') throw new ApiError(res.statusCode ?? 0, e.type, e.msg, `GET ${p}`);
    throw new ApiError(res.statusCode ?? 0, `HTTP ${res.statusCode}`, text.trim().slice(0, 500), `GET ${p}`);
  }

  /** The Authorization header every call carries (none without credentials); a WebSocket's handshake too (`node console attach`). */
  async authorization(): Promise<string | undefined> {
    const cred = await this.credentials();
    if (!cred) return undefined;
    if ('token' in cred) return `Bearer ${cred.token}`;
    return 'Basic ' + Buffer.from(`${cred.user}:${cred.password}`, 'utf8').toString('base64');
  }

  /** A string field of an answer the command cannot do without (a status id, a token): BadAnswer without it. */
  field(r: Answer, key: string): string {
    const b = r.body;
    const v = b !== null && typeof b === 'object' && !Array.isArray(b) ? (b as Record<string, unknown>)[key] : undefined;
    if (typeof v !== 'string') throw new BadAnswer(this.base, r.call, `no "${key}" string`);
    return v;
  }

  get = (p: string, query?: Record<string, string | undefined>) => this.call('GET', p, undefined, query, 'json');
  /** A GET whose answer is text as it is (a console log). */
  getText = (p: string) => this.call('GET', p, undefined, undefined, 'text');
  put = (p: string, body?: unknown) => this.call('PUT', p, body);
  post = (p: string, body?: unknown) => this.call('POST', p, body);
  /** A POST that answers JSON (a network operation's status id). */
  postJson = (p: string, body?: unknown) => this.call('POST', p, body, undefined, 'json');
  patch = (p: string, body?: unknown) => this.call('PATCH', p, body);
  del = (p: string) => this.call('DELETE', p);
}
