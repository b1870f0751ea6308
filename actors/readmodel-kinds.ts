/**
 * The kinds whose committed states make the read models, in the order a start commits them
 * (nodes before nics: an attachment is indexed with its node's project; switches before ports):
 * the rebuild from the journal (actors/recovery.ts) and the checkpoint (actors/checkpoint.ts).
 */
import type { World } from './world';
import type { ReadModel } from './readmodel';
import type { NodeState } from './node/protocol';
import type { NetworkAction, NicState } from './nic/protocol';
import type { PortState } from './port/protocol';
import { EMPTY_CONFIG } from './port/protocol';
import { nicId, portId, splitId, unescapeName } from './ids';

export interface ReadModelKind {
  kind: string;
  /** the read model's map of this kind's committed states */
  states: ReadonlyMap<string, unknown>;
  /** the kind's pure apply (its behaviour's) */
  apply(state: unknown, event: unknown, id: string): unknown;
  /** commit a state to the read models: `prev` what they hold (null: nothing) */
  commit(id: string, state: unknown, prev?: unknown): void;
  /** rebuild every stored entity's state from the journal */
  recoverAll(each: (id: string, state: unknown) => void): Promise<void>;
  /**
   * Make a state just decoded (not yet seen by anyone) share what it repeats: the names the read
   * model holds already, and the empty values (a checkpoint's 906,000 states at 100,000 nodes
   * would otherwise each carry their own copies). What it says does not change. Returns the
   * state to commit: the same object, or (nics and ports) an equal one laid out compactly.
   */
  share?(id: string, state: unknown): unknown;
  /**
   * The state as a checkpoint writes it: nics and ports as an array of their fields' values
   * without what their id says (which `share` turns back into the same state), others as they are.
   */
  pack?(id: string, state: unknown): unknown;
  /**
   * A state rebuilt from the journal with its long strings (ids, MACs) copied out of the events
   * they came from: the journal's decoder gives strings of 13 characters or more as slices of
   * the text of their whole event, which each would keep alive (at 100,000 wired nodes, ~200 MiB
   * more heap after a rebuild than after a checkpoint's load).
   */
  ownText?(state: unknown): unknown;
}

/** A copy of a string that holds no larger one (V8 makes shorter slices as copies already). */
export const own = (s: string) => (typeof s === 'string' && s.length >= 13 ? (JSON.parse(JSON.stringify(s)) as string) : s);

/** `own` every string in an object of a few levels (an OBM's fields: a sealed password is an object). */
function ownAll(o: Record<string, unknown>, depth = 3): void {
  for (const k in o) {
    const v = o[k];
    if (typeof v === 'string') o[k] = own(v);
    else if (v && typeof v === 'object' && depth > 1) ownAll(v as Record<string, unknown>, depth - 1);
  }
}

const owning: Record<string, (s: any) => unknown> = {
  node: (s: NodeState) => {
    s.incarnation = own(s.incarnation);
    if (s.obm?.fields) ownAll(s.obm.fields as Record<string, unknown>);
    return s;
  },
  nic: (s: NicState) => {
    s.incarnation = own(s.incarnation);
    s.nodeIncarnation = own(s.nodeIncarnation);
    s.macaddr = own(s.macaddr);
    return s;
  },
};

/** The empty values decoded states share (states are never changed in place: applies copy). */
const EMPTY_NETWORKS: Record<string, string> = Object.freeze({}) as Record<string, string>;
const EMPTY_ACTIONS = Object.freeze([]) as unknown as NicState['actions'];

/** The fields of a nic's and a port's state, in the order their applies write them. */
const NIC_FIELDS = ['node', 'name', 'incarnation', 'nodeIncarnation', 'registeredAt', 'macaddr', 'networks', 'pending', 'lastSeq', 'actions'];
const PORT_FIELDS = ['switch', 'name', 'registeredAt', 'wire', 'config'];
const WIRE_FIELDS = ['node', 'nic'];

