/**
 * Read models: the committed state of every entity, plus the indexes that lists and
 * cross-object checks need. Rebuilt from storage at start; updated by each actor right after
 * its commit and before it replies (docs/actors.md, rule 5). Nothing here is ever written by a route.
 * State objects are immutable: an actor's apply() returns new objects, so these maps may share them.
 */
import type { ProjectState } from './project/protocol';
import type { Lease, MaintenanceNotice, NodeState, ReleasePowerOff } from './node/protocol';
import type { NetworkAction, NicState } from './nic/protocol';
import type { PortState } from './port/protocol';
import type { SwitchState } from './switch/protocol';
import type { NetworkState } from './network/protocol';
import type { UserState } from './user/protocol';
import type { HeadnodeState } from './headnode/protocol';
import type { WebhookState } from './webhook/protocol';
import { nicId, portId, splitId } from './ids';

function toggle<V>(index: Map<string, Map<string, V>>, key: string, member: string, value: V, add: boolean): void {
  let m = index.get(key);
  if (add) {
    if (!m) index.set(key, (m = new Map()));
    m.set(member, value);
  } else if (m) {
    m.delete(member);
    if (!m.size) index.delete(key);
  }
}

/** Sets or removes one entry of an index by key. */
function indexed<V>(index: Map<string, V>, key: string, value: V | undefined): void {
  if (value === undefined) index.delete(key);
  else index.set(key, value);
}

/** Members kept as an array up to this many (a node's nics, a project's networks), as a Set beyond. */
const SMALL = 16;

/**
 * key → set of members, with empty sets removed. Most keys have a few members (a node's 4 nics
 * at 100,000 nodes): those are kept as a small array of exactly their length (concat and slice
 * allocate no spare room), replaced (never changed in place) on each add or delete, a fraction
 * of a Set's bytes; a key with more gets a Set.
 */
export class SetIndex {
  private readonly map = new Map<string, readonly string[] | Set<string>>();
  add(key: string, member: string): void {
    const s = this.map.get(key);
    if (!s) this.map.set(key, [member]);
    else if (!Array.isArray(s)) (s as Set<string>).add(member);
    else if (!s.includes(member)) this.map.set(key, s.length < SMALL ? s.concat(member) : new Set(s).add(member));
  }
  delete(key: string, member: string): void {
    const s = this.map.get(key);
    if (!s) return;
    if (!Array.isArray(s)) {
      if ((s as Set<string>).delete(member) && (s as Set<string>).size === 0) this.map.delete(key);
    } else {
      const i = s.indexOf(member);
      if (i < 0) return;
      if (s.length === 1) this.map.delete(key);
      else this.map.set(key, s.slice(0, i).concat(s.slice(i + 1)));
    }
  }
  get(key: string): ReadonlySet<string> {
    const s = this.map.get(key);
    return !s ? EMPTY : Array.isArray(s) ? new ArraySet(s) : (s as Set<string>);
  }
  has(key: string): boolean {
    return this.map.has(key);
  }
  keys(): IterableIterator<string> {
    return this.map.keys();
  }
  clear(): void {
    this.map.clear();
  }
}

/** A SetIndex's small array seen as a set (the array is never changed: an add or delete replaces it). */
class ArraySet implements ReadonlySet<string> {
  constructor(private readonly members: readonly string[]) {}
  get size(): number {
    return this.members.length;
  }
  has(member: string): boolean {
    return this.members.includes(member);
  }
  forEach(f: (value: string, key: string, set: ReadonlySet<string>) => void, thisArg?: unknown): void {
    for (const m of this.members) f.call(thisArg, m, m, this);
  }
  *entries(): IterableIterator<[string, string]> {
    for (const m of this.members) yield [m, m];
  }
  keys(): IterableIterator<string> {
    return this.members.values();
  }
  values(): IterableIterator<string> {
    return this.members.values();
  }
  [Symbol.iterator](): IterableIterator<string> {
    return this.members.values();
  }
}
const EMPTY: ReadonlySet<string> = new Set();

