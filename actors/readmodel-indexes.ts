/**
 * The read model's index structures (actors/readmodel.ts holds the read model itself): small
 * sets per key, each node's nics in registration order, the wiring, the newest finished
 * operations, and what a start's port-record check needs to know of a port.
 */
import type { NetworkAction, NicState } from './nic/protocol';
import type { PortState } from './port/protocol';
import { nicId, portId, splitId } from './ids';

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
export const registrationOrder = (a: { registeredAt: number; name: string }, b: { registeredAt: number; name: string }) =>
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
  private count = 0;
  set(next: NicState): void {
    const list = this.map.get(next.node);
    if (!list) {
      this.map.set(next.node, [next]);
      this.count++;
      return;
    }
    const i = list.findIndex((n) => n.name === next.name);
    if (i < 0) this.count++;
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
    if (out.length === list.length) return;
    this.count--;
    if (out.length) this.map.set(prev.node, out);
    else this.map.delete(prev.node);
  }
  /** the nic of a node, by its name */
  find(node: string, name: string): NicState | undefined {
    const list = this.map.get(node);
    if (!list) return undefined;
    for (const n of list) if (n.name === name) return n;
    return undefined;
  }
  /** every nic, node by node */
  *all(): IterableIterator<NicState> {
    for (const list of this.map.values()) yield* list;
  }
  /** nics */
  get size(): number {
    return this.count;
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
    this.count = 0;
  }
}
const NO_NICS: readonly NicState[] = Object.freeze([]);

/**
 * switch → its ports' committed states by name, in registration order of insertion: where a
 * port is found by its switch and name, and a switch's ports are listed. There is no map of
 * every port (ChildStates is the read model's view of them by id): at 100,000 wired nodes each
 * of a start's 400,000 ports was an insertion into a map of 400,000 ids, a probe among entries
 * spread over the heap, where one into its switch's few hundred stays in the cache.
 */
export class PortsBySwitch {
  private readonly map = new Map<string, Map<string, PortState>>();
  private count = 0;
  set(next: PortState): void {
    let ports = this.map.get(next.switch);
    if (!ports) this.map.set(next.switch, (ports = new Map()));
    if (!ports.has(next.name)) this.count++;
    ports.set(next.name, next);
  }
  delete(sw: string, name: string): void {
    const ports = this.map.get(sw);
    if (!ports?.delete(name)) return;
    this.count--;
    if (!ports.size) this.map.delete(sw);
  }
  /** a switch's port, by its name */
  find(sw: string, name: string): PortState | undefined {
    return this.map.get(sw)?.get(name);
  }
  /** a switch's ports' names */
  get(sw: string): ReadonlySet<string> {
    const ports = this.map.get(sw);
    return ports ? new Set(ports.keys()) : EMPTY;
  }
  has(sw: string): boolean {
    return this.map.has(sw);
  }
  /** the switches with a port */
  keys(): IterableIterator<string> {
    return this.map.keys();
  }
  /** a switch's ports */
  states(sw: string): Iterable<PortState> {
    return this.map.get(sw)?.values() ?? NO_PORTS;
  }
  /** every port, switch by switch */
  *all(): IterableIterator<PortState> {
    for (const ports of this.map.values()) yield* ports.values();
  }
  /** ports */
  get size(): number {
    return this.count;
  }
  clear(): void {
    this.map.clear();
    this.count = 0;
  }
}
const NO_PORTS: readonly PortState[] = Object.freeze([]);

/**
 * The states of a kind that lives inside another (a node's nics, a switch's ports) as one map by
 * id (`<outer>/<inner>`, actors/ids.ts), read from the index that holds them by their outer
 * name (NicsByNode, PortsBySwitch): one place for each state, and no map of every id to keep.
 * Iterated outer name by outer name; like a Map's, an iteration sees what changes while it goes.
 */
export class ChildStates<S extends { name: string }> implements ReadonlyMap<string, S> {
  constructor(
    private readonly index: { find(outer: string, inner: string): S | undefined; all(): IterableIterator<S>; readonly size: number },
    private readonly idOf: (s: S) => string,
  ) {}
  get(id: string): S | undefined {
    const slash = id.indexOf('/');
    if (slash < 0) return undefined;
    const [outer, inner] = splitId(id);
    const s = this.index.find(outer, inner);
    // Only the id the state's names make finds it (`a/b/c` or `a%2/c` split to names of another id).
    return s && (id.includes('%') || id.indexOf('/', slash + 1) >= 0) && this.idOf(s) !== id ? undefined : s;
  }
  has(id: string): boolean {
    return this.get(id) !== undefined;
  }
  get size(): number {
    return this.index.size;
  }
  *entries(): IterableIterator<[string, S]> {
    for (const s of this.index.all()) yield [this.idOf(s), s];
  }
  *keys(): IterableIterator<string> {
    for (const s of this.index.all()) yield this.idOf(s);
  }
  values(): IterableIterator<S> {
    return this.index.all();
  }
  forEach(f: (value: S, key: string, map: ReadonlyMap<string, S>) => void, thisArg?: unknown): void {
    for (const [id, s] of this.entries()) f.call(thisArg, s, id, this);
  }
  [Symbol.iterator](): IterableIterator<[string, S]> {
    return this.entries();
  }
}

