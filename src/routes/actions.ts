/**
 * Network operations on node nics (docs/api-conventions.md §8): accepted with 202 once the
 * pending operation is durable in its nic, carried out through the nic's switch port, reported
 * by status id.
 */
import { FastifyInstance } from 'fastify';
import { findFirstFormatStatus, findStatus, listStatuses } from '../../actors/nic/history';
import * as S from '../schemas/actions';
import { badArgument, notFound, projectMismatch } from '../errors';
import { requireAdmin, requireProject, found, lookedUp, stillIn } from './guard';
import type { Caller } from '../auth/basic';
import type { NodeState } from '../../actors/node/protocol';
import { NATIVE, NetworkAction, NicStatusRef } from '../../actors/nic/protocol';
import { decodeStatusId, encodeStatusId, shortStatusId } from '../../actors/nic/status-ids';
import { errorFor, readsOperation } from './operation-access';
import { quote } from '../../lib/text';

type NN = { node: string; nic: string };

/** A status id in a message: as it is when it could be one (as v1 wrote it), else quoted (it may be any text: a newline, a long one). */
const shownId = (id: string) => (/^[A-Za-z0-9_-]+$/.test(id) ? id : quote(id));

/** An operation's status as `reader` reads it (a non-admin: its reason only in words of its own, errorFor). */
export function statusBody(node: NodeState, a: NetworkAction, reader: Pick<Caller, 'isAdmin'>) {
  const error = errorFor(reader, a.error);
  return {
    status: a.status,
    node: node.name,
    nic: a.nic,
    type: a.type,
    channel: a.channel,
    new_network: a.newNetwork,
    ...(error !== undefined ? { error } : {}),
  };
}

/** An operation as lists give it: its status, full and short ids, and times. */
function listed(node: NodeState, a: NetworkAction, nicIncarnation: string, reader: Caller) {
  const statusId = encodeStatusId(node, { nic: a.nic, incarnation: nicIncarnation, seq: a.seq }, a.firstFormat);
  return {
    status_id: statusId,
    short_id: shortStatusId(statusId),
    ...statusBody(node, a, reader),
    accepted_at: new Date(a.acceptedAt).toISOString(),
    finished_at: a.finishedAt ? new Date(a.finishedAt).toISOString() : null,
  };
}

/** A free node's actions are the admin's; an assigned node's its project's too. */
function requireNodeAccess(c: Caller, node: NodeState): void {
  if (node.project) requireProject(c, node.project);
  else requireAdmin(c);
}

/** The project a non-admin was authorized through; the node actor checks it still holds the node. */
const authorizedFor = (caller: Caller, project: string) => (caller.isAdmin ? null : project);