/** Oldest registration first; names break ties within a millisecond. */
const registrationOrder = (a: { registeredAt: number; name: string }, b: { registeredAt: number; name: string }) =>
  a.registeredAt - b.registeredAt || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * node → its nics' committed states, in registration order: show_node and the node lists read
 * them as they are, with no id built, no lookup in the map of every nic and no sort per read.
 * Each node's array is replaced on a commit of one of its nics, never changed in place (a
 * reader may hold it), and holds the states rather than their names: no more bytes than a
 * SetIndex of names.
 */
export class NicsByNode {
  private readonly map = new Map<string, readonly NicState[]>();
  set(next: NicState): void {
    const list = this.map.get(next.node);
    if (!list) {
      this.map.set(next.node, [next]);
      return;
    }
    const i = list.findIndex((n) => n.name === next.name);
    // A new nic registered after the others (every nic of a start, which come in order) goes last.
    if (i < 0 && registrationOrder(list[list.length - 1], next) < 0) {
      this.map.set(next.node, list.concat(next));
      return;
    }
    const out = i < 0 ? list.concat(next) : list.slice();
    if (i >= 0) out[i] = next;
    this.map.set(next.node, out.sort(registrationOrder));
  }
  delete(prev: NicState): void {
    const list = this.map.get(prev.node);
    if (!list) return;
    const out = list.filter((n) => n.name !== prev.name);
    if (out.length) this.map.set(prev.node, out);
    else this.map.delete(prev.node);
  }
  /** a node's nics, oldest registration first (the array is shared: never change it) */
  states(node: string): readonly NicState[] {
    return this.map.get(node) ?? NO_NICS;
  }
  /** a node's nics' names */
  get(node: string): ReadonlySet<string> {
    const list = this.map.get(node);
    return list ? new Set(list.map((n) => n.name)) : EMPTY;
  }
  keys(): IterableIterator<string> {
    return this.map.keys();
  }
  clear(): void {
    this.map.clear();
  }
}
const NO_NICS: readonly NicState[] = Object.freeze([]);

export interface PortRef { switch: string; port: string }

/**
 * nicId → the port wired to it. It holds the port's committed state (updated by each commit of
 * the port) rather than a PortRef of its own per wire: 400,000 objects fewer at 100,000 wired
 * nodes. A PortRef is made for each reader.
 */
export class WiringIndex {
  private readonly map = new Map<string, PortState>();
  get(nic: string): PortRef | undefined {
    const p = this.map.get(nic);
    return p && { switch: p.switch, port: p.name };
  }
  has(nic: string): boolean {
    return this.map.has(nic);
  }
  /** the wired port's committed state */
  port(nic: string): PortState | undefined {
    return this.map.get(nic);
  }
  set(nic: string, port: PortState): void {
    this.map.set(nic, port);
  }
  delete(nic: string): void {
    this.map.delete(nic);
  }
  get size(): number {
    return this.map.size;
  }
  keys(): IterableIterator<string> {
    return this.map.keys();
  }
  *[Symbol.iterator](): IterableIterator<[string, PortRef]> {
    for (const [nic, p] of this.map) yield [nic, { switch: p.switch, port: p.name }];
  }
  /** nicId → the wired port's committed state (no PortRef made: a start walks all of them) */
  ports(): IterableIterator<[string, PortState]> {
    return this.map.entries();
  }
  clear(): void {
    this.map.clear();
  }
}

/** A finished network operation, with its node and its nic's registration (its status id names both). */
export interface FinishedOperation extends NetworkAction { node: string; nicIncarnation?: string }

/**
 * The newest finished network operations of every nic (the dashboard's recent outcomes and
 * failures), at most `max`, newest first. Fed by commitNic: at start with each nic's recent
 * statuses, then with each outcome as it commits.
 */
export class RecentOperations {
  /** the action as it was added: a FinishedOperation is made (`op`) only for those kept and read */
  private list: { action: NetworkAction; node: string; nicIncarnation?: string; op?: FinishedOperation }[] = [];
  private sorted = true;
  /** what newest() answered, until the next add */
  private read?: FinishedOperation[];
  /**
   * Once a trim kept `max`, the oldest of them: an action not newer than it can never be among
   * the newest `max` (the sort is stable, so it would go after it), and is not kept at all. A
   * start adds every nic's finished operations (50,000 at 100,000 nodes), most of them older.
   */
  private floor?: NetworkAction;

