/**
 * Brings stored data to the current format, once, durably and idempotently, before the service
 * rebuilds its read models.
 *
 * Format 1 (until nics and switch ports became actors): a node actor held its nics, their
 * networks and operations; a switch actor held its ports and their wiring. Format 2: each nic
 * (`nic:<node>/<nic>`) and each port (`port:<switch>/<port>`) is an actor of its own.
 *
 * The upgrade copies, for each node, the events about its nics from the node's journal into the
 * nics' journals (their time and acting user kept, so every status and the audit trail stay),
 * and for each switch its port events into the ports' journals, adding each wired port's
 * configuration: the VLANs of its nic's networks, from which format 1 derived it. Old journals
 * are left as they are. Each entity is upgraded in one atomic write that ends with a marker
 * event (NodeUpgraded, SwitchUpgraded) on its own key, so an interrupted upgrade goes on where
 * it stopped; the format record (`meta:format`) is written last.
 */
import type { Stamp } from '../runtime';
import type { PersistenceEngine, PersistedEvent } from './engine';
import { nicId, portId } from '../ids';
import type { LegacyNodeEvent, NodeEvent } from '../node/protocol';
import type { NicEvent, NicState } from '../nic/protocol';
import type { NetworkEvent, NetworkState } from '../network/protocol';
import type { NodeState } from '../node/protocol';
import type { PortState } from '../port/protocol';
import type { SwitchState } from '../switch/protocol';
import type { PortConfig, PortEvent } from '../port/protocol';
import { configFor } from '../port/config';
import type { LegacySwitchEvent, SwitchEvent } from '../switch/protocol';

const FORMAT_KEY = 'meta:format';
export const CURRENT_FORMAT = 2;

export interface UpgradeSummary { from: number; to: number; nodes: number; nics: number; switches: number; ports: number; ms: number }

type Stamped<E> = E & Stamp;

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** The format of the stored data: 0 for an empty store, 1 for data written before the format was recorded. */
async function storedFormat(engine: PersistenceEngine): Promise<number> {
  let last: unknown;
  for await (const e of engine.journal(FORMAT_KEY, 1)) last = e.data;
  if (last) return (last as { version: number }).version;
  for await (const _key of engine.keys('')) return 1;
  return 0;
}

/** A key's state, replayed from all its events with the current behaviour. */
async function replay<S>(engine: PersistenceEngine, behavior: { apply(state: S | null, event: never, id: string): S | null }, key: string, id: string): Promise<S | null> {
  let state: S | null = null;
  for await (const e of engine.events(key)) state = behavior.apply(state, e.data as never, id);
  return state;
}

/** Events for a key, numbered after its stored head. */
async function append(engine: PersistenceEngine, key: string, events: readonly (Stamp & { type: string })[], out: PersistedEvent[]): Promise<void> {
  let seq = await engine.head(key);
  for (const data of events) out.push({ key, sequenceNumber: ++seq, data, tags: [], createdAt: data.at ?? Date.now() });
}

/** How a kind's events are applied (its behaviour's pure apply). */
interface Replay<S, E> { apply(state: S | null, event: E & Stamp, id: string): S | null }

/**
 * What the upgrade reads stored data with: the engine, and the apply of each kind it replays
 * (the composition root, actors/world.ts, gives its behaviours': the upgrade does not build a world).
 */
export interface UpgradeSource {
  engine: PersistenceEngine;
  nodes: { behavior: Replay<NodeState, NodeEvent> };
  nics: { behavior: Replay<NicState, NicEvent> };
  switches: { behavior: Replay<SwitchState, SwitchEvent> };
  ports: { behavior: Replay<PortState, PortEvent> };
  networks: { behavior: Replay<NetworkState, NetworkEvent> };
}

export async function upgradeStorage(world: UpgradeSource): Promise<UpgradeSummary | null> {
  const engine = world.engine;
  const from = await storedFormat(engine);
  if (from > CURRENT_FORMAT) throw new Error(`the stored data has format ${from}; this release reads format ${CURRENT_FORMAT} and older`);
  if (from === CURRENT_FORMAT) return null;
  const started = Date.now();
  const summary: UpgradeSummary = { from, to: CURRENT_FORMAT, nodes: 0, nics: 0, switches: 0, ports: 0, ms: 0 };
  if (from === 1) {
    for (const key of await all(engine.keys('node:'))) await upgradeNode(world, key, summary);
    for (const key of await all(engine.keys('switch:'))) await upgradeSwitch(world, key, summary);
  }
  const at = Date.now();
  await engine.persist([{
    key: FORMAT_KEY, sequenceNumber: (await engine.head(FORMAT_KEY)) + 1, tags: [], createdAt: at,
    data: { type: 'FormatUpgraded', version: CURRENT_FORMAT, by: 'upgrade', at },
  }]);
  summary.ms = Date.now() - started;
  // A new, empty store has nothing to report.
  return from === 0 ? null : summary;
}

