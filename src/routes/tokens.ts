/**
 * API tokens (docs/identity.md): POST /auth/tokens makes one for the caller (its secret shown
 * once), GET /auth/tokens lists the caller's (an admin's or auditor's `?user=U`: another
 * user's), DELETE /auth/tokens/<id> revokes one (its owner, or an admin). Tokens are the user
 * actor's (actors/user/protocol.ts); the secret never reaches storage or a log.
 */
import { FastifyInstance } from 'fastify';
import * as S from '../schemas/tokens';
import { badArgument, forbidden, notFound } from '../errors';
import { found, requireAdmin } from './guard';
import { newToken, parseToken } from '../auth/tokens';
import { isUser, type Caller } from '../auth/caller';
import type { TokenGrant } from '../../actors/user/protocol';

const DEFAULT_SECONDS = 86_400;
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Token management is for the service's own users, and never by a token that may only read. An
 * OpenID Connect caller has no tokens of its own; `others`: the call is about another user's
 * tokens, which an OpenID Connect admin (or auditor, to list) manages as any admin does (a
 * leaked token must be revocable whoever the admins are).
 */
function ownUser(c: Caller, what: string, others = false): void {
  if (c.via?.kind === 'oidc' && !others) throw forbidden(`an OpenID Connect caller has no API tokens here (${what}): its identity provider issues its tokens`);
  if (c.via?.kind === 'token' && c.readOnly) throw forbidden(`a read-only token cannot ${what}`);
}

export async function tokenRoutes(app: FastifyInstance): Promise<void> {
  const { world, config, auth } = app.hilt;
  const rm = world.rm;

  const shown = (user: string, t: TokenGrant, now: number) => {
    const last = auth.tokenUses.lastUsed(t);
    return {
      id: t.id, user, description: t.description, project: t.project ?? null, read_only: t.readOnly,
      created_at: iso(t.createdAt), expires_at: iso(t.expiresAt), last_used_at: last === undefined ? null : iso(last), expired: t.expiresAt <= now,
    };
  };

  app.post<{ Body: { expires_in?: number; project?: string; read_only?: boolean; description?: string } }>('/auth/tokens', {
    schema: S.createToken, config: { selfService: true },
  }, async (req) => {
    const c = req.caller;
    ownUser(c, 'create tokens');
    // A token would otherwise outlive its own expiry, or its revocation, through the ones it made.
    if (c.via?.kind === 'token') throw forbidden('a token cannot create tokens: log in with a password (or the dashboard) to make one');
    const seconds = req.body.expires_in ?? DEFAULT_SECONDS;
    if (seconds > config.tokenMaxSeconds) throw badArgument(`expires_in must be at most ${config.tokenMaxSeconds} seconds (HILT_TOKEN_MAX_SECONDS)`);
    const { project } = req.body;
    if (project !== undefined) found(rm.projects.get(project), `project ${project}`);
    const made = newToken();
    const now = Date.now();
    const grant: TokenGrant = {
      id: made.id, secretHash: made.secretHash, ...(project !== undefined ? { project } : {}), readOnly: req.body.read_only ?? false,
      description: req.body.description ?? '', createdAt: now, expiresAt: now + seconds * 1000,
    };
    await world.users.ask(c.user, { type: 'user.createToken', by: c.user, grant });
    req.log.info({ user: c.user, token: grant.id, project, readOnly: grant.readOnly, expiresAt: iso(grant.expiresAt) }, 'API token created');
    return { id: made.id, token: made.token, expires_at: iso(grant.expiresAt) };
  });

  app.get<{ Querystring: { user?: string } }>('/auth/tokens', { schema: S.listTokens }, async (req) => {
    const c = req.caller;
    ownUser(c, 'list tokens', req.query.user !== undefined);
    const user = req.query.user ?? c.user;
    // An OpenID Connect caller's name is not the database user's of that name (isUser).
    if (user !== c.user || c.via?.kind === 'oidc') requireAdmin(c);
    const u = found(rm.users.get(user), `user ${user}`);
    const now = Date.now();
    return (u.tokens ?? []).map((t) => shown(user, t, now));
  });

  app.delete<{ Params: { id: string } }>('/auth/tokens/:id', { schema: S.revokeToken, config: { selfService: true } }, async (req) => {
    const c = req.caller;
    ownUser(c, 'revoke tokens', c.isAdmin);
    // A whole token pasted where its id belongs (a leaked one, revoked in haste): its id, never its secret quoted back.
    const id = parseToken(req.params.id)?.id ?? req.params.id;
    const owner = rm.tokenOwners.get(id);
    // Another user's token is not even said to exist.
    if (owner === undefined || (!isUser(c, owner) && !c.isAdmin)) throw notFound(`token ${id}`);
    await world.users.ask(owner, { type: 'user.revokeToken', by: c.user, id });
    auth.tokenUses.forget(id);
    req.log.info({ user: owner, token: id, by: c.user }, 'API token revoked');
  });
}
