/**
 * hilt networking-action …: HIL's `hil networking-action show` (hil/cli/misc.py), and lists of
 * operations: a node's, or every node's (the failed ones with --status ERROR).
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { ApiError, path } from '../client';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { ago, answer, table } from '../output';
import { ActionStatus, actionTable } from '../wait';
import { shortStatusId } from '../../../actors/nic/status-ids';

/** An item of the operation lists (GET /node/<node>/networking_actions, GET /networking_actions). */
interface Listed extends ActionStatus { status_id: string; short_id?: string; accepted_at: string; finished_at: string | null }

/** The short ids tables print (8 hex digits; a node's list has none in its JSON: computed here the same way): `show` takes them too. */
const SHORT_ID = /^[0-9a-f]{8}$/;

function operationsTable(items: Listed[]): string {
  return table(['ID', 'Node', 'NIC', 'Type', 'Network', 'Channel', 'Status', 'Accepted', 'Finished', 'Error'],
    items.map((a) => [a.short_id ?? shortStatusId(a.status_id), a.node, a.nic, a.type, a.new_network, a.channel, a.status, ago(a.accepted_at), ago(a.finished_at), a.error ?? '']));
}

export function actionCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const na = program.command('networking-action').description('Commands related to networking-actions');

  na.command('show').description('Display the status of a network operation, by its status id or the short id a table printed')
    .argument('<status_id>')
    .option('--json', 'the server\'s JSON').option('--jsonout', 'the same, as HIL\'s CLI spelled it')
    .action(async (given: string, o: JsonOpts) => {
      let id = given;
      if (SHORT_ID.test(given)) {
        // A short id is looked up among the operations the service lists (in flight and its last 1,000 finished).
        const all = (await c().get('/networking_actions', { limit: '1000' })).body as Listed[];
        const match = all.find((a) => a.short_id === given);
        if (!match) throw new ApiError(404, 'NotFoundError', `no recent operation has the short id ${given}: give its full status id (hilt networking-action list NODE --json)`, 'GET /networking_actions');
        id = match.status_id;
      }
      const r = await c().get(path('networking_action', id));
      // HIL's rows alone for the id HIL's scripts give (a `grep Status` finds the status only); the full id, last, for a short one.
      answer(wantsJson(o), r.text, () => actionTable(r.body as ActionStatus, id === given ? undefined : id, 'last'));
    });
  na.command('list').description('List network operations, newest first: a node\'s, or without a node every node\'s you may see (in flight, then the service\'s last 1,000 finished)')
    .argument('[node]')
    .addOption(new Option('--status <status>', 'only those with this status (ERROR: the failures)').choices(['PENDING', 'DONE', 'ERROR']))
    .option('--limit <n>', 'at most this many, without a node (1 to 1000, default 100)', (v) => {
      if (!/^[1-9][0-9]{0,3}$/.test(v) || Number(v) > 1000) throw new InvalidArgumentError('an integer from 1 to 1000');
      return v;
    })
    .option('--json', 'the server\'s JSON')
    .action(async (n: string | undefined, o: JsonOpts & { status?: string; limit?: string }) => {
      const r = n === undefined
        ? await c().get('/networking_actions', { status: o.status, limit: o.limit })
        : await c().get(path('node', n, 'networking_actions'));
      const items = (r.body as Listed[]).filter((a) => n === undefined || o.status === undefined || a.status === o.status);
      answer(wantsJson(o), n === undefined || o.status === undefined ? r.text : JSON.stringify(items), () => operationsTable(items));
    });
}
