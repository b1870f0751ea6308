/**
 * Read models: the committed state of every entity, plus the indexes that lists and
 * cross-object checks need. Rebuilt from storage at start; updated by each actor right after
 * its commit and before it replies (docs/actors.md, rule 5). Nothing here is ever written by a route.
 * State objects are immutable: an actor's apply() returns new objects, so these maps may share them.
 */
import type { ProjectState } from './project/protocol';
import type { Lease, MaintenanceNotice, NodeState, ReleasePowerOff } from './node/protocol';
import type { NicState } from './nic/protocol';
import type { PortState } from './port/protocol';
import type { SwitchState } from './switch/protocol';
import type { NetworkState } from './network/protocol';
import type { UserState } from './user/protocol';
import type { HeadnodeState } from './headnode/protocol';
import type { WebhookState } from './webhook/protocol';
import { nicId, portId, splitId } from './ids';
import { ChildStates, nicIdOf, NicsByNode, NodeAnswers, portIdOf, PortsBySwitch, RecentOperations, registrationOrder, SetIndex, WiringIndex } from './readmodel-indexes';

export { configured, NicsByNode, NodeAnswers, PortsBySwitch, RecentOperations, SetIndex, WiringIndex } from './readmodel-indexes';
export type { FinishedOperation, NodeView, PortRef } from './readmodel-indexes';

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

/** A completed attachment of a network to a node's nic. */
export interface Attachment { node: string; nic: string; channel: string; project: string }

export class ReadModel {
  readonly projects = new Map<string, ProjectState>();

  readonly nodes = new Map<string, NodeState>();
  readonly freeNodes = new Set<string>();
  readonly nodesByProject = new SetIndex();
  /** bumped on every node commit: lets list responses be cached until the next change */
  nodesVersion = 0;
  /**
   * node → its show_node answers as sent, until a commit of it, of one of its nics or of a port
   * wired to it (a bound the service sets from HILT_ANSWER_CACHE_MIB: 64 MiB holds about 150,000
   * nodes' admin answers)
   */
  readonly nodeAnswers = new NodeAnswers(64 * 2 ** 20);
  /** the tenant lifecycle (docs/lifecycle.md): node → its lease */
  readonly leases = new Map<string, Lease>();
  /** node → its release power-off, while pending or failed */
  readonly releasePowerOffs = new Map<string, ReleasePowerOff>();
  /** node in the maintenance pool → the notice of it (taken or not) */
  readonly maintenanceNotices = new Map<string, MaintenanceNotice>();

  /** node → its nics, in registration order */
  readonly nicsByNode = new NicsByNode();
  /** nicId(node, nic) → the nic (read from nicsByNode) */
  readonly nics: ReadonlyMap<string, NicState> = new ChildStates(this.nicsByNode, nicIdOf);
  /** network → nicId → completed attachment */
  readonly attachmentsByNetwork = new Map<string, Map<string, Attachment>>();
  /** network → nicId → accepted, not yet finished connect to it */
  readonly pendingByNetwork = new Map<string, Map<string, Attachment>>();
  /** nodes with a nic that has a pending operation → those nics' names */
  readonly pendingByNode = new SetIndex();
  /** the newest finished network operations */
  readonly recentOperations = new RecentOperations();
  /**
   * node → the registration of it whose every operation status is in its nics' states (their
   * journals read once since the start said so: actors/nic/history.ts); a nic with operations
   * deleted takes its node out.
   */
  readonly completeStatuses = new Map<string, string>();
  /** nics with operations deleted since the start (a listing that read journals meanwhile proves nothing) */
  nicDeletions = 0;

