/**
 * HTTP to Redfish BMCs, with undici (the HTTP client behind Node's own fetch), and their
 * sessions.
 *
 * - Authentication: a Redfish session (`POST` of `{UserName, Password}` to the service root's
 *   `Links.Sessions`, then `X-Auth-Token`), kept per BMC and user for the next calls, made anew
 *   (the old one deleted) when the BMC answers 401 (it timed out or was deleted on the BMC),
 *   and deleted when the service stops. A BMC without a session service gets HTTP basic authentication instead.
 * - A login is not cut short by a call's deadline: the BMC makes the session before it answers,
 *   and one whose answer is never read stays on the BMC, out of reach, until it times out (a
 *   small BMC's few sessions fill up, and it refuses every login). The call is answered at its
 *   deadline; the login goes on within its own bound, and the next call uses it.
 * - Sessions are state, not a queue: the service's device queue runs one call per BMC at a
 *   time, so two calls never log in to one BMC at once.
 * - Every other request carries the call's AbortSignal: at the call's deadline it is cancelled
 *   and its connection closed.
 * - TLS is verified unless a node says `verify_tls: false`; `ca_cert` replaces the system's CAs.
 *   One connection per request (no keep-alive), as Ironic's sushy does: BMC web servers are
 *   known to choke on long-lived connections.
 * - Nothing is sent anywhere but the BMC's own origin (no redirect is followed, no URL the BMC
 *   names elsewhere is used), and no message holds the password or a session token.
 */
import { createHash } from 'node:crypto';
import type { Agent } from 'undici';
import type { Response } from 'undici';
import { ObmError } from '../types';
import { TLS_CODES } from '../../tls';
import type { Target } from './target';
import { lazyModule } from '../../../lib/lazy';

const undici = lazyModule(() => require('undici') as typeof import('undici'));

/** Answers larger than this are refused: a ComputerSystem is a few KiB. */
const MAX_BODY_BYTES = 1 << 20;
/** Characters of a BMC's own error text kept in a message. */
const MAX_TEXT = 600;

export interface Reply {
  status: number;
  headers: Response['headers'];
  /** the parsed JSON body (an object), or undefined when the body was empty or not JSON */
  json?: Record<string, unknown>;
  text: string;
}

interface Login {
  /** the session token, or undefined with basic authentication */
  token?: string;
  /** the session's URL on the BMC, to delete it at shutdown */
  location?: string;
  /** the TLS settings it was made with (the key of its dispatcher) */
  tlsKey: string;
  /** the service root's Systems collection */
  systems: string;
  /** the only ComputerSystem of the BMC, once looked up (nodes without `system`) */
  onlySystem?: string;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * A BMC's own text, made safe to show: without the secrets, then without control characters,
 * then bounded. In that order: a secret holding a tab or a newline is found only in the text
 * as it came, and one cut in half by the bound would no longer be found at all.
 */
function clean(text: string, secrets: string[], max = MAX_TEXT): string {
  let out = text;
  for (const s of secrets) if (s) out = out.split(s).join('***');
  out = out.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return out.length > max ? `${out.slice(0, max)}…` : out;
}

/** A secret as the BMC may quote it: as given, and as a JSON string holds it (a request body echoed). */
function spellings(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1);
  return json === secret ? [secret] : [secret, json];
}

/** What HTTP basic authentication sends for a target: `user:password` in base64. */
const basicCredentials = (t: Target) => Buffer.from(`${t.user}:${t.password}`, 'utf8').toString('base64');

/** The messages of a Redfish error body (`error.@Message.ExtendedInfo[].Message`, else `error.message`). */
export function redfishMessages(json: Record<string, unknown> | undefined): string[] {
  const error = json?.error as Record<string, unknown> | undefined;
  const info = error?.['@Message.ExtendedInfo'] ?? json?.['@Message.ExtendedInfo'];
  const texts = (Array.isArray(info) ? info : info ? [info] : [])
    .map((m) => (m && typeof m === 'object' ? (m as Record<string, unknown>).Message : undefined))
    .filter((m): m is string => typeof m === 'string' && m.trim() !== '');
  if (texts.length) return texts;
  return typeof error?.message === 'string' ? [error.message] : [];
}