/** Has the object exactly these own enumerable fields, in this order? */
function fieldsAre(o: object, fields: readonly string[]): boolean {
  let i = 0;
  for (const k in o) if (k !== fields[i++]) return false;
  return i === fields.length;
}

/**
 * A nic's and a port's state as a checkpoint writes them, when their fields are exactly the
 * known ones in order (else the state as it is): an array of the values, without the node and
 * nic names (a port: switch and port names) its id holds, and a port's wire as the nic's id.
 * At 100,000 wired nodes that is 800,000 objects the decoder does not build field by field and
 * 2.4 million strings it does not decode (their shared copies are looked up instead). A nic's
 * empty networks and operations, and a port's empty configuration, are written as 0: a start
 * takes the shared empty values without decoding 1.2 million empty objects first.
 */
const packing: Record<string, (id: string, s: any) => unknown> = {
  nic: (id, s: NicState) => (fieldsAre(s, NIC_FIELDS) && nicId(s.node, s.name) === id
    ? [s.incarnation, s.nodeIncarnation, s.registeredAt, s.macaddr, isEmpty(s.networks) ? 0 : s.networks, s.pending, s.lastSeq, Array.isArray(s.actions) && !s.actions.length ? 0 : s.actions]
    : s),
  port: (id, s: PortState) => (fieldsAre(s, PORT_FIELDS) && portId(s.switch, s.name) === id && (!s.wire || fieldsAre(s.wire, WIRE_FIELDS))
    ? [s.registeredAt, s.wire && nicId(s.wire.node, s.wire.nic), isEmptyConfig(s.config) ? 0 : s.config]
    : s),
};

/**
 * Sharing of decoded states, per kind (nodes before nics and ports, switches before ports).
 * The checkpoint's decoder builds each object field by field (it keeps 4 fields in the object,
 * the others in an array beside it): nic and port states, 800,000 at 100,000 nodes, come as
 * arrays (`packing`) or are copied into object literals of their exact fields, which keep them
 * all in the object.
 */