  readonly switches = new Map<string, SwitchState>();
  /** switch → its ports */
  readonly portsBySwitch = new PortsBySwitch();
  /** portId(switch, port) → the port (read from portsBySwitch) */
  readonly ports: ReadonlyMap<string, PortState> = new ChildStates(this.portsBySwitch, portIdOf);
  /** a nic, by its node's name and its own → the port it is wired to */
  readonly wiring = new WiringIndex();
  /** ports with a wire: more than the wiring index's entries when some nic is wired to two ports */
  wiredPorts = 0;
  /**
   * nicId → the ports wired to it besides the one the wiring index holds (only in a store of an
   * earlier release, which could wire a nic to two ports): one of them takes the entry when that
   * port loses its wire, which the nic still has.
   */
  private readonly otherWires = new Map<string, Set<string>>();
  /** nicIds in the wiring index with no such nic (deleted while wired, its port not yet freed) */
  readonly wiredWithoutNic = new Set<string>();
  /** portIds of the ports in doubt: the switch may carry VLANs beyond their record (hardware/port-hardware.ts) */
  readonly portsInDoubt = new Set<string>();
  // The last two name the few ports a start sets back (actors/recovery.ts).
  /** portIds of the ports whose doubt an admin cleared by hand, their set-back not confirmed yet (docs/actors.md, "Ports in doubt") */
  readonly portsOwingSetBack = new Set<string>();