export class RedfishClient {
  private readonly logins = new Map<string, Login>();
  private readonly agents = new Map<string, Agent>();
  /**
   * Logins under way: close waits for their answers, which carry the tokens of sessions the BMC
   * has made (cut short, such a session would stay on the BMC, out of reach, until it times out).
   */
  private readonly loggingIn = new Set<Promise<unknown>>();
  /** The login under way per BMC and user: a call that comes meanwhile waits for it rather than make another session. */
  private readonly underWay = new Map<string, Promise<Login>>();
  /** close() began: no more logins */
  closed = false;

  /** @param loginTimeoutMs bound on one login (reading the service root, then making the session) */
  constructor(readonly loginTimeoutMs = 10_000) {}

  /** The dispatcher for a node's TLS settings (one per distinct setting, shared by its BMCs). */
  agent(tls: Target['tls']): { key: string; agent: Agent } {
    const key = `${tls.verify ? 'verify' : 'no-verify'}:${tls.ca ? sha256(tls.ca) : 'system'}`;
    let agent = this.agents.get(key);
    if (!agent) {
      agent = new (undici().Agent)({ pipelining: 0, connect: { rejectUnauthorized: tls.verify, ...(tls.ca ? { ca: tls.ca } : {}) } });
      this.agents.set(key, agent);
    }
    return { key, agent };
  }

  /** A call's view of one BMC: requests with its signal, under a (possibly shared) login. */
  call(target: Target, signal: AbortSignal): BmcCall {
    return new BmcCall(this, target, signal);
  }

  /** @internal for BmcCall */
  loginOf(key: string): Login | undefined {
    return this.logins.get(key);
  }

  /** @internal for BmcCall */
  remember(key: string, login: Login | undefined): void {
    if (login) this.logins.set(key, login);
    else this.logins.delete(key);
  }

  /** Sessions held now (for tests and inspection): their BMCs, never their tokens. */
  sessions(): string[] {
    return [...this.logins.entries()].filter(([, l]) => l.token).map(([k]) => k.split('\n')[0]!);
  }

  /** @internal for BmcCall: the login under way for `key`, else `start`'s, tracked until it ends */
  loginUnderWay(key: string, start: () => Promise<Login>): Promise<Login> {
    const known = this.underWay.get(key);
    if (known) return known;
    const login = start();
    this.underWay.set(key, login);
    this.loggingIn.add(login);
    void login.catch(() => undefined).finally(() => {
      this.loggingIn.delete(login);
      if (this.underWay.get(key) === login) this.underWay.delete(key);
    });
    return login;
  }

  /**
   * Logs out of every session (DELETE of each), all BMCs at once, each bounded by `signal`, then
   * closes every connection. Logins under way are waited for first (within `signal` too), so a
   * power call running at shutdown leaves no session behind. A BMC that does not answer keeps its
   * session until it times out.
   */
  async close(signal: AbortSignal): Promise<void> {
    this.closed = true;
    if (this.loggingIn.size && !signal.aborted) {
      let onAbort!: () => void;
      const aborted = new Promise<void>((resolve) => signal.addEventListener('abort', (onAbort = () => resolve()), { once: true }));
      await Promise.race([Promise.allSettled([...this.loggingIn]), aborted]);
      signal.removeEventListener('abort', onAbort);
    }
    const logins = [...this.logins.entries()];
    this.logins.clear();
    await Promise.allSettled(logins.map(async ([key, login]) => {
      if (!login.token || !login.location) return;
      const origin = key.split('\n')[0]!;
      const url = new URL(login.location, origin);
      if (url.origin !== origin) return; // a token goes to its own BMC only
      const agent = this.agents.get(login.tlsKey);
      if (!agent) return;
      const res = await undici().fetch(url, {
        method: 'DELETE', headers: { 'X-Auth-Token': login.token, 'OData-Version': '4.0' }, signal, dispatcher: agent, redirect: 'manual',
      });
      await res.body?.cancel();
    }));
    const agents = [...this.agents.values()];
    this.agents.clear();
    await Promise.allSettled(agents.map((a) => a.destroy()));
  }
}

