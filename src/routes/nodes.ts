import { FastifyInstance } from 'fastify';
import * as S from '../schemas/nodes';
import { badArgument, duplicate, notFound } from '../errors';
import { quote } from '../../lib/text';
import { CachedLists } from './cached-lists';
import { nodeAnswer } from './node-answer';
import { requireAdmin, requireProject, found, stillThere } from './guard';
import type { Caller } from '../auth/basic';
import { isRead } from '../auth/caller';
import type { MetadataValue, NodeState } from '../../actors/node/protocol';
import { BOOT_DEVICES, isBootDevice } from '../../drivers/obm/types';

type N = { node: string };
type NN = { node: string; nic: string };
type NL = { node: string; label: string };

export async function nodeRoutes(app: FastifyInstance): Promise<void> {
  const { world, power, drivers, lifecycle } = app.hilt;
  const rm = world.rm;

  /** Power calls (docs/api-conventions.md §3): a free node is the admin's; an assigned one its project's too. */
  function powerTarget(caller: Caller, name: string): NodeState {
    const node = found(rm.nodes.get(name), `node ${name}`);
    if (node.project) requireProject(caller, node.project);
    else requireAdmin(caller);
    return node;
  }

  /**
   * The caller of a power call as PowerControl sees it: its admin flag (for the OBM error text)
   * and the same check again, against the committed state, when the call's turn at the BMC
   * comes: the node must still be this registration, and the caller (as it is now: its admin
   * flag and memberships may have changed) must still be allowed to act on it.
   */
  function powerCaller(caller: Caller, node: NodeState, method = 'POST') {
    return {
      isAdmin: caller.isAdmin,
      node: { name: node.name, incarnation: node.incarnation },
      recheck: () => {
        const now = rm.nodes.get(node.name);
        if (!now || now.incarnation !== node.incarnation) throw notFound(`node ${node.name}`);
        const current = stillThere(rm, caller, isRead(method));
        if (now.project) requireProject(current, now.project);
        else requireAdmin(current);
      },
    };
  }

  app.put<{ Params: N; Body: { obm: Record<string, unknown>; metadata?: Record<string, unknown> } }>('/node/:node', {
    schema: S.registerNode,
    // before authentication, as validation is (docs/api-conventions.md §2)
    preValidation: async (req) => {
      const problem = S.metadataLabelsProblem(req.body);
      if (problem) throw badArgument(problem);
    },
  }, async (req) => {
    requireAdmin(req.caller);
    const { node } = req.params;
    if (rm.nodes.has(node)) throw duplicate(`node ${node}`);
    const obm = drivers.obm.registry.validate(req.body.obm);
    if (typeof obm === 'string') throw badArgument(obm);
    await world.nodes.ask(node, { type: 'node.register', by: req.caller.user, obm, metadata: req.body.metadata });
  });

  app.delete<{ Params: N }>('/node/:node', { schema: S.deleteNode }, async (req) => {
    requireAdmin(req.caller);
    await world.nodes.ask(req.params.node, { type: 'node.delete', by: req.caller.user });
    // Its console log goes with it, before the answer (docs/consoles.md).
    await app.hilt.consoles.forget(req.params.node);
  });

  app.put<{ Params: NN; Body: { macaddr: string } }>('/node/:node/nic/:nic', { schema: S.registerNic }, async (req) => {
    requireAdmin(req.caller);
    await world.nodes.ask(req.params.node, { type: 'node.registerNic', by: req.caller.user, nic: req.params.nic, macaddr: req.body.macaddr });
  });

  app.delete<{ Params: NN }>('/node/:node/nic/:nic', { schema: S.deleteNic }, async (req) => {
    requireAdmin(req.caller);
    await world.nodes.ask(req.params.node, { type: 'node.deleteNic', by: req.caller.user, nic: req.params.nic });
  });

  // node_set_metadata, node_delete_metadata (docs/api-conventions.md §5): admin → node 404 → …
  app.put<{ Params: NL; Body: { value: MetadataValue } }>('/node/:node/metadata/:label', { schema: S.setMetadata }, async (req) => {
    requireAdmin(req.caller);
    found(rm.nodes.get(req.params.node), `node ${req.params.node}`);
    await world.nodes.ask(req.params.node, { type: 'node.setMetadata', by: req.caller.user, label: req.params.label, value: req.body.value });
  });

  app.delete<{ Params: NL }>('/node/:node/metadata/:label', { schema: S.deleteMetadata }, async (req) => {
    requireAdmin(req.caller);
    found(rm.nodes.get(req.params.node), `node ${req.params.node}`);
    await world.nodes.ask(req.params.node, { type: 'node.deleteMetadata', by: req.caller.user, label: req.params.label });
  });

  app.post<{ Params: N; Body: { force?: boolean } }>('/node/:node/power_cycle', { schema: S.powerCycle }, async (req) => {
    const node = powerTarget(req.caller, req.params.node);
    await power.cycle(node.obm, req.body.force ?? false, powerCaller(req.caller, node));
  });

  app.post<{ Params: N }>('/node/:node/power_off', { schema: S.powerOff }, async (req) => {
    const node = powerTarget(req.caller, req.params.node);
    await power.off(node.obm, powerCaller(req.caller, node));
    // A node flagged for a failed release power-off is off now (docs/lifecycle.md).
    await lifecycle.poweredOff(node.name, req.caller.user)
      .catch((err: Error) => req.log.warn({ node: node.name, err: err.message }, 'could not clear the failed release power-off of a node that is off now'));
  });

  app.post<{ Params: N }>('/node/:node/power_on', { schema: S.powerOn }, async (req) => {
    const node = powerTarget(req.caller, req.params.node);
    await power.on(node.obm, powerCaller(req.caller, node));
  });

  app.get<{ Params: N }>('/node/:node/power_status', { schema: S.powerStatus }, async (req) => {
    const node = powerTarget(req.caller, req.params.node);
    return { power_status: await power.status(node.obm, powerCaller(req.caller, node, 'GET')) };
  });

  // The device is checked after authorization, as HIL did (docs/api-conventions.md §3).
  app.put<{ Params: N; Body: { bootdev: string } }>('/node/:node/boot_device', { schema: S.setBootDevice }, async (req) => {
    const node = powerTarget(req.caller, req.params.node);
    const { bootdev } = req.body;
    if (!isBootDevice(bootdev)) throw badArgument(`invalid boot device ${quote(bootdev)}: expected one of ${BOOT_DEVICES.join(', ')}`);
    await power.bootDevice(node.obm, bootdev, powerCaller(req.caller, node));
  });

  // A data centre's node list is large and read far more often than it changes: it is
  // serialized once per change of the node read model, and gzipped once too for clients that
  // accept it (HIL's client, python-requests, does by default).
  const lists = new CachedLists(() => rm.nodesVersion, () => ({ all: [...rm.nodes.keys()], free: [...rm.freeNodes] }));
  app.get<{ Params: { is_free: 'all' | 'free' } }>('/nodes/:is_free', { schema: S.listNodes }, async (req, reply) => {
    return lists.send(req.params.is_free, req, reply);
  });

  // Not async: a read of the read model answers in the same turn, without a promise (the most
  // frequent call; fastify sends what a handler returns, and what it throws, at once).
  app.get<{ Params: N }>('/node/:node', { schema: S.showNode }, (req, reply) => {
    const node = found(rm.nodes.get(req.params.node), `node ${req.params.node}`);
    if (node.project) requireProject(req.caller, node.project);
    return reply.type('application/json; charset=utf-8').send(nodeAnswer(rm, node, req.caller.isAdmin ? 'admin' : 'member'));
  });

}
