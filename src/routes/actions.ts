/**
 * Network operations on node nics (decisions.md §8): accepted with 202 once the pending
 * action is durable, carried out by the switch sessions, reported by status id.
 */
import { FastifyInstance } from 'fastify';
import { findAction, listActions } from '../../actors/node/history';
import * as S from '../schemas/actions';
import { conflict, notFound } from '../errors';
import { requireAdmin, requireProject, found } from './guard';
import type { Caller } from '../auth/basic';
import type { NetworkAction, NodeState } from '../../actors/node/protocol';
import { own } from '../../actors/own';

type NN = { node: string; nic: string };

/** Opaque to clients; names the node, its incarnation and the action's sequence number. */
export function encodeStatusId(node: NodeState, seq: number): string {
  return Buffer.from(JSON.stringify([node.name, node.incarnation, seq])).toString('base64url');
}

function decodeStatusId(id: string): [string, string, number] | null {
  try {
    const v = JSON.parse(Buffer.from(id, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 3 && typeof v[0] === 'string' && typeof v[1] === 'string' && Number.isInteger(v[2])) {
      return v as [string, string, number];
    }
  } catch {
    // not one of ours
  }
  return null;
}

export function statusBody(node: NodeState, a: NetworkAction) {
  return {
    status: a.status,
    node: node.name,
    nic: a.nic,
    type: a.type,
    channel: a.channel,
    new_network: a.newNetwork,
    ...(a.error !== undefined ? { error: a.error } : {}),
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

  app.post<{ Params: NN; Body: { network: string; channel?: string } }>('/node/:node/nic/:nic/connect_network', { schema: S.connectNetwork }, async (req, reply) => {
    const node = found(rm.nodes.get(req.params.node), `node ${req.params.node}`);
    found(own(node.nics, req.params.nic), `nic ${req.params.nic} of node ${node.name}`);
    found(rm.networks.get(req.body.network), `network ${req.body.network}`);
    // decisions.md §8: a free node is a 409 before authorization, for admins too.
    if (!node.project) throw conflict(`node ${node.name} is free: it belongs to no project`);
    requireProject(req.caller, node.project);
    const seq = await world.nodes.ask<number>(node.name, {
      type: 'node.connectNetwork', by: req.caller.user, project: authorizedFor(req.caller, node.project), nic: req.params.nic,
      network: req.body.network, channel: req.body.channel ?? 'vlan/native',
    });
    return reply.code(202).send({ status_id: encodeStatusId(rm.nodes.get(node.name)!, seq) });
  });

  app.post<{ Params: NN; Body: { network: string } }>('/node/:node/nic/:nic/detach_network', { schema: S.detachNetwork }, async (req, reply) => {
    const node = found(rm.nodes.get(req.params.node), `node ${req.params.node}`);
    found(rm.networks.get(req.body.network), `network ${req.body.network}`);
    found(own(node.nics, req.params.nic), `nic ${req.params.nic} of node ${node.name}`);
    if (!node.project) throw conflict(`node ${node.name} is free: it belongs to no project`);
    requireProject(req.caller, node.project);
    const seq = await world.nodes.ask<number>(node.name, {
      type: 'node.detachNetwork', by: req.caller.user, project: authorizedFor(req.caller, node.project), nic: req.params.nic, network: req.body.network,
    });
    return reply.code(202).send({ status_id: encodeStatusId(rm.nodes.get(node.name)!, seq) });
  });

  app.get<{ Params: { status_id: string } }>('/networking_action/:status_id', { schema: S.showAction }, async (req) => {
    const id = decodeStatusId(req.params.status_id);
    const node = id ? rm.nodes.get(id[0]) : undefined;
    const seq = id?.[2] ?? 0;
    const current = node && node.incarnation === id![1] && seq < node.nextSeq;
    // Recent ones are in the node's state; older ones in its journal.
    const action = current ? node.actions.find((a) => a.seq === seq) ?? findAction(world.engine, world.nodes.key(node.name), seq) : undefined;
    if (!node || !action) throw notFound(`networking action ${req.params.status_id}`);
    requireNodeAccess(req.caller, node);
    return statusBody(node, action);
  });

  app.get<{ Params: { node: string } }>('/node/:node/networking_actions', { schema: S.listActions }, async (req) => {
    const node = found(rm.nodes.get(req.params.node), `node ${req.params.node}`);
    requireNodeAccess(req.caller, node);
    return listActions(world.engine, world.nodes.key(node.name)).map((a) => ({
      status_id: encodeStatusId(node, a.seq),
      ...statusBody(node, a),
      accepted_at: new Date(a.acceptedAt).toISOString(),
      finished_at: a.finishedAt ? new Date(a.finishedAt).toISOString() : null,
    }));
  });
}
