/**
 * hilt import FILE and hilt export (issue 26; docs/import.md): register switches, ports, nodes
 * with their BMCs, nics and wiring from one YAML or CSV file, checked whole before anything
 * changes, adding only what is missing; and write the service's inventory in the same format.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { UsageError } from '../client';
import { Ctx } from '../context';
import { note, out } from '../output';
import type { Plan } from '../inventory/plan';
import { InventoryErrors, ServerInventory } from '../inventory/model';
import { counted } from '../../../lib/text';

function summary(p: Plan): string {
  const parts = [
    [p.switches.length, 'switch', 'switches'], [p.ports.length, 'port'], [p.nodes.length, 'node'], [p.metadata.length, 'metadata label'],
    [p.nics.length, 'nic'], [p.wiring.length, 'wiring', 'wirings'],
  ].filter(([n]) => n).map(([n, one, many]) => counted(n as number, one as string, many as string | undefined));
  return parts.join(', ');
}

// The parsers (yaml, csv) and the plan (every driver's registration schema) load when an import
// or export runs: loaded with the command tree, they were half of every `hilt` command's start.
const parse = () => import('../inventory/parse');

export function inventoryCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();

  program.command('import').description('Register switches, ports, nodes with their BMCs, nics and wiring from a YAML or CSV file (docs/import.md): '
    + 'checked whole first (every problem with its line), then only what is missing is added, so a second run changes nothing (admin)')
    .argument('<file>', 'the inventory; - for standard input')
    .option('--dry-run', 'check the file against the service and say what would be added, changing nothing')
    .addOption(new Option('--format <format>', 'the file\'s format (default: by its name, .csv or else YAML)').choices(['yaml', 'csv']))
    .addHelpText('after', '\nSecrets an export leaves out: a node without obm.password takes $HILT_IMPORT_BMC_PASSWORD, a switch without a password $HILT_IMPORT_SWITCH_PASSWORD.')
    .action(async (file: string, o: { dryRun?: boolean; format?: string }) => {
      let text: string;
      try {
        text = readFileSync(file === '-' ? 0 : file, 'utf8');
      } catch (err) {
        throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
      }
      const [{ formatOf, parseInventory }, { plan, planSize }, { apply }] = await Promise.all([parse(), import('../inventory/plan'), import('../inventory/apply')]);
      const inv = parseInventory(text, formatOf(file, o.format), file);
      const server = (await c().get('/admin/inventory')).body as ServerInventory;
      const checked = plan(inv, server, { bmcPassword: process.env.HILT_IMPORT_BMC_PASSWORD, switchPassword: process.env.HILT_IMPORT_SWITCH_PASSWORD });
      if (checked.problems.length) throw new InventoryErrors(file, checked.problems);
      const p = checked.plan;
      if (!planSize(p)) return out(`nothing to change: the ${counted(p.unchanged, 'object')} ${file} names are registered as it says`);
      if (o.dryRun) return out(`dry run, nothing changed: would add ${summary(p)}; ${counted(p.unchanged, 'object')} already registered as the file says`);
      const failed = await apply(c(), p);
      if (failed.length) throw new InventoryErrors(file, failed);
      out(`added ${summary(p)}; ${counted(p.unchanged, 'object')} already registered as the file says`);
    });

  program.command('export').description('Write the service\'s switches, ports, nodes with their BMCs, nics and wiring in the format hilt import reads, secrets left out (admin)')
    .option('-o, --output <file>', 'write to this file (default: standard output)')
    .addOption(new Option('--format <format>', 'yaml or csv (default: by the output file\'s name, else YAML)').choices(['yaml', 'csv']))
    .action(async (o: { output?: string; format?: string }) => {
      const [{ formatOf }, { writeInventory }] = await Promise.all([parse(), import('../inventory/write')]);
      const inv = (await c().get('/admin/inventory')).body as ServerInventory;
      const text = writeInventory(inv, formatOf(o.output ?? '', o.format));
      if (o.output) {
        writeFileSync(o.output, text);
        note(`wrote ${counted(inv.switches.length, 'switch', 'switches')} and ${counted(inv.nodes.length, 'node')} to ${o.output}`);
      } else out(text);
    });
}
