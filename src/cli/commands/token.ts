/** hilt token …: API tokens (docs/identity.md); a token goes in $HILT_TOKEN for the CLI to send it. */
import { Command, InvalidArgumentError } from 'commander';
import { path } from '../client';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { answer, note, out, table } from '../output';

const seconds = (v: string) => {
  if (!/^[1-9][0-9]{0,9}$/.test(v)) throw new InvalidArgumentError('a whole number of seconds');
  return Number(v);
};

interface TokenRow { id: string; user: string; description: string; project: string | null; read_only: boolean; created_at: string; expires_at: string; last_used_at: string | null; expired: boolean }

export function tokenCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const token = program.command('token').description('API tokens: for scripts and CI jobs (set $HILT_TOKEN to use one)');

  token.command('create').description('Make a token; its secret is printed once, on standard output')
    .option('--expires-in <seconds>', 'its life (default one day; at most the service\'s HILT_TOKEN_MAX_SECONDS)', seconds)
    .option('--project <project>', 'it acts only within this project')
    .option('--read-only', 'it changes nothing')
    .option('--description <text>', 'what it is for (at most 200 characters)')
    .option('--json', 'the server\'s JSON')
    .action(async (o: JsonOpts & { expiresIn?: number; project?: string; readOnly?: boolean; description?: string }) => {
      const r = await c().postJson('/auth/tokens', {
        ...(o.expiresIn !== undefined ? { expires_in: o.expiresIn } : {}), ...(o.project !== undefined ? { project: o.project } : {}),
        ...(o.readOnly ? { read_only: true } : {}), ...(o.description !== undefined ? { description: o.description } : {}),
      });
      if (wantsJson(o)) return out(r.text);
      const b = r.body as { id: string; token: string; expires_at: string };
      out(c().field(r, 'token'));
      note(`token ${b.id}, expires ${b.expires_at}; it is shown only now: export HILT_TOKEN=<it> to use it`);
    });

  token.command('list').description('Your tokens (an admin: another user\'s with --owner); never their secrets')
    .option('--owner <user>', 'another user\'s tokens (admin or auditor); not --user, which names the caller')
    .option('--json', 'the server\'s JSON')
    .action(async (o: JsonOpts & { owner?: string }) => {
      const r = await c().get('/auth/tokens', { user: o.owner });
      answer(wantsJson(o), r.text, () => table(['Id', 'Description', 'Project', 'Read-only', 'Created', 'Expires', 'Last used'],
        (r.body as TokenRow[]).map((t) => [t.id, t.description, t.project ?? '', t.read_only ? 'yes' : 'no', t.created_at, t.expired ? `${t.expires_at} (expired)` : t.expires_at, t.last_used_at ?? ''])));
    });

  token.command('revoke').description('Revoke a token at once (yours, or any as an admin)').argument('<id>')
    .action(async (id: string) => void (await c().del(path('auth', 'tokens', id))));
}