/** A nic's id from its state. */
export const nicIdOf = (n: NicState) => nicId(n.node, n.name);
/** A port's id from its state. */
export const portIdOf = (p: PortState) => portId(p.switch, p.name);

export interface PortRef { switch: string; port: string }

/**
 * A nic → the port wired to it. It holds the port's committed state (updated by each commit of
 * the port) rather than a PortRef of its own per wire: 400,000 objects fewer at 100,000 wired
 * nodes. A PortRef is made for each reader.
 *
 * Kept per node: the node's name finds its few wires, side by side in one small array, where a
 * map keyed by nic id (a string made for each lookup) cost show_node at 100,000 wired nodes a
 * random probe of a 400,000-entry table for each of its nics, an eighth of its time.
 */
export class WiringIndex {
  /** node → [nic, its port's state, nic, its port's state, …] */
  private readonly byNode = new Map<string, (string | PortState)[]>();
  private count = 0;

  /** the wired port's committed state */
  port(node: string, nic: string): PortState | undefined {
    const wires = this.byNode.get(node);
    if (!wires) return undefined;
    for (let i = 0; i < wires.length; i += 2) if (wires[i] === nic) return wires[i + 1] as PortState;
    return undefined;
  }
  get(node: string, nic: string): PortRef | undefined {
    const p = this.port(node, nic);
    return p && { switch: p.switch, port: p.name };
  }
  has(node: string, nic: string): boolean {
    return this.port(node, nic) !== undefined;
  }
  set(node: string, nic: string, port: PortState): void {
    const wires = this.byNode.get(node);
    if (!wires) {
      this.byNode.set(node, [nic, port]);
      this.count++;
      return;
    }
    for (let i = 0; i < wires.length; i += 2) {
      if (wires[i] === nic) {
        wires[i + 1] = port;
        return;
      }
    }
    wires.push(nic, port);
    this.count++;
  }
  delete(node: string, nic: string): void {
    const wires = this.byNode.get(node);
    if (!wires) return;
    for (let i = 0; i < wires.length; i += 2) {
      if (wires[i] !== nic) continue;
      wires.splice(i, 2);
      if (!wires.length) this.byNode.delete(node);
      this.count--;
      return;
    }
  }
  /** nics wired */
  get size(): number {
    return this.count;
  }
  /** nic ids */
  *keys(): IterableIterator<string> {
    for (const [nic] of this.ports()) yield nic;
  }
  *[Symbol.iterator](): IterableIterator<[string, PortRef]> {
    for (const [nic, p] of this.ports()) yield [nic, { switch: p.switch, port: p.name }];
  }
  /** nic id → the wired port's committed state (no PortRef made) */
  *ports(): IterableIterator<[string, PortState]> {
    for (const [node, wires] of this.byNode) {
      for (let i = 0; i < wires.length; i += 2) yield [nicId(node, wires[i] as string), wires[i + 1] as PortState];
    }
  }
  clear(): void {
    this.byNode.clear();
    this.count = 0;
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

/** Which view of a node an answer is: an admin's shows the wiring, a project member's does not. */
export type NodeView = 'admin' | 'member';

/**
 * Each node's show_node answers, as the JSON text sent (src/routes/node-answer.ts), until a
 * commit changes what they show: the node, one of its nics, or a port wired to one of them.
 * Making the answer and its JSON was a third of a read's cost at 100,000 nodes (bench/README.md,
 * Issue 27, eleventh round). Bounded by `limit` characters (HILT_ANSWER_CACHE_MIB; 0 keeps
 * none): a set that would pass it empties the cache first, so memory stays bounded whatever is
 * read, at worst by one refill.
 */
export class NodeAnswers {
  private readonly byNode = new Map<string, { admin?: string; member?: string }>();
  private chars = 0;

  constructor(public limit: number) {}

  get(node: string, view: NodeView): string | undefined {
    return this.byNode.get(node)?.[view];
  }
  set(node: string, view: NodeView, text: string): void {
    if (text.length > this.limit) return;
    if (this.chars + text.length > this.limit) this.clear();
    let e = this.byNode.get(node);
    if (!e) this.byNode.set(node, (e = {}));
    this.chars += text.length - (e[view]?.length ?? 0);
    e[view] = text;
  }
  /** A commit changed something a node's answers show. */
  forget(node: string): void {
    if (!this.byNode.size) return; // the common case at a start: 906,000 commits, nothing cached
    const e = this.byNode.get(node);
    if (!e) return;
    this.chars -= (e.admin?.length ?? 0) + (e.member?.length ?? 0);
    this.byNode.delete(node);
  }
  get size(): number {
    return this.byNode.size;
  }
  clear(): void {
    this.byNode.clear();
    this.chars = 0;
  }
}
