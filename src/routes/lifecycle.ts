/**
 * The tenant lifecycle (docs/lifecycle.md): a node's lease, a project's leases and quota, the
 * maintenance pool and the nodes that need an operator. Checks in the order of
 * docs/api-conventions.md: the request (400, the lease's time included) → authentication →
 * the objects named (404) → the state (409) → authorization.
 */
import { FastifyInstance } from 'fastify';
import * as S from '../schemas/lifecycle';
import { badArgument, conflict, notFound } from '../errors';
import { requireAdmin, requireProject, found, stillIn } from './guard';
import type { Caller } from '../auth/basic';
import { leasePassed } from '../../actors/node/protocol';

type N = { node: string };
type P = { project: string };

const DAY_MS = 86_400_000;
const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

/** The project a non-admin was authorized through; the node actor checks it still holds the node. */
const authorizedFor = (caller: Caller, project: string) => (caller.isAdmin ? null : project);

export async function lifecycleRoutes(app: FastifyInstance): Promise<void> {
  const { world, lifecycle, config } = app.hilt;
  const rm = world.rm;

  /** `expires_at` as ms since the epoch: RFC 3339, in the future, at most HILT_LEASE_MAX_DAYS away; a 400 otherwise. */
  function leaseEnd(text: string, now = Date.now()): number {
    const t = S.rfc3339Ms(text);
    if (Number.isNaN(t)) throw badArgument('expires_at must be an RFC 3339 date-time with its offset, e.g. 2026-05-01T12:00:00Z');
    if (t <= now) throw badArgument('expires_at is in the past');
    if (t > now + config.leaseMaxDays * DAY_MS) throw badArgument(`expires_at is more than ${config.leaseMaxDays} days away (HILT_LEASE_MAX_DAYS)`);
    return t;
  }

  app.put<{ Params: N; Body: { expires_at: string } }>('/node/:node/lease', {
    schema: S.setLease,
    // The time is part of the request: checked before authentication, as validation is (docs/api-conventions.md §2).
    preValidation: async (req) => {
      const b = req.body as { expires_at?: unknown } | undefined;
      if (typeof b?.expires_at === 'string') leaseEnd(b.expires_at);
    },
  }, async (req) => {
    const node = found(rm.nodes.get(req.params.node), `node ${req.params.node}`);
    if (!node.project) throw conflict(`node ${node.name} is free: only a node in a project has a lease`);
    requireProject(req.caller, node.project);
    await world.nodes.ask(node.name, { type: 'node.setLease', by: req.caller.user, project: authorizedFor(req.caller, node.project), expiresAt: leaseEnd(req.body.expires_at) }, stillIn(rm, req.caller, node.project));
  });

  /** The node's lease, for a caller who may see it: node 404 → its project (401) → no lease 404. */
  function leaseOf(caller: Caller, name: string) {
    const node = found(rm.nodes.get(name), `node ${name}`);
    if (node.project) requireProject(caller, node.project);
    if (!node.lease) throw notFound(`a lease of node ${name}`);
    return { node, lease: node.lease };
  }

  app.get<{ Params: N }>('/node/:node/lease', { schema: S.showLease }, async (req) => {
    const { lease } = leaseOf(req.caller, req.params.node);
    return { project: lease.project, expires_at: iso(lease.expiresAt), expired: leasePassed(lease) };
  });

  app.delete<{ Params: N }>('/node/:node/lease', { schema: S.deleteLease }, async (req) => {
    // A change of a free node is an admin's (docs/api-conventions.md §3): 401 before its lease's 404.
    const free = rm.nodes.get(req.params.node);
    if (free && !free.project) requireAdmin(req.caller);
    const { node } = leaseOf(req.caller, req.params.node);
    await world.nodes.ask(node.name, { type: 'node.deleteLease', by: req.caller.user, project: authorizedFor(req.caller, node.project!) }, stillIn(rm, req.caller, node.project!));
  });

  app.get<{ Params: P }>('/project/:project/leases', { schema: S.projectLeases }, async (req) => {
    const { project } = req.params;
    found(rm.projects.get(project), `project ${project}`);
    requireProject(req.caller, project);
    const out: { node: string; expires_at: string; expired: boolean }[] = [];
    for (const node of rm.nodesByProject.get(project)) {
      const lease = rm.leases.get(node);
      if (lease?.project === project) out.push({ node, expires_at: iso(lease.expiresAt)!, expired: leasePassed(lease) });
    }
    return out.sort((a, b) => (a.expires_at < b.expires_at ? -1 : a.expires_at > b.expires_at ? 1 : 0));
  });

  app.put<{ Params: P; Body: { nodes?: number | null; networks?: number | null; headnodes?: number | null } }>('/project/:project/quota', { schema: S.setQuota }, async (req) => {
    requireAdmin(req.caller);
    found(rm.projects.get(req.params.project), `project ${req.params.project}`);
    const { nodes, networks, headnodes } = req.body;
    await world.projects.ask(req.params.project, { type: 'project.setQuota', by: req.caller.user, nodes, networks, headnodes });
  });

  app.get<{ Params: P }>('/project/:project/quota', { schema: S.showQuota }, async (req) => {
    const { project } = req.params;
    const p = found(rm.projects.get(project), `project ${project}`);
    requireProject(req.caller, project);
    return {
      nodes: { limit: p.quota?.nodes ?? null, used: rm.nodesByProject.get(project).size },
      networks: { limit: p.quota?.networks ?? null, used: rm.networksByOwner.get(project).size },
      headnodes: { limit: p.quota?.headnodes ?? null, used: rm.headnodesByProject.get(project).size },
    };
  });

  app.get('/admin/maintenance', { schema: S.maintenance }, async (req) => {
    requireAdmin(req.caller);
    return [...rm.maintenanceNotices]
      .map(([node, n]) => ({
        node, from: n.from, since: iso(n.since), attempts: n.attempts, last_error: n.lastError ?? null,
        last_attempt_at: iso(n.lastAttemptAt), delivered_at: iso(n.deliveredAt),
      }))
      .sort((a, b) => (a.since! < b.since! ? -1 : a.since! > b.since! ? 1 : 0));
  });

  app.get('/admin/nodes/attention', { schema: S.attention }, async (req) => {
    requireAdmin(req.caller);
    return lifecycle.attention();
  });
}
