/** hilt node …: HIL's `hil node` group (hil/cli/node.py), verb for verb. */
import { Argument, Command, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { Answer, path, UsageError } from '../client';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { passwordArgument } from '../credentials';
import { ago, answer, fields, list, notOffered, note, out, table } from '../output';
import { shortStatusId } from '../../../actors/nic/status-ids';
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
const networksCell = (networks: Record<string, string>) =>
  Object.keys(networks).length ? Object.entries(networks).map(([ch, net]) => `${net}(${ch})`).join('\n') : 'None';

function nodeTable(n: NodeBody): string {
  const rows: (string | null)[][] = [['Project', n.project ?? 'None'], ['Name', n.name], ['', '']];
  for (const nic of n.nics) {
    rows.push(['Label', nic.label], ['Macaddr', nic.macaddr]);
    // An unwired nic's null prints None, as HIL's PrettyTable printed Python's None.
    if ('switch' in nic) rows.push(['Switch', nic.switch ?? 'None']);
    if ('port' in nic) rows.push(['Port', nic.port ?? 'None']);
    rows.push(['Networks', networksCell(nic.networks)], ['', '']);
  }
  for (const [k, v] of Object.entries(n.metadata ?? {})) rows.push([k, String(v)]);
  return fields(rows);
}

/** A row of GET /nodes/<pool>/details (src/routes/lists.ts). */
interface NodeRow {
  name: string; project: string | null; networks: string[]; nics: number; pending: number;
  power: { state: string; at: string | null; error?: string; error_at?: string | null };
  last_operation: { short_id: string; status: string; type: string; nic: string; network: string | null; error?: string; accepted_at: string | null; finished_at: string | null } | null;
  lease_expires_at: string | null; metadata: Record<string, unknown>; obm?: string;
}

/** A node's power with its age, and the last call's failure under it. */
export const powerCell = (p: NodeRow['power']): string =>
  [p.state === 'unknown' ? 'unknown' : `${p.state} (${ago(p.at)})`, ...(p.error ? [`FAILED ${ago(p.error_at)}: ${p.error}`] : [])].join('\n');

/** An operation in a table: its short id, what it did, its status, and the reason of a failure. */
export function operationCell(o: NodeRow['last_operation']): string {
  if (!o) return '';
  const what = o.type === 'modify_port' ? `${o.network ? 'connect' : 'detach'} ${o.nic}${o.network ? ` ${o.network}` : ''}` : `${o.type.replace('_port', '')} ${o.nic}`;
  return [`${o.short_id} ${what} ${o.status} ${ago(o.finished_at ?? o.accepted_at)}`, ...(o.error ? [`reason: ${o.error}`] : [])].join('\n');
}

function nodeList(rows: NodeRow[], wide: boolean): string {
  const sorted = [...rows].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const head = ['Node', 'Project', 'Power', 'Networks', 'Last Operation', ...(wide ? ['Nics', 'Pending', 'BMC', 'Lease Ends', 'Metadata'] : [])];
  return table(head, sorted.map((n) => [
    n.name, n.project ?? 'free', powerCell(n.power), n.networks.join(', '), operationCell(n.last_operation),
    ...(wide ? [n.nics, n.pending, n.obm ?? '', n.lease_expires_at ?? '', Object.entries(n.metadata).map(([k, v]) => `${k}=${String(v)}`).join(', ')] : []),
  ]));
}

/** Starts a network operation; prints its status id, or with --wait follows it to the end. */
export async function queued(ctx: Ctx, p: Promise<Answer>, what: string, o: JsonOpts & { wait?: boolean }): Promise<void> {
  const r = await p;
  const id = ctx.client().field(r, 'status_id');
  if (o.wait) return waitFor(ctx.client(), id, what, { json: wantsJson(o) });
  answer(wantsJson(o), r.text, () => fields([['Status ID', id], ['Short ID', shortStatusId(id)]]));
}

export function nodeCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const node = program.command('node').description('Commands related to node');

  node.command('list').description('List all nodes or free nodes: project, power (as last seen, with its age), networks and last operation')
    .addArgument(new Argument('<pool>', 'which nodes').choices(['free', 'all']))
    .addOption(new Option('-o, --output <format>', 'wide: also nics, pending operations, BMC driver, lease and metadata').choices(['wide']))
    .option('--json', 'the server\'s JSON (list_nodes: the names)')
    .option('--jsonout', 'the same, as HIL\'s CLI spelled it')
    .action(async (pool: string, o: JsonOpts & { output?: string }) => {
      if (wantsJson(o)) return out((await c().get(path('nodes', pool))).text);
      let r;
      try {
        r = await c().get(path('nodes', pool, 'details'));
      } catch (err) {
        if (!notOffered(err)) throw err;
        // A server without the details: its names, as HIL's CLI printed them.
        const names = await c().get(path('nodes', pool));
        return out(list(pool === 'free' ? 'Free Nodes' : 'All Nodes', names.body));
      }
      const b = r.body as { nodes: NodeRow[]; others: number };
      out(nodeList(b.nodes, o.output === 'wide'));
      if (b.others) note(`and ${b.others} node${b.others === 1 ? '' : 's'} of other projects`);
    });

  node.command('show').description('Show node information').argument('<node>')
    .option('--json', 'the server\'s JSON').option('--jsonout', 'the same, as HIL\'s CLI spelled it')
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
      await queued(ctx, c().postJson(path('node', n, 'nic', x, 'connect_network'), body), `connect ${n} ${x} to ${network}`, o);
    });
  net.command('detach').description('Detach a node\'s nic from a network').argument('<node>').argument('<nic>').argument('<network>')
    .option('--wait', 'follow the operation until DONE or ERROR')
    .option('--json', 'the server\'s JSON')
    .action(async (n: string, x: string, network: string, o: JsonOpts & { wait?: boolean }) => {
      await queued(ctx, c().postJson(path('node', n, 'nic', x, 'detach_network'), { network }), `detach ${n} ${x} from ${network}`, o);
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
      answer(wantsJson(o), r.text, () => fields([['Power Status', c().field(r, 'power_status')]]));
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
