/**
 * GET /metrics: the service's metrics in Prometheus's text format (src/metrics.ts). An admin's
 * or an auditor's credentials, a password or an API token, as every admin read; or none with
 * HILT_METRICS_OPEN=1, for a scraper on a private network. Not part of HIL's API: served once, not under /v0, and not in the OpenAPI
 * document.
 */
import type { FastifyInstance } from 'fastify';
import { requireAdmin } from './guard';
import { forRead } from '../auth/caller';
import { noQuery } from '../schemas/common';

export async function metricsRoutes(app: FastifyInstance): Promise<void> {
  const { auth, config, metrics } = app.hilt;
  // Authenticated here, not by the API's hook: whether a login is needed is a setting.
  app.get('/metrics', { config: { public: true }, schema: { hide: true, querystring: noQuery } }, async (req, reply) => {
    if (!config.metricsOpen) requireAdmin(forRead(await auth.authenticate(req.headers.authorization, { log: req.log, ip: req.ip })));
    const text = await metrics.text();
    return reply.header('content-type', metrics.contentType).header('cache-control', 'no-store').send(text);
  });
}
