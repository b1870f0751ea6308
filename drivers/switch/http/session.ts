/**
 * The one HTTP session class of the REST switch drivers (Brocade VDX, Dell OS9), over undici:
 *
 * - One keep-alive connection per switch session (an undici Client, one request at a time), so
 *   the operations the service queues on a switch share it, as SSH sessions share one login.
 *   Closing the session closes it; cutting it (the service gave up on a call) aborts the request
 *   in flight at once.
 * - A timeout on every request (connecting, the headers and the body), besides the call's own
 *   deadline, which cuts the session.
 * - TLS verified unless the switch says `verify_tls: false`; `ca_cert` replaces the system's CAs.
 *   Nothing is sent anywhere but the switch's own origin (no redirect is followed).
 * - HTTP basic authentication; the password and the Authorization header are masked out of
 *   every message and log line.
 * - A read (GET, or a POST the table marks as a read) that loses its connection before any answer
 *   is sent once more on a new one: an idle keep-alive connection the switch closed. A change is
 *   never sent twice.
 */
import type { Client } from 'undici';
import { lazyModule } from '../../../lib/lazy';
import { SwitchError, type SwitchLog } from '../types';
import { TLS_CODES } from '../../tls';

const undici = lazyModule(() => require('undici') as typeof import('undici'));

/** A switch's REST endpoint, from its registration (drivers/switch/http/fields.ts). */
export interface HttpTarget {
  /** the switch's name in the service, for messages */
  name: string;
  /** `https://host:port` as URL.origin spells it */
  origin: string;
  username: string;
  password: string;
  tls: { verify: boolean; ca?: string };
}

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** from the origin, already encoded: `/rest/config/running/…` */
  path: string;
  /** an XML body */
  body?: string;
  /** a POST that only reads (an RPC, a show command): may be sent again, and changes nothing */
  read?: boolean;
}

export interface HttpReply {
  status: number;
  text: string;
}

export interface HttpSessionOptions {
  /** bound on each request: connecting, the answer's headers, its body */
  requestTimeoutMs: number;
  /** the media type of request bodies and of the answers asked for */
  mediaType: string;
  log?: SwitchLog;
}

/** Answers larger than this are refused (a whole switch's MAC table is well under it). */
const MAX_BODY_BYTES = 16 << 20;
/** Characters of a switch's own text kept in a message. */
const MAX_TEXT = 600;

export class HttpSession {
  private readonly client: Client;
  private readonly cut = new AbortController();
  private readonly secrets: string[];
  private readonly auth: string;
  /** requests sent so far that may change the switch (the contract's changesSent) */
  changesSent = 0;
  /** requests sent so far, and in flight */
  requests = 0;
  inFlight = 0;
  private closed = false;

  constructor(readonly target: HttpTarget, private readonly opts: HttpSessionOptions) {
    const t = opts.requestTimeoutMs;
    this.client = new (undici().Client)(target.origin, {
      pipelining: 1,
      keepAliveTimeout: 60_000,
      keepAliveMaxTimeout: 600_000,
      connectTimeout: t,
      headersTimeout: t,
      bodyTimeout: t,
      connect: { rejectUnauthorized: target.tls.verify, ...(target.tls.ca ? { ca: target.tls.ca } : {}) },
    });
    this.auth = `Basic ${Buffer.from(`${target.username}:${target.password}`, 'utf8').toString('base64')}`;
    // The password also as a JSON string holds it: a switch may echo a request body.
    const json = JSON.stringify(target.password).slice(1, -1);
    this.secrets = [this.auth, this.auth.slice(6), target.password, json].filter((s) => s.length >= 3);
  }

  get alive(): boolean {
    return !this.closed;
  }

  /** `switch NAME (origin): text`, masked. */
  error(text: string): SwitchError {
    return new SwitchError(this.mask(`switch ${this.target.name} (${this.target.origin}): ${text}`));
  }

  /**
   * Text with every secret of the session replaced by `***`, then control characters by
   * spaces, then bounded: a secret is looked for in the text as it came, before anything that
   * would change or cut it.
   */
  mask(text: string, max = Infinity): string {
    const out = this.redact(text).replace(/[\u0000-\u0008\u000b-\u001f\u007f]+/g, ' ');
    return out.length > max ? `${out.slice(0, max)}…` : out;
  }

