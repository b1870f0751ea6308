/**
 * Lists worth reading (issue 26): a row per node or switch with what an operator looks for
 * first (its project, power, networks and last operation; a switch's driver, host, ports and
 * health), for `hilt node list`, `hilt switch list` and the dashboard. Read from the read model
 * and from what the service last saw of the hardware (never a hardware call: a GET does not wait
 * behind a BMC or a switch). Beyond HIL's API.
 */
import { FastifyInstance } from 'fastify';
import * as S from '../schemas/lists';
import { requireAdmin } from './guard';
import { driverName } from '../../actors/telemetry';
import { encodeStatusId, shortStatusId } from '../../actors/nic/status-ids';
import { pendingPerSwitch } from '../metrics';
import { SwitchHealth } from '../../hardware/switch-health';
import type { NetworkAction, NicState } from '../../actors/nic/protocol';
import type { NodeState } from '../../actors/node/protocol';
import type { PowerControl } from '../../hardware/power';
import type { ReadModel } from '../../actors/readmodel';
import { dict } from '../dict';
import type { PortState } from '../../actors/port/protocol';
import type { Caller } from '../auth/caller';
import { errorFor, operationsOf } from './operation-access';

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

/** The newest operation of the node's nics that `reads` lets through (operation-access.ts), as lists show it. */
export function lastOperation(node: NodeState, nics: readonly NicState[], reader: Caller) {
  const reads = operationsOf(reader, node);
  let last: { a: NetworkAction; nic: NicState } | undefined;
  for (const nic of nics) {
    for (const a of nic.actions) if (reads(a) && (!last || a.acceptedAt > last.a.acceptedAt || (a.acceptedAt === last.a.acceptedAt && a.seq > last.a.seq))) last = { a, nic };
  }
  if (!last) return null;
  const { a, nic } = last;
  const statusId = encodeStatusId(node, { nic: a.nic, incarnation: nic.incarnation, seq: a.seq }, a.firstFormat);
  return {
    status_id: statusId, short_id: shortStatusId(statusId), status: a.status, type: a.type, nic: a.nic,
    network: a.newNetwork ?? a.oldNetwork ?? null, ...(a.error !== undefined ? { error: errorFor(reader, a.error) } : {}),
    accepted_at: iso(a.acceptedAt), finished_at: iso(a.finishedAt),
  };
}

/** A node's power as last seen, as lists show it. */
export function powerOf(power: PowerControl, node: NodeState) {
  const s = power.seen(node.name, node.incarnation);
  if (!s) return { state: 'unknown' as const, at: null };
  return { state: s.state, at: iso(s.at), ...(s.error !== undefined ? { error: s.error, error_at: iso(s.errorAt) } : {}) };
}

export function nodeRow(rm: ReadModel, power: PowerControl, node: NodeState, caller: Caller) {
  const nics = rm.nicsOf(node.name);
  return {
    name: node.name,
    project: node.project,
    power: powerOf(power, node),
    networks: [...new Set(nics.flatMap((n) => Object.values(n.networks)))].sort(),
    nics: nics.length,
    pending: nics.filter((n) => n.pending).length,
    last_operation: lastOperation(node, nics, caller),
    lease_expires_at: node.lease ? iso(node.lease.expiresAt) : null,
    metadata: node.metadata ?? {},
    ...(caller.isAdmin ? { obm: driverName(node.obm.type) } : {}),
  };
}

/**
 * A switch's health as rows show it: reachability, the last error, the last audit in words, and
 * its failing ports (port → why: the last audit did not find it in sync, or its nic's last
 * operation failed).
 */
export function switchHealth(rm: ReadModel, health: SwitchHealth, sw: string, ports: PortState[]) {
  const seen = health.get(sw);
  const failingPorts = Object.assign(dict<string>(), seen.audit?.failing);
  for (const p of ports) {
    if (!p.wire || failingPorts[p.name]) continue;
    const nic = rm.nic(p.wire.node, p.wire.nic);
    const last = nic?.actions[nic.actions.length - 1];
    if (last?.status === 'ERROR') failingPorts[p.name] = `last operation failed: ${last.error ?? 'no reason given'}`;
  }
  const audit = !seen.audit ? null : seen.audit.error ? `failed: ${seen.audit.error}`
    : Object.entries(seen.audit.summary ?? {}).filter(([, n]) => n).map(([k, n]) => `${k} ${n}`).join(', ') || 'no ports';
  return {
    health: SwitchHealth.reachability(seen),
    last_error: SwitchHealth.reachability(seen) === 'unreachable' ? seen.error ?? null : null,
    audit, audit_at: iso(seen.audit?.at),
    failing: Object.keys(failingPorts).length,
    failingPorts,
  };
}

/** The field of a switch's registration that says where it is (never a secret). */
export const switchHost = (fields: Record<string, unknown>): string | null => {
  for (const k of ['hostname', 'host', 'url', 'ovs_bridge']) if (typeof fields[k] === 'string') return fields[k] as string;
  return null;
};

export async function listRoutes(app: FastifyInstance): Promise<void> {
  const { world, power } = app.hilt;
  const rm = world.rm;

  app.get<{ Params: { is_free: 'all' | 'free' } }>('/nodes/:is_free/details', { schema: S.nodeDetails }, async (req) => {
    const c = req.caller;
    const names = req.params.is_free === 'free' ? [...rm.freeNodes] : [...rm.nodes.keys()];
    const nodes = [];
    let others = 0;
    for (const name of names) {
      const node = rm.nodes.get(name)!;
      // show_node's rule: a free node is anyone's to see, an assigned one its project's.
      if (node.project && !c.isAdmin && !c.projects.includes(node.project)) others++;
      else nodes.push(nodeRow(rm, power, node, c));
    }
    return { nodes, others };
  });

  app.get('/switches/details', { schema: S.switchDetails }, async (req) => {
    requireAdmin(req.caller);
    const pending = pendingPerSwitch(rm);
    return [...rm.switches.values()].map((sw) => {
      const ports = rm.portsOf(sw.name);
      const seen = world.sessions.health.get(sw.name);
      const failing = switchHealth(rm, world.sessions.health, sw.name, ports).failingPorts;
      return {
        name: sw.name,
        type: driverName(sw.type),
        host: switchHost(sw.fields),
        ports: ports.length,
        wired: ports.filter((p) => p.wire).length,
        pending: pending.get(sw.name) ?? 0,
        reachability: SwitchHealth.reachability(seen),
        last_ok_at: iso(seen.okAt),
        last_error: seen.error ?? null,
        last_error_at: iso(seen.errorAt),
        audit: seen.audit ? { at: iso(seen.audit.at), ...(seen.audit.summary ? { summary: seen.audit.summary } : {}), ...(seen.audit.error ? { error: seen.audit.error } : {}) } : null,
        failing_ports: Object.keys(failing).length,
        failing,
      };
    });
  });
}
