/** hilt headnode …: HIL's `hil headnode` group (hil/cli/headnode.py). */
import { Command } from 'commander';
import { path } from '../client';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { answer, fields, list, out, table } from '../output';

interface HeadnodeBody { name: string; project: string; hnics: string[]; vncport: number | null; base_img?: string; status?: string; error?: string | null; networks?: Record<string, string | null> }

export function headnodeCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const hn = program.command('headnode').description('Commands related to headnode');

  hn.command('create').description('Create a headnode in a project from a base image').argument('<headnode>').argument('<project>').argument('<base_img>')
    .action(async (h: string, p: string, img: string) => void (await c().put(path('headnode', h), { project: p, base_img: img })));
  hn.command('delete').description('Delete a headnode').argument('<headnode>')
    .action(async (h: string) => void (await c().del(path('headnode', h))));
  hn.command('start').description('Start a headnode').argument('<headnode>')
    .action(async (h: string) => void (await c().post(path('headnode', h, 'start'))));
  hn.command('stop').description('Stop a headnode (a hard power off)').argument('<headnode>')
    .action(async (h: string) => void (await c().post(path('headnode', h, 'stop'))));
  hn.command('list').description('List the headnodes of a project: state, VNC port, base image and hnics').argument('<project>').option('--json', 'the server\'s JSON (list_project_headnodes: the names)')
    .action(async (p: string, o: JsonOpts) => {
      const r = await c().get(path('project', p, 'headnodes'));
      if (wantsJson(o)) return out(r.text);
      const names = [...(r.body as string[])].sort();
      const shown = await Promise.all(names.map(async (h) => (await c().get(path('headnode', h))).body as HeadnodeBody));
      out(table(['Headnode', 'State', 'VNC Port', 'Base Image', 'Hnics', 'Error'], shown.map((b) => [
        b.name, b.status ?? '', b.vncport, b.base_img ?? '', b.hnics.map((x) => `${x}: ${b.networks?.[x] ?? 'no network'}`).join('\n'), b.error ?? '',
      ])));
    });
  hn.command('show').description('Display information about a headnode').argument('<headnode>').option('--json', 'the server\'s JSON')
    .action(async (h: string, o: JsonOpts) => {
      const r = await c().get(path('headnode', h));
      answer(wantsJson(o), r.text, () => {
        const b = r.body as HeadnodeBody;
        const hnics = b.hnics.map((x) => `${x}: ${b.networks?.[x] ?? 'no network'}`).join('\n');
        const rows: (string | number | null)[][] = [['Name', b.name], ['Project', b.project], ['Status', b.status ?? null], ['Base image', b.base_img ?? null],
          ['VNC port', b.vncport], ['Hnics', hnics]];
        if (b.error) rows.push(['Error', b.error]);
        return fields(rows);
      });
    });
  hn.command('list-images').description('List the installed base images').option('--json', 'the server\'s JSON')
    .action(async (o: JsonOpts) => {
      const r = await c().get('/headnode_images');
      answer(wantsJson(o), r.text, () => list('Images', r.body));
    });

  const nic = hn.command('nic').description('Headnode\'s nics commands');
  nic.command('create').description('Create a nic on a headnode').argument('<headnode>').argument('<nic>')
    .action(async (h: string, x: string) => void (await c().put(path('headnode', h, 'hnic', x))));
  nic.command('delete').description('Delete a nic of a headnode').argument('<headnode>').argument('<nic>')
    .action(async (h: string, x: string) => void (await c().del(path('headnode', h, 'hnic', x))));

  const net = hn.command('network').description('Perform headnode network operations');
  net.command('connect').description('Connect a headnode\'s nic to a network').argument('<headnode>').argument('<nic>').argument('<network>')
    .action(async (h: string, x: string, network: string) => void (await c().post(path('headnode', h, 'hnic', x, 'connect_network'), { network })));
  // HIL's CLI declared a <network> here that the call never used; it is accepted and ignored.
  net.command('detach').description('Detach a headnode\'s nic from its network').argument('<headnode>').argument('<nic>').argument('[network]', 'ignored (HIL\'s CLI asked for it)')
    .action(async (h: string, x: string) => void (await c().post(path('headnode', h, 'hnic', x, 'detach_network'))));
}