function sharing(rm: ReadModel): Record<string, (id: string, s: any) => unknown> {
  const nodeName = (name: string) => rm.nodes.get(name)?.name ?? name;
  /** Names repeated across nodes (eth0) and switches (a model's port names): the first few thousand kept. */
  const common = (table: Map<string, string>) => (name: string) => {
    if (typeof name !== 'string') return name;
    const known = table.get(name);
    if (known !== undefined) return known;
    if (table.size < 4096) table.set(name, name);
    return name;
  };
  const nicName = common(new Map());
  const portName = common(new Map());
  /** An OBM's type and common fields (a site's first hosts would fill a shared table) */
  const obmText = common(new Map());
  /** an operation's type, channel, status and switch */
  const text = common(new Map());
  const networkName = common(new Map());
  const projectName = (name: string) => rm.projects.get(name)?.name ?? name;
  /** An id's escaped name (`gi1%2F0%2F3`) → the shared name: unescaped once per name. */
  const inId = (shared: (name: string) => string) => {
    const table = new Map<string, string>();
    return (escaped: string) => {
      let name = table.get(escaped);
      if (name !== undefined) return name;
      name = shared(unescapeName(escaped));
      if (table.size < 4096) table.set(escaped, name);
      return name;
    };
  };
  const portNameIn = inId(portName);
  const nicNameIn = inId(nicName);
  /**
   * The outer part of the last id read (`<node>` of `<node>/<nic>`, escaped) → what it named: a
   * checkpoint holds a node's nics, and a switch's ports, one after another, so most ids repeat
   * the one before, and a compare replaces a substring, its hash and a probe of a large map.
   */
  const lastOuter = <T>(find: (escaped: string) => T) => {
    let key: string | undefined;
    let found!: T;
    return (id: string, slash: number): T => {
      if (key !== undefined && slash === key.length && id.startsWith(key)) return found;
      key = id.slice(0, slash);
      return (found = find(key));
    };
  };
  /** An id's escaped node name → the node, or the name when the read model holds no such node. */
  const nodeIn = (escaped: string) => {
    const name = unescapeName(escaped);
    return rm.nodes.get(name) ?? name;
  };
  // One each for the nics' ids and the ports' wires: they follow different orders.
  const nicNode = lastOuter(nodeIn);
  const wireNode = lastOuter(nodeIn);
  const portSwitch = lastOuter((escaped) => {
    const name = unescapeName(escaped);
    return rm.switches.get(name)?.name ?? name;
  });
  return {
    // The node's name is its id: the map's key itself.
    node: (id, s: NodeState) => {
      if (s.name === id) s.name = id;
      if (s.obm) {
        s.obm.type = obmText(s.obm.type);
        const f = s.obm.fields as Record<string, unknown> | undefined;
        if (f) for (const k in f) if (typeof f[k] === 'string') f[k] = obmText(f[k] as string);
      }
      return s;
    },
    nic: (id, s: NicState | unknown[]) => {
      const packed = Array.isArray(s);
      let node: NodeState | string | undefined;
      if (Array.isArray(s)) {
        // Its id is `<node>/<nic>`, each escaped (actors/ids.ts): the first `/` divides them.
        const slash = id.indexOf('/');
        node = nicNode(id, slash);
        s = {
          node: typeof node === 'string' ? node : node.name, name: nicNameIn(id.slice(slash + 1)), incarnation: s[0] as string, nodeIncarnation: s[1] as string, registeredAt: s[2] as number, macaddr: s[3] as string,
          networks: s[4] === 0 ? EMPTY_NETWORKS : s[4] as NicState['networks'], pending: s[5] as NicState['pending'], lastSeq: s[6] as number,
          actions: s[7] === 0 ? EMPTY_ACTIONS : s[7] as NicState['actions'],
        };
      } else {
        node = rm.nodes.get(s.node);
        if (node) s.node = node.name;
        s.name = nicName(s.name);
      }
      if (typeof node === 'object' && s.nodeIncarnation === node.incarnation) s.nodeIncarnation = node.incarnation;
      if (isEmpty(s.networks)) s.networks = EMPTY_NETWORKS;
      else for (const ch in s.networks) s.networks[ch] = networkName(s.networks[ch]);
      if (Array.isArray(s.actions) && !s.actions.length) s.actions = EMPTY_ACTIONS;
      else if (Array.isArray(s.actions)) for (const a of s.actions) shareAction(a);
      if (s.pending) shareAction(s.pending);
      // A packed state is a literal of its exact fields already.
      if (packed || !fieldsAre(s, NIC_FIELDS)) return s;
      const nic: NicState = {
        node: s.node, name: s.name, incarnation: s.incarnation, nodeIncarnation: s.nodeIncarnation, registeredAt: s.registeredAt,
        macaddr: s.macaddr, networks: s.networks, pending: s.pending, lastSeq: s.lastSeq, actions: s.actions,
      };
      return nic;
    },
    port: (id, s: PortState | unknown[]) => {
      if (Array.isArray(s)) {
        // Its id is `<switch>/<port>`, each escaped (actors/ids.ts): the first `/` divides them.
        const slash = id.indexOf('/');
        const wired = s[1] as string | null;
        const wire = wired === null ? null : wireOf(wired);
        const config = s[2] as PortState['config'] | 0;
        const port: PortState = {
          switch: portSwitch(id, slash), name: portNameIn(id.slice(slash + 1)), registeredAt: s[0] as number, wire,
          config: config === 0 || isEmptyConfig(config) ? EMPTY_CONFIG : config,
        };
        return port;
      }
      s.switch = rm.switches.get(s.switch)?.name ?? s.switch;
      s.name = portName(s.name);
      if (s.wire && fieldsAre(s.wire, WIRE_FIELDS)) s.wire = { node: nodeName(s.wire.node), nic: nicName(s.wire.nic) };
      else if (s.wire) {
        s.wire.node = nodeName(s.wire.node);
        s.wire.nic = nicName(s.wire.nic);
      }
      if (isEmptyConfig(s.config)) s.config = EMPTY_CONFIG;
      if (!fieldsAre(s, PORT_FIELDS)) return s;
      const port: PortState = { switch: s.switch, name: s.name, registeredAt: s.registeredAt, wire: s.wire, config: s.config };
      return port;
    },
  };

  /**
   * A wire from its nic's id, with the names the read model holds (without a probe of every nic:
   * the nic may be gone, deleted while wired, and a start frees the port).
   */
  function wireOf(nic: string): PortState['wire'] {
    const slash = nic.indexOf('/');
    if (slash < 0) {
      const [node, name] = splitId(nic);
      return { node: nodeName(node), nic: nicName(name) };
    }
    const node = wireNode(nic, slash);
    return { node: typeof node === 'string' ? node : node.name, nic: nicNameIn(nic.slice(slash + 1)) };
  }

  function shareAction(a: NetworkAction): void {
    if (!a || typeof a !== 'object') return;
    a.nic = nicName(a.nic);
    a.type = text(a.type) as NetworkAction['type'];
    a.channel = text(a.channel);
    a.status = text(a.status) as NetworkAction['status'];
    if (typeof a.newNetwork === 'string') a.newNetwork = networkName(a.newNetwork);
    if (typeof a.oldNetwork === 'string') a.oldNetwork = networkName(a.oldNetwork);
    if (typeof a.project === 'string') a.project = projectName(a.project);
    a.switch = text(a.switch);
    a.port = portName(a.port);
  }
}

