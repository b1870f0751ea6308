/**
 * A world brought up from storage, before anything is served: data an earlier release wrote is
 * upgraded to the current format, the read models are rebuilt, port records a crash left
 * behind are repaired, and every network operation still pending is handed on again. The
 * composition of the world is actors/world.ts; this is what a start does with it.
 */
import type { World } from './world';
import type { EntityRegistry } from './runtime';
import { upgradeStorage, UpgradeSummary } from './persistence/upgrade';
import { configFor, sameConfig } from './port/config';
import { EMPTY_CONFIG } from './port/protocol';

export interface Recovered {
  /** what the upgrade did (null: the data was current) */
  upgraded: UpgradeSummary | null;
  /** port records set back in line with their nics */
  repairedPorts: number;
}

/**
 * Everything a start does before it serves, in its order. `afterUpgrade` runs on the stored data
 * in the current format, before the read models are built from it (the sealing of plaintext
 * credentials: src/secrets/at-rest.ts).
 */
export async function recoverWorld(world: World, afterUpgrade?: () => Promise<void>): Promise<Recovered> {
  const upgraded = await upgrade(world);
  await afterUpgrade?.();
  await rebuildReadModels(world);
  const repairedPorts = await repairPortRecords(world);
  await world.operations.resumeAll();
  return { upgraded, repairedPorts };
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
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const load = async <S>(reg: EntityRegistry<S, any, any, any>, commit: (id: string, s: S) => void) => {
    await reg.recoverAll((id, state) => {
      if (state) commit(id, state);
    });
  };
  const rm = world.rm;
  await load(world.projects, (id, s) => rm.commitProject(id, null, s));
  await load(world.nodes, (id, s) => rm.commitNode(id, null, s));
  await load(world.nics, (id, s) => rm.commitNic(id, null, s));
  await load(world.switches, (id, s) => rm.commitSwitch(id, null, s));
  await load(world.ports, (id, s) => rm.commitPort(id, null, s));
  await load(world.networks, (id, s) => rm.commitNetwork(id, null, s));
  await load(world.users, (id, s) => rm.commitUser(id, null, s));
  await load(world.headnodes, (id, s) => rm.commitHeadnode(id, null, s));
  await load(world.webhooks, (id, s) => rm.commitWebhook(id, null, s));
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
  for (const [id, port] of rm.ports) {
    // A nic deleted while wired, with the service stopped before its port was freed (see
    // nic.delete): free the port now.
    if (port.wire && !rm.nic(port.wire.node, port.wire.nic)) {
      await world.ports.ask(id, { type: 'port.unwire', by: 'recovery', node: port.wire.node, nic: port.wire.nic });
      repaired++;
      continue;
    }
    const nic = port.wire && rm.nic(port.wire.node, port.wire.nic);
    const config = nic ? configFor(nic.networks, (network) => rm.networks.get(network)?.vlan) : EMPTY_CONFIG;
    if (sameConfig(config, port.config)) continue;
    await world.ports.ask(id, { type: 'port.configured', by: 'recovery', config, wire: port.wire });
    repaired++;
  }
  return repaired;
}
