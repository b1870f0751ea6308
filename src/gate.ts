/**
 * The process's HTTP listener, in front of the API: it stays open whether this process is the
 * active one or a standby (docs/high-availability.md).
 *
 * - `GET /health`, without authentication, for a load balancer: 200 `{"status": "active"}` when
 *   this process serves the API, 503 `{"status": "standby"}` when it does not.
 * - Every other call goes to the active API (the fastify app of the current activation), or is
 *   answered 503 `ServiceUnavailableError` with `Retry-After` while this process is a standby:
 *   nothing is read or changed here, so a client retries (at the load balancer, which by then
 *   sends it to the active process).
 * - `GET /metrics` on a standby, when the metrics are open (HILT_METRICS_OPEN): a scraper
 *   watches every process, standbys too (`hilt_active` 0). Behind an admin's login it is a 503
 *   as any call: a standby reads no users to check a password against.
 */
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createServer as createTlsServer } from 'node:https';
import { clientError } from './request-body';

export type Role = 'active' | 'standby';
type Handler = (req: IncomingMessage, res: ServerResponse) => void;
/** A request to switch protocols (a console's WebSocket): the active API's, or a 503 on the socket. */
type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export interface GateOptions {
  /** this process's name, shown by /health */
  instance: string;
  /** seconds a client should wait before trying again (Retry-After) */
  retryAfterS: number;
  /** PEM certificate chain and key: serve HTTPS (TLS 1.2 at least) */
  tls?: { cert: Buffer; key: Buffer };
  /** a request's headers and body must arrive within this; what it is answered is not bounded */
  requestTimeoutMs: number;
  /** connections open at once at most: one past it is closed unanswered */
  maxConnections: number;
  /** serves GET /metrics without credentials while this process is a standby */
  metrics?: { text(): Promise<string>; readonly contentType: string };
  /** each answer node's HTTP parser gave (408, 431, 400), which no handler sees: for the metrics */
  unread?: (method: string | undefined, status: number) => void;
}

export class Gate {
  readonly server: Server;
  private handler?: Handler;
  private upgrade?: UpgradeHandler;
  private why = 'starting';

  constructor(private readonly opts: GateOptions) {
    const route = (req: IncomingMessage, res: ServerResponse) => this.route(req, res);
    // An HTTP/1.1 request without Host gets the API's answer (node would answer an empty 400).
    // A client that sends its headers or its body slowly, or not at all, holds a connection
    // for requestTimeoutMs at most (node's own bound is 300 s), checked every tenth of it. Only
    // the request's arrival is bounded: an event stream or a WebSocket, once asked for, is not.
    const http = {
      requireHostHeader: false,
      requestTimeout: opts.requestTimeoutMs,
      headersTimeout: opts.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.round(opts.requestTimeoutMs / 10))),
    };
    this.server = opts.tls
      ? createTlsServer({ ...opts.tls, minVersion: 'TLSv1.2', ...http }, route)
      : createServer(http, route);
    // Each connection holds a file descriptor: past the cap node closes new ones at once.
    this.server.maxConnections = opts.maxConnections;
    // A request node's HTTP parser refuses gets the API's error body (the apps never see it).
    this.server.on('clientError', (err: Error & { code?: string }, socket: Socket) => {
      const answered = clientError(err, socket);
      if (answered) opts.unread?.(answered.method, answered.status);
    });
    // As fastify sets its own server (keep-alive sockets of a load balancer or a client stay open).
    this.server.keepAliveTimeout = 72_000;
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (this.handler && this.upgrade) return this.upgrade(req, socket, head);
      const body = JSON.stringify({ type: 'ServiceUnavailableError', msg: `this hilt process (${this.opts.instance}) is a standby: ${this.why}` });
      socket.on('error', () => socket.destroy());
      socket.end(`HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRetry-After: ${this.opts.retryAfterS}\r\nConnection: close\r\n\r\n${body}`);
    });
  }

  get role(): Role {
    return this.handler ? 'active' : 'standby';
  }

  /** Why this process is a standby (null when active). */
  get standbyReason(): string | null {
    return this.handler ? null : this.why;
  }

  listen(host: string, port: number): Promise<string> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        const a = this.server.address() as { address: string; port: number; family: string };
        resolve(`${this.opts.tls ? 'https' : 'http'}://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`);
      });
    });
  }

  /** Serve the API with this handler (the active fastify app's), and its upgrades (WebSockets). */
  activate(handler: Handler, upgrade?: UpgradeHandler): void {
    this.handler = handler;
    this.upgrade = upgrade;
  }

  /** Answer 503 from now on, saying why. */
  standby(why: string): void {
    this.handler = undefined;
    this.upgrade = undefined;
    this.why = why;
  }

  private route(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    // Every API call passes here: the path is cut out of the URL only for /health (and on a standby).
    if (url.startsWith('/health') && (url.length === 7 || url[7] === '?') && (req.method === 'GET' || req.method === 'HEAD')) {
      req.resume();
      const active = !!this.handler;
      const body = JSON.stringify(active ? { status: 'active', instance: this.opts.instance } : { status: 'standby', instance: this.opts.instance, reason: this.why });
      res.writeHead(active ? 200 : 503, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    if (this.handler) return this.handler(req, res);
    req.resume();
    const path = url.split('?')[0];
    if (path === '/metrics' && req.method === 'GET' && this.opts.metrics) return void this.metrics(this.opts.metrics, res);
    const body = JSON.stringify({ type: 'ServiceUnavailableError', msg: `this hilt process (${this.opts.instance}) is a standby: ${this.why}; nothing was read or changed` });
    res.writeHead(503, {
      'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'retry-after': String(this.opts.retryAfterS),
    });
    res.end(body);
  }

  private async metrics(m: NonNullable<GateOptions['metrics']>, res: ServerResponse): Promise<void> {
    let text: string;
    try {
      text = await m.text();
    } catch {
      return void res.writeHead(500, { 'content-length': 0 }).end();
    }
    res.writeHead(200, { 'content-type': m.contentType, 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
    res.end(text);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
    });
  }
}
