/**
 * buildApp: the fastify instance with every route, no port opened (server.ts listens).
 * Request handling order: parse body → validate (400) → authenticate (401) → route handler,
 * whose checks follow the per-call orders of docs/api-conventions.md.
 */
import Fastify, { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { HiltError, badArgument, statusOf, ERROR_STATUS } from './errors';
import { Authenticator, Caller } from './auth/basic';
import type { World } from '../actors/world';
import type { Config } from './config';
import type { PowerControl } from '../actors/node/power';
import type { HeadnodeControl } from '../actors/headnode/control';
import type { Drivers } from './drivers';
import { projectRoutes } from './routes/projects';
import { nodeRoutes } from './routes/nodes';
import { switchRoutes } from './routes/switches';
import { networkRoutes } from './routes/networks';
import { userRoutes } from './routes/users';
import { adminRoutes } from './routes/admin';
import { opsRoutes } from './routes/audit';
import { actionRoutes } from './routes/actions';
import { headnodeRoutes } from './routes/headnodes';
import { errorSchema } from './schemas/common';
import { docsRoutes, registerOpenApi } from './routes/docs';
import { Metrics } from './metrics';
import { metricsRoutes } from './routes/metrics';
import { trustProxyOption } from './config';
import { BRIDGE_HEADER, UiBridge } from './ui/bridge';
import { uiRoutes } from './routes/ui';
import { unauthorized } from './errors';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
  interface FastifyInstance {
    hilt: Hilt;
    /** every route as registered (method, url with its prefix): what the OpenAPI document must describe */
    routeTable: RouteEntry[];
  }
}

export interface RouteEntry { method: string; url: string }

/** Everything a route needs. */
export interface Hilt {
  world: World;
  config: Config;
  auth: Authenticator;
  power: PowerControl;
  headnodes: HeadnodeControl;
  /** the drivers' registries (registration fields, extensions, inspection) and instances */
  drivers: Drivers;
  /** the service's metrics (GET /metrics) */
  metrics: Metrics;
  /** the dashboard's sessions, once its routes are registered */
  ui?: { size(): number };
  /** the dashboard's way into the API's routes as its user (src/ui/bridge.ts) */
  bridge: UiBridge;
}