  /** A switch's own words, made safe to quote: secrets out first, then spaces collapsed, bounded. */
  quoteSwitch(text: string): string {
    return this.mask(this.redact(text).replace(/\s+/g, ' ').trim(), MAX_TEXT);
  }

  private redact(text: string): string {
    let out = text;
    for (const s of this.secrets) out = out.split(s).join('***');
    return out;
  }

  /**
   * One request; resolves with any HTTP answer (the caller judges the status), rejects with
   * SwitchError when there is none: refused, unreachable, TLS, timed out, cut, dropped.
   */
  async send(req: HttpRequest, signal?: AbortSignal): Promise<HttpReply> {
    const read = req.method === 'GET' || req.read === true;
    for (let attempt = 0; ; attempt++) {
      if (this.closed) throw this.error(`${req.method} ${req.path}: not sent, the session is closed`);
      try {
        return await this.once(req, read, signal);
      } catch (err) {
        const code = (err as { code?: string }).code ?? '';
        const dropped = code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'EPIPE';
        if (!(read && dropped && attempt === 0 && !this.closed && !signal?.aborted)) throw this.failure(req, err, signal);
      }
    }
  }

  private async once(req: HttpRequest, read: boolean, signal?: AbortSignal): Promise<HttpReply> {
    const started = performance.now();
    const signals = [this.cut.signal, AbortSignal.timeout(this.opts.requestTimeoutMs), ...(signal ? [signal] : [])];
    this.requests++;
    // Counted when it is sent, answered or not (the contract's changesSent).
    if (!read) this.changesSent++;
    this.inFlight++;
    try {
      const res = await this.client.request({
        method: req.method,
        path: req.path,
        headers: {
          authorization: this.auth,
          accept: this.opts.mediaType,
          ...(req.body === undefined ? {} : { 'content-type': this.opts.mediaType }),
        },
        body: req.body,
        signal: AbortSignal.any(signals),
      });
      const text = await this.readBody(res.body, req);
      this.opts.log?.debug({ switch: this.target.name, status: res.statusCode, ms: Math.round(performance.now() - started) },
        this.mask(`sent: ${req.method} ${req.path}${req.body ? ` ${req.body}` : ''}`, 2000));
      if (res.statusCode >= 300 && res.statusCode < 400) {
        throw this.error(`${req.method} ${req.path} answered HTTP ${res.statusCode}, a redirect to ${JSON.stringify(this.quoteSwitch(String(res.headers.location ?? '')))}; not followed`);
      }
      return { status: res.statusCode, text };
    } finally {
      this.inFlight--;
    }
  }

  private async readBody(body: AsyncIterable<Buffer> & { destroy?: (e?: Error) => void }, req: HttpRequest): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        body.destroy?.();
        throw this.error(`${req.method} ${req.path} answered more than ${MAX_BODY_BYTES} bytes; refused`);
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  /** The error of a request that got no (usable) answer, in words. */
  private failure(req: HttpRequest, e: unknown, signal?: AbortSignal): SwitchError {
    if (e instanceof SwitchError) return e;
    const what = `${req.method} ${req.path}`;
    if (this.cut.signal.aborted || signal?.aborted) return this.error(`${what}: stopped, the call ran out of time`);
    const err = e as Error & { code?: string; cause?: Error & { code?: string } };
    const code = err.cause?.code ?? err.code ?? '';
    if (err.name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
      return this.error(`${what}: no answer within ${this.opts.requestTimeoutMs} ms (the switch stopped answering)`);
    }
    const tls = TLS_CODES[code];
    if (tls) {
      return this.error(`${what}: the switch's TLS certificate was refused because ${tls}; give the switch's CA (or its own certificate) as ca_cert, or set verify_tls to false`);
    }
    if (code === 'ECONNREFUSED') return this.error(`${what}: connection refused (is the switch's REST service on?)`);
    if (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'EPIPE') return this.error(`${what}: the switch closed the connection without an answer`);
    return this.error(`${what}: ${this.quoteSwitch((err.cause ?? err).message || String(e))}${code ? ` (${code})` : ''}`);
  }

  /** Cut the session now: the request in flight is aborted, the connection closed. */
  destroy(): void {
    this.closed = true;
    this.cut.abort();
    void this.client.destroy().catch(() => undefined);
  }

  /** Close the connection once the request in flight (if any) is answered. */
  async close(): Promise<void> {
    this.closed = true;
    await this.client.close().catch(() => undefined);
  }
}