/** The requests of one power call to one BMC. */
export class BmcCall {
  private readonly key: string;
  private readonly dispatcher: { key: string; agent: Agent };
  private readonly secrets: string[];

  constructor(private readonly client: RedfishClient, readonly target: Target, readonly signal: AbortSignal) {
    // Sessions belong to a BMC and a user; the password is part of the key so that a node with
    // a wrong password never rides on a session another node opened with the right one.
    this.key = `${target.origin}\n${target.user}\n${sha256(target.password)}`;
    this.dispatcher = client.agent(target.tls);
    // The basic authentication header too: a BMC's error page may quote the request's headers.
    this.secrets = [...spellings(target.password), basicCredentials(target)];
  }

  /**
   * `BMC <origin>: <what> <text>`; `text` is the driver's own (BMC text goes through bmcText).
   * `forMembers`: the driver's wording instead of `text` for the node's project (ObmError).
   */
  error(what: string, text: string, forMembers?: string): ObmError {
    const prefix = `BMC ${this.target.origin}: ${what} `;
    return new ObmError(prefix + text, forMembers === undefined ? {} : { forMembers: prefix + forMembers });
  }

  /** Text the BMC (or the TLS stack) wrote, made safe to show: without the password or token, bounded. */
  bmcText(text: string, max?: number): string {
    return clean(text, this.secrets, max);
  }

  /** The error for a non-2xx answer: the BMC's own ExtendedInfo text, as it gave it. */
  refused(what: string, reply: Reply, hint?: string): ObmError {
    const texts = redfishMessages(reply.json);
    // A page that is not JSON is cut shorter, once the secrets are out of it.
    const said = texts.length ? this.bmcText(texts.join(' ')) : this.bmcText(reply.text, 200) || 'no explanation';
    return this.error(what, `refused (HTTP ${reply.status}): ${said}${hint ? ` (${hint})` : ''}`);
  }

