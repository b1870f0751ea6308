/**
 * The composition root of the actor world: the runtime, one registry per entity kind, the read
 * models, the VLAN pool, the network reservations, the switch sessions and the runner of
 * network operations. Each behaviour gets only what it needs. Ask order (never upward, so no
 * cycles): project → node → nic → port; switch → port; project → network, user, headnode.
 * See docs/actors.md.
 */
import { ActorRuntime, Asker, EntityRegistry, KindView, RuntimeOptions, below } from './runtime';
import type { PersistenceEngine } from './persistence/engine';
import { ReadModel } from './readmodel';
import { PLAIN, type Credentials } from './credentials';
import { VlanPool, VlanRange } from './network/pool';
import { NetworkUseBook } from './network/uses';
import { SwitchSessions } from '../hardware/switch-sessions';
import { SwitchAudit } from '../hardware/drift-audit';
import { WiringCheck } from '../hardware/wiring';
import type { SwitchDriver, SwitchInfo } from '../drivers/switch/types';
import { projectBehavior } from './project/actor';
import { nodeBehavior } from './node/actor';
import { nicBehavior } from './nic/actor';
import { NetworkOperations, reportOperations } from '../hardware/network-operations';
import { NO_TELEMETRY } from './telemetry';
import { portBehavior } from './port/actor';
import { InactivePorts, PortHardware } from '../hardware/port-hardware';
import { switchBehavior } from './switch/actor';
import { networkBehavior } from './network/actor';
import { userBehavior } from './user/actor';
import { headnodeBehavior } from './headnode/actor';
import type { ProjectCommand, ProjectEvent, ProjectPublicCommand, ProjectReplies, ProjectState, ReleasePolicy } from './project/protocol';
import type { NodeCommand, NodeEvent, NodePublicCommand, NodeReplies, NodeState } from './node/protocol';
import type { NicCommand, NicEvent, NicReplies, NicState } from './nic/protocol';
import type { PortCommand, PortEvent, PortReplies, PortState } from './port/protocol';
import type { SwitchCommand, SwitchEvent, SwitchPublicCommand, SwitchReplies, SwitchState } from './switch/protocol';
import type { NetworkCommand, NetworkEvent, NetworkPublicCommand, NetworkReplies, NetworkState } from './network/protocol';
import type { UserCommand, UserEvent, UserPublicCommand, UserReplies, UserState } from './user/protocol';
import type { HeadnodeCommand, HeadnodeEvent, HeadnodePublicCommand, HeadnodeReplies, HeadnodeState } from './headnode/protocol';
import { webhookBehavior } from './webhook/actor';
import type { WebhookCommand, WebhookEvent, WebhookPublicCommand, WebhookReplies, WebhookState } from './webhook/protocol';

export interface WorldOptions extends RuntimeOptions {
  vlanPool: VlanRange[];
  /** driver secrets sealed at rest, opened for the drivers (actors/credentials.ts); none: kept as given (tests) */
  credentials?: Credentials;
  /** the driver of each switch type (none: every switch operation fails) */
  switchDriverFor?: (type: string) => SwitchDriver | undefined;
  /** bound on each switch call: its port change and, when it opens the session, the login */
  switchTimeoutMs?: number;
  /** does a switch type carry a tagged VLAN only beside a native one (its driver entry's `nativeFirst`)? */
  switchNativeFirst?: (type: string) => boolean;
  /** false once this process may no longer change hardware (the lease of a standby pair); absent: always */
  mayAct?: () => boolean;
  /** HILT_INACTIVE_PORTS (default `shutdown`) */
  inactivePorts?: InactivePorts;
  /** the first pause before a port in doubt is set back again (hardware/port-hardware.ts; default 1 s) */
  settleRetryMs?: number;
  /** HILT_WIRING_CONCURRENCY (default 8) */
  wiringConcurrency?: number;
  /** what project_detach_node does beyond leaving the project: the maintenance pool, the power-off (docs/lifecycle.md) */
  release?: ReleasePolicy;
}

/** Told of each committed change of a node (never during recovery): the tenant lifecycle's runners (src/lifecycle/), the consoles. */
export type NodeWatcher = (id: string, prev: NodeState | null, next: NodeState | null) => void;

