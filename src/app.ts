/**
 * buildApp: the fastify instance with every route, no port opened (server.ts listens).
 * Request handling order: parse body → validate (400) → authenticate (401) → route handler,
 * whose checks follow the per-call orders of docs/api-conventions.md.
 */
import Fastify, { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions, onRequestHookHandler, RawRequestDefaultExpression } from 'fastify';
import { LazyValidators } from './lazy-validation';
import { HiltError, statusOf, ERROR_STATUS } from './errors';
import { Authenticator, Caller } from './auth/basic';
import type { ThrottleOptions } from './auth/throttle';
import type { RouteWorld, World } from '../actors/world';
import type { Config } from './config';
import type { PowerControl } from '../hardware/power';
import type { HeadnodeControl } from '../hardware/headnode-control';
import type { Consoles } from '../hardware/consoles';
import type { Drivers } from './drivers';
import type { Lifecycle } from './lifecycle';
import { projectRoutes } from './routes/projects';
import { nodeRoutes } from './routes/nodes';
import { switchRoutes } from './routes/switches';
import { networkRoutes } from './routes/networks';
import { userRoutes } from './routes/users';
import { adminRoutes } from './routes/admin';
import { wiringRoutes } from './routes/wiring';
import { opsRoutes } from './routes/audit';
import { actionRoutes } from './routes/actions';
import { headnodeRoutes } from './routes/headnodes';
import { consoleRoutes } from './routes/consoles';
import websocket from '@fastify/websocket';
import { lifecycleRoutes } from './routes/lifecycle';
import { listRoutes } from './routes/lists';
import { inventoryRoutes } from './routes/inventory';
import { BODY_LIMIT, clientError, drained, parseJsonObject, rejectGetBody } from './request-body';
import { addNameFormats, errorSchema, NAME_FORMAT, NAME_RULE } from './schemas/common';
import { docsRoutes, registerOpenApi } from './routes/docs';
import { Metrics } from './metrics';
import { metricsRoutes } from './routes/metrics';
import { trustProxyOption } from './config';
import { BRIDGE_HEADER, UiBridge } from './ui/bridge';
import { uiRoutes } from './routes/ui';
import { eventRoutes } from './routes/events';
import { EventHub } from './events/hub';
import { WebhookRunner } from './events/webhooks';
import { describer } from './events/describe';
import { version } from './version';
import { badArgument, forbidden } from './errors';
import { BODY_LOST_MSG, bodiesLost } from './upgrade';
import { forRead, isRead } from './auth/caller';
import { tokenRoutes } from './routes/tokens';
import { secretRoutes } from './routes/secrets';
import { OidcVerifier } from './auth/oidc';
import type { SecretStore } from './secrets/at-rest';

export type RotateKey = (newFile: string) => ReturnType<SecretStore['rotate']>;

