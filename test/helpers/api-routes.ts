/** The API's routes as the route walks of the access tests read them (test/src/routes/roles.test.ts, scoped-credentials.test.ts). */
import type { FastifyInstance } from 'fastify';
import type { RouteEntry } from '../../src/app';

/**
 * Every route of the API once: not HEAD, the /v0 copies, the dashboard or the API's description,
 * nor GET /events (a stream that never ends: its own tests read it).
 */
export function apiRoutes(app: FastifyInstance): RouteEntry[] {
  const seen = new Set<string>();
  return app.routeTable.filter((r) => {
    const k = `${r.method} ${r.url}`;
    if (r.method === 'HEAD' || r.url.startsWith('/v0/') || /^\/(ui|docs|openapi)/.test(r.url) || r.url === '/events' || seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
