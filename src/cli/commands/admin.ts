/**
 * hilt admin …: hilt's own admin calls, beyond HIL's API (docs/api.md; docs/api-conventions.md
 * §8 repairs, §12 inspection).
 */
import { Command, InvalidArgumentError } from 'commander';
import { resolve } from 'node:path';
import { path, UsageError } from '../client';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { answer, fields, list, out, table } from '../output';
import { queued } from './node';
import { portId, splitId } from '../../../actors/ids';
import { archivePage, readArchive } from '../../archive';
import { parseTime } from '../../audit';

/** Kinds whose id is two names (`<node> <nic>`, `<switch> <port>`). */
const TWO_NAMES = new Set(['nic', 'port']);

function actorPath(kind: string, given: string[], journal = false): string {
  const arity = TWO_NAMES.has(kind) ? 2 : 1;
  // One id of a nic or a port in the escaped form of earlier audit tables (`s1/gi1%2F0%2F1`).
  const ids = arity === 2 && given.length === 1 && given[0].includes('/') ? splitId(given[0]) : given;
  if (ids.length !== arity) throw new UsageError(arity === 2 ? `a ${kind} is named by two names: ${kind === 'nic' ? '<node> <nic>' : '<switch> <port>'}` : `a ${kind} is named by one name`);
  return path('admin', 'actors', kind, ...ids) + (journal ? '/journal' : '');
}

/** An audit entry's object as people read and commands take it: a nic's and a port's two names, unescaped. */
export const readableName = (kind: string, id: string): string => (TWO_NAMES.has(kind) ? splitId(id).join(' ') : id);

/**
 * The audit's `name` filter is an entity's id: a nic's and a port's join two names, each with
 * `%` and `/` escaped (`s1/gi1%2F0%2F1`, as the audit prints it). Two names given are joined so
 * (a nic's id is made as a port's).
 */
function auditName(kind: string | undefined, names: string[] | undefined): string | undefined {
  if (!names) return undefined;
  if (names.length === 1) return names[0];
  if (names.length !== 2 || !kind || !TWO_NAMES.has(kind)) throw new UsageError('--name takes one name, or two for --kind nic (<node> <nic>) and --kind port (<switch> <port>)');
  return portId(names[0], names[1]);
}

const limitOf = (v: string) => {
  if (!/^[1-9][0-9]{0,4}$/.test(v)) throw new InvalidArgumentError('an integer from 1 to 99999');
  return v;
};

/** A page of the audit log holds at most 1,000 entries (the service's limit, and the archive reader's). */
const pageLimitOf = (v: string) => {
  if (!/^[1-9][0-9]{0,3}$/.test(v) || Number(v) > 1000) throw new InvalidArgumentError('an integer from 1 to 1000');
  return v;
};

interface PortVlans { native: number | null; tagged: number[]; other?: string[]; enabled?: boolean }
interface DriftReport {
  switch: string;
  ports: { port: string; nic: { node: string; nic: string } | null; status: string; expected: PortVlans; actual: PortVlans | null; differences?: string[]; error?: string }[];
  summary: Record<string, number>;
}

const vlansCell = (v: PortVlans | null) => v === null ? '-'
  : [`native ${v.native ?? 'none'}`, `tagged ${v.tagged.length ? v.tagged.join(',') : 'none'}`, ...(v.other?.length ? [`other ${v.other.join(', ')}`] : []),
    ...(v.enabled === undefined ? [] : [v.enabled ? 'up' : 'shut down'])].join('; ');

/** A drift audit's or repair's report: a row per port, then the count of each status. */
function driftTable(b: DriftReport): string {
  const rows = b.ports.map((p) => [p.port, p.nic ? `${p.nic.node} ${p.nic.nic}` : '', p.status, vlansCell(p.expected), vlansCell(p.actual), p.error ?? (p.differences ?? []).join('\n')]);
  const summary = Object.entries(b.summary).map(([k, n]) => `${k} ${n}`).join(', ');
  return `${table(['Port', 'Nic', 'Status', 'Held by the service', 'On the switch', 'Differences'], rows)}\n${b.switch}: ${summary}`;
}

const cellOf = (v: unknown) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : v === undefined ? '' : String(v));

