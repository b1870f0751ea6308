/** hilt switch … and hilt port …: HIL's `hil switch` and `hil port` groups (hil/cli/switch.py, port.py). */
import { Command } from 'commander';
import { path, UsageError } from '../client';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { passwordArgument } from '../credentials';
import { ago, answer, fields, list, notOffered, out, table } from '../output';
import { queued, readPem } from './node';

const SWITCH_SCHEMA = 'http://schema.massopencloud.org/haas/v0/switches/';

/** The driver fields each switch type takes on HIL's command line, in order; the password is asked for where it is '-'. */
const SWITCH_ARGS: Record<string, string[]> = {
  mock: ['hostname', 'username', 'password'],
  powerconnect55xx: ['hostname', 'username', 'password'],
  nexus: ['hostname', 'username', 'password', 'dummy_vlan'],
  delln3000: ['hostname', 'username', 'password', 'dummy_vlan'],
  brocade: ['hostname', 'username', 'password', 'interface_type'],
  dellnos9: ['hostname', 'username', 'password', 'interface_type'],
  arista_eos: ['hostname', 'username', 'password'],
  dellos10: ['hostname', 'username', 'password'],
  sonic: ['hostname', 'username', 'password'],
  junos: ['hostname', 'username', 'password'],
  cumulus_nvue: ['hostname', 'username', 'password'],
  // HIL's CLI sent `hostname` here, a field its own OVS driver did not take; the driver's field is the bridge.
  ovs: ['ovs_bridge'],
};

/** The switch_register body from HIL's arguments: a known subtype and its fields, or a type identifier and a JSON object. */
async function switchBody(name: string, subtype: string, args: string[], login: () => Promise<void>): Promise<Record<string, unknown>> {
  const names = SWITCH_ARGS[subtype];
  if (names) {
    if (args.length !== names.length) throw new UsageError(`subtype ${subtype} takes exactly ${names.length} arguments: ${names.map((n) => `<${n}>`).join(' ')}`);
    const body: Record<string, unknown> = { type: SWITCH_SCHEMA + subtype };
    for (let i = 0; i < names.length; i++) body[names[i]] = names[i] === 'password' ? await passwordArgument(args[i], `password of switch ${name}`, login) : args[i];
    return body;
  }
  if (args.length !== 1) throw new UsageError(`a switch type other than ${Object.keys(SWITCH_ARGS).join(', ')} takes one argument: its fields as a JSON object`);
  let info: unknown;
  try {
    info = JSON.parse(args[0]);
  } catch {
    throw new UsageError('malformed switchinfo: it must be a JSON object, e.g. \'{"hostname": "sw1", "username": "u", "password": "p"}\'');
  }
  if (!info || typeof info !== 'object' || Array.isArray(info)) throw new UsageError('malformed switchinfo: it must be a JSON object');
  if ('password' in info) process.stderr.write('hilt: warning: the switch password is on the command line, where other users can see it in the process list\n');
  return { ...(info as Record<string, unknown>), type: subtype };
}

/** A row of GET /switches/details (src/routes/lists.ts). */
interface SwitchRow {
  name: string; type: string; host: string | null; ports: number; wired: number; pending?: number;
  reachability: string; last_ok_at: string | null; last_error: string | null; last_error_at: string | null;
  audit: { at: string | null; summary?: Record<string, number>; error?: string } | null; failing_ports: number;
}

function switchList(rows: SwitchRow[]): string {
  const sorted = [...rows].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return table(['Switch', 'Driver', 'Host', 'Ports', 'Health', 'Last Audit', 'Failing Ports'], sorted.map((s) => {
    const health = s.reachability === 'unreachable' ? `unreachable (${ago(s.last_error_at)})\n${s.last_error ?? ''}`
      : s.reachability === 'reachable' ? `reachable (${ago(s.last_ok_at)})` : 'unknown (not used yet)';
    const audit = !s.audit ? 'never' : s.audit.error ? `failed ${ago(s.audit.at)}` : `${Object.entries(s.audit.summary ?? {}).filter(([, n]) => n).map(([k, n]) => `${k} ${n}`).join(', ') || 'no ports'} (${ago(s.audit.at)})`;
    return [s.name, s.type, s.host ?? '', `${s.ports} (${s.wired} wired)`, health, audit, s.failing_ports];
  }));
}