  readonly networks = new Map<string, NetworkState>();
  /** project → networks whose access list contains it */
  readonly networksByAccess = new SetIndex();
  /** project → networks it owns */
  readonly networksByOwner = new SetIndex();
  /** VLAN id reserved in the pool → network */
  readonly pooledVlans = new Map<number, string>();
  /** VLAN id an admin chose outside the pool → how many networks hold it (several may) */
  readonly unpooledVlans = new Map<number, number>();

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
    for (const v of Object.values(this)) if (v instanceof Map || v instanceof Set || v instanceof SetIndex || v instanceof NicsByNode || v instanceof PortsBySwitch || v instanceof WiringIndex || v instanceof RecentOperations || v instanceof NodeAnswers) v.clear();
    this.nodesVersion++;
    this.wiredPorts = 0;
    this.nicDeletions++;
  }

  commitProject(id: string, _prev: ProjectState | null, next: ProjectState | null): void {
    if (next) this.projects.set(id, next);
    else this.projects.delete(id);
  }

  commitNode(id: string, prev: NodeState | null, next: NodeState | null): void {
    this.nodesVersion++;
    this.nodeAnswers.forget(id);
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
      this.completeStatuses.delete(id);
    }
  }

  commitNic(id: string, prev: NicState | null, next: NicState | null): void {
    if (prev) this.nodeAnswers.forget(prev.node);
    if (next) this.nodeAnswers.forget(next.node);
    this.indexNic(id, prev, false);
    this.indexNic(id, next, true);
    if (next && !prev) {
      for (const a of next.actions) if (a.status !== 'PENDING') this.recentOperations.add(next.node, a, next.incarnation);
    } else if (next && prev?.pending && next.pending?.seq !== prev.pending.seq) {
      const done = next.actions.find((a) => a.seq === prev.pending!.seq);
      if (done && done.status !== 'PENDING') this.recentOperations.add(next.node, done, next.incarnation);
    }
    if (next) {
      this.nicsByNode.set(next);
      if (!prev && this.wiredWithoutNic.size) this.wiredWithoutNic.delete(id);
    } else if (prev) {
      this.nicsByNode.delete(prev);
      if (prev.actions.length || prev.pending) {
        this.completeStatuses.delete(prev.node);
        this.nicDeletions++;
      }
      if (this.wiring.has(prev.node, prev.name)) this.wiredWithoutNic.add(id);
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
    return this.nicsByNode.find(node, nic);
  }

  commitSwitch(id: string, _prev: SwitchState | null, next: SwitchState | null): void {
    if (next) this.switches.set(id, next);
    else this.switches.delete(id);
  }

  commitPort(id: string, prev: PortState | null, next: PortState | null): void {
    // By the node's name and the nic's, not a nic id made for the purpose: a start commits
    // 400,000 wired ports, and each id made and looked up cost a probe of the 400,000 nics.
    const stays = !!prev?.wire && !!next?.wire && prev.wire.node === next.wire.node && prev.wire.nic === next.wire.nic;
    if (stays) {
      const { node, nic } = next!.wire!;
      this.nodeAnswers.forget(node);
      if (this.indexes(node, nic, next!)) this.wiring.set(node, nic, next!);
      return this.commitPortRest(id, prev, next);
    }
    if (prev?.wire) {
      const { node, nic } = prev.wire;
      this.nodeAnswers.forget(node);
      this.wiredPorts--;
      if (!this.indexes(node, nic, prev)) this.dropOtherWire(nicId(node, nic), id);
      else {
        // A nic of an earlier release wired to another port as well: that port keeps the entry.
        const other = this.otherWires.size ? this.takeOtherWire(nicId(node, nic)) : undefined;
        if (other) this.wiring.set(node, nic, other);
        else {
          this.wiring.delete(node, nic);
          if (this.wiredWithoutNic.size) this.wiredWithoutNic.delete(nicId(node, nic));
        }
      }
    }
    if (next?.wire) {
      const { node, nic } = next.wire;
      this.nodeAnswers.forget(node);
      this.wiredPorts++;
      // A second wire (a store of an earlier release): the index holds the newest, the other waits.
      const held = this.wiring.port(node, nic);
      if (held) {
        const key = nicId(node, nic);
        let others = this.otherWires.get(key);
        if (!others) this.otherWires.set(key, (others = new Set()));
        others.add(portId(held.switch, held.name));
      }
      this.wiring.set(node, nic, next);
      if (!this.nicsByNode.states(node).some((x) => x.name === nic)) this.wiredWithoutNic.add(nicId(node, nic));
    }
    this.commitPortRest(id, prev, next);
  }

  /** Whether the wiring index's entry for the nic is this port. */
  private indexes(node: string, nic: string, port: PortState): boolean {
    const p = this.wiring.port(node, nic);
    return !!p && p.switch === port.switch && p.name === port.name;
  }

  /** Another port wired to the nic, no longer counted as another (its committed state). */
  private takeOtherWire(nic: string): PortState | undefined {
    const others = this.otherWires.get(nic);
    if (!others) return undefined;
    for (const id of others) {
      others.delete(id);
      if (!others.size) this.otherWires.delete(nic);
      return this.ports.get(id);
    }
    this.otherWires.delete(nic);
    return undefined;
  }

  private dropOtherWire(nic: string, port: string): void {
    const others = this.otherWires.get(nic);
    if (others?.delete(port) && !others.size) this.otherWires.delete(nic);
  }

  private commitPortRest(id: string, prev: PortState | null, next: PortState | null): void {
    if (next?.doubt) this.portsInDoubt.add(id);
    else if (prev?.doubt) this.portsInDoubt.delete(id);
    if (next?.setBackOwed) this.portsOwingSetBack.add(id);
    else if (prev?.setBackOwed) this.portsOwingSetBack.delete(id);
    if (next) this.portsBySwitch.set(next);
    else if (prev) this.portsBySwitch.delete(prev.switch, prev.name);
  }

  /** The ports in doubt that may carry `vlan` (a handful at most: the set-back of each is under way). */
  portsInDoubtWith(vlan: number): PortState[] {
    return [...this.portsInDoubt].flatMap((id) => {
      const p = this.ports.get(id);
      return p?.doubt?.vlans.includes(vlan) ? [p] : [];
    });
  }

  port(sw: string, port: string): PortState | undefined {
    return this.portsBySwitch.find(sw, port);
  }

  /** The ports of a switch, committed, in registration order (the same before and after a restart). */
  portsOf(sw: string): PortState[] {
    return [...this.portsBySwitch.states(sw)].sort(registrationOrder);
  }

  commitNetwork(id: string, prev: NetworkState | null, next: NetworkState | null): void {
    if (prev) {
      for (const p of prev.access) this.networksByAccess.delete(p, id);
      if (prev.owner !== 'admin') this.networksByOwner.delete(prev.owner, id);
      if (prev.pooled) this.pooledVlans.delete(prev.vlan);
      else {
        const n = (this.unpooledVlans.get(prev.vlan) ?? 1) - 1;
        if (n > 0) this.unpooledVlans.set(prev.vlan, n);
        else this.unpooledVlans.delete(prev.vlan);
      }
    }
    if (next) {
      for (const p of next.access) this.networksByAccess.add(p, id);
      if (next.owner !== 'admin') this.networksByOwner.add(next.owner, id);
      if (next.pooled) this.pooledVlans.set(next.vlan, id);
      else this.unpooledVlans.set(next.vlan, (this.unpooledVlans.get(next.vlan) ?? 0) + 1);
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
