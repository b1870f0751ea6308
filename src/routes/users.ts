import { FastifyInstance } from 'fastify';
import * as S from '../schemas/users';
import { duplicate, conflict } from '../errors';
import { hashPassword } from '../auth/password';
import { requireAdmin, found, lookedUp } from './guard';

type U = { username: string };
type UP = { user: string };

export async function userRoutes(app: FastifyInstance): Promise<void> {
  const { world } = app.hilt;
  const rm = world.rm;

  app.put<{ Params: U; Body: { password: string; 'is-admin'?: boolean; is_admin?: boolean } }>('/auth/basic/user/:username', { schema: S.createUser }, async (req) => {
    const b = req.body;
    requireAdmin(req.caller);
    const { username } = req.params;
    if (rm.users.has(username)) throw duplicate(`user ${username}`);
    const passwordHash = await hashPassword(b.password);
    await world.users.ask(username, { type: 'user.create', by: req.caller.user, passwordHash, isAdmin: b['is-admin'] ?? b.is_admin ?? false });
  });

  app.delete<{ Params: U }>('/auth/basic/user/:username', { schema: S.deleteUser }, async (req) => {
    requireAdmin(req.caller);
    await world.users.ask(req.params.username, { type: 'user.delete', by: req.caller.user });
  });

  for (const [path, type] of [['add_project', 'project.addUser'], ['remove_project', 'project.removeUser']] as const) {
    app.post<{ Params: UP; Body: { project: string } }>(`/auth/basic/user/:user/${path}`, { schema: S.membership }, async (req) => {
      requireAdmin(req.caller);
      const { user } = req.params;
      found(rm.users.get(user), `user ${user}`);
      found(rm.projects.get(lookedUp('project', req.body.project)), `project ${req.body.project}`);
      await world.projects.ask(req.body.project, { type, by: req.caller.user, user });
    });
  }

  // user_set_admin, as HIL's v0.2 client sends it (docs/api-conventions.md §12).
  app.patch<{ Params: UP; Body: { is_admin: boolean } }>('/auth/basic/user/:user', { schema: S.setAdmin }, async (req) => {
    requireAdmin(req.caller);
    const { user } = req.params;
    found(rm.users.get(user), `user ${user}`);
    if (user === req.caller.user) throw conflict('a user may not change its own admin flag');
    await world.users.ask(user, { type: 'user.setAdmin', by: req.caller.user, isAdmin: req.body.is_admin });
  });
}
