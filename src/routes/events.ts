/**
 * GET /events: the event stream (Server-Sent Events) of every committed change the caller may
 * see, in commit order (src/events/hub.ts, docs/events.md). /admin/webhooks: the webhooks that
 * deliver the same events to outside receivers (src/events/webhooks.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import * as S from '../schemas/events';
import { badArgument, notFound, unauthorized, ErrorType } from '../errors';
import { parseTime } from '../audit';
import { knownTypeFilter } from '../events/types';
import { quote } from '../../lib/text';
import { onceAt } from '../../lib/time';
import { requireAdmin } from './guard';
import type { ServerResponse } from 'node:http';
import { callerNow, expiryOf, forRead, oidcProjectNames, type Caller } from '../auth/caller';
import type { EventHub, Filter, Stream, Viewer } from '../events/hub';
import type { RouteWorld } from '../../actors/world';
import type { WebhookState } from '../../actors/webhook/protocol';
import type { DeliveryMark } from '../events/webhooks';

type Multi = string | string[] | undefined;
interface EventsQuery { after?: string; since?: string; kind?: Multi; name?: Multi; project?: Multi; type?: Multi }

const CURSOR = /^[0-9]{1,16}$/;
/** How far ahead of the service's clock `since` may be (it then starts now). */
const SINCE_LEEWAY_MS = 60_000;

/** A repeatable, comma-separated filter as a set (empty: no filter). */
function set(v: Multi): Set<string> {
  return new Set([v ?? []].flat().flatMap((x) => x.split(',')).map((x) => x.trim()).filter(Boolean));
}

/** A type or kind no event has would match nothing, silently: a 400 names the mistake. */
function checkFilters(world: RouteWorld, types: Iterable<string>, kinds: Iterable<string> = []): void {
  for (const t of types) {
    if (!knownTypeFilter(t)) throw badArgument(`no event type ${quote(t)} (docs/events.md, Event types; <kind>.* for all of a kind)`);
  }
  for (const k of kinds) {
    if (!world.runtime.registry(k)) throw badArgument(`no kind ${quote(k)} (known: ${world.runtime.kindNames().join(', ')})`);
  }
}

/**
 * What a caller may see of the stream: an auditor all of it, a project's reader its events
 * (docs/identity.md), each project's from its creation (learned by EventHub.learnCreations).
 */
export function viewerOf(hub: EventHub, c: Caller): Viewer {
  const r = forRead(c);
  return hub.viewer(r.user, r.isAdmin, r.projects, c.via?.kind === 'oidc' ? oidcProjectNames(c.via) : undefined);
}

/** End a stream when its caller's credentials expire. */
export function endAtExpiry(stream: Stream, res: ServerResponse, at: number | undefined): void {
  if (at === undefined) return;
  res.on('close', onceAt(at, () => stream.drop('access')));
}

/**
 * Where a stream starts: after `Last-Event-ID` (a reconnect: it wins), or `after`, or the
 * position of `since`, or now. An id the store does not keep is a 410 with the oldest it keeps.
 */
async function startOf(app: FastifyInstance, req: FastifyRequest<{ Querystring: EventsQuery }>, reply: FastifyReply): Promise<number | undefined> {
  const { events: hub, world } = app.hilt;
  const q = req.query;
  const header = req.headers['last-event-id'];
  const lastId = typeof header === 'string' && header.trim() !== '' ? header.trim() : undefined;
  if (lastId !== undefined && !CURSOR.test(lastId)) throw badArgument('Last-Event-ID must be an event id this stream gave');
  if (lastId === undefined && q.after !== undefined && q.since !== undefined) throw badArgument('give after or since, not both');
  const since = q.since !== undefined ? parseTime('since', q.since) : undefined;
  // A later time would start the stream now, with the events before it. A minute's leeway for
  // clocks: `hilt events --follow` reconnects with the time one process gave, maybe to another.
  if (since !== undefined && since > Date.now() + SINCE_LEEWAY_MS) throw badArgument(`since ${q.since} is in the future (the service's clock says ${new Date().toISOString()}): give a past time, or none to start now`);
  const cursor = lastId ?? q.after;
  if (cursor === undefined && since === undefined) return hub.last;
  const bounds = await world.runtime.engine.bounds();
  // What retention is removing counts as gone already: the removal may not have committed yet.
  const first = Math.max(bounds.first, hub.removed + 1);
  // A time before the oldest id kept starts there: the events of live objects kept below it
  // would give ids a reconnect is refused (410), and a start before what retention is removing
  // would be ended at once, again at every reconnect.
  if (cursor === undefined) return Math.max(await world.runtime.engine.positionAt(since!), first - 1);
  const after = Number(cursor);
  if (after < first - 1 || after > Math.max(bounds.last, hub.last)) {
    reply.code(410).send({
      type: 'GoneError' satisfies ErrorType,
      msg: `event ${cursor} is not one this store keeps (older than what it keeps, or from another store, e.g. before a restore from a backup): start again with since, a time before the oldest kept (since=1970-01-01T00:00:00Z reads from event ${first} on; after=${first} would skip it)`,
      oldest: String(first),
    });
    return undefined;
  }
  return after;
}

