/**
 * A REST switch for tests and demos: an HTTP (or HTTPS, with a certificate made by openssl at
 * start) server on 127.0.0.1, port 0 unless told, that checks HTTP basic authentication and hands
 * each request to its vendor (brocade.ts, dellnos9.ts), which holds the switch's per-port state
 * and answers in the vendor's XML shapes and status codes.
 *
 * Every port also has what wiring validation reads: the MAC addresses the switch learned on it
 * and its LLDP neighbour, which a test sets (`setWiring`); a shut port learns nothing and has no
 * neighbour, as on a real switch.
 *
 * Faults a test switches on and off: `refuseCredentials` (every request 401), `hang` (requests
 * are read and never answered), `drop` (the connection is closed on receipt), `failChanges` (every
 * change answered with the vendor's error and this message), `ignoreChanges` (every change
 * answered 2xx and not made). Each of the first four applies to `all` requests or to `changes`
 * only (`hangOnly`: to that many of them). Counted: TCP connections, requests (method, path, body), changes, saves.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCertificate } from '../../helpers/redfish-sim';

export type Which = 'all' | 'changes' | false;

export interface SimRequest {
  method: string;
  /** the path and query as sent */
  path: string;
  body: string;
}

export interface SimAnswer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
}

/** What a switch has on a port beside its VLANs: its admin state and what it learned. */
export interface SimPortBase {
  shutdown: boolean;
  /** learned MACs, lowercase `aa:bb:cc:dd:ee:ff` */
  macs: string[];
  lldp?: { chassisId: string; portId: string; systemName?: string };
}

/** A vendor: its request handler over its own state, and what tests read of it. */
export interface SimVendor<P extends SimPortBase = SimPortBase> {
  readonly name: string;
  readonly ports: Map<string, P>;
  /** media type of its answers */
  readonly mediaType: string;
  /** answer one authenticated request; `change` is set when it may change the switch */
  handle(req: SimRequest): SimAnswer;
  /** does this request change anything (counted, and subject to the change faults)? */
  isChange(req: SimRequest): boolean;
  /** the vendor's error answer for a refusal */
  error(status: number, message: string): SimAnswer;
  /** the VLANs a port carries, as the switch forwards them (the default VLAN left out) */
  carried(port: string): { native: number | null; tagged: number[] };
  /** saves of the running configuration so far */
  saves: number;
}

export interface RestSimOptions {
  username: string;
  password: string;
  /** HTTPS with a self-signed certificate for 127.0.0.1 */
  tls?: boolean;
  /** listen here (default 0: an ephemeral port) */
  port?: number;
  /** the loopback address to listen on (default 127.0.0.1) */
  address?: '127.0.0.1' | '::1';
  /** answer every request after this long (a switch's REST service takes milliseconds) */
  latencyMs?: number;
}

export class RestSwitchSim<P extends SimPortBase = SimPortBase> {
  /** `http(s)://127.0.0.1:PORT` (or `[::1]`): the registration's hostname */
  url = '';
  /** PEM of the certificate (TLS only): what `ca_cert` needs */
  certPem = '';
  connections = 0;
  readonly requests: SimRequest[] = [];
  changes = 0;
  refuseCredentials = false;
  hang: Which = false;
  /** with `hang`: only this many more requests hang (null: every one) */
  hangOnly: number | null = null;
  drop: Which = false;
  failChanges: { status: number; message: string } | null = null;
  ignoreChanges = false;
  latencyMs: number;
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private certDir?: string;

  constructor(readonly vendor: SimVendor<P>, readonly opts: RestSimOptions) {
    this.latencyMs = opts.latencyMs ?? 0;
  }

  get username(): string {
    return this.opts.username;
  }

  get password(): string {
    return this.opts.password;
  }

  get ports(): Map<string, P> {
    return this.vendor.ports;
  }

  port(name: string): P {
    const p = this.vendor.ports.get(name);
    if (!p) throw new Error(`the simulated switch has no port ${name}`);
    return p;
  }

  carried(port: string): { native: number | null; tagged: number[] } {
    return this.vendor.carried(port);
  }

  get saves(): number {
    return this.vendor.saves;
  }

  /** What the switch learned on a port (a shut port shows none of it). */
  setWiring(port: string, wiring: { macs?: string[]; lldp?: SimPortBase['lldp'] | null }): void {
    const p = this.port(port);
    if (wiring.macs) p.macs = wiring.macs.map((m) => m.toLowerCase());
    if (wiring.lldp !== undefined) p.lldp = wiring.lldp ?? undefined;
  }

