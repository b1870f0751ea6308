/** hilt network …: HIL's `hil network` group (hil/cli/network.py). */
import { Command, Option } from 'commander';
import { path } from '../client';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { answer, fields, table } from '../output';

interface NetworkBody { name: string; channels: string[]; owner: string; access: string[] | null; 'connected-nodes'?: Record<string, string[]> }

export function networkCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const network = program.command('network').description('Commands related to network');

  network.command('create').description('Create a network owned by a project (or "admin"); see docs/api-conventions.md §7')
    .argument('<network>').argument('<owner>')
    .option('--access <project>', 'the project that may use it; "" for a public network (default: the owning project; public for an admin network)')
    .option('--net-id <id>', 'the VLAN id, admins only (default: one from the pool)')
    // Older HIL CLIs spelled it --net_id.
    .addOption(new Option('--net_id <id>').hideHelp())
    .action(async (n: string, owner: string, o: { access?: string; netId?: string; net_id?: string }) => {
      // An admin network's access defaults to public: `admin` is no project that could be listed.
      await c().put(path('network', n), { owner, access: o.access ?? (owner === 'admin' ? '' : owner), net_id: o.netId ?? o.net_id ?? '' });
    });
  network.command('delete').description('Delete a network').argument('<network>')
    .action(async (n: string) => void (await c().del(path('network', n))));
  network.command('show').description('Display information about a network').argument('<network>').option('--json', 'the server\'s JSON')
    .option('--jsonout', 'the same, as HIL\'s CLI spelled it')
    .action(async (n: string, o: JsonOpts) => {
      const r = await c().get(path('network', n));
      answer(wantsJson(o), r.text, () => {
        const b = r.body as NetworkBody;
        const nodes = Object.entries(b['connected-nodes'] ?? {}).map(([node, nics]) => `${node}(${nics.join(',')})`);
        return fields([
          ['Name', b.name],
          ['Owner', b.owner],
          ['Channels', b.channels.join('\n')],
          ['Access', b.access ? b.access.join('\n') : 'public'],
          ['Connected Nodes', nodes.sort().join('\n')],
        ]);
      });
    });
  network.command('list').description('List all networks').option('--json', 'the server\'s JSON').option('--jsonout', 'the same, as HIL\'s CLI spelled it')
    .action(async (o: JsonOpts) => {
      const r = await c().get('/networks');
      answer(wantsJson(o), r.text, () => {
        const b = r.body as Record<string, { network_id: string; projects: string[] | null }>;
        const rows = Object.entries(b).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
          .map(([name, a]) => [name, a.network_id, a.projects ? a.projects.join(',') : 'public']);
        return table(['Name', 'Network ID', 'Projects'], rows);
      });
    });
  network.command('list-attachments').description('List the nodes attached to a network (all, or those of --project)')
    .argument('<network>').option('--project <project>', 'only the nodes of this project (all: every project\'s, as HIL\'s CLI took it)').option('--json', 'the server\'s JSON')
    .action(async (n: string, o: JsonOpts & { project?: string }) => {
      // HIL's CLI and client read the project `all` as no filter (its default); the server takes no project for that.
      const r = await c().get(path('network', n, 'attachments'), { project: o.project === 'all' ? undefined : o.project });
      answer(wantsJson(o), r.text, () => {
        const b = r.body as Record<string, { nic: string; channel: string; project: string }>;
        const rows = Object.entries(b).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([node, a]) => [node, a.project, a.nic, a.channel]);
        return table(['Node', 'Project', 'Nic', 'Channel'], rows);
      });
    });
  network.command('grant-access').description('Let a project use a network').argument('<network>').argument('<project>')
    .action(async (n: string, p: string) => void (await c().put(path('network', n, 'access', p))));
  network.command('revoke-access').description('Take a project\'s use of a network away').argument('<network>').argument('<project>')
    .action(async (n: string, p: string) => void (await c().del(path('network', n, 'access', p))));
}
