/**
 * hilt events: the event stream (GET /events, docs/events.md), one line per event (a table line,
 * or the event's JSON with --json). Without --follow it prints what is there (from --since,
 * --after, or the last hour) and ends; with --follow it goes on, reconnecting after a dropped
 * connection from the last id it printed, until Ctrl-C (exit 0).
 *
 * hilt admin webhook create|list|show|delete|resume: the webhooks (admin).
 */
import { Command } from 'commander';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ApiError, BadAnswer, Client, path, Redirected, TransportError, UsageError } from '../client';
import { Ctx, JsonOpts, wantsJson } from '../context';
import { answer, fields, note, out, table } from '../output';
import { backoff, sleep } from '../../../lib/time';

interface EventsOpts extends JsonOpts { follow?: boolean; kind?: string[]; project?: string[]; type?: string[]; name?: string[]; since?: string; after?: string }

interface StreamEvent { id: string; at: string; by: string; kind: string; name: string; type: string; project: string | null; data: Record<string, unknown> }

/** One event as a line of fixed-width columns (a table that grows as events come). */
function line(e: StreamEvent): string {
  const pad = (s: string, n: number) => (s.length >= n ? s : s + ' '.repeat(n - s.length));
  return [pad(e.at, 24), pad(e.type, 28), pad(`${e.kind} ${e.name}`, 32), pad(e.project ?? '-', 14), e.by].join('  ').trimEnd();
}

/** An event of the stream, or BadAnswer: a line that is not an event with the fields printed. */
function eventOf(data: string, endpoint: string): StreamEvent {
  let e: unknown;
  try {
    e = JSON.parse(data);
  } catch {
    e = undefined;
  }
  const x = e as Record<string, unknown> | null | undefined;
  if (!x || typeof x !== 'object' || !['id', 'at', 'type', 'kind', 'name'].every((k) => typeof x[k] === 'string')) {
    throw new BadAnswer(endpoint, 'GET /events', `an event ${JSON.stringify(data.slice(0, 80))}`);
  }
  return x as unknown as StreamEvent;
}

/**
 * Read one connection's events; resolves with the last id seen when it ends, and whether the
 * stream said it was caught up (`: live`) before `stopAtLive` ended it. `opened` gets the
 * server's time (its Date header) once the stream is open.
 */
async function readStream(client: Client, query: [string, string][], lastId: string | undefined, print: (e: StreamEvent) => void, stopAtLive: boolean, signal: AbortSignal, opened: (serverTime: string | undefined) => void): Promise<{ lastId: string | undefined; live: boolean }> {
  const res = await client.open('/events', query, { accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) }, signal);
  // A web page (a proxy's, a server without the stream): no reconnect makes it a stream.
  if (!/^text\/event-stream\b/i.test(res.headers['content-type'] ?? '')) {
    res.destroy();
    throw new BadAnswer(client.endpoint, 'GET /events', undefined, `${res.headers['content-type'] || 'no content type'}, not an event stream`);
  }
  const date = res.headers.date ? Date.parse(res.headers.date) : NaN;
  opened(Number.isNaN(date) ? undefined : new Date(date).toISOString());
  res.setEncoding('utf8');
  let buf = '';
  let live = false;
  try {
    for await (const chunk of res as AsyncIterable<string>) {
      buf += chunk;
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
        if (data) {
          const e = eventOf(data, client.endpoint);
          print(e);
          lastId = e.id;
        } else {
          // A heartbeat carries the stream's position: the events up to it were printed or not wanted.
          const id = /^id: (\d+)$/m.exec(block);
          if (id) lastId = id[1];
        }
        if (!data && /^: live$/m.test(block)) {
          live = true;
          if (stopAtLive) {
            res.destroy();
            return { lastId, live };
          }
        }
      }
    }
  } catch (err) {
    if (signal.aborted) return { lastId, live };
    // An event that is not one: reconnecting would get it again, for ever.
    if (err instanceof BadAnswer) throw err;
    // A connection that broke mid-stream: the caller reconnects from the last id.
  }
  return { lastId, live };
}