export async function actionRoutes(app: FastifyInstance): Promise<void> {
  const { world } = app.hilt;
  const rm = world.rm;
  const journals = { rm, nics: world.nics };

  /** The 202 of an accepted operation. */
  const accepted = (node: string, ref: NicStatusRef) => ({ status_id: encodeStatusId(rm.nodes.get(node)!, ref) });

  app.post<{ Params: NN; Body: { network: string; channel?: string } }>('/node/:node/nic/:nic/connect_network', { schema: S.connectNetwork }, async (req, reply) => {
    const node = found(rm.nodes.get(req.params.node), `node ${req.params.node}`);
    found(rm.nic(node.name, req.params.nic), `nic ${req.params.nic} of node ${node.name}`);
    found(rm.networks.get(lookedUp('network', req.body.network)), `network ${req.body.network}`);
    // §8: a free node is a 409 before authorization, for admins too.
    if (!node.project) throw projectMismatch(`node ${node.name} is free: it belongs to no project`);
    requireProject(req.caller, node.project);
    const ref = await world.nodes.ask(node.name, {
      type: 'node.connectNetwork', by: req.caller.user, project: authorizedFor(req.caller, node.project), nic: req.params.nic,
      network: req.body.network, channel: req.body.channel ?? NATIVE,
    }, stillIn(rm, req.caller, node.project));
    return reply.code(202).send(accepted(node.name, ref));
  });

  app.post<{ Params: NN; Body: { network: string } }>('/node/:node/nic/:nic/detach_network', { schema: S.detachNetwork }, async (req, reply) => {
    const node = found(rm.nodes.get(req.params.node), `node ${req.params.node}`);
    found(rm.networks.get(lookedUp('network', req.body.network)), `network ${req.body.network}`);
    found(rm.nic(node.name, req.params.nic), `nic ${req.params.nic} of node ${node.name}`);
    if (!node.project) throw projectMismatch(`node ${node.name} is free: it belongs to no project`);
    requireProject(req.caller, node.project);
    const ref = await world.nodes.ask(node.name, {
      type: 'node.detachNetwork', by: req.caller.user, project: authorizedFor(req.caller, node.project), nic: req.params.nic, network: req.body.network,
    }, stillIn(rm, req.caller, node.project));
    return reply.code(202).send(accepted(node.name, ref));
  });

  app.get<{ Params: { status_id: string } }>('/networking_action/:status_id', { schema: S.showAction }, async (req) => {
    const id = decodeStatusId(req.params.status_id);
    const node = id ? rm.nodes.get(id.node) : undefined;
    let action: NetworkAction | undefined;
    if (id && node && node.incarnation === id.incarnation) {
      action = id.nic === undefined
        ? (await findFirstFormatStatus(journals, node, id.seq))?.action
        : await findStatus(journals, node.name, id.nic, id.nicIncarnation, id.seq);
    }
    if (!node || !action) throw notFound(`networking action ${shownId(req.params.status_id)}`);
    requireNodeAccess(req.caller, node);
    // Another project's operation on this node (before a release): not the caller's to know of.
    if (!readsOperation(req.caller, node, action)) throw notFound(`networking action ${shownId(req.params.status_id)}`);
    return statusBody(node, action, req.caller);
  });

  app.get<{ Params: { node: string } }>('/node/:node/networking_actions', { schema: S.listActions }, async (req) => {
    const node = found(rm.nodes.get(req.params.node), `node ${req.params.node}`);
    requireNodeAccess(req.caller, node);
    // As v1 answered it (test/src/service/upgrade.test.ts compares): the short id is the system-wide list's.
    return (await listStatuses(journals, node)).filter(({ action }) => readsOperation(req.caller, node, action)).map(({ action: a, nicIncarnation }) => {
      const { short_id: _short, ...item } = listed(node, a, nicIncarnation, req.caller);
      return item;
    });
  });

  // Every node's operations the caller may see (issue 26): in flight first, then the newest
  // finished ones the read model keeps (the last 1,000 of the service), each newest first.
  app.get<{ Querystring: { status?: 'PENDING' | 'DONE' | 'ERROR'; limit?: string } }>('/networking_actions', { schema: S.listAllActions }, async (req) => {
    const { status } = req.query;
    const limit = req.query.limit !== undefined ? Number(req.query.limit) : 100;
    if (limit > 1000) throw badArgument('limit must be an integer from 1 to 1000');
    const visible = (name: string) => {
      const node = rm.nodes.get(name);
      return node && (req.caller.isAdmin || (!!node.project && req.caller.projects.includes(node.project))) ? node : undefined;
    };
    const out: ReturnType<typeof listed>[] = [];
    if (status === undefined || status === 'PENDING') {
      const pending: ReturnType<typeof listed>[] = [];
      for (const name of rm.pendingByNode.keys()) {
        const node = visible(name);
        if (!node) continue;
        for (const nicName of rm.pendingByNode.get(name)) {
          const nic = rm.nic(name, nicName);
          if (nic?.pending && readsOperation(req.caller, node, nic.pending)) pending.push(listed(node, nic.pending, nic.incarnation, req.caller));
        }
      }
      out.push(...pending.sort((a, b) => (a.accepted_at < b.accepted_at ? 1 : a.accepted_at > b.accepted_at ? -1 : 0)));
    }
    if (status !== 'PENDING') {
      for (const a of rm.recentOperations.newest()) {
        if (out.length >= limit) break;
        if (status !== undefined && a.status !== status) continue;
        const node = visible(a.node);
        // An operation of an earlier registration of the node or nic has no status id any more.
        if (!node || a.nicIncarnation === undefined || rm.nic(node.name, a.nic)?.incarnation !== a.nicIncarnation) continue;
        if (!readsOperation(req.caller, node, a)) continue;
        out.push(listed(node, a, a.nicIncarnation, req.caller));
      }
    }
    return out.slice(0, limit);
  });
}
