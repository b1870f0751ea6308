/**
 * GET /admin/audit (admin): the system-wide audit log, newest first, paged, filtered by object,
 * user and time range (src/audit.ts). POST /admin/backup (admin): a consistent copy of the store
 * while the service runs.
 */
import type { FastifyInstance } from 'fastify';
import { isAbsolute } from 'node:path';
import * as S from '../schemas/ops';
import { requireAdmin } from './guard';
import { auditPage, parseTime } from '../audit';
import { badArgument, HiltError } from '../errors';
import { quote, shortText } from '../../lib/text';

/** Why a path cannot become the backup's folder, by the error the file system gave. */
const PATH_REFUSALS: Record<string, string> = {
  ENOENT: 'its parent does not exist',
  ENOTDIR: 'a part of it is not a folder',
  ENAMETOOLONG: 'the path or a name in it is too long',
  EACCES: 'the service may not write there',
  EPERM: 'the service may not write there',
  EROFS: 'the file system is read-only',
  ELOOP: 'it has too many symbolic links',
  EINVAL: 'it is not a valid path',
};

interface AuditQuerystring { kind?: string; name?: string; user?: string; since?: string; until?: string; limit?: string; cursor?: string }

export async function opsRoutes(app: FastifyInstance): Promise<void> {
  const { world, metrics } = app.hilt;

  app.get<{ Querystring: AuditQuerystring }>('/admin/audit', { schema: S.audit }, async (req) => {
    requireAdmin(req.caller);
    const q = req.query;
    return auditPage(world, {
      kind: q.kind,
      name: q.name,
      user: q.user,
      since: q.since !== undefined ? parseTime('since', q.since) : undefined,
      until: q.until !== undefined ? parseTime('until', q.until) : undefined,
      limit: q.limit !== undefined ? Number(q.limit) : undefined,
      cursor: q.cursor,
    });
  });

  /**
   * The copy is written by the service's process, on its machine, into a new folder `path`
   * (absolute, outside the data folder; it must not exist; its parent must). Writes go on meanwhile; the copy holds every
   * change acknowledged before the call. A restore is a start with HILT_DATA_DIR on the copy.
   */
  app.post<{ Body: { path: string } }>('/admin/backup', { schema: S.backup }, async (req) => {
    requireAdmin(req.caller);
    const path = req.body.path;
    if (!isAbsolute(path)) throw badArgument('path must be absolute (a folder on the service\'s machine)');
    // The file system calls would throw for it, which is no failure of the service's.
    if (path.includes('\0')) throw badArgument('path must not hold a NUL character');
    const started = Date.now();
    try {
      await world.runtime.backup(path);
    } catch (err) {
      metrics.backup(false, (Date.now() - started) / 1000);
      if (err instanceof HiltError) throw err;
      const e = err as NodeJS.ErrnoException & Error;
      const where = quote(path);
      if (/exists/.test(e.message) || e.code === 'EEXIST') throw new HiltError('DuplicateError', `${where} exists already: a backup goes to a new folder`);
      // The path the caller gave cannot be a new folder: the caller's mistake, not the service's.
      const refusal = PATH_REFUSALS[e.code ?? ''];
      if (refusal) throw badArgument(`the folder ${where} cannot be made: ${refusal}`);
      req.log.error({ err: e, path }, 'online backup failed');
      // lmdb-js's errors carry the system's message (No space left on device) but no code.
      throw new HiltError('ServiceUnavailableError', `the backup to ${where} failed: ${shortText(e.message ?? String(err), 200)}`);
    }
    metrics.backup(true, (Date.now() - started) / 1000);
    req.log.info({ path, ms: Date.now() - started }, 'online backup written');
    return { path, started_at: new Date(started).toISOString(), finished_at: new Date().toISOString() };
  });
}