  constructor(readonly max = 1000) {}

  add(node: string, action: NetworkAction, nicIncarnation?: string): void {
    if (this.floor && newestFirst(action, this.floor) >= 0) return;
    this.list.push({ action, node, nicIncarnation });
    this.sorted = false;
    this.read = undefined;
    if (this.list.length >= 2 * this.max) this.trim();
  }

  private trim(): void {
    this.list.sort((a, b) => newestFirst(a.action, b.action));
    if (this.list.length >= this.max) {
      this.list.length = this.max;
      this.floor = this.list[this.max - 1].action;
    }
    this.sorted = true;
  }

  clear(): void {
    this.list = [];
    this.sorted = true;
    this.read = undefined;
    this.floor = undefined;
  }

  newest(): readonly FinishedOperation[] {
    if (!this.sorted) this.trim();
    return (this.read ??= this.list.map((e) => (e.op ??= { ...e.action, node: e.node, nicIncarnation: e.nicIncarnation })));
  }
}

/** Does the port hold a configuration? */
export const configured = (p: PortState) => p.config.native !== null || p.config.tagged.length > 0;

/** Newest finished first, then newest accepted. */
const newestFirst = (a: Pick<NetworkAction, 'finishedAt' | 'acceptedAt'>, b: Pick<NetworkAction, 'finishedAt' | 'acceptedAt'>) =>
  (b.finishedAt ?? 0) - (a.finishedAt ?? 0) || b.acceptedAt - a.acceptedAt;

/** A completed attachment of a network to a node's nic. */
export interface Attachment { node: string; nic: string; channel: string; project: string }

export class ReadModel {
  readonly projects = new Map<string, ProjectState>();

  readonly nodes = new Map<string, NodeState>();
  readonly freeNodes = new Set<string>();
  readonly nodesByProject = new SetIndex();
  /** bumped on every node commit: lets list responses be cached until the next change */
  nodesVersion = 0;
  /** the tenant lifecycle (docs/lifecycle.md): node → its lease */
  readonly leases = new Map<string, Lease>();
  /** node → its release power-off, while pending or failed */
  readonly releasePowerOffs = new Map<string, ReleasePowerOff>();
  /** node in the maintenance pool → the notice of it (taken or not) */
  readonly maintenanceNotices = new Map<string, MaintenanceNotice>();

  /** nicId(node, nic) → the nic */
  readonly nics = new Map<string, NicState>();
  /** node → its nics, in registration order */
  readonly nicsByNode = new NicsByNode();
  /** network → nicId → completed attachment */
  readonly attachmentsByNetwork = new Map<string, Map<string, Attachment>>();
  /** network → nicId → accepted, not yet finished connect to it */
  readonly pendingByNetwork = new Map<string, Map<string, Attachment>>();
  /** nodes with a nic that has a pending operation → those nics' names */
  readonly pendingByNode = new SetIndex();
  /** the newest finished network operations */
  readonly recentOperations = new RecentOperations();

  readonly switches = new Map<string, SwitchState>();
  /** portId(switch, port) → the port */
  readonly ports = new Map<string, PortState>();
  /** switch → its ports' names */
  readonly portsBySwitch = new SetIndex();
  /** nicId(node, nic) → the port it is wired to */
  readonly wiring = new WiringIndex();
  /** ports with a wire: more than the wiring index's entries when some nic is wired to two ports */
  wiredPorts = 0;
  /** nicIds in the wiring index with no such nic (deleted while wired, its port not yet freed) */
  readonly wiredWithoutNic = new Set<string>();
  /** portIds of the ports holding a configuration */
  readonly configuredPorts = new Set<string>();
  // The last three name the few ports a start's port-record check looks at (actors/recovery.ts).

  readonly networks = new Map<string, NetworkState>();
  /** project → networks whose access list contains it */
  readonly networksByAccess = new SetIndex();
  /** project → networks it owns */
  readonly networksByOwner = new SetIndex();
  /** VLAN id reserved in the pool → network */
  readonly pooledVlans = new Map<number, string>();

  readonly users = new Map<string, UserState>();
  /** API token id → its user (actors/user/protocol.ts) */
  readonly tokenOwners = new Map<string, string>();
  readonly membersByProject = new SetIndex();

