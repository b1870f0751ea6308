/**
 * The actor world: the runtime, one registry per entity kind, the read models and the VLAN pool.
 * Ask order (never upward, so no cycles): project → node → switch; project → network;
 * project → user; project → headnode. See docs/actors.md.
 */
import { ActorRuntime, EntityRegistry, RuntimeOptions } from './runtime';
import { PersistenceEngine } from './persistence/engine';
import { ReadModel } from './readmodel';
import { VlanPool, VlanRange } from './network/pool';
import { NetworkUseBook } from './network/uses';
import { SwitchSessions, PortWork } from './switch/sessions';
import type { SwitchDriver, SwitchSession } from '../drivers/switch/types';
import type { NetworkAction } from './node/protocol';
import { projectBehavior } from './project/actor';
import { nodeBehavior } from './node/actor';
import { switchBehavior } from './switch/actor';
import { networkBehavior } from './network/actor';
import { userBehavior } from './user/actor';
import { headnodeBehavior } from './headnode/actor';
import type { ProjectCommand, ProjectEvent, ProjectState } from './project/protocol';
import type { NodeCommand, NodeEvent, NodeState } from './node/protocol';
import type { SwitchCommand, SwitchEvent, SwitchState } from './switch/protocol';
import type { NetworkCommand, NetworkEvent, NetworkState } from './network/protocol';
import type { UserCommand, UserEvent, UserState } from './user/protocol';
import type { HeadnodeCommand, HeadnodeEvent, HeadnodeState } from './headnode/protocol';
import { own } from './own';

export interface WorldOptions extends RuntimeOptions {
  vlanPool: VlanRange[];
  /** the driver of each switch type (none: every switch operation fails) */
  switchDriverFor?: (type: string) => SwitchDriver | undefined;
  /** bound on each switch call: its port change and, when it opens the session, the login */
  switchTimeoutMs?: number;
}

/** A port's whole VLAN configuration. */
export interface PortConfig { native: number | null; tagged: number[] }

/** Reset the port, then set exactly `config`: repairs drift (e.g. a rebooted switch). */
async function applyConfig(s: SwitchSession, port: string, config: PortConfig): Promise<void> {
  await s.resetPort(port);
  if (config.native !== null) await s.setNative(port, config.native);
  for (const v of config.tagged) await s.addTagged(port, v);
}

