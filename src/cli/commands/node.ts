/** hilt node …: HIL's `hil node` group (hil/cli/node.py), verb for verb. */
import { Argument, Command } from 'commander';
import { readFileSync } from 'node:fs';
import { path, UsageError } from '../client';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { passwordArgument } from '../credentials';
import { answer, fields, list } from '../output';
import { waitFor } from '../wait';
import { consoleCommands } from './console';

/** HIL's OBM type names, as its CLI took them; a full type identifier is passed as is. */
const OBM_SCHEMA = 'http://schema.massopencloud.org/haas/v0/obm/';
const obmType = (t: string) => (t.includes('://') ? t : OBM_SCHEMA + t);

/** A PEM file's text (a BMC's or a REST switch's `ca_cert`). */
export function readPem(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
}

interface Nic { label: string; macaddr: string; networks: Record<string, string>; port?: string | null; switch?: string | null }
interface NodeBody { name: string; project: string | null; nics: Nic[]; metadata?: Record<string, unknown> }

/** network(channel) per line, as HIL's CLI showed a nic's networks. */
export const networksCell = (networks: Record<string, string>) =>
  Object.keys(networks).length ? Object.entries(networks).map(([ch, net]) => `${net}(${ch})`).join('\n') : 'None';

function nodeTable(n: NodeBody): string {
  const rows: (string | null)[][] = [['Project', n.project ?? 'None'], ['Name', n.name], ['', '']];
  for (const nic of n.nics) {
    rows.push(['Label', nic.label], ['Macaddr', nic.macaddr]);
    if ('switch' in nic) rows.push(['Switch', nic.switch ?? null]);
    if ('port' in nic) rows.push(['Port', nic.port ?? null]);
    rows.push(['Networks', networksCell(nic.networks)], ['', '']);
  }
  for (const [k, v] of Object.entries(n.metadata ?? {})) rows.push([k, String(v)]);
  return fields(rows);
}

/** Starts a network operation; prints its status id, or with --wait follows it to the end. */
export async function queued(ctx: Ctx, p: Promise<{ text: string; body: unknown }>, what: string, o: JsonOpts & { wait?: boolean }): Promise<void> {
  const r = await p;
  const id = (r.body as { status_id: string }).status_id;
  if (o.wait) return waitFor(ctx.client(), id, what, { json: wantsJson(o) });
  answer(wantsJson(o), r.text, () => fields([['Status ID', id]]));
}