type Kinds = 'projects' | 'nodes' | 'nics' | 'ports' | 'switches' | 'networks' | 'users' | 'headnodes' | 'webhooks';

/**
 * The world as the API's routes see it: the read models and the runtime as they are, and of each
 * kind its views and asks of its public commands only. Nics and ports take no command from a
 * route (they are reached through their node and switch), and no route can send a command meant
 * for an actor's corridor (`nic.actionFinished`, `port.apply`, `switch.recordHostKey`, …).
 */
export interface RouteWorld extends Omit<World, Kinds> {
  readonly projects: KindView & Asker<ProjectPublicCommand, ProjectReplies>;
  readonly nodes: KindView & Asker<NodePublicCommand, NodeReplies>;
  readonly nics: KindView;
  readonly ports: KindView;
  readonly switches: KindView & Asker<SwitchPublicCommand, SwitchReplies>;
  readonly networks: KindView & Asker<NetworkPublicCommand, NetworkReplies>;
  readonly users: KindView & Asker<UserPublicCommand, UserReplies>;
  readonly headnodes: KindView & Asker<HeadnodePublicCommand, HeadnodeReplies>;
  readonly webhooks: KindView & Asker<WebhookPublicCommand, WebhookReplies>;
}

export class World {
  readonly rm = new ReadModel();
  readonly runtime: ActorRuntime;
  readonly vlanPool: VlanPool;
  readonly uses = new NetworkUseBook();
  readonly sessions: SwitchSessions;
  readonly operations: NetworkOperations;
  /** the ports' hardware corridor (the port actors' calls to their switches) */
  readonly portHardware: PortHardware;
  /** the drift audit and repair of a switch's ports */
  readonly audit: SwitchAudit;
  /** wiring validation from the switches' own tables */
  readonly wiring: WiringCheck;
  readonly projects: EntityRegistry<ProjectState, ProjectCommand, ProjectEvent, ProjectReplies>;
  readonly nodes: EntityRegistry<NodeState, NodeCommand, NodeEvent, NodeReplies>;
  readonly nics: EntityRegistry<NicState, NicCommand, NicEvent, NicReplies>;
  readonly ports: EntityRegistry<PortState, PortCommand, PortEvent, PortReplies>;
  readonly switches: EntityRegistry<SwitchState, SwitchCommand, SwitchEvent, SwitchReplies>;
  readonly networks: EntityRegistry<NetworkState, NetworkCommand, NetworkEvent, NetworkReplies>;
  readonly users: EntityRegistry<UserState, UserCommand, UserEvent, UserReplies>;
  readonly headnodes: EntityRegistry<HeadnodeState, HeadnodeCommand, HeadnodeEvent, HeadnodeReplies>;
  /** driver and webhook secrets: sealed at rest, opened for the hardware corridor and the webhook delivery */
  readonly credentials: Credentials;
  /** subscriptions to the event stream (src/events/webhooks.ts delivers them) */
  readonly webhooks: EntityRegistry<WebhookState, WebhookCommand, WebhookEvent, WebhookReplies>;
  /** told of each node commit; a watcher only schedules work (it runs inside the actor's turn) */
  readonly nodeWatchers: NodeWatcher[] = [];
  /** told of each user commit (a membership, the admin flag, the user itself): the consoles' viewers are checked again */
  readonly userWatchers: ((id: string) => void)[] = [];
  /** told of each nic commit, by its node's name (e.g. its pending operation ended) */
  readonly nicWatchers: ((node: string) => void)[] = [];
  private closing = false;
  private closed?: Promise<void>;