  async start(): Promise<this> {
    let key = '';
    if (this.opts.tls) {
      this.certDir = mkdtempSync(join(tmpdir(), 'hilt-rest-sim-'));
      const made = await makeCertificate(this.certDir, this.vendor.name);
      key = readFileSync(made.keyFile, 'utf8');
      this.certPem = readFileSync(made.certFile, 'utf8');
    }
    const onRequest = (req: IncomingMessage, res: ServerResponse) => void this.onRequest(req, res);
    const server = this.opts.tls ? createHttpsServer({ key, cert: this.certPem }, onRequest) : createHttpServer(onRequest);
    // A switch keeps an idle connection for a while, so a session's requests share one.
    server.keepAliveTimeout = 60_000;
    // Every TCP socket is tracked (a TLS one from before its handshake), so that close() ends them all.
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    server.on(this.opts.tls ? 'secureConnection' : 'connection', () => void this.connections++);
    server.on('tlsClientError', (_err: Error, socket: Socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.port ?? 0, this.opts.address ?? '127.0.0.1', () => resolve());
    });
    this.server = server;
    const host = this.opts.address === '::1' ? '[::1]' : '127.0.0.1';
    this.url = `${this.opts.tls ? 'https' : 'http'}://${host}:${(server.address() as { port: number }).port}`;
    return this;
  }

  private applies(which: Which, change: boolean): boolean {
    return which === 'all' || (which === 'changes' && change);
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const r: SimRequest = { method: req.method ?? 'GET', path: req.url ?? '/', body: Buffer.concat(chunks).toString('utf8') };
    this.requests.push(r);
    const change = this.vendor.isChange(r);
    if (this.applies(this.drop, change)) {
      req.socket.destroy();
      return;
    }
    // Hung: read, never answered (the socket is closed when the simulator stops).
    if (this.applies(this.hang, change) && (this.hangOnly === null || this.hangOnly-- > 0)) return;
    if (this.latencyMs) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    let answer: SimAnswer;
    if (this.refuseCredentials || !this.authorized(req.headers.authorization)) {
      answer = { ...this.vendor.error(401, 'Authentication failed'), headers: { 'www-authenticate': 'Basic realm="switch"' } };
    } else if (change && this.failChanges) {
      answer = this.vendor.error(this.failChanges.status, this.failChanges.message);
    } else if (change && this.ignoreChanges) {
      answer = { status: 204 };
    } else {
      try {
        answer = this.vendor.handle(r);
      } catch (err) {
        answer = this.vendor.error(500, `internal error: ${(err as Error).message}`);
      }
      if (change && answer.status < 300) this.changes++;
    }
    const body = answer.body ?? '';
    res.writeHead(answer.status, { ...(body ? { 'content-type': this.vendor.mediaType } : {}), 'content-length': Buffer.byteLength(body), ...answer.headers });
    res.end(body);
  }

  private authorized(header: string | undefined): boolean {
    const m = /^Basic\s+(\S+)$/i.exec(header ?? '');
    if (!m) return false;
    const text = Buffer.from(m[1]!, 'base64').toString('utf8');
    const at = text.indexOf(':');
    return at >= 0 && text.slice(0, at) === this.opts.username && text.slice(at + 1) === this.opts.password;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    if (this.certDir) rmSync(this.certDir, { recursive: true, force: true });
  }
}

/** `2-5,7` → [2,3,4,5,7]; throws on anything else. */
export function vlanRange(text: string): number[] {
  const out: number[] = [];
  for (const part of text.split(',')) {
    const m = /^\s*(\d+)(?:-(\d+))?\s*$/.exec(part);
    if (!m) throw new Error(`bad VLAN range ${part}`);
    const lo = Number(m[1]);
    const hi = Number(m[2] ?? m[1]);
    if (lo < 1 || hi > 4094 || lo > hi) throw new Error(`VLAN range ${part} out of 1-4094`);
    for (let v = lo; v <= hi; v++) out.push(v);
  }
  return out;
}

/** MAC `aa:bb:cc:dd:ee:ff` as Cisco-style CLIs and NOS print it: `aabb.ccdd.eeff`. */
export const dotted = (mac: string) => mac.replace(/:/g, '').replace(/(....)(....)(....)/, '$1.$2.$3');
