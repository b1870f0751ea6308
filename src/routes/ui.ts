/**
 * The operator dashboard at /ui/: a page, a few small JS modules and a stylesheet (files of the
 * repository's ui/ folder, read at start and served from memory: nothing is fetched from
 * elsewhere, there is no build step), the charting library from its npm package (uPlot, under
 * /ui/vendor/), and the JSON it reads under /ui/api/ (src/ui/views.ts).
 *
 * Login with hilt's users and passwords (the API's own check, src/auth/basic.ts) gives a session
 * cookie: HttpOnly, SameSite=Strict, Path=/ui, Secure over HTTPS (behind a proxy:
 * HILT_TRUST_PROXY), expiring with the session. Every change (login, logout, an action) must
 * come from the dashboard's own origin (Origin and Sec-Fetch-Site are checked when the browser
 * sends them), and every change but the login must carry the session's CSRF token in a header
 * (X-CSRF-Token), which a cross-site page can neither read nor send. Actions run the API's own
 * route as the logged-in user (src/ui/bridge.ts). Not part of HIL's API: not under /v0, not in
 * the OpenAPI document.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import cookie from '@fastify/cookie';
import { COOKIE, UiSessions, sameSecret } from '../ui/sessions';
import { BRIDGE_HEADER } from '../ui/bridge';
import { page, TABLE_LIMIT_MAX, TableQuery, Views } from '../ui/views';
import { auditPage, parseTime } from '../audit';
import { HiltError, badArgument, notFound, unauthorized } from '../errors';
import { quote } from '../../lib/text';
import { requireAdmin } from './guard';
import { BridgeCall, checkAction, dashboardAction, enc } from '../ui/actions';
import { UiHistory } from '../ui/history';
import { pendingPerSwitch } from '../metrics';
import { version } from '../version';
import type { Caller } from '../auth/basic';
import { NO_FILTER } from '../events/hub';
import { endAtExpiry, viewerOf } from './events';
import type { WebSocket } from 'ws';
import type { NodeState } from '../../actors/node/protocol';
import { prepareStream, serveStream } from './consoles';
import { CLOSE } from '../../hardware/consoles';
import { expiryOf, forRead } from '../auth/caller';
import { redactedUrl } from '../redact';

/** The repository's ui/ folder (this file runs as dist/src/routes/ui.js). */
export const UI_DIR = join(__dirname, '..', '..', '..', 'ui');

const ASSETS: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
  'more.js': 'text/javascript; charset=utf-8',
  'charts.js': 'text/javascript; charset=utf-8',
  'console.html': 'text/html; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
};

/** The console view's terminal emulator, served from its npm package (never a CDN). */
const XTERM = dirname(require.resolve('@xterm/xterm/package.json'));
/**
 * The charting library, served from the package that npm installed (no CDN): uPlot, small
 * (about 50 KB), without dependencies, drawing on a canvas (nothing the CSP would refuse).
 */
const UPLOT_DIR = join(dirname(require.resolve('uplot/package.json')), 'dist');
const VENDOR: Record<string, { path: string; type: string }> = {
  'xterm.js': { path: join(XTERM, 'lib', 'xterm.js'), type: 'text/javascript; charset=utf-8' },
  'xterm.css': { path: join(XTERM, 'css', 'xterm.css'), type: 'text/css; charset=utf-8' },
  'vendor/uplot.js': { path: join(UPLOT_DIR, 'uPlot.esm.js'), type: 'text/javascript; charset=utf-8' },
  'vendor/uplot.css': { path: join(UPLOT_DIR, 'uPlot.min.css'), type: 'text/css; charset=utf-8' },
};

/** Everything the dashboard loads comes from the service itself. */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
/** The console view: xterm.js sizes and colours its rows with <style> elements it makes (no nonce), so that page allows inline styles; scripts stay the service's own. */
const CONSOLE_CSP = CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'");

/** A drift audit of a switch, once the switch drivers offer it (the dashboard links it when the route exists). */
const DRIFT_ROUTE = '/admin/switch/:switch/drift';