export interface AppOptions {
  world: World;
  config: Config;
  power: PowerControl;
  headnodes: HeadnodeControl;
  drivers: Drivers;
  metrics?: Metrics;
  /** the service's pino logger (none: the app logs nothing) */
  logger?: FastifyBaseLogger;
  /** the HTTP server is the service's (src/gate.ts): it hands requests to this app's handler */
  serverFactory?: FastifyServerOptions['serverFactory'];
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Bodies are JSON whatever the Content-Type (HIL's client sends none); empty means {}. */
function parseJsonObject(_req: FastifyRequest, raw: Buffer, done: (err: Error | null, body?: unknown) => void): void {
  if (raw.length === 0) return done(null, {});
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(raw));
  } catch {
    return done(badArgument('the request body is not valid UTF-8 JSON'));
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return done(badArgument('the request body must be a JSON object'));
  done(null, value);
}

/** A GET must not carry a body (docs/api-conventions.md §2); fastify does not read GET bodies, so look. */
async function rejectGetBody(req: FastifyRequest): Promise<void> {
  const len = req.headers['content-length'];
  if (len !== undefined && len !== '0') throw badArgument('a GET request must not have a body');
  if (req.headers['transfer-encoding']) {
    for await (const chunk of req.raw) if ((chunk as Buffer).length) throw badArgument('a GET request must not have a body');
  }
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
    ...(opts.serverFactory ? { serverFactory: opts.serverFactory } : {}),
    bodyLimit: 1024 * 1024,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false } },
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 1000 },
    // Behind a reverse proxy (HILT_TRUST_PROXY): the client's address and protocol from its X-Forwarded-* headers.
    trustProxy: trustProxyOption(opts.config.trustProxy ?? ''),
    // Errors fastify raises before routing (e.g. a malformed percent-encoding) get our body too.
    frameworkErrors: (err: Error, _req: FastifyRequest, reply: FastifyReply) => {
      reply.code(400).send({ type: 'BadArgumentError', msg: err.message });
    },
  } as FastifyServerOptions);

  const metrics = opts.metrics ?? new Metrics({ version: 'unknown', storage: opts.config.storage });
  const hilt: Hilt = {
    world: opts.world, config: opts.config, auth: new Authenticator(opts.world.rm), power: opts.power, headnodes: opts.headnodes, drivers: opts.drivers, metrics,
    bridge: new UiBridge(),
  };
  app.decorate('hilt', hilt);
  const routeTable: RouteEntry[] = [];
  app.decorate('routeTable', routeTable);
  app.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) routeTable.push({ method, url: r.url });
  });
  app.decorateRequest('caller', null as unknown as Caller);
  // Every answer counts, by the call's pattern (not its URL: names would make the labels unbounded).
  app.addHook('onResponse', (req, reply, done) => {
    metrics.request(req.routeOptions.url, req.method, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  // Response schemas document the answers (GET /openapi.json); they do not shape them: every
  // answer is JSON.stringify'd as it was before they existed, so no key is ever dropped.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.addSchema(errorSchema);
  await registerOpenApi(app);

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, parseJsonObject);

  app.addHook('preValidation', async (req) => {
    if (req.method === 'GET' || req.method === 'HEAD') await rejectGetBody(req);
    else if (req.body === undefined || req.body === null) req.body = {};
  });
  // Runs after validation: a bad request is a 400 even for an unauthenticated caller. The API
  // description and its page are public: they reveal no data (docs/api-conventions.md §11).
  app.addHook('preHandler', async (req) => {
    if ((req.routeOptions.config as { public?: boolean } | undefined)?.public) return;
    // A dashboard action, run in-process as its logged-in user (src/ui/bridge.ts).
    const bridged = hilt.bridge.user(req.headers[BRIDGE_HEADER]);
    if (bridged !== undefined) {
      const u = hilt.world.rm.users.get(bridged);
      if (!u) throw unauthorized('the dashboard session\'s user no longer exists');
      req.caller = { user: u.name, isAdmin: u.isAdmin, projects: u.projects };
      return;
    }
    req.caller = await hilt.auth.authenticate(req.headers.authorization);
  });

  app.setErrorHandler((err: Error & { validation?: unknown; statusCode?: number; code?: string }, req, reply) => {
    if (err instanceof HiltError) {
      const status = statusOf(err);
      if (status >= 500) req.log.error({ err }, 'request failed');
      const msg = err.type === 'ServerError' ? 'internal error; see the service log' : err.message;
      return reply.code(status).send({ type: err.type, msg });
    }
    if (err.validation) return reply.code(400).send({ type: 'BadArgumentError', msg: err.message });
    if (err.statusCode === 413) return reply.code(413).send({ type: 'RequestTooLargeError', msg: err.message });
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(err.statusCode === 404 ? 404 : 400).send({ type: err.statusCode === 404 ? 'NotFoundError' : 'BadArgumentError', msg: err.message });
    }
    req.log.error({ err }, 'unexpected error');
    return reply.code(500).send({ type: 'ServerError', msg: 'internal error; see the service log' });
  });
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send({ type: 'NotFoundError', msg: `no such call: ${req.method} ${req.url.split('?')[0]}` });
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
  };
  await app.register(routes);
  // HIL v0.3+ clients use the /v0 prefix (docs/api-conventions.md §11).
  await app.register(routes, { prefix: '/v0' });
  await app.register(docsRoutes);
  await app.register(metricsRoutes);
  await app.register(uiRoutes);
  await app.ready();
  return app;
}

export { ERROR_STATUS };
