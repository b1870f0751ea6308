/**
 * A world brought up from storage, before anything is served: data an earlier release wrote is
 * upgraded to the current format, the read models are loaded from their checkpoint or rebuilt
 * (actors/checkpoint.ts), port records a crash left
 * behind are repaired, and every network operation still pending is handed on again. The
 * composition of the world is actors/world.ts; this is what a start does with it.
 */
import type { World } from './world';
import { own, readModelKinds, type ReadModelKind } from './readmodel-kinds';
import { Checkpointer, CheckpointOptions, LoadReport, loadCheckpoint } from './checkpoint';
import { upgradeStorage, UpgradeSummary } from './persistence/upgrade';
import { configFor, sameConfig } from './port/config';
import { EMPTY_CONFIG, type PortState } from './port/protocol';
import { portId, splitId } from './ids';
import { configured } from './readmodel';

export interface Recovered {
  /** what the upgrade did (null: the data was current) */
  upgraded: UpgradeSummary | null;
  /** port records set back in line with their nics */
  repairedPorts: number;
  /** what the start did with the read model's checkpoint */
  checkpoint: LoadReport;
  /** keeps the checkpoint from here on (close it before the engine) */
  checkpointer?: Checkpointer;
}

/**
 * Everything a start does before it serves, in its order. `afterUpgrade` runs on the stored data
 * in the current format, before the read models are built from it (the sealing of plaintext
 * credentials: src/secrets/at-rest.ts).
 */
export async function recoverWorld(world: World, afterUpgrade?: () => Promise<void>, checkpoint?: CheckpointOptions): Promise<Recovered> {
  const upgraded = await upgrade(world);
  // An upgrade changed what the stored data says: a checkpoint of it is of no use.
  if (upgraded) world.runtime.engine.checkpoints?.drop();
  await afterUpgrade?.();
  const { loaded, checkpointer } = await loadReadModels(world, checkpoint);
  try {
    const repairedPorts = await repairPortRecords(world);
    await setBackPortsInDoubt(world);
    await world.operations.resumeAll();
    return { upgraded, repairedPorts, checkpoint: loaded, checkpointer };
  } catch (err) {
    await checkpointer?.close(false);
    throw err;
  }
}

/** Data written by an earlier release, brought to the current format (once). */
export function upgrade(world: World): Promise<UpgradeSummary | null> {
  const { nodes, nics, switches, ports, networks } = world;
  return upgradeStorage({ engine: world.runtime.engine, nodes, nics, switches, ports, networks });
}

/**
 * Rebuild every read model from the latest snapshot plus later events of each entity. Nodes
 * before nics (an attachment is indexed with its node's project), switches before ports.
 */
export async function rebuildReadModels(world: World): Promise<void> {
  for (const k of readModelKinds(world)) await rebuildKind(k);
}

/** Rebuild one kind's read model from the journal; returns how many entities it read. */
export async function rebuildKind(k: ReadModelKind): Promise<number> {
  let n = 0;
  // A rebuilt state is as unseen as a decoded one: it shares names as a checkpoint's do, and
  // holds its own copies of the text it took from the events (ReadModelKind.ownText), as its id
  // does (a slice of its stored key otherwise, which the read model's map would keep).
  await k.recoverAll((id, state) => {
    n++;
    if (state) k.commit(own(id), k.share ? k.share(id, k.ownText?.(state) ?? state) : state);
  });
  return n;
}

/**
 * The read models from the checkpoint and the events after it when it can be used, else rebuilt
 * from the journal; then the checkpoint's watermark is kept from here on (none when
 * `checkpoint.everyEvents` is 0, or the engine keeps no checkpoint).
 */
export async function loadReadModels(world: World, checkpoint?: CheckpointOptions): Promise<{ loaded: LoadReport; checkpointer?: Checkpointer }> {
  const loaded = checkpoint && checkpoint.everyEvents > 0 ? await loadCheckpoint(world) : { used: false, why: 'checkpoints are off', replayed: 0 };
  if (!loaded.used) await rebuildReadModels(world);
  const checkpointer = checkpoint ? await Checkpointer.start(world, checkpoint, loaded.used ? loaded.replayed : Infinity) : undefined;
  return { loaded, checkpointer };
}

/**
 * After a start, before any operation is resumed: the port's record of a change and its nic's
 * record of that operation's outcome are written side by side (hardware/port-hardware.ts), so a
 * crash between them leaves the port's record behind. Nothing is in flight now, and the nic's
 * committed networks are the truth (it records DONE only after the switch applied a change):
 * every wired port gets the configuration they put on it, an operation still pending included
 * (it is applied again from there). Returns how many records changed.
 */
export async function repairPortRecords(world: World): Promise<number> {
  const rm = world.rm;
  let repaired = 0;
  const check = async (port: PortState) => {
    const id = () => portId(port.switch, port.name);
    // A nic deleted while wired, with the service stopped before its port was freed (see
    // nic.delete): free the port now.
    const nic = port.wire && rm.nic(port.wire.node, port.wire.nic);
    if (port.wire && !nic) {
      await world.ports.ask(id(), { type: 'port.unwire', by: 'recovery', node: port.wire.node, nic: port.wire.nic });
      repaired++;
      return;
    }
    const config = nic ? configFor(nic.networks, (network) => rm.networks.get(network)?.vlan) : EMPTY_CONFIG;
    if (sameConfig(config, port.config)) return;
    await world.ports.ask(id(), { type: 'port.configured', by: 'recovery', config, wire: port.wire });
    repaired++;
  };
  // Some nic wired to two ports (the wiring index keeps one of them): every port.
  if (rm.wiredPorts !== rm.wiring.size) {
    for (const port of rm.portsBySwitch.all()) await check(port);
    return repaired;
  }
  // The ports whose record may differ from what their nic's networks put on them: those with a
  // configuration, and those wired to a nic that has networks (an attachment) or is gone. A port
  // wired to a nic without networks and holding none needs nothing: at 100,000 nodes nearly
  // every port, which a start then only reads past. A check changes only its own port, which
  // the iteration has passed; a port checked twice is left as the first check left it.
  for (const port of rm.portsBySwitch.all()) if (configured(port)) await check(port);
  const wiredTo = async (node: string, nic: string) => {
    const port = rm.wiring.port(node, nic);
    if (port && !configured(port)) await check(port);
  };
  for (const attached of [...rm.attachmentsByNetwork.values()]) for (const a of [...attached.values()]) await wiredTo(a.node, a.nic);
  for (const nic of [...rm.wiredWithoutNic]) {
    const [node, name] = splitId(nic);
    await wiredTo(node, name);
  }
  return repaired;
}

/**
 * After the port records are repaired, before any operation is resumed: every port in doubt
 * (a change that failed, or may have reached it, before the last process stopped, its set-back
 * not confirmed: hardware/port-hardware.ts), or owing a set-back (its doubt cleared by hand), is
 * set back to its record, queued on its switch now, so that a resumed operation of its nic comes
 * after it. One that fails is tried again with backoff until the switch confirms it. Returns how
 * many were queued.
 */
export async function setBackPortsInDoubt(world: World): Promise<number> {
  const ids = [...new Set([...world.rm.portsInDoubt, ...world.rm.portsOwingSetBack])];
  if (!ids.length) return 0;
  // In memory first: each ask then reaches its port's decide, and its switch's queue, in this turn.
  await world.ports.preload(ids);
  for (const id of ids) {
    void world.ports.ask(id, { type: 'port.settle', by: 'recovery' }, { hardware: true })
      .catch(() => undefined)
      .finally(() => void world.portHardware.retry(id));
  }
  return ids.length;
}
