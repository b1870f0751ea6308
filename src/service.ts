/**
 * startService: open storage, rebuild read models, create the bootstrap admin on first start,
 * build the app and listen. close() stops in the safe order: HTTP, then actors, then LMDB.
 */
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { buildApp } from './app';
import type { Config } from './config';
import { hashPassword } from './auth/password';
import { World } from '../actors/world';
import { openEngine } from '../actors/persistence';
import { upgradeStorage } from '../actors/persistence/upgrade';
import { PowerControl } from '../actors/node/power';
import { MockObmDriver } from '../drivers/obm/mock';
import { IpmitoolDriver } from '../drivers/obm/ipmitool';
import { MockSwitchDriver } from '../drivers/switch/mock';
import { SWITCH_TYPES } from '../drivers/switch/registry';
import type { SwitchDriver } from '../drivers/switch/types';
import { join } from 'node:path';
import type { ObmDriver } from '../drivers/obm/types';
import { HeadnodeControl } from '../actors/headnode/control';
import { HEADNODE_DRIVERS } from '../drivers/headnode';
import type { HeadnodeDriver } from '../drivers/headnode/types';

export interface Service {
  app: FastifyInstance;
  world: World;
  mockSwitch: MockSwitchDriver;
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
  /** override OBM drivers (tests, labs) */
  obm?: { ipmi?: ObmDriver; mock?: ObmDriver };
  /** extra or replacement switch drivers by type */
  switches?: Record<string, SwitchDriver>;
  /** replaces the configured headnode driver */
  headnodeDriver?: HeadnodeDriver;
}

function headnodeDriver(config: Config): HeadnodeDriver {
  const entry = HEADNODE_DRIVERS.get(config.headnodeDriver);
  if (!entry) throw new Error(`unknown headnode driver "${config.headnodeDriver}" (known: ${HEADNODE_DRIVERS.types().join(', ')})`);
  return entry.create({ config });
}

const SWITCH_TYPES_MOCK = Object.values(SWITCH_TYPES).find((t) => t.extension === 'hilt.switches.mock')!.type;

export async function startService(config: Config, deps: ServiceDeps = {}): Promise<Service> {
  // The store holds BMC and switch credentials: the folder is the service's alone.
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  if (statSync(config.dataDir).mode & 0o077) chmodSync(config.dataDir, 0o700);
  const engine = openEngine(config);
  // The mock switches keep their ports in their own LMDB folder, as hardware would.
  const mockSwitch = new MockSwitchDriver({
    path: join(config.dataDir, 'mock-switches'), delayMs: config.mockSwitchDelayMs,
    sessionDelayMs: config.mockSwitchSessionDelayMs, failPorts: config.mockSwitchFailPorts,
  });
  const switchDrivers: Record<string, SwitchDriver> = { [SWITCH_TYPES_MOCK]: mockSwitch, ...deps.switches };
  const world = new World(engine, {
    vlanPool: config.vlanPool, idleMs: config.actorIdleMs, askTimeoutMs: config.askTimeoutMs,
    switchDriverFor: (type) => switchDrivers[type], switchTimeoutMs: config.switchTimeoutMs,
  });
  // Data written by an earlier release is brought to the current format first, once.
  const upgraded = await upgradeStorage(world);
  await world.rebuild();
  world.operations.resumeAll();

  let generatedAdminPassword: string | undefined;
  if ((await world.users.storedIds()).length === 0) {
    const password = config.adminPassword ?? (generatedAdminPassword = randomBytes(12).toString('base64url'));
    await world.users.ask(config.adminUser, { type: 'user.create', by: 'bootstrap', passwordHash: await hashPassword(password), isAdmin: true });
  }

  // One driver instance per kind: the IPMI driver's per-BMC queue must see every call.
  const mockObm = deps.obm?.mock ?? new MockObmDriver();
  const ipmi = deps.obm?.ipmi ?? new IpmitoolDriver({ cipherSuite: config.ipmiCipherSuite, timeoutMs: config.obmTimeoutMs });
  const power = new PowerControl({ mock: mockObm, ipmi });
  const headnodes = new HeadnodeControl(world, deps.headnodeDriver ?? headnodeDriver(config), {
    baseImages: config.baseImages, checkMs: config.headnodeCheckMs, timeoutMs: config.headnodeTimeoutMs,
  });
  const app = await buildApp({ world, config, power, headnodes, mockObm: mockObm instanceof MockObmDriver ? mockObm : undefined, mockSwitch, logger: deps.logger });
  headnodes.log = app.log;
  if (upgraded) app.log.info(upgraded, `upgraded the stored data from format ${upgraded.from} to format ${upgraded.to}`);
  // VMs that should run come back (adopted if still running) in the background; calls on a
  // headnode wait for its recovery.
  const headnodesRecovered = headnodes.recover();
  const address = await app.listen({ host: config.host, port: config.port });
  let closed = false;
  return {
    app,
    world,
    mockSwitch,
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
      await mockSwitch.close();
    },
  };
}