/** The driver calls that carry out one action on its port. */
function portWork(a: NetworkAction): PortWork {
  const native = a.channel === 'vlan/native';
  return async (s) => {
    if (a.type === 'revert_port') return s.resetPort(a.port);
    if (a.type === 'reapply_port') return applyConfig(s, a.port, a.config!);
    const vlan = a.vlan!;
    if (a.newNetwork) return native ? s.setNative(a.port, vlan) : s.addTagged(a.port, vlan);
    return native ? s.removeNative(a.port) : s.removeTagged(a.port, vlan);
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class World {
  readonly rm = new ReadModel();
  readonly runtime: ActorRuntime;
  readonly vlanPool: VlanPool;
  readonly projects: EntityRegistry<ProjectState, ProjectCommand, ProjectEvent>;
  readonly nodes: EntityRegistry<NodeState, NodeCommand, NodeEvent>;
  readonly switches: EntityRegistry<SwitchState, SwitchCommand, SwitchEvent>;
  readonly networks: EntityRegistry<NetworkState, NetworkCommand, NetworkEvent>;
  readonly users: EntityRegistry<UserState, UserCommand, UserEvent>;
  readonly headnodes: EntityRegistry<HeadnodeState, HeadnodeCommand, HeadnodeEvent>;
  readonly uses = new NetworkUseBook();
  readonly sessions: SwitchSessions;
  /** nodes whose oldest pending action is with a switch now */
  private readonly inFlight = new Set<string>();
  private closing = false;

  constructor(readonly engine: PersistenceEngine, opts: WorldOptions) {
    this.runtime = new ActorRuntime(engine, opts);
    this.sessions = new SwitchSessions(opts.switchDriverFor ?? (() => undefined), opts.switchTimeoutMs ?? 30_000);
    this.vlanPool = new VlanPool(opts.vlanPool, this.rm);
    const rm = this.rm;
    this.projects = this.runtime.register(projectBehavior(this), (id, a, b) => rm.commitProject(id, a, b));
    this.nodes = this.runtime.register(nodeBehavior(this), (id, a, b) => rm.commitNode(id, a, b));
    this.switches = this.runtime.register(switchBehavior(), (id, a, b) => rm.commitSwitch(id, a, b));
    this.networks = this.runtime.register(networkBehavior(this), (id, a, b) => rm.commitNetwork(id, a, b));
    this.users = this.runtime.register(userBehavior(), (id, a, b) => rm.commitUser(id, a, b));
    this.headnodes = this.runtime.register(headnodeBehavior(this), (id, a, b) => rm.commitHeadnode(id, a, b));
  }

  /** Rebuild every read model from the latest snapshot plus later events of each entity. */
  async rebuild(): Promise<void> {
    const commits: [EntityRegistry<any, any, any>, (id: string, s: any) => void][] = [
      [this.projects, (id, s) => this.rm.commitProject(id, null, s)],
      [this.nodes, (id, s) => this.rm.commitNode(id, null, s)],
      [this.switches, (id, s) => this.rm.commitSwitch(id, null, s)],
      [this.networks, (id, s) => this.rm.commitNetwork(id, null, s)],
      [this.users, (id, s) => this.rm.commitUser(id, null, s)],
      [this.headnodes, (id, s) => this.rm.commitHeadnode(id, null, s)],
    ];
    for (const [reg, commit] of commits) {
      for (const id of reg.storedIds()) {
        const state = await reg.recoverState(id);
        if (state) commit(id, state);
      }
    }
  }

  /**
   * Hand the node's oldest pending action to its switch, unless one is already there: actions
   * of one node are applied in the order they were accepted, even across switches. The
   * outcome comes back to the node actor as a message, which pumps again.
   */
  pumpActions(node: string): void {
    if (this.inFlight.has(node) || this.closing) return;
    const state = this.rm.nodes.get(node);
    const pending = state && Object.values(state.nics).map((n) => n.pending).filter((a): a is NetworkAction => !!a);
    if (!pending?.length) return;
    const action = pending.reduce((a, b) => (a.seq < b.seq ? a : b));
    this.inFlight.add(node);
    void this.execute(node, action)
      .then((error) => this.recordOutcome(node, action.seq, error))
      .then((recorded) => {
        this.inFlight.delete(node);
        // Only once the outcome is committed may the node's next action go. Not recorded
        // (shutting down): the action stays PENDING in LMDB and is resumed at the next start.
        if (recorded) this.pumpActions(node);
      });
  }

  /**
   * Apply the action on its switch; null when done, else the reason. A failed or timed-out
   * operation may have changed the port all the same, so the port is then set back to what
   * the service holds for the nic (its networks did not change).
   */
  private async execute(node: string, action: NetworkAction): Promise<string | null> {
    const sw = this.rm.switches.get(action.switch);
    if (!sw) return `switch ${action.switch} no longer exists`;
    const info = { name: sw.name, type: sw.type, fields: sw.fields };
    try {
      await this.sessions.submit(info, portWork(action));
      return null;
    } catch (err) {
      const config = this.portConfig(node, action.nic);
      const restored = await this.sessions.submit(info, (s) => applyConfig(s, action.port, config)).then(
        () => 'the port was set back to the configuration the service holds',
        (e: Error) => `setting the port back failed too (${e.message}); an admin can re-apply it (POST /admin/node/${node}/nic/${action.nic}/reapply)`,
      );
      return `${(err as Error).message}; ${restored}`;
    }
  }

  /** Commit the outcome; retried with backoff, since a lost outcome would stall the node. */
  private async recordOutcome(node: string, seq: number, error: string | null): Promise<boolean> {
    for (let attempt = 0; !this.closing; attempt++) {
      try {
        await this.nodes.ask(node, { type: 'node.actionFinished', by: 'switch', seq, error });
        return true;
      } catch {
        await sleep(Math.min(5_000, 50 * 2 ** attempt));
      }
    }
    return false;
  }

  /** The VLANs a nic's committed networks put on its port. */
  portConfig(node: string, nic: string): PortConfig {
    const config: PortConfig = { native: null, tagged: [] };
    for (const [channel, network] of Object.entries(own(this.rm.nodes.get(node)?.nics ?? {}, nic)?.networks ?? {})) {
      const vlan = this.rm.networks.get(network)?.vlan;
      if (vlan === undefined) continue;
      if (channel === 'vlan/native') config.native = vlan;
      else config.tagged.push(vlan);
    }
    config.tagged.sort((a, b) => a - b);
    return config;
  }

  /** After a start: resume every action that was pending (driver operations are idempotent). */
  resumeActions(): void {
    for (const node of this.rm.nodesWithPending) this.pumpActions(node);
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.runtime.close();
  }
}