export function nodeCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const node = program.command('node').description('Commands related to node');

  node.command('list').description('List all nodes or free nodes')
    .addArgument(new Argument('<pool>', 'which nodes').choices(['free', 'all']))
    .option('--json', 'the server\'s JSON')
    .action(async (pool: string, o: JsonOpts) => {
      const r = await c().get(path('nodes', pool));
      answer(wantsJson(o), r.text, () => list(pool === 'free' ? 'Free Nodes' : 'All Nodes', r.body));
    });

  node.command('show').description('Show node information').argument('<node>')
    .option('--json', 'the server\'s JSON')
    .action(async (name: string, o: JsonOpts) => {
      const r = await c().get(path('node', name));
      answer(wantsJson(o), r.text, () => nodeTable(r.body as NodeBody));
    });

  node.command('register').description('Register a new node (OBM type ipmi, redfish or mock, or a full type identifier); for redfish, <hostname> is the BMC\'s base URL')
    .argument('<node>').argument('<obmtype>').argument('<hostname>').argument('<username>')
    .argument('<password>', 'the BMC password; - to be asked for it')
    .option('--system <path>', 'redfish: the ComputerSystem\'s @odata.id (default: the BMC\'s only one)')
    .option('--ca-cert <file>', 'redfish: a PEM file of the CA (or the certificate) the BMC\'s TLS certificate is checked against')
    .option('--no-verify-tls', 'redfish: do not check the BMC\'s TLS certificate')
    .action(async (name: string, type: string, host: string, user: string, password: string, o: { system?: string; caCert?: string; verifyTls: boolean }) => {
      // Only what was given: a driver without these fields refuses them (400), as it should.
      const extra: Record<string, unknown> = {};
      if (o.system !== undefined) extra.system = o.system;
      if (o.caCert !== undefined) extra.ca_cert = readPem(o.caCert);
      if (!o.verifyTls) extra.verify_tls = false;
      const pw = await passwordArgument(password, `BMC password of ${name}`, () => ctx.client().login());
      await c().put(path('node', name), { obm: { type: obmType(type), host, user, password: pw, ...extra } });
    });

  node.command('delete').description('Delete a node').argument('<node>')
    .action(async (name: string) => void (await c().del(path('node', name))));

  node.command('bootdev').description('Set a node\'s boot device (for IPMI: disk, pxe or none)').argument('<node>').argument('<bootdev>')
    .action(async (name: string, dev: string) => void (await c().put(path('node', name, 'boot_device'), { bootdev: dev })));

  const nic = node.command('nic').description('Node\'s nics commands');
  nic.command('register').description('Register a nic with its MAC address on a node').argument('<node>').argument('<nic>').argument('<macaddress>')
    .action(async (n: string, x: string, mac: string) => void (await c().put(path('node', n, 'nic', x), { macaddr: mac })));
  nic.command('delete').description('Delete a nic of a node').argument('<node>').argument('<nic>')
    .action(async (n: string, x: string) => void (await c().del(path('node', n, 'nic', x))));

  const net = node.command('network').description('Perform node network operations');
  net.command('connect').description('Connect a node\'s nic to a network (the channel defaults to the native one)')
    .argument('<node>').argument('<nic>').argument('<network>').argument('[channel]')
    .option('--wait', 'follow the operation until DONE or ERROR')
    .option('--json', 'the server\'s JSON')
    .action(async (n: string, x: string, network: string, channel: string | undefined, o: JsonOpts & { wait?: boolean }) => {
      // HIL's CLI sent an empty channel when none was given; the server's default is meant.
      const body = channel ? { network, channel } : { network };
      await queued(ctx, c().post(path('node', n, 'nic', x, 'connect_network'), body), `connect ${n} ${x} to ${network}`, o);
    });
  net.command('detach').description('Detach a node\'s nic from a network').argument('<node>').argument('<nic>').argument('<network>')
    .option('--wait', 'follow the operation until DONE or ERROR')
    .option('--json', 'the server\'s JSON')
    .action(async (n: string, x: string, network: string, o: JsonOpts & { wait?: boolean }) => {
      await queued(ctx, c().post(path('node', n, 'nic', x, 'detach_network'), { network }), `detach ${n} ${x} from ${network}`, o);
    });

  const power = node.command('power').description('Perform node power operations');
  power.command('off').description('Power off a node').argument('<node>')
    .action(async (n: string) => void (await c().post(path('node', n, 'power_off'))));
  power.command('on').description('Power on a node').argument('<node>')
    .action(async (n: string) => void (await c().post(path('node', n, 'power_on'))));
  power.command('cycle').description('Power cycle a node').argument('<node>')
    .option('--force', 'a hard reset rather than a soft one')
    .action(async (n: string, o: { force?: boolean }) => void (await c().post(path('node', n, 'power_cycle'), o.force ? { force: true } : undefined)));
  power.command('status').description('Show a node\'s power status').argument('<node>')
    .option('--json', 'the server\'s JSON')
    .action(async (n: string, o: JsonOpts) => {
      const r = await c().get(path('node', n, 'power_status'));
      answer(wantsJson(o), r.text, () => fields([['Power Status', (r.body as { power_status: string }).power_status]]));
    });

  consoleCommands(node, ctx);

  const meta = node.command('metadata').description('Node metadata commands');
  // The value is text, as HIL's CLI sent it.
  meta.command('add').description('Set metadata <label> of a node to <value>, or replace its value')
    .argument('<node>').argument('<label>').argument('<value>')
    .action(async (n: string, label: string, value: string) => void (await c().put(path('node', n, 'metadata', label), { value })));
  meta.command('delete').description('Delete metadata <label> of a node').argument('<node>').argument('<label>')
    .action(async (n: string, label: string) => void (await c().del(path('node', n, 'metadata', label))));
}