/** A port's configuration that carries nothing (as EMPTY_CONFIG). */
const isEmptyConfig = (c: PortState['config'] | undefined) => !!c && c.native === null && Array.isArray(c.tagged) && !c.tagged.length;

/** An object with no keys (its own or inherited enumerable ones): a state's empty `networks`. */
export function isEmpty(o: object | undefined): boolean {
  if (!o || typeof o !== 'object') return false;
  for (const _ in o) return false;
  return true;
}

export function readModelKinds(world: World): ReadModelKind[] {
  const rm = world.rm;
  const shares = sharing(rm);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const of = (reg: { kind: string; behavior: { apply(s: any, e: any, id: string): any }; recoverAll(each: (id: string, s: any) => void): Promise<void> }, states: ReadonlyMap<string, unknown>, commit: (id: string, s: any, prev: any) => void): ReadModelKind => ({
    kind: reg.kind, states, commit: (id, s, prev = null) => commit(id, s, prev),
    apply: (s, e, id) => reg.behavior.apply(s, e, id),
    recoverAll: (each) => reg.recoverAll(each),
    share: shares[reg.kind],
    pack: packing[reg.kind],
    ownText: owning[reg.kind],
  });
  return [
    of(world.projects, rm.projects, (id, s, prev) => rm.commitProject(id, prev, s)),
    of(world.nodes, rm.nodes, (id, s, prev) => rm.commitNode(id, prev, s)),
    of(world.nics, rm.nics, (id, s, prev) => rm.commitNic(id, prev, s)),
    of(world.switches, rm.switches, (id, s, prev) => rm.commitSwitch(id, prev, s)),
    of(world.ports, rm.ports, (id, s, prev) => rm.commitPort(id, prev, s)),
    of(world.networks, rm.networks, (id, s, prev) => rm.commitNetwork(id, prev, s)),
    of(world.users, rm.users, (id, s, prev) => rm.commitUser(id, prev, s)),
    of(world.headnodes, rm.headnodes, (id, s, prev) => rm.commitHeadnode(id, prev, s)),
    of(world.webhooks, rm.webhooks, (id, s, prev) => rm.commitWebhook(id, prev, s)),
  ];
}