  constructor(engine: PersistenceEngine, opts: WorldOptions) {
    const rm = this.rm;
    const uses = this.uses;
    const credentials = opts.credentials ?? PLAIN;
    this.credentials = credentials;
    this.runtime = new ActorRuntime(engine, opts);
    const rt = this.runtime;
    const telemetry = opts.telemetry ?? NO_TELEMETRY;
    // The sessions read a switch's recorded host key from the committed view and have a
    // first-seen one recorded by the switch actor (they are not an actor: the ask goes down).
    this.sessions = new SwitchSessions(opts.switchDriverFor ?? (() => undefined), opts.switchTimeoutMs ?? 30_000, {
      recorded: (name) => rm.switches.get(name)?.hostKey,
      record: (name, fingerprint) => this.switches.ask(name, { type: 'switch.recordHostKey', by: 'switch', fingerprint }),
    }, telemetry, opts.mayAct);
    this.vlanPool = new VlanPool(opts.vlanPool, rm);

    const switchInfo = (name: string): SwitchInfo | undefined => {
      const sw = rm.switches.get(name);
      // The one place a switch's secrets are opened: for its driver's session.
      return sw && { name: sw.name, type: sw.type, fields: credentials.open(sw.fields) };
    };

    // Registered from the bottom of the ask order up: each behaviour gets the registries below it.
    const hardware = new PortHardware({
      sessions: this.sessions,
      switchInfo,
      operationPending: (wire) => !!rm.nic(wire.node, wire.nic)?.pending,
      record: (id, config, wire) => this.ports.ask(id, { type: 'port.configured', by: 'switch', config, wire }),
      stopping: () => this.closing,
      doubt: (id, vlans) => this.ports.ask(id, { type: 'port.doubt', by: 'switch', vlans }),
      settled: (id, forgets) => this.ports.ask(id, { type: 'port.settled', by: 'switch', forgets }),
      settle: (id) => this.ports.ask(id, { type: 'port.settle', by: 'switch' }, { hardware: true }),
      owesSetBack: (id) => {
        const p = rm.ports.get(id);
        return !!p?.doubt || !!p?.setBackOwed;
      },
      committed: (id) => rm.ports.get(id),
      settleRetryMs: opts.settleRetryMs,
      inactivePorts: opts.inactivePorts,
    });
    this.portHardware = hardware;
    this.ports = rt.register(portBehavior({ hardware }), (id, a, b) => rm.commitPort(id, a, b));
    const nativeFirst = (name: string) => {
      const sw = rm.switches.get(name);
      return !!sw && !!opts.switchNativeFirst?.(sw.type);
    };
    this.nics = rt.register(nicBehavior({ rm, uses, ports: below(this.ports), handOn: (node) => this.operations.handOn(node), nativeFirst }),
      (id, a, b) => {
        rm.commitNic(id, a, b);
        reportOperations(a, b, telemetry);
        const node = (b ?? a)?.node;
        if (node !== undefined) for (const w of this.nicWatchers) w(node);
      });
    this.operations = new NetworkOperations({ rm, nics: this.nics, ports: this.ports, mayAct: opts.mayAct });
    this.audit = new SwitchAudit({ rm, ports: this.ports, sessions: this.sessions, switchInfo });
    this.wiring = new WiringCheck({ rm, sessions: this.sessions, switchInfo, inactivePorts: opts.inactivePorts, concurrency: opts.wiringConcurrency });
    this.nodes = rt.register(nodeBehavior({ rm, nics: below(this.nics), credentials }), (id, a, b) => {
      rm.commitNode(id, a, b);
      for (const w of this.nodeWatchers) w(id, a, b);
    });
    this.switches = rt.register(switchBehavior({ rm, ports: below(this.ports), credentials }), (id, a, b) => rm.commitSwitch(id, a, b));
    this.networks = rt.register(networkBehavior({ rm, uses, vlanPool: this.vlanPool }), (id, a, b) => rm.commitNetwork(id, a, b));
    this.users = rt.register(userBehavior(), (id, a, b) => {
      rm.commitUser(id, a, b);
      for (const w of this.userWatchers) w(id);
    });
    this.headnodes = rt.register(headnodeBehavior({ rm, uses }), (id, a, b) => rm.commitHeadnode(id, a, b));
    this.webhooks = rt.register(webhookBehavior(credentials), (id, a, b) => rm.commitWebhook(id, a, b));
    this.projects = rt.register(
      projectBehavior({ rm, nodes: below(this.nodes), networks: below(this.networks), users: below(this.users), headnodes: below(this.headnodes), release: opts.release }),
      (id, a, b) => rm.commitProject(id, a, b),
    );
  }

  close(): Promise<void> {
    this.closing = true;
    this.operations.close();
    this.portHardware.close();
    return (this.closed ??= this.runtime.close());
  }
}