export function adminCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const admin = program.command('admin').description('hilt\'s own operator calls (admin only)');

  admin.command('actors').description('Live actors per kind; with a kind, its live actors; with a kind and an id, that entity\'s committed state')
    .argument('[kind]', 'project, node, nic, port, switch, network, user or headnode').argument('[id...]', 'the entity: one name, two for a nic or a port')
    .option('--json', 'the server\'s JSON')
    .action(async (kind: string | undefined, ids: string[], o: JsonOpts) => {
      if (kind && ids.length) {
        const r = await c().get(actorPath(kind, ids));
        return answer(wantsJson(o), r.text, () => {
          const b = r.body as Record<string, unknown> & { state?: Record<string, unknown> | null };
          const { state, ...rest } = b;
          const rows = Object.entries(rest).map(([k, v]) => [k, cellOf(v)]);
          for (const [k, v] of Object.entries(state ?? {})) rows.push([`state.${k}`, cellOf(v)]);
          return fields(rows);
        });
      }
      const r = await c().get('/admin/actors');
      const b = r.body as Record<string, { id: string; mailbox: number }[]>;
      if (kind) {
        if (!(kind in b)) throw new UsageError(`no actor kind ${kind} (known: ${Object.keys(b).join(', ')})`);
        return answer(wantsJson(o), r.text, () => table(['Id', 'Mailbox'], [...b[kind]].sort((x, y) => (x.id < y.id ? -1 : 1)).map((a) => [a.id, a.mailbox])));
      }
      answer(wantsJson(o), r.text, () => table(['Kind', 'Live actors', 'Messages waiting'],
        Object.entries(b).map(([k, actors]) => [k, actors.length, actors.reduce((n, a) => n + a.mailbox, 0)])));
    });

  admin.command('journal').description('An entity\'s events, newest first, with time and acting user')
    .argument('<kind>').argument('<id...>', 'one name, two for a nic or a port')
    .option('--limit <n>', 'how many events (default 100)', limitOf)
    .option('--json', 'the server\'s JSON')
    .action(async (kind: string, ids: string[], o: JsonOpts & { limit?: string }) => {
      const r = await c().get(actorPath(kind, ids, true), { limit: o.limit });
      answer(wantsJson(o), r.text, () => {
        const events = r.body as { sequenceNumber: number; at: string; by: string | null; event: { type: string } & Record<string, unknown> }[];
        return table(['Seq', 'At', 'By', 'Event', 'Details'], events.map((e) => {
          const { type, ...details } = e.event;
          return [e.sequenceNumber, e.at, e.by, type, Object.keys(details).length ? JSON.stringify(details) : ''];
        }));
      });
    });

  admin.command('reapply').description('Queue the re-application of a nic\'s port configuration from the service\'s state (repairs drift)')
    .argument('<node>').argument('<nic>')
    .option('--wait', 'follow the operation until DONE or ERROR')
    .option('--json', 'the server\'s JSON')
    .action(async (n: string, x: string, o: JsonOpts & { wait?: boolean }) => {
      await queued(ctx, c().postJson(`/admin${path('node', n, 'nic', x, 'reapply')}`), `reapply ${n} ${x}`, o);
    });

  admin.command('force-detach').description('For a dead switch: forget an attachment in the service\'s state only (the switch is not told)')
    .argument('<node>').argument('<nic>').argument('<network>')
    .action(async (n: string, x: string, network: string) => void (await c().post(`/admin${path('node', n, 'nic', x, 'force_detach')}`, { network })));

  admin.command('clear-doubt').description('For a switch gone for good: clear a port\'s doubt by hand, releasing the networks and the node it holds (audited)')
    .argument('<switch>').argument('<port>')
    .action(async (sw: string, p: string) => void (await c().post(`/admin${path('switch', sw, 'port', p, 'clear_doubt')}`)));

  const driftReport = (verb: string, description: string) => admin.command(verb).description(description)
    .argument('<switch>')
    .option('--json', 'the server\'s JSON')
    .action(async (sw: string, o: JsonOpts) => {
      const r = verb === 'drift' ? await c().get(`/admin${path('switch', sw, 'drift')}`) : await c().postJson(`/admin${path('switch', sw, 'repair')}`);
      answer(wantsJson(o), r.text, () => driftTable(r.body as DriftReport));
    });
  driftReport('drift', 'Audit a switch: read back every registered port and compare it with the configuration the service holds (changes nothing on the switch)');
  driftReport('repair', 'Set every drifted port of a switch back to the configuration the service holds, then read it back');

  admin.command('audit').description('The audit log: every change, newest first, with who made it and with which call (secrets redacted)')
    .option('--kind <kind>', 'only this kind: project, node, nic, port, switch, network, user, headnode or webhook')
    .option('--name <name...>', 'only this object (with --kind): its name, two for a nic or a port (<node> <nic>, <switch> <port>, as the audit prints them)')
    .option('--by <user>', 'only changes by this user (or by the service: switch, recovery, monitor, bootstrap, upgrade, hilt); not --user, which names the caller')
    .option('--since <time>', 'only changes at or after this time (ISO 8601, e.g. 2026-01-31T12:00:00Z)')
    .option('--until <time>', 'only changes before this time (ISO 8601)')
    .option('--limit <n>', 'entries per page, 1 to 1000 (default 100)', pageLimitOf)
    .option('--cursor <cursor>', 'go on from the page that printed it')
    .option('--all', 'every page, not only the first')
    .option('--json', 'the server\'s JSON (with --all: one page per line)')
    .option('--archive <file>', 'read an archive file of journal retention (<data folder>/archive/YYYY-MM.jsonl.gz) on this machine instead of asking the service')
    .action(async (o: JsonOpts & { kind?: string; name?: string[]; by?: string; since?: string; until?: string; limit?: string; cursor?: string; all?: boolean; archive?: string }) => {
      type Page = { entries: { at: string; by: string | null; kind: string; name: string; call: string | null; event: { type: string } & Record<string, unknown> }[]; next: string | null };
      let cursor = o.cursor;
      const rows: (string | null)[][] = [];
      const fromArchive = o.archive !== undefined ? await archiveReader(o.archive, o) : undefined;
      for (;;) {
        const r = fromArchive ? fromArchive(cursor) : await c().get('/admin/audit', { kind: o.kind, name: auditName(o.kind, o.name), user: o.by, since: o.since, until: o.until, limit: o.limit, cursor });
        const page = r.body as Page;
        if (wantsJson(o)) out(o.all ? JSON.stringify(page) : r.text);
        for (const e of page.entries) {
          const { type, ...details } = e.event;
          rows.push([e.at, e.by, e.kind, readableName(e.kind, e.name), e.call, type, Object.keys(details).length ? JSON.stringify(details) : '']);
        }
        cursor = page.next ?? undefined;
        if (!o.all || !cursor) break;
      }
      if (wantsJson(o)) return;
      out(table(['At', 'By', 'Kind', 'Name', 'Call', 'Event', 'Details'], rows));
      if (cursor) out(`More: add --cursor ${cursor} (or --all)`);
    });

  /** Pages of an archive file, as the service's pages would be (the same filters, the same cursor). */
  async function archiveReader(file: string, o: { kind?: string; name?: string[]; by?: string; since?: string; until?: string; limit?: string }) {
    const time = (name: string, v: string | undefined) => {
      if (v === undefined) return undefined;
      try {
        return parseTime(name, v);
      } catch (err) {
        throw new UsageError(`--${(err as Error).message}`);
      }
    };
    const q = { kind: o.kind, name: auditName(o.kind, o.name), user: o.by, since: time('since', o.since), until: time('until', o.until), limit: Number(o.limit ?? 100) };
    let read: Awaited<ReturnType<typeof readArchive>>;
    try {
      read = await readArchive(resolve(file));
    } catch (err) {
      throw new UsageError(`cannot read ${file} as an archive of journal retention: ${(err as Error).message}`);
    }
    if (read.skipped.bytes) {
      process.stderr.write(`${file}: stepped over ${read.skipped.bytes} bytes that do not read as gzip (${read.skipped.members} torn or damaged member${read.skipped.members === 1 ? '' : 's'}; a crash in the middle of an append leaves one, and so does an append under way): `
        + 'its entries were still in the store then, so a later member or the next pass holds them\n');
    }
    return (cursor: string | undefined) => {
      let page;
      try {
        page = archivePage(read.entries, { ...q, cursor });
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      return { body: page, text: JSON.stringify(page) };
    };
  }

  admin.command('backup').description('Online backup: the service writes a consistent copy of its store into a new folder PATH on its own machine, while it keeps serving')
    .argument('<path>', 'a folder that does not exist yet (a relative path is taken from the current folder); restore: start the service with HILT_DATA_DIR=PATH')
    .option('--json', 'the server\'s JSON')
    .action(async (p: string, o: JsonOpts) => {
      const r = await c().post('/admin/backup', { path: resolve(p) });
      if (wantsJson(o)) out(r.text);
    });

  admin.command('rotate-key').description('Re-encrypt every BMC and switch credential under the key in NEWFILE while the service runs; the service then installs it as its key file (docs/identity.md)')
    .argument('<newfile>', 'the new key (32 random bytes: openssl rand -base64 32 > NEWFILE), on the service\'s machine; a relative path is taken from the current folder')
    .option('--json', 'the server\'s JSON')
    .action(async (f: string, o: JsonOpts) => {
      const r = await c().postJson('/admin/secret-key/rotate', { key_file: resolve(f) });
      const b = r.body as { previous_key_id: string; key_id: string; rewritten: number; key_file: string; installed: boolean };
      answer(wantsJson(o), r.text, () => fields([['Previous key', b.previous_key_id], ['Key', b.key_id], ['Rewritten', b.rewritten], ['Key file', b.key_file],
        ['Installed', b.installed ? 'yes' : 'no: install NEWFILE as the key file before the next start']]));
    });

  admin.command('wiring').description('Wiring validation: what each switch learned on its ports (MACs, LLDP) against the nics the service wires to them; without a switch, every switch (only the ports with problems)')
    .argument('[switch]')
    .option('--propose', 'with a switch: the wiring its tables imply for its unwired ports (never applied)')
    .option('--json', 'the server\'s JSON')
    .action(async (sw: string | undefined, o: JsonOpts & { propose?: boolean }) => {
      type Line = { port: string; nic: { node: string; nic: string; macaddr: string } | null; macs: string[]; lldp: { chassisId: string; portId: string; systemName?: string }[]; verdict: string; details?: string[] };
      const rows = (sw2: string, ports: Line[]) => ports.map((p) => [sw2, p.port, p.nic ? `${p.nic.node} ${p.nic.nic} (${p.nic.macaddr})` : '', p.verdict,
        [...p.macs, ...p.lldp.map((n) => `LLDP ${n.systemName ?? n.chassisId} ${n.portId}`)].join('\n'), (p.details ?? []).join('\n')]);
      const head = ['Switch', 'Port', 'Nic', 'Verdict', 'Seen', 'Details'];
      const counts = (c: Record<string, number>) => Object.entries(c).map(([k, n]) => `${k} ${n}`).join(', ');
      if (o.propose) {
        if (!sw) throw new UsageError('--propose takes a switch');
        const r = await c().postJson(`/admin${path('switch', sw, 'wiring', 'propose')}`);
        type P = { proposals: { port: string; node: string; nic: string; macaddr: string; evidence: string[]; nic_wired_to: { switch: string; port: string } | null }[]; unknown: { port: string; macs: string[] }[]; ambiguous: { port: string; nics: { node: string; nic: string }[] }[] };
        return answer(wantsJson(o), r.text, () => {
          const b = r.body as P;
          return table(['Port', 'Proposed nic', 'Evidence', 'Note'], [
            ...b.proposals.map((p) => [p.port, `${p.node} ${p.nic} (${p.macaddr})`, p.evidence.join(', '), p.nic_wired_to ? `wired to ${p.nic_wired_to.switch} ${p.nic_wired_to.port} now: detach it there first` : `hilt port nic add ${sw} ${p.port} ${p.node} ${p.nic}`]),
            ...b.unknown.map((u) => [u.port, '', '', `no nic has ${u.macs.join(', ')}`]),
            ...b.ambiguous.map((a) => [a.port, '', '', `several nics: ${a.nics.map((n) => `${n.node} ${n.nic}`).join(', ')}`]),
          ]);
        });
      }
      if (sw) {
        const r = await c().get(`/admin${path('switch', sw, 'wiring')}`);
        const b = r.body as { switch: string; ports: Line[]; summary: Record<string, number> };
        return answer(wantsJson(o), r.text, () => `${table(head, rows(b.switch, b.ports))}\n${b.switch}: ${counts(b.summary)}`);
      }
      const r = await c().get('/admin/wiring');
      const b = r.body as { summary: Record<string, number>; switches: { switch: string; status: string; problems?: Line[]; error?: string }[] };
      answer(wantsJson(o), r.text, () => {
        const problems = b.switches.flatMap((s) => (s.status === 'checked' ? rows(s.switch, s.problems ?? []) : [[s.switch, '', '', s.status, '', s.error ?? '']]));
        return `${table(head, problems)}\nall switches: ${counts(b.summary)}`;
      });
    });

  admin.command('extensions').description('The active drivers and extensions (list_active_extensions)').option('--json', 'the server\'s JSON')
    .action(async (o: JsonOpts) => {
      const r = await c().get('/active_extensions');
      answer(wantsJson(o), r.text, () => list('Extensions', r.body));
    });
}
