/**
 * The read model as plain data, for comparisons: its indexes as they are, the same worked out
 * from the entities alone, and everything a reader sees (test/actors/readmodel.test.ts,
 * test/actors/checkpoint.test.ts).
 */
import { nicId } from '../../actors/ids';
import type { ReadModel } from '../../actors/readmodel';
import { nodeAnswer, nodeAnswerObject } from '../../src/routes/node-answer';

export const sorted = <T>(xs: Iterable<T>) => [...xs].sort();
const byKey = <V>(entries: Iterable<[string | number, V]>) => Object.fromEntries([...entries].sort(([a], [b]) => String(a).localeCompare(String(b))));

/** The read model's indexes as plain data, as they are. */
export function indexes(rm: ReadModel) {
  const set = (ix: { keys(): Iterable<string>; get(key: string): Iterable<string> }) => byKey([...ix.keys()].map((k) => [k, sorted(ix.get(k))]));
  const nested = <V>(m: Map<string, Map<string, V>>) => byKey([...m].map(([k, inner]) => [k, byKey(inner)]));
  return {
    freeNodes: sorted(rm.freeNodes), nodesByProject: set(rm.nodesByProject),
    leases: byKey(rm.leases), releasePowerOffs: byKey(rm.releasePowerOffs), maintenanceNotices: byKey(rm.maintenanceNotices),
    nicsByNode: set(rm.nicsByNode), attachmentsByNetwork: nested(rm.attachmentsByNetwork),
    pendingByNetwork: nested(rm.pendingByNetwork), pendingByNode: set(rm.pendingByNode),
    portsBySwitch: set(rm.portsBySwitch), wiring: byKey(rm.wiring),
    portsInDoubt: sorted(rm.portsInDoubt), portsOwingSetBack: sorted(rm.portsOwingSetBack),
    wired: { ports: rm.wiredPorts, withoutNic: sorted(rm.wiredWithoutNic) },
    networksByAccess: set(rm.networksByAccess), networksByOwner: set(rm.networksByOwner), pooledVlans: byKey(rm.pooledVlans),
    membersByProject: set(rm.membersByProject), headnodesByProject: set(rm.headnodesByProject), hnicsByNetwork: nested(rm.hnicsByNetwork),
    // Read through the cache, which this fills: the next comparison finds any answer a commit left stale.
    nodeAnswers: byKey([...rm.nodes.values()].flatMap((n) => (['admin', 'member'] as const).map((v) => [`${n.name} ${v}`, nodeAnswer(rm, n, v)] as [string, string]))),
  };
}

/** The same indexes worked out from the entities alone: what they must be. */
export function derived(rm: ReadModel) {
  const group = (pairs: [string, string][]) => {
    const m = new Map<string, Set<string>>();
    for (const [k, v] of pairs) m.set(k, (m.get(k) ?? new Set()).add(v));
    return byKey([...m].map(([k, s]) => [k, sorted(s)]));
  };
  const nestedOf = <V>(triples: [string, string, V][]) => {
    const m = new Map<string, [string, V][]>();
    for (const [k, inner, v] of triples) m.set(k, [...(m.get(k) ?? []), [inner, v]]);
    return byKey([...m].map(([k, entries]) => [k, byKey(entries)]));
  };
  const nodes = [...rm.nodes.values()];
  const nics = [...rm.nics.values()];
  const projectOf = (node: string) => rm.nodes.get(node)!.project ?? '';
  const field = <K extends 'lease' | 'releasePowerOff' | 'maintenance'>(k: K) => byKey(nodes.filter((n) => n[k]).map((n) => [n.name, n[k]!]));
  return {
    freeNodes: sorted(nodes.filter((n) => !n.project).map((n) => n.name)),
    nodesByProject: group(nodes.filter((n) => n.project).map((n) => [n.project!, n.name])),
    leases: field('lease'), releasePowerOffs: field('releasePowerOff'), maintenanceNotices: field('maintenance'),
    nicsByNode: group(nics.map((n) => [n.node, n.name])),
    attachmentsByNetwork: nestedOf(nics.flatMap((n) => Object.entries(n.networks).map(([channel, network]) =>
      [network, nicId(n.node, n.name), { node: n.node, nic: n.name, channel, project: projectOf(n.node) }] as [string, string, object]))),
    pendingByNetwork: nestedOf(nics.filter((n) => n.pending?.newNetwork).map((n) =>
      [n.pending!.newNetwork!, nicId(n.node, n.name), { node: n.node, nic: n.name, channel: n.pending!.channel, project: projectOf(n.node) }])),
    pendingByNode: group(nics.filter((n) => n.pending).map((n) => [n.node, n.name])),
    portsBySwitch: group([...rm.ports.values()].map((p) => [p.switch, p.name])),
    wiring: byKey([...rm.ports.values()].filter((p) => p.wire).map((p) => [nicId(p.wire!.node, p.wire!.nic), { switch: p.switch, port: p.name }])),
    portsInDoubt: sorted([...rm.ports].filter(([, p]) => p.doubt).map(([id]) => id)),
    portsOwingSetBack: sorted([...rm.ports].filter(([, p]) => p.setBackOwed).map(([id]) => id)),
    wired: {
      ports: [...rm.ports.values()].filter((p) => p.wire).length,
      withoutNic: sorted([...rm.ports.values()].filter((p) => p.wire && !rm.nics.has(nicId(p.wire.node, p.wire.nic))).map((p) => nicId(p.wire!.node, p.wire!.nic))),
    },
    networksByAccess: group([...rm.networks.values()].flatMap((w) => w.access.map((p) => [p, w.name] as [string, string]))),
    networksByOwner: group([...rm.networks.values()].filter((w) => w.owner !== 'admin').map((w) => [w.owner, w.name])),
    pooledVlans: byKey([...rm.networks.values()].filter((w) => w.pooled).map((w) => [w.vlan, w.name])),
    membersByProject: group([...rm.users.values()].flatMap((u) => u.projects.map((p) => [p, u.name] as [string, string]))),
    headnodesByProject: group([...rm.headnodes.values()].map((h) => [h.project, h.name])),
    hnicsByNetwork: nestedOf([...rm.headnodes.values()].flatMap((h) => h.hnics.filter((x) => x.network).map((x) =>
      [x.network!, nicId(h.name, x.name), h.project] as [string, string, string]))),
    nodeAnswers: byKey([...rm.nodes.values()].flatMap((n) => (['admin', 'member'] as const).map((v) => [`${n.name} ${v}`, JSON.stringify(nodeAnswerObject(rm, n, v))] as [string, string]))),
  };
}

/** Everything a reader sees: the entities, the indexes, the listing orders, the recent outcomes of the nics that exist. */
export function everything(rm: ReadModel) {
  const live = new Set([...rm.nics.values()].flatMap((n) => n.actions.map((a) => `${n.node}/${n.name}#${a.seq}@${a.acceptedAt}`)));
  return {
    entities: Object.fromEntries((['projects', 'nodes', 'nics', 'switches', 'ports', 'networks', 'users', 'headnodes'] as const)
      .map((k) => [k, byKey(rm[k] as Map<string, unknown>)])),
    indexes: indexes(rm),
    nicOrder: byKey([...rm.nodes.keys()].map((n) => [n, rm.nicsOf(n).map((x) => x.name)])),
    portOrder: byKey([...rm.switches.keys()].map((s) => [s, rm.portsOf(s).map((x) => x.name)])),
    recent: sorted(new Set(rm.recentOperations.newest().map((o) => `${o.node}/${o.nic}#${o.seq}@${o.acceptedAt}`).filter((k) => live.has(k)))),
  };
}