  /**
   * The service's login for this BMC and user, logging in first if there is none (or waiting
   * for the login under way). The call's deadline ends the wait, not the login (see above).
   */
  async login(): Promise<Login> {
    const known = this.client.loginOf(this.key);
    if (known) return known;
    if (this.client.closed) throw this.error('login', 'not sent: the service is stopping');
    if (this.signal.aborted) throw this.error('login', 'not sent: the call was stopped');
    const login = this.client.loginUnderWay(this.key, () => this.newLogin(AbortSignal.timeout(this.client.loginTimeoutMs)));
    const signal = this.signal;
    let onAbort!: () => void;
    const stopped = new Promise<never>((_, reject) => {
      signal.addEventListener('abort', (onAbort = () => reject(this.error('login', 'was stopped: the call ran out of time'))), { once: true });
    });
    try {
      return await Promise.race([login, stopped]);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** Reads the service root and makes a session, every request bounded by `signal` (not the call's). */
  private async newLogin(signal: AbortSignal): Promise<Login> {
    let root = await this.send('GET', '/redfish/v1/', 'reading the service root', {}, signal);
    // The service root must be readable without credentials; some BMCs want them anyway.
    if (root.status === 401) root = await this.send('GET', '/redfish/v1/', 'reading the service root', { auth: this.basic() }, signal);
    if (root.status === 401) throw this.refused('reading the service root /redfish/v1/', root, 'wrong user or password');
    if (root.status !== 200 || !root.json) throw this.refused('reading the service root /redfish/v1/', root, 'is this a Redfish BMC?');
    const systems = this.odataId(root.json.Systems) ?? '/redfish/v1/Systems';
    const links = root.json.Links as Record<string, unknown> | undefined;
    const sessionsPath = this.odataId(links?.Sessions) ?? (root.json.SessionService ? '/redfish/v1/SessionService/Sessions' : undefined);
    let login: Login = { tlsKey: this.dispatcher.key, systems };
    if (sessionsPath) {
      const reply = await this.send('POST', sessionsPath, 'login', { body: { UserName: this.target.user, Password: this.target.password } }, signal);
      if (reply.status >= 200 && reply.status < 300) {
        const token = reply.headers.get('x-auth-token');
        if (!token) throw this.error('login', `answered HTTP ${reply.status} without an X-Auth-Token`);
        const location = reply.headers.get('location') ?? this.odataId(reply.json);
        login = { ...login, token, location: location ?? undefined };
      } else if (reply.status === 401 || reply.status === 403) {
        throw this.refused(`login as ${this.target.user}`, reply, 'wrong user or password');
      } else if (![404, 405, 501].includes(reply.status)) {
        throw this.refused('login', reply);
      } // else: no session service after all; basic authentication
    }
    this.client.remember(this.key, login);
    return login;
  }

  /**
   * An authenticated request. A 401 on a session means the BMC dropped it: log in again, once,
   * and repeat the request.
   */
  async request(method: string, path: string, what: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
    let login = await this.login();
    let reply = await this.send(method, path, what, { body, headers, auth: this.auth(login) });
    if (reply.status === 401 && login.token) {
      this.client.remember(this.key, undefined);
      await this.logout(login);
      login = await this.login();
      reply = await this.send(method, path, what, { body, headers, auth: this.auth(login) });
    }
    if (reply.status === 401) throw this.refused(what, reply, `the BMC refused the credentials of ${this.target.user}`);
    return reply;
  }

  /**
   * Deletes a session given up after a 401, whatever the outcome: usually it timed out already,
   * but a BMC that answers 401 for what the account may not do keeps it alive, and a small
   * BMC's few sessions would fill up with ones nobody uses.
   */
  private async logout(login: Login): Promise<void> {
    if (!login.location) return;
    try {
      await this.send('DELETE', login.location, 'logout', { auth: { 'X-Auth-Token': login.token! } });
    } catch { /* the call's own request says what is wrong */ }
  }

  /** A GET that must answer a JSON object. */
  async get(path: string, what = `reading ${path}`): Promise<Reply & { json: Record<string, unknown> }> {
    const reply = await this.request('GET', path, what);
    if (reply.status !== 200) throw this.refused(what, reply);
    if (!reply.json) throw this.error(what, 'answered something other than a JSON object');
    return reply as Reply & { json: Record<string, unknown> };
  }

  /** The ComputerSystem's path: the node's `system`, or the BMC's only one. */
  async systemPath(): Promise<string> {
    if (this.target.system) return this.target.system;
    const login = await this.login();
    if (login.onlySystem) return login.onlySystem;
    const collection = await this.get(login.systems, 'listing the systems');
    const members = Array.isArray(collection.json.Members) ? collection.json.Members.map((m) => this.odataId(m)) : [];
    const paths = members.filter((m): m is string => m !== undefined);
    if (paths.length === 0) throw this.error('listing the systems', `found no ComputerSystem in ${login.systems}`);
    if (paths.length > 1) {
      throw this.error('listing the systems', `found ${paths.length} ComputerSystems (${this.bmcText(paths.join(', '))}): ` +
        'register the node with `system` set to the one it is');
    }
    login.onlySystem = paths[0]!;
    return login.onlySystem;
  }

  /** Forget the looked-up system (reading it failed: look it up again next time, in case the BMC's systems changed). */
  forgetSystem(): void {
    const login = this.client.loginOf(this.key);
    if (login) login.onlySystem = undefined;
  }

  /** `@odata.id` of a link object, if it is a plain path on this BMC. */
  odataId(link: unknown): string | undefined {
    const id = link && typeof link === 'object' ? (link as Record<string, unknown>)['@odata.id'] : undefined;
    return typeof id === 'string' && /^\/(?!\/)[^\s\u0000-\u001f\u007f]{0,500}$/.test(id) ? id : undefined;
  }

  private basic(): Record<string, string> {
    return { Authorization: `Basic ${basicCredentials(this.target)}` };
  }

  private auth(login: Login): Record<string, string> {
    if (!login.token) return this.basic();
    if (!this.secrets.includes(login.token)) this.secrets.push(login.token);
    return { 'X-Auth-Token': login.token };
  }

  /** One HTTP exchange with the BMC; throws ObmError for anything but an HTTP answer. */
  private async send(method: string, path: string, what: string,
    opts: { body?: unknown; headers?: Record<string, string>; auth?: Record<string, string> } = {}, signal = this.signal): Promise<Reply> {
    const url = new URL(path, this.target.origin);
    if (url.origin !== this.target.origin) throw this.error(what, `named a URL on another host (${url.origin}); not followed`);
    if (signal.aborted) throw this.error(what, 'not sent: the call was stopped');
    let res: Response;
    try {
      res = await undici().fetch(url, {
        method,
        headers: {
          Accept: 'application/json',
          'OData-Version': '4.0',
          ...(opts.body === undefined ? {} : { 'Content-Type': 'application/json' }),
          ...opts.headers,
          ...opts.auth,
        },
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal,
        dispatcher: this.dispatcher.agent,
        redirect: 'manual',
      });
    } catch (e) {
      throw this.unreachable(what, e, signal);
    }
    let text: string;
    try {
      text = await this.readBody(res);
    } catch (e) {
      throw e instanceof ObmError ? e : this.unreachable(what, e, signal);
    }
    if (res.status >= 300 && res.status < 400) {
      throw this.error(what, `answered HTTP ${res.status}, a redirect to ${this.bmcText(JSON.stringify(res.headers.get('location') ?? ''))}; not followed`);
    }
    let json: Record<string, unknown> | undefined;
    if (text.trim()) {
      try {
        const parsed: unknown = JSON.parse(text);
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) json = parsed as Record<string, unknown>;
      } catch { /* not JSON: callers that need JSON say so */ }
    }
    return { status: res.status, headers: res.headers, json, text: json ? '' : text };
  }

  private async readBody(res: Response): Promise<string> {
    if (!res.body) return '';
    const declared = Number(res.headers.get('content-length'));
    if (declared > MAX_BODY_BYTES) {
      await res.body.cancel();
      throw new ObmError(`BMC ${this.target.origin}: answered ${declared} bytes, more than a Redfish resource needs`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Uint8Array).length;
      if (size > MAX_BODY_BYTES) {
        await res.body.cancel().catch(() => undefined);
        throw new ObmError(`BMC ${this.target.origin}: answered more than ${MAX_BODY_BYTES} bytes, more than a Redfish resource needs`);
      }
      chunks.push(Buffer.from(chunk as Uint8Array));
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  /** The error of a request that got no HTTP answer: stopped, refused, unresolvable, TLS. */
  private unreachable(what: string, e: unknown, signal: AbortSignal): ObmError {
    if (signal.aborted) return this.error(what, signal === this.signal ? 'was stopped: the call ran out of time' : 'got no answer in time');
    const err = e as Error & { cause?: Error & { code?: string } };
    const cause = err.cause ?? err;
    const code = (cause as { code?: string }).code ?? '';
    const tls = TLS_CODES[code];
    // The TLS and network stacks' own texts name the address and port they tried (`connect
    // ECONNREFUSED 127.0.0.3:443`, `IP: 127.0.0.3 is not in the cert's list`): admins read them,
    // the node's project reads the driver's wording.
    const fix = 'give the BMC\'s CA (or its own certificate) as ca_cert, or set verify_tls to false';
    if (tls) {
      return this.error(what, `failed: the BMC's TLS certificate was refused because ${tls} (${this.bmcText(cause.message)}); ${fix}`,
        `failed: the BMC's TLS certificate was refused because ${tls}; ${fix}`);
    }
    const text = this.bmcText(cause.message || err.message);
    const safeCode = /^[A-Z][A-Z0-9_]{1,40}$/.test(code) ? code : '';
    return this.error(what, `failed: ${text}${code && !text.includes(code) ? ` (${code})` : ''}`,
      `failed: cannot reach the BMC${safeCode ? ` (${safeCode})` : ''}`);
  }
}
