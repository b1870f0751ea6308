/** hilt networking-action …: HIL's `hil networking-action show` (hil/cli/misc.py), and a node's list. */
import { Command } from 'commander';
import { path } from '../client';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { answer, table } from '../output';
import { ActionStatus, actionTable } from '../wait';

export function actionCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const na = program.command('networking-action').description('Commands related to networking-actions');

  na.command('show').description('Display the status of a network operation').argument('<status_id>')
    .option('--json', 'the server\'s JSON').option('--jsonout', 'the same, as HIL\'s CLI spelled it')
    .action(async (id: string, o: JsonOpts) => {
      const r = await c().get(path('networking_action', id));
      answer(wantsJson(o), r.text, () => actionTable(r.body as ActionStatus));
    });
  na.command('list').description('List a node\'s network operations, newest first').argument('<node>').option('--json', 'the server\'s JSON')
    .action(async (n: string, o: JsonOpts) => {
      const r = await c().get(path('node', n, 'networking_actions'));
      answer(wantsJson(o), r.text, () => {
        const items = r.body as (ActionStatus & { status_id: string; accepted_at: string; finished_at: string | null })[];
        return table(['Status ID', 'Type', 'NIC', 'Channel', 'New Network', 'Status', 'Accepted', 'Finished', 'Error'],
          items.map((a) => [a.status_id, a.type, a.nic, a.channel, a.new_network, a.status, a.accepted_at, a.finished_at, a.error ?? '']));
      });
    });
}