/** Copy a node's nic events into the nics' own journals, then mark the node upgraded. */
async function upgradeNode(world: UpgradeSource, key: string, summary: UpgradeSummary): Promise<void> {
  const engine = world.engine;
  const node = key.slice('node:'.length);
  const events = await all(engine.events(key));
  if (events.some((e) => (e.data as NodeEvent).type === 'NodeUpgraded')) return;

  const byNic = new Map<string, Stamped<NicEvent>[]>();
  const push = (nic: string, e: Stamped<NicEvent>) => {
    let list = byNic.get(nic);
    if (!list) byNic.set(nic, (list = []));
    list.push(e);
  };
  let nodeIncarnation = '';
  /** operation number → its nic, per registration of the node (numbers restart with each) */
  let nicOfSeq = new Map<number, string>();
  /** nic name → the id of its current registration */
  const nicIncarnations = new Map<string, string>();
  let state = null;
  for (const e of events) {
    const d = e.data as Stamped<NodeEvent>;
    state = world.nodes.behavior.apply(state, d, node);
    const stamp = { by: d.by, at: d.at ?? e.createdAt };
    const legacy = d as Stamped<LegacyNodeEvent>;
    switch (d.type) {
      case 'NodeRegistered':
        nodeIncarnation = d.incarnation;
        nicOfSeq = new Map();
        break;
      case 'NicRegistered': {
        // A registration of this nic name: its id only has to differ from the name's other registrations.
        const l = legacy as Extract<LegacyNodeEvent, { type: 'NicRegistered' }>;
        const incarnation = `${nodeIncarnation}.${e.sequenceNumber}`;
        nicIncarnations.set(l.nic, incarnation);
        push(l.nic, { type: 'NicRegistered', macaddr: l.macaddr, incarnation, nodeIncarnation, ...stamp });
        break;
      }
      case 'NicDeleted': {
        const { nic } = legacy as Extract<LegacyNodeEvent, { type: 'NicDeleted' }>;
        push(nic, { type: 'NicDeleted', incarnation: nicIncarnations.get(nic), nodeIncarnation, ...stamp });
        break;
      }
      case 'NetworkActionQueued': {
        const { action } = legacy as Extract<LegacyNodeEvent, { type: 'NetworkActionQueued' }>;
        nicOfSeq.set(action.seq, action.nic);
        push(action.nic, { type: 'NetworkActionQueued', action: { ...action, firstFormat: true }, ...stamp });
        break;
      }
      case 'NetworkActionDone':
      case 'NetworkActionFailed': {
        const nic = nicOfSeq.get(d.seq);
        if (nic !== undefined) push(nic, { ...(d as Extract<LegacyNodeEvent, { type: 'NetworkActionDone' | 'NetworkActionFailed' }>), ...stamp });
        break;
      }
      case 'NicNetworkForceDetached': {
        const l = legacy as Extract<LegacyNodeEvent, { type: 'NicNetworkForceDetached' }>;
        push(l.nic, { type: 'NicNetworkForceDetached', channel: l.channel, network: l.network, ...stamp });
        break;
      }
      default:
        break;
    }
  }
  const out: PersistedEvent[] = [];
  for (const [nic, list] of byNic) {
    await append(engine, `nic:${nicId(node, nic)}`, list, out);
    summary.nics++;
  }
  const marker: Stamped<NodeEvent> = { type: 'NodeUpgraded', state, by: 'upgrade', at: Date.now() };
  await append(engine, key, [marker], out);
  await engine.persist(out);
  summary.nodes++;
}

/** Copy a switch's port events into the ports' own journals, with each wired port's configuration. */
async function upgradeSwitch(world: UpgradeSource, key: string, summary: UpgradeSummary): Promise<void> {
  const engine = world.engine;
  const sw = key.slice('switch:'.length);
  const events = await all(engine.events(key));
  if (events.some((e) => (e.data as SwitchEvent).type === 'SwitchUpgraded')) return;

  const byPort = new Map<string, Stamped<PortEvent>[]>();
  const push = (port: string, e: Stamped<PortEvent>) => {
    let list = byPort.get(port);
    if (!list) byPort.set(port, (list = []));
    list.push(e);
  };
  let state = null;
  for (const e of events) {
    const d = e.data as Stamped<SwitchEvent>;
    state = world.switches.behavior.apply(state, d, sw);
    const stamp = { by: d.by, at: d.at ?? e.createdAt };
    const l = d as Stamped<LegacySwitchEvent>;
    if (l.type === 'PortRegistered') push(l.port, { type: 'PortRegistered', ...stamp });
    else if (l.type === 'PortDeleted') push(l.port, { type: 'PortDeleted', ...stamp });
    else if (l.type === 'PortWired') push(l.port, { type: 'PortWired', node: l.node, nic: l.nic, ...stamp });
    else if (l.type === 'PortUnwired') push(l.port, { type: 'PortUnwired', ...stamp });
  }
  const out: PersistedEvent[] = [];
  for (const [port, list] of byPort) {
    const id = portId(sw, port);
    let portState = null;
    for (const e of list) portState = world.ports.behavior.apply(portState, e, id);
    if (portState?.wire) {
      const config = await configOf(world, portState.wire.node, portState.wire.nic);
      if (config.native !== null || config.tagged.length) list.push({ type: 'PortConfigured', config, by: 'upgrade', at: Date.now() });
    }
    await append(engine, `port:${id}`, list, out);
    summary.ports++;
  }
  const marker: Stamped<SwitchEvent> = { type: 'SwitchUpgraded', state, by: 'upgrade', at: Date.now() };
  await append(engine, key, [marker], out);
  await engine.persist(out);
  summary.switches++;
}

/** What format 1 held for a wired port: the VLANs of its nic's committed networks. */
async function configOf(world: UpgradeSource, node: string, nic: string): Promise<PortConfig> {
  const engine = world.engine;
  const id = nicId(node, nic);
  const state = await replay<NicState>(engine, world.nics.behavior, `nic:${id}`, id);
  const vlans = new Map<string, number>();
  for (const network of Object.values(state?.networks ?? {})) {
    const net = await replay(engine, world.networks.behavior, `network:${network}`, network);
    if (net) vlans.set(network, net.vlan);
  }
  return configFor(state?.networks ?? {}, (network) => vlans.get(network));
}