/** The tables, and whether they are for admins only. */
const TABLES: Record<string, { admin: boolean; rows: (v: Views, c: Caller, q: TableQuery) => ReturnType<Views['nodes']> }> = {
  nodes: { admin: false, rows: (v, c) => v.nodes(c) },
  projects: { admin: false, rows: (v, c) => v.projects(c) },
  // f.project: the networks that project may use (owned, granted or public).
  networks: {
    admin: false,
    rows: (v, c, q) => {
      const project = q.filters.project;
      delete q.filters.project;
      return v.networks(c, project);
    },
  },
  operations: { admin: false, rows: (v, c) => v.operations(c) },
  headnodes: { admin: false, rows: (v, c) => v.headnodes(c) },
  switches: { admin: true, rows: (v) => v.switches() },
  ports: { admin: true, rows: (v) => v.ports() },
  maintenance: { admin: true, rows: (v) => v.maintenance() },
  attention: { admin: true, rows: (v) => v.attention() },
  members: { admin: false, rows: (v, c) => v.members(c) },
};

declare module 'fastify' {
  interface FastifyRequest {
    ui?: { token: string; csrf: string; expires: number };
  }
}

export async function uiRoutes(app: FastifyInstance): Promise<void> {
  const hilt = app.hilt;
  const sessions = new UiSessions(hilt.world.rm, hilt.config.uiSessionMinutes * 60_000);
  hilt.ui = sessions;
  app.addHook('onClose', async () => sessions.close());
  const views = new Views({
    world: hilt.world, metrics: hilt.metrics, power: hilt.power, headnodes: hilt.headnodes, lifecycle: hilt.lifecycle, startedAt: Date.now(), version: version(),
    vlanPoolSize: hilt.config.vlanPool.reduce((n, [lo, hi]) => n + hi - lo + 1, 0),
  });
  const history = new UiHistory({
    metrics: hilt.metrics,
    queues: () => ({ switch: hilt.world.sessions.size(), obm: hilt.power.size(), headnode: hilt.headnodes.size() }),
    pending: () => [...pendingPerSwitch(hilt.world.rm).values()].reduce((a, b) => a + b, 0),
  }).start();
  app.addHook('onClose', async () => history.stop());
  const files = [...Object.entries(ASSETS).map(([file, type]) => ({ file, type, path: join(UI_DIR, file) })), ...Object.entries(VENDOR).map(([file, v]) => ({ file, ...v }))];
  const entry = (body: Buffer, type: string) => ({ body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` });
  const assets = new Map(files.map(({ file, type, path }) => [file, entry(readFileSync(path), type)]));
  // The console view as served to a navigation from the dashboard itself (see its route below).
  const consolePage = assets.get('console.html')!;
  const consoleHere = consolePage.body.toString('utf8').replace('data-arrival="elsewhere"', 'data-arrival="here"');
  if (!consoleHere.includes('data-arrival="here"')) throw new Error('ui/console.html lacks data-arrival="elsewhere"');
  assets.set('console.html (here)', entry(Buffer.from(consoleHere, 'utf8'), consolePage.type));

  await app.register(cookie);
  // Outside HIL's API: not authenticated by its basic-auth hook (the session is checked below), not documented.
  app.addHook('onRoute', (route: RouteOptions) => {
    route.config = { ...(route.config as object), public: true } as RouteOptions['config'];
    route.schema = { ...(route.schema ?? {}), hide: true };
  });
  const tls = !!hilt.config.tlsCert;
  app.addHook('onSend', async (_req, reply, payload) => {
    if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', CSP);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('x-frame-options', 'DENY');
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    // HTTPS from now on, when this service serves it itself (built-in TLS: every request came
    // over it). Never over plain HTTP; behind a TLS proxy the proxy sends it (docs/operations.md).
    if (tls) reply.header('strict-transport-security', 'max-age=31536000');
    return payload;
  });

  const secure = (req: FastifyRequest) => req.protocol === 'https';
  const cookieOptions = (req: FastifyRequest, maxAge?: number) => ({ path: '/ui', httpOnly: true, sameSite: 'strict' as const, secure: secure(req), ...(maxAge !== undefined ? { maxAge } : {}) });

  /** A change must come from this origin (a cross-site form or script is refused). */
  function sameOrigin(req: FastifyRequest): void {
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') throw unauthorized('a change to the dashboard must come from the dashboard itself');
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `${req.protocol}://${req.host}`) throw unauthorized('a change to the dashboard must come from the dashboard itself');
  }

  /** The session's caller; a 401 without one. */
  function session(req: FastifyRequest): Caller {
    const token = req.cookies[COOKIE];
    const s = sessions.get(token);
    if (!s) throw unauthorized('log in to the dashboard first (the session is missing or has ended)');
    req.ui = { token: token!, csrf: s.csrf, expires: s.expires };
    // A read sees what the caller may read (an auditor as an admin: src/auth/caller.ts).
    return req.method === 'GET' ? forRead(s.caller) : s.caller;
  }

  /** A change: the session, its origin, and its CSRF token. */
  function change(req: FastifyRequest): Caller {
    sameOrigin(req);
    const caller = session(req);
    const sent = req.headers['x-csrf-token'];
    if (typeof sent !== 'string' || !sameSecret(sent, req.ui!.csrf)) throw unauthorized('missing or wrong CSRF token: reload the dashboard');
    return caller;
  }

  // `projects`: the projects the caller changes (is a member of), which the page offers actions
  // on; `reads`: those it only reads (a reader's), which a read's caller counts among its projects.
  const me = (c: Caller, csrf: string, expires: number) => ({
    user: c.user, isAdmin: c.isAdmin, projects: (c.unwidened ?? c).projects, reads: c.projects.filter((p) => !(c.unwidened ?? c).projects.includes(p)), readOnly: !!c.readOnly, via: c.via?.kind ?? 'password', csrf, expiresAt: new Date(expires).toISOString(),
    features: { audit: c.isAdmin, health: c.isAdmin, switches: c.isAdmin, drift: c.isAdmin && app.hasRoute({ method: 'GET', url: DRIFT_ROUTE }) },
  });

  // The page and its assets: no session needed (the page shows the login form).
  app.get('/ui', async (_req, reply) => reply.redirect('/ui/'));
  const asset = (file: string) => async (req: FastifyRequest, reply: FastifyReply) => {
    const a = assets.get(file)!;
    reply.header('cache-control', 'no-cache').header('etag', a.etag).type(a.type);
    if (req.headers['if-none-match'] === a.etag) return reply.code(304).send();
    return reply.send(a.body);
  };
  app.get('/ui/', asset('index.html'));
  app.get('/ui/app.js', asset('app.js'));
  app.get('/ui/app.css', asset('app.css'));
  for (const file of ['more.js', 'charts.js', 'vendor/uplot.js', 'vendor/uplot.css']) app.get(`/ui/${file}`, asset(file));
  // The console view (docs/consoles.md): its page, its script, and xterm.js from its package.
  // The page connects at once only when the browser says the navigation came from this origin
  // (Sec-Fetch-Site same-origin) or from the user (none: typed, a bookmark, a reload); from
  // another site, even another port of this host, or from a browser that does not say, it asks
  // for a click first. The page's own requests carry the session cookie (SameSite=Strict counts
  // the page, not how it was reached), so a link elsewhere must not make it connect by itself.
  app.get('/ui/console.html', async (req, reply) => {
    const site = req.headers['sec-fetch-site'];
    reply.header('content-security-policy', CONSOLE_CSP).header('vary', 'Sec-Fetch-Site');
    return asset(site === 'same-origin' || site === 'none' ? 'console.html (here)' : 'console.html')(req, reply);
  });
  app.get('/ui/console.js', asset('console.js'));
  app.get('/ui/xterm.js', asset('xterm.js'));
  app.get('/ui/xterm.css', asset('xterm.css'));

  // The live console behind the session: a browser always sends Origin on a WebSocket, and it
  // must be the dashboard's (no CSRF token: a WebSocket cannot carry the header). It never
  // starts the recording: the page's "Start recording" is the action console_start, with the
  // CSRF token. A console not recorded is refused after the upgrade, with close code 4410 and
  // its reason, which the page shows (a refused handshake tells a page nothing); one with its
  // most viewers likewise, with 4429. Also at
  // /ui/api/console/stream?node=<node>: a browser drops a `.` or `..` path segment, which may be a node's name.
  const streams = new WeakMap<FastifyRequest, { caller: Caller; node: NodeState } | { refused: { code: number; reason: string } }>();
  const streamedNode = (req: FastifyRequest<{ Params: { node?: string }; Querystring: Record<string, string> }>) => req.params.node ?? nodeParam(req.query, 'node');
  for (const url of ['/ui/api/node/:node/console/stream', '/ui/api/console/stream']) app.route<{ Params: { node?: string }; Querystring: Record<string, string> }>({
    method: 'GET',
    url,
    preHandler: async (req) => {
      if (!req.ws) throw badArgument('this is a WebSocket: connect with "Connection: Upgrade" and "Upgrade: websocket"');
      if (req.headers.origin === undefined) throw unauthorized('a console connection must come from the dashboard itself');
      sameOrigin(req);
      const caller = session(req);
      try {
        streams.set(req, { caller, node: await prepareStream(hilt, caller, streamedNode(req), { mayStart: false }) });
      } catch (err) {
        if (!(err instanceof HiltError)) throw err;
        // Refused because the console is not recorded (the route's look, or the node actor's in turn).
        if (err.type === 'ForbiddenError') streams.set(req, { refused: { code: 4410, reason: 'the console is not recorded: start recording to watch it' } });
        // The node's console has its most viewers (HILT_CONSOLE_VIEWERS).
        else if (err.type === 'TooManyRequestsError') streams.set(req, { refused: CLOSE.full });
        else throw err;
      }
    },
    handler: async () => undefined,
    wsHandler: (socket: WebSocket, req: FastifyRequest) => {
      const token = req.cookies[COOKIE];
      const stream = streams.get(req)!;
      if ('refused' in stream) {
        socket.close(stream.refused.code, stream.refused.reason);
        return;
      }
      // The session ending (logout, expiry, a new password) disconnects the viewer too: at once
      // when the sessions end it (logout, found over), else at the viewers' next check.
      serveStream(hilt, socket, stream.caller, stream.node, () => sessions.get(token) !== undefined, req.ui!.expires);
      const release = sessions.hold(token!, () => socket.close(4403, 'the dashboard session ended'));
      socket.on('close', release);
    },
  });

  app.post<{ Body: { user?: unknown; password?: unknown; token?: unknown } }>('/ui/api/login', async (req, reply) => {
    sameOrigin(req);
    const { user, password, token } = req.body;
    let caller: Caller;
    let hash: string | undefined;
    if (typeof token === 'string' && token && user === undefined && password === undefined) {
      // An API token or an OpenID Connect token (docs/identity.md): the API's own check.
      if (/\s/.test(token)) throw unauthorized('invalid or expired token');
      caller = await hilt.auth.authenticate(`Bearer ${token}`, { log: req.log, ip: req.ip });
    } else {
      if (typeof user !== 'string' || typeof password !== 'string' || !user || user.includes(':')) throw unauthorized('invalid username or password');
      // The API's own check (the same users, passwords and protections), and the hash the
      // password matched: the session ends when the user has another one.
      ({ caller, hash } = await hilt.auth.password('Basic ' + Buffer.from(`${user}:${password}`, 'utf8').toString('base64'), { log: req.log, ip: req.ip }));
    }
    const s = sessions.create(caller, hash);
    req.log.info({ user: caller.user, with: caller.via?.kind ?? 'password' }, 'dashboard login');
    // A token's session ends with the token at the latest (src/ui/sessions.ts): so does its cookie.
    reply.setCookie(COOKIE, s.token, cookieOptions(req, Math.ceil((s.expires - Date.now()) / 1000)));
    return me(forRead(caller), s.csrf, s.expires);
  });

  // The caller's API tokens (docs/identity.md), read through the API as the session's caller.
  app.get('/ui/api/tokens', async (req, reply) => {
    const caller = session(req);
    const r = await app.inject({ method: 'GET', url: '/auth/tokens', headers: { [BRIDGE_HEADER]: hilt.bridge.header(caller, '/auth/tokens') } });
    reply.code(r.statusCode).type('application/json');
    return r.body;
  });

  app.post('/ui/api/logout', async (req, reply) => {
    change(req);
    sessions.end(req.ui!.token);
    reply.clearCookie(COOKIE, cookieOptions(req));
    return null;
  });

  app.get('/ui/api/me', async (req) => {
    const c = session(req);
    return me(c, req.ui!.csrf, req.ui!.expires);
  });

  // `after`: where the event stream stood when the summary was read, so that the page follows it from there.
  app.get('/ui/api/summary', async (req) => ({ ...views.summary(session(req)), after: String(hilt.events.last) }));

  /**
   * The dashboard's live updates: the event stream as the session's user may see it (GET /events,
   * src/events/hub.ts), without `event:` lines (EventSource then hands every event to onmessage).
   * It starts after `?after` (the summary's), and a reconnect after its Last-Event-ID; the stream
   * ends when the session does (logout, expiry, the expiry of the token the session was opened
   * with, a session found over).
   */
  app.get('/ui/api/events', async (req, reply) => {
    const hub = hilt.events;
    await hub.learnCreations(forRead(session(req)).projects);
    const header = req.headers['last-event-id'] ?? (req.query as { after?: unknown }).after;
    const id = typeof header === 'string' && /^[0-9]{1,16}$/.test(header) ? Number(header) : undefined;
    const after = id !== undefined && id <= hub.last && id >= (await hilt.world.runtime.engine.bounds()).first - 1 ? id : hub.last;
    // The session as it is after the wait for the store (its rights now; a 401 if it ended), as
    // GET /events does: a membership removed meanwhile must not leave a stream with the old rights.
    const c = session(req);
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'x-accel-buffering': 'no' });
    // HEAD: the headers only (as GET /events).
    if (req.method === 'HEAD') {
      reply.raw.end();
      return reply;
    }
    reply.raw.write('retry: 2000\n\n');
    const stream = hub.open(reply.raw, viewerOf(hub, c), NO_FILTER, after, false);
    // It ends with the session: at logout or when the session is found over (the sessions hold
    // it), at the session's expiry, and at the expiry of the token it was opened with, as GET
    // /events ends a token's stream.
    const release = sessions.hold(req.ui!.token, () => stream.drop('access'));
    reply.raw.on('close', release);
    endAtExpiry(stream, reply.raw, Math.min(req.ui!.expires, expiryOf(hilt.world.rm, c) ?? Infinity));
    return reply;
  });

  app.get<{ Params: { table: string }; Querystring: Record<string, string> }>('/ui/api/table/:table', async (req) => {
    const c = session(req);
    const t = Object.hasOwn(TABLES, req.params.table) ? TABLES[req.params.table] : undefined;
    if (!t) throw notFound(`table ${quote(req.params.table)}`);
    if (t.admin) requireAdmin(c);
    const q = tableQuery(req.query);
    return page(t.rows(views, c, q), q);
  });

  const nodeDetail = (req: FastifyRequest, name: string) => {
    const detail = views.node(session(req), name);
    if (!detail) throw notFound(`node ${quote(name)}`);
    return detail;
  };
  app.get<{ Params: { node: string } }>('/ui/api/node/:node', async (req) => nodeDetail(req, req.params.node));
  // The same with the name in the query: a browser drops a `.` or `..` path segment (even as %2E%2E).
  app.get<{ Querystring: Record<string, string> }>('/ui/api/node', async (req) => nodeDetail(req, nodeParam(req.query, 'name')));

  // The pictures over time (admins): health and network operations per switch, the last hour and day.
  app.get('/ui/api/history', async (req) => {
    requireAdmin(session(req));
    return { hour: history.hour, day: history.day };
  });

  app.get<{ Querystring: Record<string, string> }>('/ui/api/audit', async (req) => {
    requireAdmin(session(req));
    const q = onlyKeys(req.query, AUDIT_KEYS);
    const opt = (k: string) => (q[k] === undefined || q[k] === '' ? undefined : q[k]);
    return auditPage(hilt.world, {
      kind: opt('kind'), name: opt('name'), user: opt('user'),
      since: opt('since') !== undefined ? parseTime('since', q.since) : undefined,
      until: opt('until') !== undefined ? parseTime('until', q.until) : undefined,
      limit: opt('limit') !== undefined ? intParam('limit', q.limit, 1, 1000) : 50,
      cursor: opt('cursor'),
    });
  });

  /** An action: one call of the API, run as the session's user; its answer as the API gave it. */
  app.post<{ Body: Record<string, unknown> }>('/ui/api/action', async (req, reply) => {
    const caller = change(req);
    const b = req.body;
    checkAction(b);
    const str = (k: string) => {
      if (typeof b[k] !== 'string' || !b[k]) throw badArgument(`${k} is missing`);
      return b[k] as string;
    };
    let call: BridgeCall;
    switch (b.action) {
      case 'reapply':
        call = { method: 'POST', url: `/admin/node/${enc(str('node'))}/nic/${enc(str('nic'))}/reapply` };
        break;
      case 'force_detach':
        call = { method: 'POST', url: `/admin/node/${enc(str('node'))}/nic/${enc(str('nic'))}/force_detach`, payload: { network: str('network') } };
        break;
      case 'token_create': {
        const payload: Record<string, unknown> = {};
        if (b.expires_in !== undefined) payload.expires_in = b.expires_in;
        if (b.description !== undefined) payload.description = b.description;
        if (b.read_only !== undefined) payload.read_only = b.read_only;
        if (b.project !== undefined && b.project !== '') payload.project = b.project;
        call = { method: 'POST', url: '/auth/tokens', payload };
        break;
      }
      case 'token_revoke':
        call = { method: 'DELETE', url: `/auth/tokens/${enc(str('id'))}` };
        break;
      case 'drift':
        if (!app.hasRoute({ method: 'GET', url: DRIFT_ROUTE })) throw notFound('a drift audit (this service has none)');
        call = { method: 'GET', url: `/admin/switch/${enc(str('switch'))}/drift` };
        break;
      case 'wiring':
        call = { method: 'GET', url: `/admin/switch/${enc(str('switch'))}/wiring` };
        break;
      default: {
        const more = dashboardAction(b);
        // checkAction knows every action: this is one it lists but no case runs.
        if (!more) throw new Error(`action ${String(b.action)} has no call`);
        call = more;
      }
    }
    req.log.info({ user: caller.user, action: b.action, url: redactedUrl(call.url) }, 'dashboard action');
    const r = await app.inject({
      method: call.method, url: call.url, payload: call.payload,
      headers: { [BRIDGE_HEADER]: hilt.bridge.header(caller, call.url), ...(call.payload ? { 'content-type': 'application/json' } : {}) },
    });
    reply.code(r.statusCode).type('application/json');
    return r.body === '' ? 'null' : r.body;
  });
}

