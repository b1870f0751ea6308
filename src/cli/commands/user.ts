/** hilt user …: HIL's `hil user` group (hil/cli/user.py). */
import { Argument, Command } from 'commander';
import { path } from '../client';
import { Ctx } from '../context';
import { passwordArgument } from '../credentials';

const ROLE = () => new Argument('<is_admin>', 'admin or regular').choices(['admin', 'regular']);

export function userCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const user = program.command('user').description('Commands related to user');

  user.command('create').description('Create a user; a password of - is asked for').argument('<username>').argument('<password>').addArgument(ROLE())
    .action(async (u: string, password: string, role: string) => {
      const pw = await passwordArgument(password, `password of the new user ${u}`, () => ctx.client().login());
      await c().put(path('auth', 'basic', 'user', u), { password: pw, 'is-admin': role === 'admin' });
    });
  user.command('delete').description('Delete a user').argument('<username>')
    .action(async (u: string) => void (await c().del(path('auth', 'basic', 'user', u))));
  user.command('set-admin').description('Make a user an admin, or a regular user').argument('<username>').addArgument(ROLE())
    .action(async (u: string, role: string) => void (await c().patch(path('auth', 'basic', 'user', u), { is_admin: role === 'admin' })));

  const project = user.command('project').description('Add users to projects, remove them');
  project.command('add').description('Add a user to a project').argument('<user>').argument('<project>')
    .action(async (u: string, p: string) => void (await c().post(path('auth', 'basic', 'user', u, 'add_project'), { project: p })));
  project.command('remove').description('Remove a user from a project').argument('<user>').argument('<project>')
    .action(async (u: string, p: string) => void (await c().post(path('auth', 'basic', 'user', u, 'remove_project'), { project: p })));
}