/** What the API shows of a webhook: never its secret. `gap`: positions no event took (bounds()), not counted in its backlog. */
function shown(w: WebhookState, mark: DeliveryMark | undefined, last: number, gap?: [number, number]) {
  const cursor = mark?.cursor ?? 0;
  const skipped = gap ? Math.max(0, Math.min(last, gap[1]) - Math.max(cursor, gap[0] - 1)) : 0;
  const iso = (t: number | null | undefined) => (t ? new Date(t).toISOString() : null);
  return {
    id: w.id, url: w.url, types: w.types, projects: w.projects, description: w.description,
    created_at: iso(w.createdAt), created_by: w.createdBy,
    state: w.failing ? 'failing' : 'delivering', failing_since: iso(w.failingSince), ...(w.failing ? { failing_reason: w.failing } : {}),
    cursor: String(cursor), backlog: Math.max(0, last - cursor - skipped),
    last_success: iso(mark?.lastSuccess), last_error: mark?.lastError ?? null, consecutive_failures: mark?.failures ?? 0,
  };
}

export async function eventRoutes(app: FastifyInstance): Promise<void> {
  const { world } = app.hilt;

  app.get<{ Querystring: EventsQuery }>('/events', { schema: S.events }, async (req, reply) => {
    const hub = app.hilt.events;
    const filter: Filter = { kinds: set(req.query.kind), names: set(req.query.name), projects: set(req.query.project), types: set(req.query.type) };
    checkFilters(world, filter.types, filter.kinds);
    await hub.learnCreations(forRead(req.caller).projects);
    const after = await startOf(app, req, reply);
    if (after === undefined) return reply;
    // The caller's rights as they are now, not as they were before the wait for the store: a
    // membership removed meanwhile ended the caller's streams before this one was open, so it
    // must not open with the old rights (src/auth/caller.ts).
    const caller = callerNow(world.rm, req.caller, true);
    if (!caller) throw unauthorized('the credentials of this request are no longer valid');
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-store',
      connection: 'keep-alive',
      // A proxy must pass each event on at once (nginx buffers otherwise).
      'x-accel-buffering': 'no',
    });
    // HEAD: the headers only. A stream would never send them (node drops a HEAD answer's writes).
    if (req.method === 'HEAD') {
      res.end();
      return reply;
    }
    // How long a client waits before it reconnects (EventSource's own default is 3 s).
    res.write('retry: 1000\n: hilt event stream\n\n');
    const stream = hub.open(res, viewerOf(hub, caller), filter, after);
    endAtExpiry(stream, res, expiryOf(world.rm, caller));
    return reply;
  });

  app.post<{ Body: { url: string; secret: string; types?: string[]; projects?: string[]; description?: string } }>('/admin/webhooks', { schema: S.createWebhook }, async (req) => {
    requireAdmin(req.caller);
    const b = req.body;
    let url: URL;
    try {
      url = new URL(b.url);
    } catch {
      throw badArgument('url must be an http:// or https:// URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw badArgument('url must be an http:// or https:// URL');
    // The URL is shown (the listing, the audit log, the stream) and deliveries never send them:
    // the receiver checks X-Hilt-Signature instead.
    if (url.username || url.password) throw badArgument('url must not hold credentials (user:password@): a receiver authenticates deliveries by their X-Hilt-Signature');
    checkFilters(world, b.types ?? []);
    const id = `wh-${randomBytes(6).toString('hex')}`;
    await world.webhooks.ask(id, {
      type: 'webhook.create', by: req.caller.user,
      spec: { url: url.toString(), secret: b.secret, types: [...new Set(b.types ?? [])], projects: [...new Set(b.projects ?? [])], description: b.description ?? '' },
    });
    app.hilt.webhooks.sync();
    return { id };
  });

  app.get('/admin/webhooks', { schema: S.listWebhooks }, async (req) => {
    requireAdmin(req.caller);
    const out = [];
    const { gap } = await world.runtime.engine.bounds();
    for (const w of world.rm.webhooks.values()) out.push(shown(w, await app.hilt.webhooks.state(w.id), app.hilt.events.last, gap));
    return out;
  });

  app.get<{ Params: { id: string } }>('/admin/webhooks/:id', { schema: S.showWebhook }, async (req) => {
    requireAdmin(req.caller);
    const w = world.rm.webhooks.get(req.params.id);
    if (!w) throw notFound(`webhook ${req.params.id}`);
    return shown(w, await app.hilt.webhooks.state(w.id), app.hilt.events.last, (await world.runtime.engine.bounds()).gap);
  });

  app.delete<{ Params: { id: string } }>('/admin/webhooks/:id', { schema: S.deleteWebhook }, async (req) => {
    requireAdmin(req.caller);
    if (!world.rm.webhooks.has(req.params.id)) throw notFound(`webhook ${req.params.id}`);
    await world.webhooks.ask(req.params.id, { type: 'webhook.delete', by: req.caller.user });
    app.hilt.webhooks.sync();
  });

  app.post<{ Params: { id: string } }>('/admin/webhooks/:id/resume', { schema: S.resumeWebhook }, async (req) => {
    requireAdmin(req.caller);
    if (!world.rm.webhooks.has(req.params.id)) throw notFound(`webhook ${req.params.id}`);
    await app.hilt.webhooks.resume(req.params.id, req.caller.user);
  });
}
