/** hilt user …: HIL's `hil user` group (hil/cli/user.py). */
import { Argument, Command, Option } from 'commander';
import { path, UsageError } from '../client';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { passwordArgument } from '../credentials';
import { answer, fields } from '../output';

const ROLE = () => new Argument('<is_admin>', 'admin or regular').choices(['admin', 'regular']);
/**
 * HIL's two kinds of user, and the read-only auditor (docs/identity.md). Checked in the action,
 * not by commander, whose refusal quotes the value: with the arguments swapped that is the
 * password. The choices stay listed for help and completion.
 */
const CREATE_ROLES = ['admin', 'regular', 'auditor'];
const CREATE_ROLE = () => new Argument('<role>', 'admin or regular, or auditor (reads what an admin reads, changes nothing)').choices(CREATE_ROLES).argParser((v: string) => v);

export function userCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const user = program.command('user').description('Commands related to user');

  user.command('create').description('Create a user; a password of - is asked for').argument('<username>').argument('<password>').addArgument(CREATE_ROLE())
    .action(async (u: string, password: string, role: string) => {
      if (!CREATE_ROLES.includes(role)) throw new UsageError('the role (after the password) must be admin, regular or auditor');
      const pw = await passwordArgument(password, `password of the new user ${u}`, () => ctx.client().login());
      // HIL's body for its two kinds; `role` (which goes alone) for an auditor.
      await c().put(path('auth', 'basic', 'user', u), role === 'auditor' ? { password: pw, role } : { password: pw, 'is-admin': role === 'admin' });
    });
  user.command('show').description('A user\'s role and projects, with its role in each (admin, auditor, or the user itself)').argument('<username>')
    .option('--json', 'the server\'s JSON')
    .action(async (u: string, o: JsonOpts) => {
      const r = await c().get(path('auth', 'basic', 'user', u));
      const b = r.body as { name: string; role: string; projects: Record<string, string> };
      answer(wantsJson(o), r.text, () => fields([['Name', b.name], ['Role', b.role],
        ['Projects', Object.entries(b.projects).sort(([a], [z]) => a.localeCompare(z)).map(([p, role]) => `${p} (${role})`).join('\n')]]));
    });
  user.command('set-role').description('Make a user an admin, an auditor or a regular user (docs/identity.md)').argument('<username>')
    .addArgument(new Argument('<role>', 'admin, auditor or user').choices(['admin', 'auditor', 'user']))
    .action(async (u: string, role: string) => void (await c().patch(path('auth', 'basic', 'user', u), { role })));
  user.command('delete').description('Delete a user').argument('<username>')
    .action(async (u: string) => void (await c().del(path('auth', 'basic', 'user', u))));
  user.command('set-admin').description('Make a user an admin, or an admin a regular user (an auditor stays one: set-role)').argument('<username>').addArgument(ROLE())
    .action(async (u: string, role: string) => void (await c().patch(path('auth', 'basic', 'user', u), { is_admin: role === 'admin' })));

  const project = user.command('project').description('Add users to projects, remove them');
  project.command('add').description('Add a user to a project').argument('<user>').argument('<project>')
    .addOption(new Option('--role <role>', 'member (the default) or reader (reads the project, changes nothing)').choices(['member', 'reader']))
    .action(async (u: string, p: string, o: { role?: string }) => void (await c().post(path('auth', 'basic', 'user', u, 'add_project'), o.role ? { project: p, role: o.role } : { project: p })));
  project.command('remove').description('Remove a user from a project').argument('<user>').argument('<project>')
    .action(async (u: string, p: string) => void (await c().post(path('auth', 'basic', 'user', u, 'remove_project'), { project: p })));
}
