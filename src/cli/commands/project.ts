/** hilt project …: HIL's `hil project` group (hil/cli/project.py). */
import { Command } from 'commander';
import { path } from '../client';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { answer, list } from '../output';

export function projectCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const project = program.command('project').description('Commands related to project');

  project.command('create').description('Create a new project').argument('<project>')
    .action(async (p: string) => void (await c().put(path('project', p))));
  project.command('delete').description('Delete a project').argument('<project>')
    .action(async (p: string) => void (await c().del(path('project', p))));
  project.command('list').description('List all projects').option('--json', 'the server\'s JSON')
    .action(async (o: JsonOpts) => {
      const r = await c().get('/projects');
      answer(wantsJson(o), r.text, () => list('Projects', r.body));
    });
  project.command('list-networks').description('List the networks a project may use').argument('<project>').option('--json', 'the server\'s JSON')
    .action(async (p: string, o: JsonOpts) => {
      const r = await c().get(path('project', p, 'networks'));
      answer(wantsJson(o), r.text, () => list('Networks', r.body));
    });

  const node = project.command('node').description('Project and node related operations');
  node.command('list').description('List the nodes of a project').argument('<project>').option('--json', 'the server\'s JSON')
    .action(async (p: string, o: JsonOpts) => {
      const r = await c().get(path('project', p, 'nodes'));
      answer(wantsJson(o), r.text, () => list('Nodes', r.body));
    });
  node.command('add').description('Add a node to a project').argument('<project>').argument('<node>')
    .action(async (p: string, n: string) => void (await c().post(path('project', p, 'connect_node'), { node: n })));
  node.command('remove').description('Remove a node from a project').argument('<project>').argument('<node>')
    .action(async (p: string, n: string) => void (await c().post(path('project', p, 'detach_node'), { node: n })));
}
