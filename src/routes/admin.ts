/**
 * Operator inspection (admin only): live actors and their mailboxes, an entity's committed
 * state and sequence number, and its journal (the audit trail: who did what, when).
 * Secrets are redacted everywhere.
 */
import { FastifyInstance } from 'fastify';
import * as S from '../schemas/admin';
import { redact } from '../redact';
import { encodeStatusId } from './actions';
import { requireAdmin, found } from './guard';
import type { NodeState } from '../../actors/node/protocol';
import type { SwitchState } from '../../actors/switch/protocol';

type KI = { kind: string; id: string };

export async function adminRoutes(app: FastifyInstance): Promise<void> {
  const { world, drivers } = app.hilt;
  const rt = world.runtime;
  const registry = (kind: string) => found(rt.registry(kind), `actor kind ${kind}`);

  app.get('/admin/actors', { schema: S.listActors }, async (req) => {
    requireAdmin(req.caller);
    return Object.fromEntries(rt.kindNames().map((k) => [k, rt.registry(k)!.liveActors()]));
  });

  app.get<{ Params: KI }>('/admin/actors/:kind/:id', { schema: S.showActor }, async (req) => {
    requireAdmin(req.caller);
    const reg = registry(req.params.kind);
    const { id } = req.params;
    const sequenceNumber = world.engine.head(reg.key(id));
    if (!sequenceNumber) found(undefined, `${reg.kind} ${id}`);
    const state = await reg.recoverState(id);
    // What the device's driver shows of it (a mock's simulated hardware).
    const obm = reg.kind === 'node' && state ? (state as NodeState).obm : undefined;
    const sw = reg.kind === 'switch' && state ? (state as SwitchState) : undefined;
    const device = obm ? drivers.obm.inspect(obm.type, { id, fields: obm.fields })
      : sw ? drivers.switches.inspect(sw.type, { id, fields: sw.fields }) : undefined;
    return {
      ...device,
      kind: reg.kind,
      id,
      live: reg.isLive(id),
      sequenceNumber,
      state: redact(state),
    };
  });

  app.get<{ Params: KI; Querystring: { limit?: string } }>('/admin/actors/:kind/:id/journal', { schema: S.journal }, async (req) => {
    requireAdmin(req.caller);
    const reg = registry(req.params.kind);
    const entries = Array.from(world.engine.journal(reg.key(req.params.id), Number(req.query.limit ?? 100)));
    if (!entries.length) found(undefined, `${reg.kind} ${req.params.id}`);
    return entries.map((e) => {
      const { by, at, ...event } = e.data as { by?: string; at?: number; type: string };
      return { sequenceNumber: e.sequenceNumber, at: new Date(at ?? e.createdAt).toISOString(), by: by ?? null, event: redact(event) };
    });
  });

  // Repairs. Re-apply a nic's port configuration from the service's state, as a queued action.
  app.post<{ Params: { node: string; nic: string } }>('/admin/node/:node/nic/:nic/reapply', { schema: S.reapply }, async (req, reply) => {
    requireAdmin(req.caller);
    const seq = await world.nodes.ask<number>(req.params.node, { type: 'node.reapplyPort', by: req.caller.user, nic: req.params.nic });
    return reply.code(202).send({ status_id: encodeStatusId(world.rm.nodes.get(req.params.node)!, seq) });
  });

  // For a dead switch: forget an attachment in the service's state only (the switch is not told).
  app.post<{ Params: { node: string; nic: string }; Body: { network: string } }>('/admin/node/:node/nic/:nic/force_detach', { schema: S.forceDetach }, async (req) => {
    requireAdmin(req.caller);
    await world.nodes.ask(req.params.node, { type: 'node.forceDetach', by: req.caller.user, nic: req.params.nic, network: req.body.network });
  });

  // list_active_extensions (decisions.md §12)
  app.get('/active_extensions', { schema: S.noQueryOnly }, async (req) => {
    requireAdmin(req.caller);
    const headnodes = `hilt.headnodes.${app.hilt.config.headnodeDriver}`;
    return ['hilt.auth.database', ...drivers.obm.registry.extensions(), ...drivers.switches.registry.extensions(), headnodes];
  });
}