/** A name given in the query (the node's, where a path segment cannot be `.` or `..`): exactly once, not empty. */
function nodeParam(q: Record<string, unknown>, key: string): string {
  const v = onlyKeys(q, new Set([key]))[key];
  if (!v) throw badArgument(`the query parameter ${key} (the node's name) is missing`);
  return v;
}

function intParam(name: string, v: string, min: number, max: number): number {
  if (!/^\d{1,6}$/.test(v) || Number(v) < min || Number(v) > max) throw badArgument(`${name} must be an integer from ${min} to ${max}`);
  return Number(v);
}

const TABLE_KEYS = new Set(['offset', 'limit', 'sort', 'dir', 'q']);
const AUDIT_KEYS = new Set(['kind', 'name', 'user', 'since', 'until', 'limit', 'cursor']);

/** The query string's parameters, each once and each one the call knows (f.<column> for tables): else a 400. */
function onlyKeys(q: Record<string, unknown>, known: Set<string>, filters = false): Record<string, string> {
  for (const [k, v] of Object.entries(q)) {
    if (!known.has(k) && !(filters && k.startsWith('f.') && k.length > 2)) throw badArgument(`unknown query parameter ${quote(k)}`);
    if (typeof v !== 'string') throw badArgument(`query parameter ${quote(k)} given more than once`);
  }
  return q as Record<string, string>;
}

/** offset, limit, sort, dir, q, and f.<column>=<value> filters. */
function tableQuery(query: Record<string, string>): TableQuery {
  const q = onlyKeys(query, TABLE_KEYS, true);
  const filters: Record<string, string> = {};
  for (const [k, v] of Object.entries(q)) if (k.startsWith('f.') && v !== '') filters[k.slice(2)] = v;
  if (q.dir !== undefined && q.dir !== 'asc' && q.dir !== 'desc') throw badArgument('dir must be asc or desc');
  return {
    offset: q.offset !== undefined ? intParam('offset', q.offset, 0, 1_000_000) : 0,
    limit: q.limit !== undefined ? intParam('limit', q.limit, 1, TABLE_LIMIT_MAX) : 50,
    sort: q.sort || undefined,
    dir: (q.dir as 'asc' | 'desc' | undefined) ?? 'asc',
    q: q.q,
    filters,
  };
}
