/**
 * The actor world: the runtime, one registry per entity kind, the read models and the VLAN pool.
 * Ask order (never upward, so no cycles): project → node → switch; project → network;
 * project → user. See docs/actors.md.
 */
import { ActorRuntime, EntityRegistry, RuntimeOptions } from './runtime';
import { PersistenceEngine } from './persistence/engine';
import { ReadModel } from './readmodel';
import { VlanPool, VlanRange } from './network/pool';
import { projectBehavior } from './project/actor';
import { nodeBehavior } from './node/actor';
import { switchBehavior } from './switch/actor';
import { networkBehavior } from './network/actor';
import { userBehavior } from './user/actor';
import type { ProjectCommand, ProjectEvent, ProjectState } from './project/protocol';
import type { NodeCommand, NodeEvent, NodeState } from './node/protocol';
import type { SwitchCommand, SwitchEvent, SwitchState } from './switch/protocol';
import type { NetworkCommand, NetworkEvent, NetworkState } from './network/protocol';
import type { UserCommand, UserEvent, UserState } from './user/protocol';

export interface WorldOptions extends RuntimeOptions {
  vlanPool: VlanRange[];
}

export class World {
  readonly rm = new ReadModel();
  readonly runtime: ActorRuntime;
  readonly vlanPool: VlanPool;
  readonly projects: EntityRegistry<ProjectState, ProjectCommand, ProjectEvent>;
  readonly nodes: EntityRegistry<NodeState, NodeCommand, NodeEvent>;
  readonly switches: EntityRegistry<SwitchState, SwitchCommand, SwitchEvent>;
  readonly networks: EntityRegistry<NetworkState, NetworkCommand, NetworkEvent>;
  readonly users: EntityRegistry<UserState, UserCommand, UserEvent>;

  constructor(readonly engine: PersistenceEngine, opts: WorldOptions) {
    this.runtime = new ActorRuntime(engine, opts);
    this.vlanPool = new VlanPool(opts.vlanPool, this.rm);
    const rm = this.rm;
    this.projects = this.runtime.register(projectBehavior(this), (id, a, b) => rm.commitProject(id, a, b));
    this.nodes = this.runtime.register(nodeBehavior(this), (id, a, b) => rm.commitNode(id, a, b));
    this.switches = this.runtime.register(switchBehavior(), (id, a, b) => rm.commitSwitch(id, a, b));
    this.networks = this.runtime.register(networkBehavior(this), (id, a, b) => rm.commitNetwork(id, a, b));
    this.users = this.runtime.register(userBehavior(), (id, a, b) => rm.commitUser(id, a, b));
  }

  /** Rebuild every read model from the latest snapshot plus later events of each entity. */
  async rebuild(): Promise<void> {
    const commits: [EntityRegistry<any, any, any>, (id: string, s: any) => void][] = [
      [this.projects, (id, s) => this.rm.commitProject(id, null, s)],
      [this.nodes, (id, s) => this.rm.commitNode(id, null, s)],
      [this.switches, (id, s) => this.rm.commitSwitch(id, null, s)],
      [this.networks, (id, s) => this.rm.commitNetwork(id, null, s)],
      [this.users, (id, s) => this.rm.commitUser(id, null, s)],
    ];
    for (const [reg, commit] of commits) {
      for (const id of reg.storedIds()) {
        const state = await reg.recoverState(id);
        if (state) commit(id, state);
      }
    }
  }

  /** Headnodes arrive with issue 5; until then a project has none. */
  headnodesOfProject(_project: string): string[] {
    return [];
  }

  async close(): Promise<void> {
    await this.runtime.close();
  }
}
