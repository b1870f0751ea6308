import { FastifyInstance } from 'fastify';
import * as S from '../schemas/networks';
import { badArgument, duplicate, forbidden, notFound, unauthorized } from '../errors';
import { quote } from '../../lib/text';
import { requireAdmin, requireProject, found, isMember, lookedUp, stillIn } from './guard';
import type { Caller } from '../auth/basic';
import { readsOnly } from '../auth/caller';
import { ownerProject, type NetworkState } from '../../actors/network/protocol';
import { NATIVE } from '../../actors/nic/protocol';
import type { Attachment } from '../../actors/readmodel';
import { dict } from '../dict';

type W = { network: string };
type WP = { network: string; project: string };

/** net_id: a decimal integer 1..4096, or "" for the next free id of the pool. */
function parseNetId(netId: string): number | null {
  if (netId === '') return null;
  if (!/^[0-9]{1,4}$/.test(netId) || Number(netId) < 1 || Number(netId) > 4096) {
    throw badArgument(`net_id must be "" or a VLAN id from 1 to 4096, got ${quote(netId)}`);
  }
  return Number(netId);
}

/** May the caller manage the network as its owner (admin, or a member of the owning project)? */
function isOwner(c: Caller, net: NetworkState): boolean {
  const owner = ownerProject(net);
  return c.isAdmin || (owner !== undefined && c.projects.includes(owner));
}

/** Does the caller only read the project that owns the network? */
function readsOwner(c: Caller, net: NetworkState): boolean {
  const owner = ownerProject(net);
  return owner !== undefined && readsOnly(c, owner);
}

/**
 * The owner a change was authorized through, which the network actor checks again: the network
 * may be deleted and its name taken by another owner before the change's turn. An admin may
 * change any network.
 */
function authorizedAs(c: Caller, net: NetworkState): { owner?: string } {
  return c.isAdmin ? {} : { owner: net.owner };
}

/**
 * A change only the network's owner may make: a caller who only reads the owning project is
 * known, and may only read (403, docs/identity.md); anyone else lacks the right (401).
 */
function requireOwner(c: Caller, net: NetworkState, refusal: string): void {
  if (isOwner(c, net)) return;
  if (readsOwner(c, net)) throw forbidden(`read-only access to project ${net.owner}: this call changes its network ${net.name}`);
  throw unauthorized(refusal);
}

/**
 * show_network's `connected-nodes`, as HIL's server gave it (HIL's own CLI reads it):
 * `{<node>: [<nic>, …]}`, completed attachments only. The owner (or an admin) sees every node;
 * anyone else only the nodes of projects they belong to (docs/api-conventions.md §7).
 */
function connectedNodes(c: Caller, n: NetworkState, attachments: Attachment[]): Record<string, string[]> {
  const all = isOwner(c, n);
  // A node may be named __proto__ (docs/api-conventions.md §1, Names): dict() keeps it a key.
  const byNode = dict<string[]>();
  for (const a of attachments) {
    if (!all && !c.projects.includes(a.project)) continue;
    const nics = byNode[a.node];
    if (nics) nics.push(a.nic);
    else byNode[a.node] = [a.nic];
  }
  for (const node in byNode) byNode[node].sort();
  return byNode;
}

