/**
 * POST /admin/secret-key/rotate (admin): re-encrypt every BMC and switch credential under the
 * key in `key_file` while the service runs (src/secrets/at-rest.ts; `hilt admin rotate-key`).
 */
import { FastifyInstance } from 'fastify';
import * as S from '../schemas/secrets';
import { requireAdmin } from './guard';
import { HiltError } from '../errors';

export async function secretRoutes(app: FastifyInstance): Promise<void> {
  const { rotateKey } = app.hilt;
  app.post<{ Body: { key_file: string } }>('/admin/secret-key/rotate', { schema: S.rotateKey }, async (req) => {
    requireAdmin(req.caller);
    if (!rotateKey) throw new HiltError('IllegalStateError', 'this service holds no secret key');
    const r = await rotateKey(req.body.key_file);
    req.log.info({ by: req.caller.user, from: r.from, to: r.to, values: r.values }, 'secret key rotated');
    return { previous_key_id: r.from, key_id: r.to, rewritten: r.values, key_file: r.keyFile, installed: r.installed };
  });
}
