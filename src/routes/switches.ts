import { FastifyInstance, FastifyRequest } from 'fastify';
import * as S from '../schemas/switches';
import { badArgument, duplicate, HiltError, notFound } from '../errors';
import { quote, shortText } from '../../lib/text';
import { nameProblem, NAME_RULE } from '../schemas/common';
import { requireAdmin, found, lookedUp } from './guard';
import type { SwitchState } from '../../actors/switch/protocol';
import { encodeStatusId } from '../../actors/nic/status-ids';
import { HOST_KEY_FIELD } from '../../drivers/switch/types';

type Sw = { switch: string };
type Port = { switch: string; '*': string };

/** POST actions on a port: the port name is what precedes the action's path segment. */
const PORT_ACTIONS = ['connect_nic', 'detach_nic', 'revert'] as const;
type PortAction = (typeof PORT_ACTIONS)[number];

function splitAction(rest: string): { port: string; action: PortAction } | null {
  for (const action of PORT_ACTIONS) {
    const suffix = `/${action}`;
    if (rest.endsWith(suffix) && rest.length > suffix.length) return { port: rest.slice(0, -suffix.length), action };
  }
  return null;
}

export async function switchRoutes(app: FastifyInstance): Promise<void> {
  const { world, drivers } = app.hilt;
  const rm = world.rm;
  const registry = drivers.switches.registry;

  const sw = (name: string): SwitchState => found(rm.switches.get(name), `switch ${name}`);
  /** The port's wired nic (null when unwired), or a 404. */
  const port = (s: SwitchState, name: string) => found(rm.port(s.name, name), `port ${name} of switch ${s.name}`).wire;

  app.put<{ Params: Sw; Body: Record<string, unknown> }>('/switch/:switch', { schema: S.registerSwitch }, async (req) => {
    requireAdmin(req.caller);
    if (rm.switches.has(req.params.switch)) throw duplicate(`switch ${req.params.switch}`);
    const v = registry.validate(req.body);
    if (typeof v === 'string') throw badArgument(v);
    // A pinned SSH host key is the switch actor's fact, not a driver field.
    const { [HOST_KEY_FIELD]: pinned, ...fields } = v.fields;
    await world.switches.ask(req.params.switch, {
      type: 'switch.register', by: req.caller.user, switchType: v.type, fields, ...(typeof pinned === 'string' ? { hostKey: pinned } : {}),
    });
  });

  app.delete<{ Params: Sw }>('/switch/:switch', { schema: S.deleteSwitch }, async (req) => {
    requireAdmin(req.caller);
    await world.switches.ask(req.params.switch, { type: 'switch.delete', by: req.caller.user });
    // A switch registered again under this name starts with no health of the old one.
    world.sessions.health.forget(req.params.switch);
  });

  app.get('/switches', { schema: S.listSwitches }, async (req) => {
    requireAdmin(req.caller);
    return [...rm.switches.keys()];
  });

  app.get<{ Params: Sw }>('/switch/:switch', { schema: S.showSwitch }, async (req) => {
    requireAdmin(req.caller);
    const s = sw(req.params.switch);
    // An SSH switch also shows its host key's fingerprint (null until the first login records it).
    const ssh = registry.get(s.type)?.sshHostKey ? { host_key: s.hostKey ?? null } : {};
    return { name: s.name, ports: rm.portsOf(s.name).map((p) => p.name), ...ssh };
  });

  // Forget an SSH switch's recorded host key (its key really changed): the next login records the new one.
  app.delete<{ Params: Sw }>('/switch/:switch/host_key', { schema: S.forgetHostKey }, async (req) => {
    requireAdmin(req.caller);
    sw(req.params.switch);
    await world.switches.ask(req.params.switch, { type: 'switch.clearHostKey', by: req.caller.user });
  });

  app.put<{ Params: Port }>('/switch/:switch/port/*', { schema: S.portNoBody }, async (req) => {
    requireAdmin(req.caller);
    const s = sw(req.params.switch);
    const name = req.params['*'];
    if (rm.port(s.name, name)) throw duplicate(`port ${name} of switch ${s.name}`);
    const entry = registry.get(s.type);
    if (entry && !entry.portName.test(name)) {
      throw badArgument(`${quote(name)} is not a valid port name for ${s.type}${entry.portFormat ? `: expected the form ${entry.portFormat}` : ''}`);
    }
    await world.switches.ask(s.name, { type: 'switch.registerPort', by: req.caller.user, port: name });
  });

  app.delete<{ Params: Port }>('/switch/:switch/port/*', { schema: S.portNoBody }, async (req) => {
    requireAdmin(req.caller);
    await world.switches.ask(req.params.switch, { type: 'switch.deletePort', by: req.caller.user, port: req.params['*'] });
  });

  // show_port (docs/api-conventions.md §12)
  app.get<{ Params: Port }>('/switch/:switch/port/*', { schema: S.showPort }, async (req) => {
    requireAdmin(req.caller);
    const wire = port(sw(req.params.switch), req.params['*']);
    if (!wire) return {};
    return { node: wire.node, nic: wire.nic, networks: rm.nic(wire.node, wire.nic)?.networks ?? {} };
  });

  // The body depends on the action, so it is checked here, before authentication
  // (docs/api-conventions.md §2: a bad request is a 400 even for an unknown caller).
  const checkActionBody = async (req: FastifyRequest<{ Params: Port; Body: Record<string, unknown> }>) => {
    const split = splitAction(req.params['*']);
    if (!split) return;
    if (nameProblem(split.port)) throw badArgument(`params/port ${NAME_RULE}`);
    const problem = split.action === 'connect_nic' ? S.checkConnectNicBody(req.body)
      : Object.keys(req.body).length ? `${split.action} takes no request body` : null;
    if (problem) throw badArgument(problem);
  };

  // A path without a known action is no call at all: 404 before its body is read and before
  // authentication, as for any unknown path (docs/api-conventions.md §1, Paths).
  const knownAction = async (req: FastifyRequest<{ Params: Port }>) => {
    if (!splitAction(req.params['*'])) throw new HiltError('NotFoundError', `no such call: POST ${shortText(req.url.split('?')[0], 64)}`);
  };

  app.post<{ Params: Port; Body: Record<string, unknown> }>('/switch/:switch/port/*', { schema: S.portAction, onRequest: knownAction, preValidation: checkActionBody }, async (req, reply) => {
    const split = splitAction(req.params['*'])!;
    requireAdmin(req.caller);
    const s = sw(req.params.switch);
    const wire = port(s, split.port);
    if (split.action === 'connect_nic') {
      const { node, nic } = req.body as { node: string; nic: string };
      found(rm.nodes.get(lookedUp('node', node)), `node ${node}`);
      found(rm.nic(node, lookedUp('nic', nic)), `nic ${nic} of node ${node}`);
      await world.nodes.ask(node, { type: 'node.wireNic', by: req.caller.user, nic, switch: s.name, port: split.port });
    } else if (split.action === 'detach_nic') {
      if (!wire) throw notFound(`a nic connection of port ${split.port} of switch ${s.name}`);
      await world.nodes.ask(wire.node, { type: 'node.unwireNic', by: req.caller.user, nic: wire.nic, switch: s.name, port: split.port });
    } else {
      // port_revert (docs/api-conventions.md §12): queue the removal of every network from the port.
      if (!wire) throw notFound(`a nic connection of port ${split.port} of switch ${s.name}`);
      const ref = await world.nodes.ask(wire.node, { type: 'node.revertPort', by: req.caller.user, nic: wire.nic });
      return reply.code(202).send({ status_id: encodeStatusId(rm.nodes.get(wire.node)!, ref) });
    }
  });

}
