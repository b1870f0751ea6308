/**
 * The tenant lifecycle's commands (docs/lifecycle.md), in the groups they belong to:
 * `hilt node lease set|show|delete`, `hilt project lease list`, `hilt project quota set|show`,
 * `hilt admin maintenance` and `hilt admin attention`. Added to the groups the other command
 * files made (call after them).
 */
import { Command, InvalidArgumentError } from 'commander';
import { path, UsageError } from '../client';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { answer, fields, table } from '../output';

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A lease's end: an RFC 3339 time as it is, or `+<n>m|h|d` from now. */
export function leaseEnd(v: string, now = Date.now()): string {
  const rel = /^\+(\d{1,6})([mhd])$/.exec(v);
  if (rel) return new Date(now + Number(rel[1]) * UNITS[rel[2]]).toISOString();
  if (!/^\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d/.test(v)) throw new InvalidArgumentError('an RFC 3339 time (2026-05-01T12:00:00Z) or +<n>m, +<n>h, +<n>d from now');
  return v;
}

/** A quota's limit: a count, or `none` to remove it (kept as the word: commander turns a null into ''). */
function limitOf(v: string): number | 'none' {
  if (v === 'none') return v;
  if (!/^\d{1,7}$/.test(v)) throw new InvalidArgumentError('a count, or none');
  return Number(v);
}

const limitBody = (v: number | 'none') => (v === 'none' ? null : v);

/** How long until `iso`, in words a table shows (`2d 3h`, `45m`, `passed`). */
export function timeLeft(iso: string, now = Date.now()): string {
  const ms = Date.parse(iso) - now;
  if (ms <= 0) return 'passed';
  // Whole minutes first (rounded up), then split: rounding the last part alone gave `1h 60m`.
  const mins = Math.ceil(ms / UNITS.m);
  const d = Math.floor(mins / 1440);
  const h = Math.floor((mins % 1440) / 60);
  const m = mins % 60;
  return d ? `${d}d ${h}h` : h ? `${h}h ${m}m` : `${m}m`;
}

const group = (program: Command, name: string): Command => {
  const g = program.commands.find((c) => c.name() === name);
  if (!g) throw new Error(`the ${name} commands must be added before the lifecycle's`);
  return g;
};

interface Lease { project: string; expires_at: string; expired: boolean }
interface Use { limit: number | null; used: number }

export function lifecycleCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();

  const lease = group(program, 'node').command('lease').description('A node\'s lease: when its project\'s hold ends (docs/lifecycle.md)');
  lease.command('set').description('Set or move the lease of a node (admin, or its project)').argument('<node>')
    .argument('<expires>', 'an RFC 3339 time, or +<n>m, +<n>h, +<n>d from now', (v) => leaseEnd(v))
    .action(async (n: string, expires: string) => void (await c().put(path('node', n, 'lease'), { expires_at: expires })));
  lease.command('show').description('Show the lease of a node').argument('<node>').option('--json', 'the server\'s JSON')
    .action(async (n: string, o: JsonOpts) => {
      const r = await c().get(path('node', n, 'lease'));
      const l = r.body as Lease;
      answer(wantsJson(o), r.text, () => fields([['Project', l.project], ['Expires', l.expires_at], ['Left', l.expired ? 'passed: being released' : timeLeft(l.expires_at)]]));
    });
  lease.command('delete').description('Remove the lease of a node').argument('<node>')
    .action(async (n: string) => void (await c().del(path('node', n, 'lease'))));

  const project = group(program, 'project');
  project.command('lease').description('Leases of a project').command('list').description('List the leases of a project, the first to end first')
    .argument('<project>').option('--json', 'the server\'s JSON')
    .action(async (p: string, o: JsonOpts) => {
      const r = await c().get(path('project', p, 'leases'));
      answer(wantsJson(o), r.text, () => table(['Node', 'Expires', 'Left'], (r.body as (Lease & { node: string })[]).map((l) => [l.node, l.expires_at, l.expired ? 'passed' : timeLeft(l.expires_at)])));
    });
  const quota = project.command('quota').description('A project\'s limits on nodes, networks and headnodes');
  quota.command('set').description('Set the limits of a project (admin); none removes one, an option left out leaves it').argument('<project>')
    .option('--nodes <n>', 'nodes it may hold (or none)', limitOf)
    .option('--networks <n>', 'networks it may own (or none)', limitOf)
    .option('--headnodes <n>', 'headnodes it may have (or none)', limitOf)
    .action(async (p: string, o: { nodes?: number | 'none'; networks?: number | 'none'; headnodes?: number | 'none' }) => {
      if (o.nodes === undefined && o.networks === undefined && o.headnodes === undefined) throw new UsageError('give --nodes, --networks, --headnodes, or several');
      await c().put(path('project', p, 'quota'), {
        ...(o.nodes !== undefined ? { nodes: limitBody(o.nodes) } : {}),
        ...(o.networks !== undefined ? { networks: limitBody(o.networks) } : {}),
        ...(o.headnodes !== undefined ? { headnodes: limitBody(o.headnodes) } : {}),
      });
    });
  quota.command('show').description('Show the limits of a project and what it uses').argument('<project>').option('--json', 'the server\'s JSON')
    .action(async (p: string, o: JsonOpts) => {
      const r = await c().get(path('project', p, 'quota'));
      const q = r.body as { nodes: Use; networks: Use; headnodes: Use };
      answer(wantsJson(o), r.text, () => table(['', 'Limit', 'Used'], ([['Nodes', q.nodes], ['Networks', q.networks], ['Headnodes', q.headnodes]] as const).map(([k, u]) => [k, u.limit ?? 'none', u.used])));
    });

  const admin = group(program, 'admin');
  admin.command('maintenance').description('The maintenance pool: its nodes and their notices to the maintenance service').option('--json', 'the server\'s JSON')
    .action(async (o: JsonOpts) => {
      const r = await c().get('/admin/maintenance');
      type Entry = { node: string; from: string; since: string; attempts: number; last_error: string | null; delivered_at: string | null };
      answer(wantsJson(o), r.text, () => table(['Node', 'From', 'Since', 'Notice', 'Failed POSTs', 'Last error'],
        (r.body as Entry[]).map((e) => [e.node, e.from, e.since, e.delivered_at ? `taken ${e.delivered_at}` : 'pending', e.attempts, e.last_error ?? ''])));
    });
  admin.command('attention').description('Nodes that need an operator, and why').option('--json', 'the server\'s JSON')
    .action(async (o: JsonOpts) => {
      const r = await c().get('/admin/nodes/attention');
      type Entry = { node: string | null; problem: string; since: string; detail: string };
      answer(wantsJson(o), r.text, () => table(['Node', 'Problem', 'Since', 'Detail'], (r.body as Entry[]).map((e) => [e.node ?? '-', e.problem, e.since, e.detail])));
    });
}
