/**
 * The API's description: OpenAPI 3 generated from the route schemas at GET /openapi.json, and a
 * browsable page at GET /docs (docs/api-conventions.md §11). Both are public: they describe
 * the calls and reveal no data.
 */
import { FastifyInstance, RouteOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { responses } from '../schemas/common';

/** Every call is also served under this prefix (docs/api-conventions.md §11). */
export const API_PREFIX = '/v0';
export const OPENAPI_PATH = '/openapi.json';
export const DOCS_PREFIX = '/docs';

/** The resource a path belongs to, for grouping on the page. */
const TAGS: Record<string, string> = {
  project: 'projects', projects: 'projects',
  node: 'nodes', nodes: 'nodes', networking_action: 'nodes',
  network: 'networks', networks: 'networks',
  switch: 'switches', switches: 'switches',
  headnode: 'headnodes', headnode_images: 'headnodes',
  auth: 'users',
  admin: 'admin', active_extensions: 'admin',
};
const tagOf = (url: string): string => TAGS[url.split('/')[1] ?? ''] ?? 'other';

/** Registers the generator; it must see every route, so it comes before them. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'hilt',
        description:
          'The REST API of HIL (the Hardware Isolation Layer), as hilt serves it. The conventions where HIL\'s contract is silent '
          + '(status codes, check orders, the error body) are in docs/api-conventions.md. Every path is also served under the '
          + `prefix ${API_PREFIX} (a second server below).`,
        version: '0.2',
      },
      servers: [{ url: '/' }, { url: API_PREFIX }],
      components: { securitySchemes: { basic: { type: 'http', scheme: 'basic', description: 'A user of hilt\'s database (docs/api-conventions.md §1)' } } },
      security: [{ basic: [] }],
    },
    // Shared schemas keep their $id as their name under components.schemas.
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    // The /v0 copy of each route is the same call: documented once, with the prefix as a server.
    transform: ({ schema, url }) => {
      const s = { ...(schema as Record<string, unknown>) };
      if (url === API_PREFIX || url.startsWith(`${API_PREFIX}/`)) s.hide = true;
      s.tags ??= [tagOf(url)];
      // A body of no keys is no body: HIL's clients send none (docs/api-conventions.md §2).
      const body = s.body as { maxProperties?: number; required?: string[] } | undefined;
      if (body?.maxProperties === 0) delete s.body;
      // OpenAPI 3.0 wants a `required` list to name something.
      else if (body?.required && !body.required.length) {
        const { required: _none, ...rest } = body;
        s.body = rest;
      }
      // The rest-of-path wildcard gets the name of what it holds.
      const wildcard = WILDCARDS.find((w) => url.endsWith(w.suffix));
      if (wildcard && s.params) {
        const p = s.params as { required: string[]; properties: Record<string, object> };
        const { '*': rest, ...others } = p.properties;
        s.params = { ...p, required: p.required.map((k) => (k === '*' ? wildcard.name : k)), properties: { ...others, [wildcard.name]: { ...rest, description: wildcard.description } } };
        url = `${url.slice(0, -1)}:${wildcard.name}`;
      }
      return { schema: s as typeof schema, url };
    },
    transformObject: (doc) => withHealth(splitWildcardRoutes((doc as unknown as { openapiObject: OpenApi }).openapiObject)) as never,
  });
}

/** Routes whose last path parameter is the rest of the path (docs/api-conventions.md §1, §12). */
const WILDCARDS = [
  { suffix: '/port/*', name: 'port', description: 'the port name; a "/" in it may be sent as is or as %2F' },
  { suffix: '/admin/actors/:kind/*', name: 'id', description: 'the entity: one name, or for nic and port `<node>/<nic>` and `<switch>/<port>`, each name percent-encoded' },
];

interface Operation { parameters?: { in: string; name: string }[]; requestBody?: { required?: boolean; content: Record<string, { schema: { required?: string[] } }> }; responses: Record<string, { content?: Record<string, { schema: { anyOf?: object[] } }> }>; summary?: string }
interface OpenApi { paths: Record<string, Record<string, Operation>> }

/**
 * One fastify route serves several calls where the wildcard swallows the action: the port
 * actions (connect_nic, detach_nic, revert; an admin's clear_doubt) and an entity or its journal. The document lists
 * each call as the client sends it. Also: a body none of whose keys is required may be left out.
 */
function splitWildcardRoutes(doc: OpenApi): OpenApi {
  const paths = { ...doc.paths };
  const portPath = '/switch/{switch}/port/{port}';
  const post = paths[portPath]?.post;
  if (post) {
    const { post: _removed, ...rest } = paths[portPath];
    paths[portPath] = rest;
    const { 200: ok, 202: accepted, ...errors } = post.responses;
    const connectBody = { type: 'object', additionalProperties: false, required: ['node', 'nic'], properties: { node: { type: 'string' }, nic: { type: 'string' } } };
    paths[`${portPath}/connect_nic`] = { post: { ...post, summary: 'port_connect_nic', requestBody: { required: true, content: { 'application/json': { schema: connectBody } } }, responses: { 200: ok, ...errors } } };
    paths[`${portPath}/detach_nic`] = { post: { ...omitBody(post), summary: 'port_detach_nic', responses: { 200: ok, ...errors } } };
    paths[`${portPath}/revert`] = { post: { ...omitBody(post), summary: 'port_revert', responses: { 202: accepted, ...errors } } };
  }
  // The admin's clear of a port's doubt: its one action.
  const adminPortPath = '/admin/switch/{switch}/port/{port}';
  if (paths[adminPortPath]) {
    paths[`${adminPortPath}/clear_doubt`] = { post: { ...paths[adminPortPath].post!, summary: 'admin_clear_doubt' } };
    delete paths[adminPortPath];
  }
  const actorPath = '/admin/actors/{kind}/{id}';
  const get = paths[actorPath]?.get;
  if (get) {
    const [entity, journal] = get.responses[200].content!['application/json'].schema.anyOf!;
    const { 200: _any, ...errors } = get.responses;
    const withSchema = (schema: object) => ({ ...get.responses[200], content: { 'application/json': { schema } } });
    paths[actorPath] = { get: { ...get, parameters: get.parameters?.filter((p) => p.name !== 'limit'), responses: { 200: withSchema(entity), ...errors } } };
    paths[`${actorPath}/journal`] = { get: { ...get, responses: { 200: withSchema(journal), ...errors } } };
  }
  for (const ops of Object.values(paths)) {
    for (const op of Object.values(ops)) {
      const schema = op.requestBody?.content['application/json']?.schema;
      if (op.requestBody && schema) op.requestBody.required = !!schema.required?.length;
    }
  }
  return { ...doc, paths };
}

/** GET /health, answered by the Gate in front of the API (src/gate.ts), not by a fastify route. */
function withHealth(doc: OpenApi): OpenApi {
  const status = (active: boolean) => ({
    type: 'object',
    required: active ? ['status', 'instance'] : ['status', 'instance', 'reason'],
    properties: {
      status: { type: 'string', enum: [active ? 'active' : 'standby'] },
      instance: { type: 'string', description: 'this process (HILT_INSTANCE_NAME)' },
      ...(active ? {} : { reason: { type: 'string', description: 'why it does not serve the API' } }),
    },
  });
  const get = {
    tags: ['health'],
    summary: 'Whether this process serves the API, for a load balancer (not under /v0)',
    security: [],
    responses: {
      200: { description: 'This process is active: it serves the API', content: { 'application/json': { schema: status(true) } } },
      503: { description: 'This process is a standby (PostgreSQL) or starting: it answers every other call with 503', content: { 'application/json': { schema: status(false) } } },
    },
  };
  return { ...doc, paths: { ...doc.paths, '/health': { get: get as unknown as Operation } } };
}

const omitBody = (op: Operation): Operation => {
  const { requestBody: _body, ...rest } = op;
  return rest;
};

/** GET /openapi.json and the page under /docs, both public. */
export async function docsRoutes(app: FastifyInstance): Promise<void> {
  app.addHook('onRoute', (route: RouteOptions) => {
    route.config = { ...(route.config as object), public: true } as RouteOptions['config'];
  });
  app.get(OPENAPI_PATH, {
    schema: {
      tags: ['documentation'],
      summary: 'This document',
      security: [],
      response: { 200: { type: 'object', description: 'OpenAPI 3', additionalProperties: true }, ...pick(responses('read', {}), 400, 500) },
    },
  }, async () => app.swagger());
  await app.register(swaggerUi, { routePrefix: DOCS_PREFIX, staticCSP: true });
}

function pick(r: Record<number, object>, ...keys: number[]): Record<number, object> {
  return Object.fromEntries(keys.map((k) => [k, r[k]]));
}