export async function networkRoutes(app: FastifyInstance): Promise<void> {
  const { world } = app.hilt;
  const rm = world.rm;
  /** The project a change of a network was authorized through, checked again at its turn (guard.ts); none for an admin network. */
  const stillOf = (c: Caller, project: string | undefined) => (project !== undefined ? stillIn(rm, c, project) : {});
  const net = (name: string) => found(rm.networks.get(name), `network ${name}`);

  app.put<{ Params: W; Body: { owner: string; access: string; net_id: string } }>('/network/:network', { schema: S.createNetwork }, async (req) => {
    const { network } = req.params;
    const { owner, access, net_id } = req.body;
    const c = req.caller;
    // docs/api-conventions.md §7: an existing name is a 409 before any authorization.
    if (rm.networks.has(network)) throw duplicate(`network ${network}`);
    let vlan: number | null;
    if (owner !== 'admin') {
      found(rm.projects.get(lookedUp('project', owner)), `project ${owner}`);
      requireProject(c, owner);
      if (access !== owner || net_id !== '') {
        if (!c.isAdmin) throw unauthorized('a project may only create networks it owns, with access for itself and no net_id');
        throw badArgument('a project-owned network must have access equal to its owner and net_id ""');
      }
      vlan = null;
    } else {
      requireAdmin(c);
      if (access !== '') found(rm.projects.get(lookedUp('project', access)), `project ${access}`);
      vlan = parseNetId(net_id);
    }
    const spec = { owner, access: access === '' ? [] : [access], vlan };
    // A network that names a project is created through that project's mailbox, so a
    // concurrent project_delete cannot miss it.
    if (access === '') await world.networks.ask(network, { type: 'network.create', by: c.user, spec });
    else await world.projects.ask(access, { type: 'project.createNetwork', by: c.user, network, spec }, stillIn(rm, c, access));
  });

  app.delete<{ Params: W }>('/network/:network', { schema: S.deleteNetwork }, async (req) => {
    const n = net(req.params.network);
    requireOwner(req.caller, n, `only the owner of network ${n.name} may delete it`);
    await world.networks.ask(n.name, { type: 'network.delete', by: req.caller.user, ...authorizedAs(req.caller, n) }, stillOf(req.caller, ownerProject(n)));
  });

  app.get<{ Params: W }>('/network/:network', { schema: S.showNetwork }, async (req) => {
    const n = net(req.params.network);
    const c = req.caller;
    if (n.access.length && !c.isAdmin && !n.access.some((p) => c.projects.includes(p))) {
      throw unauthorized(`network ${n.name} is not visible to you`);
    }
    return {
      name: n.name,
      channels: [NATIVE, `vlan/${n.vlan}`],
      owner: n.owner,
      access: n.access.length ? n.access : null,
      'connected-nodes': connectedNodes(c, n, rm.attachmentsOf(n.name)),
    };
  });

  app.get('/networks', { schema: S.listNetworks }, async (req) => {
    requireAdmin(req.caller);
    const out = dict<{ network_id: string; projects: string[] | null }>();
    for (const n of rm.networks.values()) {
      out[n.name] = { network_id: String(n.vlan), projects: n.access.length ? n.access : null };
    }
    return out;
  });

  app.get<{ Params: W; Querystring: { project?: string } }>('/network/:network/attachments', { schema: S.attachments }, async (req) => {
    const n = net(req.params.network);
    const c = req.caller;
    const q = req.query.project;
    if (q === undefined) {
      if (!isOwner(c, n)) throw unauthorized(`only the owner of network ${n.name} may list all its attachments`);
    } else {
      found(rm.projects.get(q), `project ${q}`);
      if (!isOwner(c, n) && !(n.access.includes(q) && c.projects.includes(q))) {
        throw unauthorized(`you may not list attachments of project ${q}`);
      }
    }
    const out = dict<{ nic: string; channel: string; project: string }>();
    for (const a of rm.attachmentsOf(n.name)) {
      if (q === undefined || a.project === q) out[a.node] = { nic: a.nic, channel: a.channel, project: a.project };
    }
    return out;
  });

  app.put<{ Params: WP }>('/network/:network/access/:project', { schema: S.access }, async (req) => {
    const n = net(req.params.network);
    const { project } = req.params;
    found(rm.projects.get(project), `project ${project}`);
    requireOwner(req.caller, n, `only the owner of network ${n.name} may grant access to it`);
    // Granting makes something refer to the project: serialize it through the project. The
    // network is decided on there, later: it carries the owner a non-admin was authorized through,
    // and the caller must still be of that owner when the grant's turn comes.
    await world.projects.ask(project, { type: 'project.grantNetwork', by: req.caller.user, network: n.name, ...authorizedAs(req.caller, n) },
      stillOf(req.caller, ownerProject(n)));
  });

  app.delete<{ Params: WP }>('/network/:network/access/:project', { schema: S.access }, async (req) => {
    const n = net(req.params.network);
    const { project } = req.params;
    const c = req.caller;
    found(rm.projects.get(project), `project ${project}`);
    if (n.access.length && !isOwner(c, n) && !(n.access.includes(project) && isMember(c, project))) {
      // A reader of the owner, or of the project it would revoke: known, and may only read.
      if (readsOwner(c, n) || (n.access.includes(project) && readsOnly(c, project))) {
        throw forbidden(`read-only access: revoking project ${project}'s access to network ${n.name} is a change`);
      }
      throw unauthorized(`you may not revoke access of project ${project} to network ${n.name}`);
    }
    if (!n.access.includes(project)) throw notFound(`access of project ${project} to network ${n.name}`);
    // A member of the project revoked may revoke it from any network that lists it.
    const viaRevoked = isMember(c, project);
    const as = viaRevoked ? {} : authorizedAs(c, n);
    await world.networks.ask(n.name, { type: 'network.revoke', by: c.user, project, ...as }, stillOf(c, viaRevoked ? project : ownerProject(n)));
  });
}
