import { FastifyInstance } from 'fastify';
import * as S from '../schemas/users';
import { duplicate, conflict, badArgument } from '../errors';
import { SERVICE } from '../audit';
import { hashPassword } from '../auth/password';
import { requireAdmin, found, lookedUp } from './guard';
import { roleOf } from '../../actors/user/actor';
import { dict } from '../dict';
import { isUser } from '../auth/caller';
import type { ProjectRole, UserRole } from '../../actors/user/protocol';

type U = { username: string };
type UP = { user: string };

export async function userRoutes(app: FastifyInstance): Promise<void> {
  const { world } = app.hilt;
  const rm = world.rm;

  app.put<{ Params: U; Body: { password: string; 'is-admin'?: boolean; is_admin?: boolean; role?: UserRole } }>('/auth/basic/user/:username', {
    schema: S.createUser,
    // Validation, so before authentication: the audit log and the event stream show these names as the service's own work.
    preValidation: async (req) => {
      if (SERVICE.has(req.params.username)) throw badArgument(`the user name ${req.params.username} is the service's own (its work is recorded under it): choose another`);
    },
  }, async (req) => {
    const b = req.body;
    requireAdmin(req.caller);
    const { username } = req.params;
    if (rm.users.has(username)) throw duplicate(`user ${username}`);
    const passwordHash = await hashPassword(b.password);
    const isAdmin = b.role !== undefined ? b.role === 'admin' : b['is-admin'] ?? b.is_admin ?? false;
    await world.users.ask(username, { type: 'user.create', by: req.caller.user, passwordHash, isAdmin, ...(b.role === 'auditor' ? { auditor: true } : {}) });
  });

  // show_user (docs/identity.md): an admin or an auditor, or the user itself (never an OpenID
  // Connect caller of the same name: another identity).
  app.get<{ Params: UP }>('/auth/basic/user/:user', { schema: S.showUser }, async (req) => {
    const { user } = req.params;
    if (!isUser(req.caller, user)) requireAdmin(req.caller);
    const u = found(rm.users.get(user), `user ${user}`);
    // The user itself sees the projects its credential reads: a project-scoped token, its project alone.
    const c = req.caller;
    const shows = (p: string) => c.isAdmin || c.projects.includes(p);
    const projects = dict<ProjectRole>();
    for (const p of u.projects) if (shows(p)) projects[p] = 'member';
    for (const p of u.readerOf ?? []) if (shows(p)) projects[p] = 'reader';
    return { name: u.name, role: roleOf(u), is_admin: u.isAdmin, projects };
  });

  app.delete<{ Params: U }>('/auth/basic/user/:username', { schema: S.deleteUser }, async (req) => {
    requireAdmin(req.caller);
    await world.users.ask(req.params.username, { type: 'user.delete', by: req.caller.user });
  });

  for (const [path, type] of [['add_project', 'project.addUser'], ['remove_project', 'project.removeUser']] as const) {
    app.post<{ Params: UP; Body: { project: string; role?: ProjectRole } }>(`/auth/basic/user/:user/${path}`, {
      schema: path === 'add_project' ? S.membership : S.removeMembership,
    }, async (req) => {
      requireAdmin(req.caller);
      const { user } = req.params;
      found(rm.users.get(user), `user ${user}`);
      found(rm.projects.get(lookedUp('project', req.body.project)), `project ${req.body.project}`);
      await world.projects.ask(req.body.project, { type, by: req.caller.user, user, ...(req.body.role === 'reader' ? { role: 'reader' as const } : {}) });
    });
  }

  // user_set_admin, as HIL's v0.2 client sends it (docs/api-conventions.md §12).
  // …or its role (docs/identity.md).
  app.patch<{ Params: UP; Body: { is_admin?: boolean; role?: UserRole } }>('/auth/basic/user/:user', { schema: S.setAdmin }, async (req) => {
    requireAdmin(req.caller);
    const { user } = req.params;
    found(rm.users.get(user), `user ${user}`);
    if (isUser(req.caller, user)) throw conflict('a user may not change its own admin flag or role');
    const { role, is_admin: isAdmin } = req.body;
    if (role !== undefined) await world.users.ask(user, { type: 'user.setRole', by: req.caller.user, role });
    else await world.users.ask(user, { type: 'user.setAdmin', by: req.caller.user, isAdmin: isAdmin! });
  });
}