declare module 'fastify/types/context' {
  interface FastifyContextConfig {
    /** a change a read-only caller may make too: managing its own API tokens (src/routes/tokens.ts) */
    selfService?: boolean;
    /** a POST that changes nothing (a wiring proposal, src/routes/wiring.ts): a read, as a GET is */
    reads?: boolean;
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
  interface FastifyInstance {
    hilt: Hilt;
    /** every route as registered (method, url with its prefix): what the OpenAPI document must describe */
    routeTable: RouteEntry[];
    /** whether a path (without its query) is one of the WebSocket routes' */
    isWebSocketPath(path: string): boolean;
  }
}

export interface RouteEntry {
  method: string;
  url: string;
  /** the route's schemas as registered (tests check them against JSON Schema's meta-schema) */
  schema?: unknown;
  /** a POST that changes nothing (FastifyContextConfig.reads) */
  reads?: boolean;
}

/** Everything a route needs. */
export interface Hilt {
  /** the routes ask each kind's public commands only */
  world: RouteWorld;
  config: Config;
  auth: Authenticator;
  power: PowerControl;
  headnodes: HeadnodeControl;
  /** the serial consoles' sessions and logs */
  consoles: Consoles;
  /** the tenant lifecycle's runners: release power-offs, maintenance notices, lease expiry */
  lifecycle: Lifecycle;
  /** the drivers' registries (registration fields, extensions, inspection) and instances */
  drivers: Drivers;
  /** the service's metrics (GET /metrics) */
  metrics: Metrics;
  /** the dashboard's sessions, once its routes are registered */
  ui?: { size(): number };
  /** the dashboard's way into the API's routes as its user (src/ui/bridge.ts) */
  bridge: UiBridge;
  /** the event stream's fan-out (GET /events) */
  events: EventHub;
  /** webhook delivery */
  webhooks: WebhookRunner;
  /** re-encrypts every credential under the key in a new file (src/secrets/at-rest.ts); none in tests that build the app alone */
  rotateKey?: RotateKey;
}

export interface AppOptions {
  world: World;
  config: Config;
  power: PowerControl;
  headnodes: HeadnodeControl;
  consoles: Consoles;
  lifecycle: Lifecycle;
  drivers: Drivers;
  metrics?: Metrics;
  /** the service's pino logger (none: the app logs nothing) */
  logger?: FastifyBaseLogger;
  rotateKey?: RotateKey;
  /** the HTTP server is the service's (src/gate.ts): it hands requests to this app's handler */
  serverFactory?: FastifyServerOptions['serverFactory'];
}

interface ValidationIssue { keyword: string; instancePath: string; params?: { format?: string } }

/** A name that breaks the rule gets the rule's wording (Ajv's would be `must match format "hilt-name"`). */
function validationMessage(issues: ValidationIssue[], context = 'request'): string | null {
  const bad = issues.find((i) => i.keyword === 'format' && i.params?.format === NAME_FORMAT);
  if (!bad) return null;
  return `${context}${bad.instancePath} ${NAME_RULE}`;
}

/** A path as a message shows it: whole up to 64 characters (it has no control characters), else a prefix. */
const shortPath = (p: string) => (p.length <= 64 ? p : `${p.slice(0, 64)}… (${p.length} characters)`);

/** The longest message of a 4xx: messages quote names (at most 255 bytes each) and prefixes of other input. */
const MSG_MAX = 1024;
const bounded = (msg: string) => (msg.length <= MSG_MAX ? msg : `${msg.slice(0, MSG_MAX)}…`);

/** The throttle's settings from the configuration (docs/api.md, Logins). */
function loginThrottle(c: Config): Partial<ThrottleOptions> {
  return { maxFailures: c.loginMaxFailures, windowMs: c.loginWindowMs, lockMs: c.loginLockMs, maxLockMs: c.loginLockMaxMs };
}

/** A token's use, recorded by its user's actor (src/auth/tokens.ts says how often); a failure only costs the record. */
function recordTokenUse(world: World) {
  return (user: string, id: string, at: number) => void world.users.ask(user, { type: 'user.tokenUsed', by: user, id, at }).catch(() => undefined);
}

const dropContentType: onRequestHookHandler = (req, _reply, done) => {
  if (req.headers['content-type'] !== undefined) delete req.headers['content-type'];
  done();
};

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  // Route validators compile at first use and in the background once serving (src/lazy-validation.ts).
  const validators = new LazyValidators();
  const app = Fastify({
    // Answers are JSON.stringify'd (setSerializerCompiler below): given here too, fastify does
    // not load its own serializer compiler at every start (~50 ms, issue 27).
    schemaController: { compilersFactory: { buildValidator: validators.buildValidator as never, buildSerializer: () => () => (data: unknown) => JSON.stringify(data) } },
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
    ...(opts.serverFactory ? { serverFactory: opts.serverFactory } : { http: { requireHostHeader: false } }),
    bodyLimit: BODY_LIMIT,
    // validateSchema: false: the schemas are the code's own, checked against the meta-schema by
    // the tests (test/src/routes/openapi.test.ts); compiling the meta-schema in every Ajv cost the
    // first request after a start ~80 ms (issue 27). Strict mode still refuses unknown keywords.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false, validateSchema: false }, plugins: [addNameFormats] },
    // A name is at most 765 characters percent-encoded, a status id at most 2,048.
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 2100 },
    // Behind a reverse proxy (HILT_TRUST_PROXY): the client's address and protocol from its X-Forwarded-* headers.
    trustProxy: trustProxyOption(opts.config.trustProxy ?? ''),
    // Errors fastify raises before routing (e.g. a malformed percent-encoding) get our body too,
    // quoting no more than a prefix of the path (docs/api-conventions.md §1).
    frameworkErrors: (err: Error & { code?: string }, req: FastifyRequest, reply: FastifyReply) => {
      const msg = err.code === 'FST_ERR_BAD_URL' ? `the path is not valid percent-encoding: ${shortPath(req.url.split('?')[0])}` : 'malformed request';
      reply.code(400).send({ type: 'BadArgumentError', msg });
    },
    // A request node's HTTP parser refuses (bad request line, header too large) gets our body too.
    clientErrorHandler: clientError,
    // A dashboard action is routed by the path the dashboard made (src/ui/bridge.ts): the
    // inject's URL parser drops `.` and `..` segments, which may be names.
    rewriteUrl(this: FastifyInstance, req: RawRequestDefaultExpression) {
      return (req.headers[BRIDGE_HEADER] !== undefined ? this.hilt.bridge.path(req.headers[BRIDGE_HEADER]) : undefined) ?? req.url!;
    },
  } as FastifyServerOptions);

  const metrics = opts.metrics ?? new Metrics({ version: 'unknown', storage: opts.config.storage });
  const hilt: Hilt = {
    world: opts.world, config: opts.config, auth: new Authenticator(opts.world.rm, loginThrottle(opts.config), recordTokenUse(opts.world)), power: opts.power, headnodes: opts.headnodes, lifecycle: opts.lifecycle, consoles: opts.consoles, drivers: opts.drivers, metrics,
    bridge: new UiBridge(), rotateKey: opts.rotateKey,
    ...eventsOf(opts, metrics),
  };
  app.decorate('hilt', hilt);
  // The stream and the webhooks live as long as this app (one activation): a standby has neither.
  await hilt.events.start();
  hilt.webhooks.start();
  app.addHook('onClose', async () => {
    hilt.webhooks.close();
    hilt.events.close();
  });
  // OpenID Connect bearer tokens, when an issuer is configured (src/auth/oidc.ts).
  const c = opts.config;
  if (c.oidcIssuer && c.oidcAudience) {
    const oidc = new OidcVerifier({ ...c, oidcIssuer: c.oidcIssuer, oidcAudience: c.oidcAudience }, opts.world.rm);
    hilt.auth.oidc = oidc;
    app.addHook('onClose', () => oidc.close());
  }
  const routeTable: RouteEntry[] = [];
  app.decorate('routeTable', routeTable);
  app.addHook('onRoute', (r) => {
    const methods = [r.method].flat();
    const reads = (r.config as { reads?: boolean } | undefined)?.reads;
    for (const method of methods) routeTable.push({ method, url: r.url, schema: r.schema, ...(reads ? { reads } : {}) });
    // The catch-all parser takes every media type, but fastify refuses a Content-Type it cannot
    // parse (empty, malformed) with 415 before any parser runs: the body is JSON whatever the
    // header says (docs/api-conventions.md §2), so the header is not read at all. Only on routes
    // that may take a body: fastify reads no body of a GET, and a hook costs every read.
    if (methods.some((m) => m !== 'GET' && m !== 'HEAD')) r.onRequest = [...[r.onRequest ?? []].flat(), dropContentType];
  });
  app.decorateRequest('caller', null as unknown as Caller);
  // Every answer counts, by the call's pattern (not its URL: names would make the labels unbounded).
  // A dashboard action's in-process API call is no request of its own: /ui/api/action counts it.
  app.addHook('onResponse', (req, reply, done) => {
    if (!hilt.bridge.carries(req.headers[BRIDGE_HEADER])) {
      metrics.request(req.routeOptions.url, req.method, reply.statusCode, reply.elapsedTime / 1000);
    }
    done();
  });

  // Response schemas document the answers (GET /openapi.json); they do not shape them: every
  // answer is JSON.stringify'd as it was before they existed, so no key is ever dropped.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.addSchema(errorSchema);
  await registerOpenApi(app);

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, parseJsonObject);

  // The two hooks every call runs are written with callbacks, and answer at once on the common
  // path (a GET without a body; a remembered credential): a promise per hook and request was a
  // measurable part of a read's cost (bench/README.md, Per-request speed).
  app.addHook('preValidation', (req, _reply, done) => {
    if (bodiesLost.has(req.raw)) return done(badArgument(BODY_LOST_MSG));
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      if (req.body === undefined || req.body === null) req.body = {};
      return done();
    }
    const len = req.headers['content-length'];
    if ((len === undefined || len === '0') && !req.headers['transfer-encoding']) return done();
    rejectGetBody(req).then(() => done(), done);
  });
  // Runs after validation: a bad request is a 400 even for an unauthenticated caller. The API
  // description and its page are public: they reveal no data (docs/api-conventions.md §11).
  app.addHook('preHandler', (req, _reply, done) => {
    const config = req.routeOptions.config as { public?: boolean; selfService?: boolean; reads?: boolean } | undefined;
    // No route: the 404 comes before any credential is checked, as HIL's did (the calls are
    // public in the API description anyway), and costs no scrypt.
    if (config?.public || req.routeOptions.url === undefined) return done();
    // What this call may do (src/auth/caller.ts): a read sees what the caller may read; a
    // read-only caller changes nothing, but may manage its own tokens (routes/tokens.ts says which).
    const admit = (caller: Caller) => {
      if (isRead(req.method) || config?.reads) req.caller = forRead(caller);
      else if (caller.readOnly && !config?.selfService) return done(forbidden('read-only access: this call changes the service\'s state'));
      else req.caller = caller;
      done();
    };
    let known: Caller | undefined;
    try {
      // A dashboard action, run in-process as its logged-in caller (src/ui/bridge.ts); else a
      // credential checked without waiting, when it is one (src/auth/basic.ts).
      known = hilt.bridge.take(req.headers[BRIDGE_HEADER]) ?? hilt.auth.remembered(req.headers.authorization);
    } catch (err) {
      return done(err as Error);
    }
    if (known) return admit(known);
    hilt.auth.verify(req.headers.authorization, { log: req.log, ip: req.ip }).then(admit, done);
  });

  app.setErrorHandler(async (err: Error & { validation?: ValidationIssue[]; validationContext?: string; statusCode?: number; code?: string }, req, reply) => {
    if (err instanceof HiltError) {
      const status = statusOf(err);
      if (status >= 500) req.log.error({ err, ...('detail' in err ? { detail: (err as { detail: unknown }).detail } : {}) }, 'request failed');
      if (err.retryAfter !== undefined) reply.header('retry-after', String(err.retryAfter));
      const msg = err.type === 'ServerError' ? 'internal error; see the service log'
        : err.forMembers !== undefined && !req.caller?.isAdmin ? err.forMembers : err.message;
      return reply.code(status).send({ type: err.type, msg: status < 500 ? bounded(msg) : msg });
    }
    if (err.validation) return reply.code(400).send({ type: 'BadArgumentError', msg: bounded(validationMessage(err.validation, err.validationContext) ?? err.message) });
    if (err.statusCode === 413) {
      await drained(req.raw);
      return reply.code(413).header('connection', 'close').send({ type: 'RequestTooLargeError', msg: `the request body is larger than ${BODY_LIMIT} bytes` });
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(err.statusCode === 404 ? 404 : 400).send({ type: err.statusCode === 404 ? 'NotFoundError' : 'BadArgumentError', msg: bounded(err.message) });
    }
    req.log.error({ err }, 'unexpected error');
    return reply.code(500).send({ type: 'ServerError', msg: 'internal error; see the service log' });
  });
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send({ type: 'NotFoundError', msg: `no such call: ${req.method} ${shortPath(req.url.split('?')[0])}` });
  });

  const routes = async (scope: FastifyInstance) => {
    await scope.register(projectRoutes);
    await scope.register(nodeRoutes);
    await scope.register(switchRoutes);
    await scope.register(networkRoutes);
    await scope.register(userRoutes);
    await scope.register(adminRoutes);
    await scope.register(opsRoutes);
    await scope.register(actionRoutes);
    await scope.register(headnodeRoutes);
    await scope.register(eventRoutes);
    await scope.register(wiringRoutes);
    await scope.register(lifecycleRoutes);
    await scope.register(listRoutes);
    await scope.register(inventoryRoutes);
    await scope.register(tokenRoutes);
    await scope.register(secretRoutes);
  };
  await app.register(routes);
  // HIL v0.3+ clients use the /v0 prefix (docs/api-conventions.md §11).
  await app.register(routes, { prefix: '/v0' });
  await app.register(docsRoutes);
  await app.register(metricsRoutes);
  // The WebSockets (the consoles' streams, the dashboard's) in a context of their own: the
  // plugin's onRequest and onResponse hooks and its wrapper of each handler run on these routes
  // only, not on every API call (bench/README.md, Per-request speed, second round). Upgrades
  // to any other path are answered as plain HTTP (src/upgrade.ts).
  const wsRoutes: RegExp[] = [];
  app.decorate('isWebSocketPath', (path: string) => wsRoutes.some((r) => r.test(path)));
  await app.register(async (scope) => {
    // Input comes in small messages.
    await scope.register(websocket, {
      options: { maxPayload: 64 * 1024 },
      // At a stop, viewers read why (the plugin's own close sends no code).
      preClose(this: FastifyInstance, done: () => void) {
        for (const client of this.websocketServer.clients) client.close(1001, 'the service is stopping');
        this.websocketServer.close(() => undefined);
        done();
      },
    });
    // A handshake ws refuses (a bad Sec-WebSocket-Key or -Version, -Protocol or -Extensions, an
    // Upgrade other than websocket) is the client's mistake: a 400 with the API's error body
    // (docs/api-conventions.md §1), where ws would answer it in plain text.
    scope.websocketServer.on('wsClientError', (err: Error, socket: import('node:stream').Duplex) => {
      const body = JSON.stringify({ type: 'BadArgumentError', msg: `not a valid WebSocket handshake: ${err.message}` });
      const version = /Version/.test(err.message) ? 'sec-websocket-version: 13, 8\r\n' : '';
      socket.once('finish', () => socket.destroy());
      socket.end(`HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${version}connection: close\r\n\r\n${body}`);
    });
    scope.addHook('onRoute', (r) => {
      if (r.wsHandler) wsRoutes.push(new RegExp(`^${r.url.replace(/:[^/]+/g, '[^/]+')}$`));
    });
    await scope.register(consoleRoutes);
    await scope.register(consoleRoutes, { prefix: '/v0' });
    await scope.register(uiRoutes);
  });
  app.addHook('onClose', async () => validators.stop());
  await app.ready();
  // A second after the API serves: a start's first answers (issue 27) do not wait behind them.
  void validators.warm((err) => app.log.error({ err }, 'a route\'s request schema does not compile'), 4, 1000);
  return app;
}

/** The event stream and the webhooks of an app, on its world's commits (src/events). */
function eventsOf(opts: AppOptions, metrics: Metrics): Pick<Hilt, 'events' | 'webhooks'> {
  const c = opts.config;
  opts.world.runtime.describe = describer(opts.world.rm);
  const events = new EventHub(opts.world.runtime, { bufferBytes: c.eventsBufferBytes, heartbeatMs: c.eventsHeartbeatMs, ringSize: 4096, ringBytes: 2 * 1024 * 1024, flushMs: c.eventsFlushMs, writesPerSecond: c.eventsWritesPerSecond }, metrics);
  const webhooks = new WebhookRunner(opts.world, events, {
    timeoutMs: c.webhookTimeoutMs, retryMinMs: c.webhookRetryMinMs, retryMaxMs: c.webhookRetryMaxMs, failAfterMs: c.webhookFailAfterMs,
    userAgent: `hilt/${version()}`,
  }, metrics);
  return { events, webhooks };
}

export { ERROR_STATUS };
