/**
 * startService: open storage, rebuild read models, create the bootstrap admin on first start,
 * build the app and listen. close() stops in the safe order: HTTP, then actors, then LMDB.
 */
import { chmodSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { buildApp } from './app';
import type { Config } from './config';
import { hashPassword } from './auth/password';
import { World } from '../actors/world';
import { openEngine } from '../actors/persistence';
import type { PersistenceEngine } from '../actors/persistence/engine';
import { shortText } from '../actors/runtime';
import { upgradeStorage } from '../actors/persistence/upgrade';
import { PowerControl } from '../actors/node/power';
import { closeDrivers, Drivers, ExtraDrivers, startDrivers } from './drivers';
import { join } from 'node:path';
import { HeadnodeControl } from '../actors/headnode/control';
import { HEADNODE_DRIVERS } from '../drivers/headnode';
import type { HeadnodeDriver } from '../drivers/headnode/types';

export interface Service {
  app: FastifyInstance;
  world: World;
  /** every driver of each kind, one instance each (tests reach the mocks' hardware here) */
  drivers: Drivers;
  /** headnode VMs: HTTP calls, recovery, monitor; `.driver` is the configured driver */
  headnodes: HeadnodeControl;
  /** resolves once every headnode was recovered after this start */
  headnodesRecovered: Promise<void>;
  url: string;
  /** set only when the bootstrap admin was created now with a generated password */
  generatedAdminPassword?: string;
  close(): Promise<void>;
}

export interface ServiceDeps {
  logger?: FastifyServerOptions['logger'];
  /** switch and OBM drivers offered beside the built-in ones (tests, labs) */
  extraDrivers?: ExtraDrivers;
  /** replaces the configured headnode driver */
  headnodeDriver?: HeadnodeDriver;
  /** wraps the storage engine (tests inject storage faults) */
  wrapEngine?: (engine: PersistenceEngine) => PersistenceEngine;
}

function headnodeDriver(config: Config): HeadnodeDriver {
  const entry = HEADNODE_DRIVERS.get(config.headnodeDriver);
  if (!entry) throw new Error(`unknown headnode driver "${config.headnodeDriver}" (known: ${HEADNODE_DRIVERS.types().join(', ')})`);
  return entry.create({ config });
}

export async function startService(config: Config, deps: ServiceDeps = {}): Promise<Service> {
  // The store holds BMC and switch credentials: the folder is the service's alone.
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  if (statSync(config.dataDir).mode & 0o077) chmodSync(config.dataDir, 0o700);
  // Drivers first: a driver list that cannot work (two claiming one type) fails before storage opens.
  const drivers = startDrivers(config, deps.extraDrivers);
  const opened = openEngine(config);
  const engine = deps.wrapEngine ? deps.wrapEngine(opened) : opened;
  const world = new World(engine, {
    vlanPool: config.vlanPool, idleMs: config.actorIdleMs, askTimeoutMs: config.askTimeoutMs,
    switchDriverFor: (type) => drivers.switches.driver(type), switchTimeoutMs: config.switchTimeoutMs,
  });
  // Data written by an earlier release is brought to the current format first, once.
  const upgraded = await upgradeStorage(world);
  await world.rebuild();
  const repairedPorts = await world.repairPortRecords();
  world.operations.resumeAll();

  let generatedAdminPassword: string | undefined;
  if ((await world.users.storedIds()).length === 0) {
    const password = config.adminPassword ?? (generatedAdminPassword = randomBytes(12).toString('base64url'));
    await world.users.ask(config.adminUser, { type: 'user.create', by: 'bootstrap', passwordHash: await hashPassword(password), isAdmin: true });
  }

  const power = new PowerControl(drivers.obm, config.obmTimeoutMs);
  const headnodes = new HeadnodeControl(world, deps.headnodeDriver ?? headnodeDriver(config), {
    baseImages: config.baseImages, checkMs: config.headnodeCheckMs, timeoutMs: config.headnodeTimeoutMs,
  });
  const https = config.tlsCert && config.tlsKey ? { cert: readFileSync(config.tlsCert), key: readFileSync(config.tlsKey) } : undefined;
  const app = await buildApp({ world, config, power, headnodes, drivers, logger: deps.logger, https });
  headnodes.log = app.log;
  world.runtime.onFault = (f) => app.log.error(
    { err: f.cause instanceof Error ? f.cause : new Error(String(f.cause)), actor: `${f.kind}:${shortText(f.id, 64)}`, phase: f.phase, answered: f.answered, status: f.error.type },
    'an actor failed; every ask waiting on it was answered, and it is read again from storage on its next message',
  );
  if (upgraded) app.log.info(upgraded, `upgraded the stored data from format ${upgraded.from} to format ${upgraded.to}`);
  if (repairedPorts) app.log.warn({ ports: repairedPorts }, 'set the recorded configuration of switch ports back in line with their nics after an interrupted shutdown');
  // VMs that should run come back (adopted if still running) in the background; calls on a
  // headnode wait for its recovery.
  const headnodesRecovered = headnodes.recover();
  const address = await app.listen({ host: config.host, port: config.port });
  let closed = false;
  return {
    app,
    world,
    drivers,
    headnodes,
    headnodesRecovered,
    url: address,
    generatedAdminPassword,
    async close() {
      if (closed) return;
      closed = true;
      await app.close();
      // Headnode VMs keep running across a restart of the service: the next start adopts them.
      await headnodes.close();
      await world.close();
      await engine.close();
      await closeDrivers(drivers);
    },
  };
}
