/**
 * Operator inspection (admin only): live actors and their mailboxes, an entity's committed
 * state and sequence number, and its journal (the audit trail: who did what, when).
 * Secrets are redacted everywhere.
 */
import { FastifyInstance, FastifyRequest } from 'fastify';
import * as S from '../schemas/admin';
import { redact } from '../redact';
import { encodeStatusId } from '../../actors/nic/status-ids';
import { requireAdmin, found, lookedUp } from './guard';
import { badArgument, notFound } from '../errors';
import { HiltError } from '../../actors/errors';
import { quote, shortText } from '../../lib/text';
import { nameProblem, NAME_RULE } from '../schemas/common';
import { nicId } from '../../actors/ids';
import type { JournalEntry } from '../../actors/persistence/engine';
import { HEADNODE_DRIVERS } from '../../drivers/headnode';
import type { NodeState } from '../../actors/node/protocol';
import type { SwitchState } from '../../actors/switch/protocol';

/** Kinds whose ids are two names (actors/ids.ts). */
const COMPOSITE = new Set(['nic', 'port']);

export async function adminRoutes(app: FastifyInstance): Promise<void> {
  const { world, drivers } = app.hilt;
  const rt = world.runtime;
  const registry = (kind: string) => found(rt.registry(kind), `actor kind ${kind}`);

  app.get('/admin/actors', { schema: S.listActors }, async (req) => {
    requireAdmin(req.caller);
    return Object.fromEntries(rt.kindNames().map((k) => [k, rt.registry(k)!.liveActors()]));
  });

  /**
   * The entity an inspection URL names: `<id>` or, for nics and ports, `<node>/<nic>` and
   * `<switch>/<port>` (each name percent-encoded, so a port name's `/` is `%2F`), then
   * optionally `/journal`. Read from the raw URL: the router decodes `%2F` into `/`.
   */
  function target(req: { url: string; params: { kind: string } }): { reg: NonNullable<ReturnType<typeof rt.registry>>; id: string; journal: boolean } {
    const reg = registry(req.params.kind);
    const segments = req.url.split('?')[0].split('/');
    // `[/v0]/admin/actors/<kind>/<the rest>`: the rest starts three segments after `admin`.
    const rest = segments.slice(segments.indexOf('admin') + 3);
    let parts: string[];
    try {
      parts = rest.map(decodeURIComponent);
    } catch {
      throw badArgument('the actor id is not valid percent-encoding');
    }
    const arity = COMPOSITE.has(reg.kind) ? 2 : 1;
    const journal = parts.length === arity + 1 && parts[arity] === 'journal';
    if (parts.length !== arity && !journal) throw notFound(`${reg.kind} ${quote(parts.join('/'))}`);
    for (const p of parts.slice(0, arity)) if (nameProblem(p)) throw badArgument(`the actor id ${NAME_RULE} (each part)`);
    return { reg, id: arity === 2 ? nicId(parts[0], parts[1]) : parts[0], journal };
  }

  app.get<{ Params: { kind: string; '*': string }; Querystring: { limit?: string } }>('/admin/actors/:kind/*', { schema: S.actor }, async (req) => {
    requireAdmin(req.caller);
    const { reg, id, journal } = target(req);
    if (journal) {
      const entries: JournalEntry[] = [];
      for await (const e of reg.journal(id, Number(req.query.limit ?? 100))) entries.push(e);
      if (!entries.length) found(undefined, `${reg.kind} ${id}`);
      return entries.map((e) => {
        const { by, at, ...event } = e.data as { by?: string; at?: number; type: string };
        return { sequenceNumber: e.sequenceNumber, at: new Date(at ?? e.createdAt).toISOString(), by: by ?? null, event: redact(event) };
      });
    }
    if (req.query.limit !== undefined) throw badArgument('limit applies to journals only');
    const stored = found((await reg.inspect(id)) ?? undefined, `${reg.kind} ${id}`);
    const state = stored.state;
    // What the device's driver shows of it (a mock's simulated hardware).
    const obm = reg.kind === 'node' && state ? (state as NodeState).obm : undefined;
    const sw = reg.kind === 'switch' && state ? (state as SwitchState) : undefined;
    const device = obm ? drivers.obm.inspect(obm.type, { id, fields: obm.fields })
      : sw ? drivers.switches.inspect(sw.type, { id, fields: sw.fields }) : undefined;
    return {
      ...device,
      kind: reg.kind,
      id,
      live: stored.live,
      sequenceNumber: stored.sequenceNumber,
      state: redact(state),
    };
  });

  // Repairs. Re-apply a nic's port configuration from the service's state, as a queued action.
  app.post<{ Params: { node: string; nic: string } }>('/admin/node/:node/nic/:nic/reapply', { schema: S.reapply }, async (req, reply) => {
    requireAdmin(req.caller);
    const ref = await world.nodes.ask(req.params.node, { type: 'node.reapplyPort', by: req.caller.user, nic: req.params.nic });
    return reply.code(202).send({ status_id: encodeStatusId(world.rm.nodes.get(req.params.node)!, ref) });
  });

  // For a dead switch: forget an attachment in the service's state only (the switch is not told).
  app.post<{ Params: { node: string; nic: string }; Body: { network: string } }>('/admin/node/:node/nic/:nic/force_detach', { schema: S.forceDetach }, async (req) => {
    requireAdmin(req.caller);
    await world.nodes.ask(req.params.node, { type: 'node.forceDetach', by: req.caller.user, nic: req.params.nic, network: lookedUp('network', req.body.network) });
  });

  // A port in doubt whose switch is gone for good: an admin clears the doubt by hand, and with it
  // the holds on its VLANs' networks and its node (docs/actors.md, "Ports in doubt"). Audited
  // (port.doubt_cleared_by_hand, by the admin). A path with another action is no call: 404 first.
  const CLEAR_DOUBT = '/clear_doubt';
  const clearDoubtPath = async (req: FastifyRequest<{ Params: { '*': string } }>) => {
    const rest = req.params['*'];
    if (!rest.endsWith(CLEAR_DOUBT) || rest.length === CLEAR_DOUBT.length) throw new HiltError('NotFoundError', `no such call: POST ${shortText(req.url.split('?')[0], 64)}`);
  };
  const checkPortName = async (req: FastifyRequest<{ Params: { '*': string } }>) => {
    if (nameProblem(req.params['*'].slice(0, -CLEAR_DOUBT.length))) throw badArgument(`params/port ${NAME_RULE}`);
  };
  app.post<{ Params: { switch: string; '*': string } }>('/admin/switch/:switch/port/*', { schema: S.clearPortDoubt, onRequest: clearDoubtPath, preValidation: checkPortName }, async (req) => {
    requireAdmin(req.caller);
    await world.switches.ask(req.params.switch, { type: 'switch.clearPortDoubt', by: req.caller.user, port: req.params['*'].slice(0, -CLEAR_DOUBT.length) });
  });

  /** An audit's outcome is remembered for the switch lists (hardware/switch-health.ts). */
  async function audited<R extends { summary: Record<string, number>; ports: { port: string; status: string }[] }>(sw: string, run: Promise<R>): Promise<R> {
    try {
      const report = await run;
      world.sessions.health.audited(sw, report);
      return report;
    } catch (err) {
      if (err instanceof HiltError && err.type === 'SwitchError') world.sessions.health.audited(sw, { error: err.message });
      throw err;
    }
  }

  // Drift audit of a switch (docs/api-conventions.md §8): every registered port read back in one
  // session and compared with the configuration the service holds; the repair sets each drifted
  // port back to it, through its port actor. A switch that cannot be reached: 502 SwitchError.
  app.get<{ Params: { switch: string } }>('/admin/switch/:switch/drift', { schema: S.switchDrift }, async (req) => {
    requireAdmin(req.caller);
    found(world.rm.switches.get(req.params.switch), `switch ${req.params.switch}`);
    return audited(req.params.switch, world.audit.run(req.params.switch, { repair: false, by: req.caller.user }));
  });

  app.post<{ Params: { switch: string } }>('/admin/switch/:switch/repair', { schema: S.switchRepair }, async (req) => {
    requireAdmin(req.caller);
    found(world.rm.switches.get(req.params.switch), `switch ${req.params.switch}`);
    const report = await audited(req.params.switch, world.audit.run(req.params.switch, { repair: true, by: req.caller.user }));
    // The switch's changes are the audit trail of a repair (no event changes: the configuration held stays).
    for (const p of report.ports) {
      if (p.status === 'repaired') req.log.info({ switch: report.switch, port: p.port, found: p.actual, set: p.expected }, 'repaired a drifted switch port');
      else if (p.status === 'failed') req.log.warn({ switch: report.switch, port: p.port, found: p.actual, expected: p.expected, error: p.error }, 'could not repair a switch port');
    }
    return report;
  });

  // list_active_extensions (docs/api-conventions.md §12)
  app.get('/active_extensions', { schema: S.listExtensions }, async (req) => {
    requireAdmin(req.caller);
    const headnodes = HEADNODE_DRIVERS.entries.filter((e) => e.type === app.hilt.config.headnodeDriver).map((e) => e.extension);
    return ['hilt.auth.database', ...drivers.obm.registry.extensions(), ...drivers.switches.registry.extensions(), ...headnodes];
  });
}