export function switchCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const sw = program.command('switch').description('Commands related to switch');

  sw.command('show').description('Display information about a switch').argument('<switch>').option('--json', 'the server\'s JSON')
    .option('--jsonout', 'the same, as HIL\'s CLI spelled it')
    .action(async (s: string, o: JsonOpts) => {
      const r = await c().get(path('switch', s));
      answer(wantsJson(o), r.text, () => {
        const b = r.body as { name: string; ports: string[]; host_key?: string | null };
        const key: [string, string][] = b.host_key !== undefined ? [['Host key', b.host_key ?? 'none yet (recorded at the first login)']] : [];
        // None for no ports, as HIL's CLI printed it.
        return fields([['Name', b.name], ['Ports', b.ports.length ? [...b.ports].sort().join('\n') : 'None'], ...key]);
      });
    });
  sw.command('list').description('List all switches: driver, host, ports, and health (reachability, last error, last drift audit, failing ports)')
    .option('--json', 'the server\'s JSON (list_switches: the names)')
    .option('--jsonout', 'the same, as HIL\'s CLI spelled it')
    .action(async (o: JsonOpts) => {
      if (wantsJson(o)) return out((await c().get('/switches')).text);
      let r;
      try {
        r = await c().get('/switches/details');
      } catch (err) {
        if (!notOffered(err)) throw err;
        return out(list('Switches', (await c().get('/switches')).body));
      }
      out(switchList(r.body as SwitchRow[]));
    });
  sw.command('register').description('Register a switch: <subtype> mock or powerconnect55xx with <hostname> <username> <password>; nexus or delln3000 with '
    + '<hostname> <username> <password> <dummy_vlan>; arista_eos with <hostname> <username> <password>; ovs with <ovs_bridge>; '
    + 'dellos10, sonic, junos or cumulus_nvue with <hostname> <username> <password>; '
    + 'brocade or dellnos9 with <hostname> (the REST base URL) <username> <password> <interface_type>; '
    + 'or a full type identifier with its fields as one JSON object. A password of - is asked for.')
    .argument('<switch>').argument('<subtype>').argument('<args...>')
    .option('--host-key <fingerprint>', 'an SSH switch: pin its host key\'s fingerprint (SHA256:…, as ssh-keygen -l prints it), so that even the first login checks it')
    .option('--ca-cert <file>', 'brocade or dellnos9 over https: a PEM file of the CA (or the certificate) the switch\'s TLS certificate is checked against')
    .option('--no-verify-tls', 'brocade or dellnos9 over https: do not check the switch\'s TLS certificate')
    .action(async (s: string, subtype: string, args: string[], o: { hostKey?: string; caCert?: string; verifyTls: boolean }) => {
      // Only what was given: a driver without these fields refuses them (400), as it should. The
      // CA file is read before the password is asked for.
      const extra: Record<string, unknown> = {};
      if (o.hostKey !== undefined) extra.host_key = o.hostKey;
      if (o.caCert !== undefined) extra.ca_cert = readPem(o.caCert);
      if (!o.verifyTls) extra.verify_tls = false;
      const body = await switchBody(s, subtype, args, () => c().login());
      await c().put(path('switch', s), { ...body, ...extra });
    });
  sw.command('delete').description('Delete a switch').argument('<switch>')
    .action(async (s: string) => void (await c().del(path('switch', s))));
  sw.command('forget-host-key').description('Forget the SSH host key recorded for a switch whose key really changed; the next login records the new one (admin)')
    .argument('<switch>')
    .action(async (s: string) => void (await c().del(path('switch', s, 'host_key'))));

  const port = program.command('port').description('Commands related to port');
  port.command('show').description('Show what is wired to a port').argument('<switch>').argument('<port>')
    .option('--json', 'the server\'s JSON').option('--jsonout', 'the same, as HIL\'s CLI spelled it')
    .action(async (s: string, p: string, o: JsonOpts) => {
      const r = await c().get(path('switch', s, 'port', p));
      answer(wantsJson(o), r.text, () => {
        const b = r.body as { node?: string; nic?: string; networks?: Record<string, string> };
        if (b.node === undefined) return fields([['Node', 'None (no nic is wired to the port)']]);
        // As HIL's port show: `network (channel)` a line each, empty for none (its node show differs: networksCell).
        const nets = Object.entries(b.networks ?? {}).map(([ch, net]) => `${net} (${ch})`).join('\n');
        return fields([['Node', b.node], ['NIC', b.nic], ['Networks', nets]]);
      });
    });
  port.command('register').description('Register a port of a switch').argument('<switch>').argument('<port>')
    .action(async (s: string, p: string) => void (await c().put(path('switch', s, 'port', p))));
  port.command('delete').description('Delete a port of a switch').argument('<switch>').argument('<port>')
    .action(async (s: string, p: string) => void (await c().del(path('switch', s, 'port', p))));
  port.command('revert').description('Detach a port, and its nic, from every network').argument('<switch>').argument('<port>')
    .option('--wait', 'follow the operation until DONE or ERROR')
    .option('--json', 'the server\'s JSON')
    .action(async (s: string, p: string, o: JsonOpts & { wait?: boolean }) => {
      await queued(ctx, c().postJson(path('switch', s, 'port', p, 'revert')), `revert ${s} ${p}`, o);
    });
  const nic = port.command('nic').description('Operations affecting a port and a nic');
  nic.command('add').description('Wire a port to a nic of a node').argument('<switch>').argument('<port>').argument('<node>').argument('<nic>')
    .action(async (s: string, p: string, n: string, x: string) => void (await c().post(path('switch', s, 'port', p, 'connect_nic'), { node: n, nic: x })));
  nic.command('remove').description('Unwire a port from its nic').argument('<switch>').argument('<port>')
    .action(async (s: string, p: string) => void (await c().post(path('switch', s, 'port', p, 'detach_nic'))));
}
