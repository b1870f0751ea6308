/**
 * The kinds whose committed states make the read models, in the order a start commits them
 * (nodes before nics: an attachment is indexed with its node's project; switches before ports):
 * the rebuild from the journal (actors/recovery.ts) and the checkpoint (actors/checkpoint.ts).
 */
import type { World } from './world';
import type { ReadModel } from './readmodel';
import type { NodeState } from './node/protocol';
import type { NicState } from './nic/protocol';
import type { PortState } from './port/protocol';
import { EMPTY_CONFIG } from './port/protocol';

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
   * would otherwise each carry their own copies). What it says does not change.
   */
  share?(id: string, state: unknown): void;
}

/** The empty values decoded states share (states are never changed in place: applies copy). */
const EMPTY_NETWORKS: Record<string, string> = Object.freeze({}) as Record<string, string>;
const EMPTY_ACTIONS = Object.freeze([]) as unknown as NicState['actions'];

/** Sharing of decoded states, per kind (nodes before nics and ports, switches before ports). */
function sharing(rm: ReadModel): Record<string, (id: string, s: any) => void> {
  const nodeName = (name: string) => rm.nodes.get(name)?.name ?? name;
  /** Names repeated across nodes (eth0) and switches (a model's port names): the first few thousand kept. */
  const common = (table: Map<string, string>) => (name: string) => {
    const known = table.get(name);
    if (known !== undefined) return known;
    if (table.size < 4096) table.set(name, name);
    return name;
  };
  const nicName = common(new Map());
  const portName = common(new Map());
  return {
    // The node's name is its id: the map's key itself.
    node: (id, s: NodeState) => { if (s.name === id) s.name = id; },
    nic: (_id, s: NicState) => {
      const node = rm.nodes.get(s.node);
      if (node) {
        s.node = node.name;
        if (s.nodeIncarnation === node.incarnation) s.nodeIncarnation = node.incarnation;
      }
      s.name = nicName(s.name);
      if (isEmpty(s.networks)) s.networks = EMPTY_NETWORKS;
      if (Array.isArray(s.actions) && !s.actions.length) s.actions = EMPTY_ACTIONS;
    },
    port: (_id, s: PortState) => {
      s.switch = rm.switches.get(s.switch)?.name ?? s.switch;
      s.name = portName(s.name);
      if (s.wire) {
        s.wire.node = nodeName(s.wire.node);
        s.wire.nic = nicName(s.wire.nic);
      }
      if (s.config && s.config.native === null && Array.isArray(s.config.tagged) && !s.config.tagged.length) s.config = EMPTY_CONFIG;
    },
  };
}

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