  readonly headnodes = new Map<string, HeadnodeState>();
  readonly headnodesByProject = new SetIndex();
  /** webhooks (their secrets too: never shown by the API) */
  readonly webhooks = new Map<string, WebhookState>();
  /** network → hnic key → the headnode's project */
  readonly hnicsByNetwork = new Map<string, Map<string, string>>();

  /** Empty every map and index (a start that gave up on a checkpoint half-way rebuilds from nothing). */
  clear(): void {
    for (const v of Object.values(this)) if (v instanceof Map || v instanceof Set || v instanceof SetIndex || v instanceof NicsByNode || v instanceof WiringIndex || v instanceof RecentOperations) v.clear();
    this.nodesVersion++;
    this.wiredPorts = 0;
  }

  commitProject(id: string, _prev: ProjectState | null, next: ProjectState | null): void {
    if (next) this.projects.set(id, next);
    else this.projects.delete(id);
  }

  commitNode(id: string, prev: NodeState | null, next: NodeState | null): void {
    this.nodesVersion++;
    if (prev?.project) this.nodesByProject.delete(prev.project, id);
    this.freeNodes.delete(id);
    indexed(this.leases, id, next?.lease);
    indexed(this.releasePowerOffs, id, next?.releasePowerOff);
    indexed(this.maintenanceNotices, id, next?.maintenance);
    if (next) {
      this.nodes.set(id, next);
      if (next.project) this.nodesByProject.add(next.project, id);
      else this.freeNodes.add(id);
    } else {
      this.nodes.delete(id);
    }
  }

  commitNic(id: string, prev: NicState | null, next: NicState | null): void {
    this.indexNic(id, prev, false);
    this.indexNic(id, next, true);
    if (next && !prev) {
      for (const a of next.actions) if (a.status !== 'PENDING') this.recentOperations.add(next.node, a, next.incarnation);
    } else if (next && prev?.pending && next.pending?.seq !== prev.pending.seq) {
      const done = next.actions.find((a) => a.seq === prev.pending!.seq);
      if (done && done.status !== 'PENDING') this.recentOperations.add(next.node, done, next.incarnation);
    }
    if (next) {
      this.nics.set(id, next);
      this.nicsByNode.set(next);
      if (!prev && this.wiredWithoutNic.size) this.wiredWithoutNic.delete(id);
    } else if (prev) {
      this.nics.delete(id);
      this.nicsByNode.delete(prev);
      if (this.wiring.has(id)) this.wiredWithoutNic.add(id);
    }
  }

  private indexNic(id: string, nic: NicState | null, add: boolean): void {
    if (!nic) return;
    // A nic carries networks or a pending connect only while its node is in a project, and
    // the node cannot change project meanwhile: the project read now is the attachment's.
    // (Looked up only for those: at 100,000 nodes most nics have neither.)
    const project = () => this.nodes.get(nic.node)?.project ?? '';
    for (const channel in nic.networks) {
      toggle(this.attachmentsByNetwork, nic.networks[channel], id, { node: nic.node, nic: nic.name, channel, project: project() }, add);
    }
    const p = nic.pending;
    if (p?.newNetwork) toggle(this.pendingByNetwork, p.newNetwork, id, { node: nic.node, nic: nic.name, channel: p.channel, project: project() }, add);
    if (p && add) this.pendingByNode.add(nic.node, nic.name);
    else if (!add) this.pendingByNode.delete(nic.node, nic.name);
  }

  pendingConnectsTo(network: string): Attachment[] {
    return [...(this.pendingByNetwork.get(network)?.values() ?? [])];
  }

  attachmentsOf(network: string): Attachment[] {
    return [...(this.attachmentsByNetwork.get(network)?.values() ?? [])];
  }

  /** The nics of a node, committed, in registration order (the same before and after a restart). */
  nicsOf(node: string): readonly NicState[] {
    return this.nicsByNode.states(node);
  }

  nic(node: string, nic: string): NicState | undefined {
    return this.nics.get(nicId(node, nic));
  }

  commitSwitch(id: string, _prev: SwitchState | null, next: SwitchState | null): void {
    if (next) this.switches.set(id, next);
    else this.switches.delete(id);
  }