export function eventCommands(program: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const many = (v: string, prev: string[] = []) => [...prev, v];
  program.command('events').description('The event stream: every committed change you may see, in commit order (docs/events.md)')
    .option('-f, --follow', 'keep following (reconnecting from the last event after a dropped connection) until Ctrl-C')
    .option('--kind <kind>', 'only this kind (repeatable): node, nic, port, switch, project, network, user, headnode, webhook', many)
    .option('--project <project>', 'only events of this project (repeatable)', many)
    .option('--type <type>', 'only this event type (repeatable; <kind>.* for a kind), e.g. networking_action.finished', many)
    .option('--name <name>', 'only this object (repeatable; nics and ports as <node>/<nic>, <switch>/<port>)', many)
    .option('--since <time>', 'start at this time (RFC 3339, e.g. 2026-01-31T12:00:00Z); default: the last hour, or now with --follow')
    .option('--after <id>', 'start right after this event id')
    .option('--json', 'each event\'s JSON, one per line')
    .action(async (o: EventsOpts) => {
      if (o.since !== undefined && o.after !== undefined) throw new UsageError('give --since or --after, not both');
      const query: [string, string][] = [];
      for (const [k, vs] of [['kind', o.kind], ['project', o.project], ['type', o.type], ['name', o.name]] as const) for (const v of vs ?? []) query.push([k, v]);
      let lastId = o.after;
      if (lastId === undefined) {
        const since = o.since ?? (o.follow ? undefined : new Date(Date.now() - 3600_000).toISOString());
        if (since !== undefined) query.push(['since', since]);
      }
      const json = wantsJson(o);
      if (!json && process.stdout.isTTY) out(line({ at: 'AT', type: 'TYPE', kind: 'OBJECT', name: '', project: 'PROJECT', by: 'BY' } as StreamEvent));
      const print = (e: StreamEvent) => out(json ? JSON.stringify(e) : line(e));
      const stop = new AbortController();
      // Ctrl-C ends a follow: a clean end (exit 0), not a failure.
      process.once('SIGINT', () => {
        stop.abort();
        process.exit(0);
      });
      const client = c();
      // A follow from now that drops before printing anything resumes from when the first
      // connection opened (the server's time, to the second): from the reconnect, the events
      // committed while it was down would be lost. Nothing was printed, so nothing repeats.
      const fromNow = o.follow && lastId === undefined && o.since === undefined;
      const opened = (serverTime: string | undefined) => {
        if (fromNow && serverTime !== undefined && !query.some(([k]) => k === 'since')) query.push(['since', serverTime]);
      };
      for (let attempt = 0; ;) {
        try {
          const r = await readStream(client, lastId === undefined ? query : query.filter(([k]) => k !== 'since'), lastId, print, !o.follow, stop.signal, opened);
          if (r.lastId !== lastId) attempt = 0;
          lastId = r.lastId;
          if (!o.follow && r.live) return;
        } catch (err) {
          // Refusals (410, 401, 400) end the command; a server that cannot be reached is tried again when following.
          if ((err instanceof ApiError && err.status < 500) || err instanceof Redirected) throw err;
          if (!o.follow || !(err instanceof TransportError || err instanceof ApiError)) throw err;
        }
        if (stop.signal.aborted) return;
        if (!o.follow) throw new TransportError('the event stream ended before it was caught up');
        const wait = backoff(Math.min(attempt++, 10), 500, 30_000);
        note(`the event stream dropped; reconnecting${lastId ? ` after ${lastId}` : ''} in ${(wait / 1000).toFixed(1)} s`);
        await sleep(wait, stop.signal);
      }
    });
}

interface Webhook { id: string; url: string; types: string[]; projects: string[]; description: string; state: string; cursor: string; backlog: number; last_success: string | null; last_error: string | null; consecutive_failures: number; failing_since?: string | null; failing_reason?: string; created_at: string; created_by: string }

export function webhookCommands(admin: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const many = (v: string, prev: string[] = []) => [...prev, v];
  const hook = admin.command('webhook').description('Webhooks: each matching event POSTed to a URL, signed (docs/events.md)');

  hook.command('create').description('Subscribe a receiver; prints its id (and the secret, when it made one: shown only now)')
    .argument('<url>', 'http:// or https:// URL')
    .option('--secret-file <path>', 'read the signing secret from this file (default: $HILT_WEBHOOK_SECRET, else a new random one, printed once)')
    .option('--type <type>', 'only this event type (repeatable; <kind>.* for a kind)', many)
    .option('--project <project>', 'only events of this project (repeatable)', many)
    .option('--description <text>', 'what it is for')
    .option('--json', 'the server\'s JSON')
    .action(async (url: string, o: JsonOpts & { secretFile?: string; type?: string[]; project?: string[]; description?: string }) => {
      const fromFile = o.secretFile === undefined ? undefined : readFileSync(o.secretFile, 'utf8').trim();
      if (fromFile === '') throw new UsageError(`${o.secretFile} holds no secret`);
      // An empty HILT_WEBHOOK_SECRET is one not set: a new random secret, as documented.
      const given = fromFile ?? (process.env.HILT_WEBHOOK_SECRET || undefined);
      const made = given === undefined;
      const secret = given ?? randomBytes(24).toString('base64url');
      const r = await c().postJson('/admin/webhooks', { url, secret, types: o.type, projects: o.project, description: o.description });
      const id = c().field(r, 'id');
      answer(wantsJson(o), r.text, () => fields([['id', id], ...(made ? [['secret (shown only now)', secret]] : [])]));
      if (made && wantsJson(o)) note(`the signing secret (shown only now): ${secret}`);
    });

  hook.command('list').description('Every webhook and its delivery state').option('--json', 'the server\'s JSON')
    .action(async (o: JsonOpts) => {
      const r = await c().get('/admin/webhooks');
      answer(wantsJson(o), r.text, () => table(['Id', 'URL', 'State', 'Types', 'Projects', 'Backlog', 'Last success', 'Last error'],
        (r.body as Webhook[]).map((w) => [w.id, w.url, w.state, w.types.join(',') || 'all', w.projects.join(',') || 'all', w.backlog, w.last_success ?? '', w.last_error ?? ''])));
    });

  hook.command('show').description('A webhook: target, filters, cursor, backlog, last success, last error, failures').argument('<id>').option('--json', 'the server\'s JSON')
    .action(async (id: string, o: JsonOpts) => {
      const r = await c().get(path('admin', 'webhooks', id));
      answer(wantsJson(o), r.text, () => fields(Object.entries(r.body as Record<string, unknown>).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') || 'all' : v === null || v === undefined ? '' : String(v)])));
    });

  hook.command('delete').description('Delete a webhook').argument('<id>')
    .action(async (id: string) => {
      await c().del(path('admin', 'webhooks', id));
    });

  hook.command('resume').description('Resume a failing webhook from its cursor').argument('<id>')
    .action(async (id: string) => {
      await c().post(path('admin', 'webhooks', id, 'resume'));
    });
}
