/**
 * The kinds whose committed states make the read models, in the order a start commits them
 * (nodes before nics: an attachment is indexed with its node's project; switches before ports):
 * the rebuild from the journal (actors/recovery.ts) and the checkpoint (actors/checkpoint.ts).
 */
import type { World } from './world';

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
}

export function readModelKinds(world: World): ReadModelKind[] {
  const rm = world.rm;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const of = (reg: { kind: string; behavior: { apply(s: any, e: any, id: string): any }; recoverAll(each: (id: string, s: any) => void): Promise<void> }, states: ReadonlyMap<string, unknown>, commit: (id: string, s: any, prev: any) => void): ReadModelKind => ({
    kind: reg.kind, states, commit: (id, s, prev = null) => commit(id, s, prev),
    apply: (s, e, id) => reg.behavior.apply(s, e, id),
    recoverAll: (each) => reg.recoverAll(each),
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