  commitPort(id: string, prev: PortState | null, next: PortState | null): void {
    if (prev?.wire) {
      const nic = nicId(prev.wire.node, prev.wire.nic);
      this.wiring.delete(nic);
      this.wiredWithoutNic.delete(nic);
      this.wiredPorts--;
    }
    if (next?.wire) {
      const nic = nicId(next.wire.node, next.wire.nic);
      this.wiring.set(nic, next);
      if (!this.nics.has(nic)) this.wiredWithoutNic.add(nic);
      this.wiredPorts++;
    }
    if (next && configured(next)) this.configuredPorts.add(id);
    else if (prev && configured(prev)) this.configuredPorts.delete(id);
    if (next) {
      this.ports.set(id, next);
      this.portsBySwitch.add(next.switch, next.name);
    } else if (prev) {
      this.ports.delete(id);
      this.portsBySwitch.delete(prev.switch, prev.name);
    }
  }

  port(sw: string, port: string): PortState | undefined {
    return this.ports.get(portId(sw, port));
  }

  /** The ports of a switch, committed, in registration order (the same before and after a restart). */
  portsOf(sw: string): PortState[] {
    return [...this.portsBySwitch.get(sw)].map((port) => this.ports.get(portId(sw, port))!).sort(registrationOrder);
  }

  commitNetwork(id: string, prev: NetworkState | null, next: NetworkState | null): void {
    if (prev) {
      for (const p of prev.access) this.networksByAccess.delete(p, id);
      if (prev.owner !== 'admin') this.networksByOwner.delete(prev.owner, id);
      if (prev.pooled) this.pooledVlans.delete(prev.vlan);
    }
    if (next) {
      for (const p of next.access) this.networksByAccess.add(p, id);
      if (next.owner !== 'admin') this.networksByOwner.add(next.owner, id);
      if (next.pooled) this.pooledVlans.set(next.vlan, id);
      this.networks.set(id, next);
    } else {
      this.networks.delete(id);
    }
  }

  commitUser(id: string, prev: UserState | null, next: UserState | null): void {
    for (const p of prev?.projects ?? []) this.membersByProject.delete(p, id);
    for (const p of prev?.readerOf ?? []) this.membersByProject.delete(p, id);
    for (const p of next?.projects ?? []) this.membersByProject.add(p, id);
    for (const p of next?.readerOf ?? []) this.membersByProject.add(p, id);
    for (const t of prev?.tokens ?? []) this.tokenOwners.delete(t.id);
    for (const t of next?.tokens ?? []) this.tokenOwners.set(t.id, id);
    if (next) this.users.set(id, next);
    else this.users.delete(id);
  }

  commitHeadnode(id: string, prev: HeadnodeState | null, next: HeadnodeState | null): void {
    for (const h of prev?.hnics ?? []) if (h.network) toggle(this.hnicsByNetwork, h.network, nicId(id, h.name), prev!.project, false);
    for (const h of next?.hnics ?? []) if (h.network) toggle(this.hnicsByNetwork, h.network, nicId(id, h.name), next!.project, true);
    if (prev) this.headnodesByProject.delete(prev.project, id);
    if (next) {
      this.headnodesByProject.add(next.project, id);
      this.headnodes.set(id, next);
    } else {
      this.headnodes.delete(id);
    }
  }

  /** The headnodes whose hnics hold the network (one entry per hnic). */
  hnicsOn(network: string): string[] {
    return [...(this.hnicsByNetwork.get(network)?.keys() ?? [])].map((id) => splitId(id)[0]);
  }

  commitWebhook(id: string, _prev: WebhookState | null, next: WebhookState | null): void {
    if (next) this.webhooks.set(id, next);
    else this.webhooks.delete(id);
  }

  /** Projects of the headnodes whose hnics hold the network (one entry per hnic). */
  hnicProjectsOn(network: string): string[] {
    return [...(this.hnicsByNetwork.get(network)?.values() ?? [])];
  }

  /** Is `user` an admin or a member of `project`? */
  canAccessProject(user: string, project: string): boolean {
    const u = this.users.get(user);
    return !!u && (u.isAdmin || u.projects.includes(project));
  }
}
