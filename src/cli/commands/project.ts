/** hilt project …: HIL's `hil project` group (hil/cli/project.py). */
import { Command } from 'commander';
import { ApiError, Client, path, UsageError } from '../client';
import { waitFor } from '../wait';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { answer, list } from '../output';

interface NodeNics { nics: { label: string; networks: Record<string, string>; switch?: string | null; port?: string | null }[] }

/** HIL_TIMEOUT: how long HIL's CLI waited for the reverts of `--force`, in seconds (unset: no limit here). */
function hilTimeout(): number | undefined {
  const v = process.env.HIL_TIMEOUT;
  if (v === undefined || v === '') return undefined;
  if (!/^\d{1,7}(\.\d{1,3})?$/.test(v)) throw new UsageError(`HIL_TIMEOUT must be a number of seconds, got "${v}"`);
  return Number(v);
}

/**
 * HIL's `project node remove --force`: every nic on a network has its port reverted, and each
 * revert is waited for, all within HIL_TIMEOUT seconds when it is set.
 */
async function revertPorts(client: Client, project: string, node: string): Promise<void> {
  const limit = hilTimeout();
  const call = `GET ${path('node', node)}`;
  const b = (await client.get(path('node', node))).body as NodeNics;
  const ids: string[] = [];
  for (const nic of b.nics) {
    if (!Object.keys(nic.networks).length) continue;
    // A member's node show has no wiring: only an admin can revert ports, as in HIL.
    if (!nic.switch || !nic.port) throw new ApiError(401, 'AuthorizationError', `only an admin may force the removal of node ${node}: the port of its nic ${nic.label} is not shown to you`, call);
    const r = await client.postJson(path('switch', nic.switch, 'port', nic.port, 'revert'));
    ids.push(client.field(r, 'status_id'));
  }
  const deadline = limit === undefined ? undefined : { at: Date.now() + limit * 1000, why: `${limit} s (HIL_TIMEOUT); the node stays in project ${project}` };
  for (const id of ids) await waitFor(client, id, `revert of a port of ${node}`, { quiet: true, deadline });
}

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
    .option('--force', 'first revert the ports of its nics that are on networks and wait for that (admin: only admins see the ports)')
    .action(async (p: string, n: string, o: { force?: boolean }) => {
      if (o.force) await revertPorts(c(), p, n);
      await c().post(path('project', p, 'detach_node'), { node: n });
    });
}
