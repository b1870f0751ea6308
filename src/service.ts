/**
 * startService: open storage, rebuild read models, create the bootstrap admin on first start,
 * build the app and listen. close() stops in the safe order: HTTP, then actors, then LMDB.
 */
import { mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { buildApp } from './app';
import type { Config } from './config';
import { hashPassword } from './auth/password';
import { World } from '../actors/world';
import { LmdbPersistenceEngine } from '../actors/persistence/lmdb';
import { PowerControl } from '../actors/node/power';
import { MockObmDriver } from '../drivers/obm/mock';
import { IpmitoolDriver } from '../drivers/obm/ipmitool';
import type { ObmDriver } from '../drivers/obm/types';

export interface Service {
  app: FastifyInstance;
  world: World;
  url: string;
  /** set only when the bootstrap admin was created now with a generated password */
  generatedAdminPassword?: string;
  close(): Promise<void>;
}

export interface ServiceDeps {
  logger?: FastifyServerOptions['logger'];
  /** override OBM drivers (tests, labs) */
  obm?: { ipmi?: ObmDriver; mock?: ObmDriver };
}

export async function startService(config: Config, deps: ServiceDeps = {}): Promise<Service> {
  mkdirSync(config.dataDir, { recursive: true });
  const engine = new LmdbPersistenceEngine(config.dataDir);
  const world = new World(engine, { vlanPool: config.vlanPool, idleMs: config.actorIdleMs, askTimeoutMs: config.askTimeoutMs });
  await world.rebuild();

  let generatedAdminPassword: string | undefined;
  if (world.users.storedIds().length === 0) {
    const password = config.adminPassword ?? (generatedAdminPassword = randomBytes(12).toString('base64url'));
    await world.users.ask(config.adminUser, { type: 'user.create', by: 'bootstrap', passwordHash: await hashPassword(password), isAdmin: true });
  }

  // One driver instance per kind: the IPMI driver's per-BMC queue must see every call.
  const mockObm = deps.obm?.mock ?? new MockObmDriver();
  const ipmi = deps.obm?.ipmi ?? new IpmitoolDriver({ cipherSuite: config.ipmiCipherSuite, timeoutMs: config.obmTimeoutMs });
  const power = new PowerControl({ mock: mockObm, ipmi });
  const app = await buildApp({ world, config, power, mockObm: mockObm instanceof MockObmDriver ? mockObm : undefined, logger: deps.logger });
  const address = await app.listen({ host: config.host, port: config.port });
  let closed = false;
  return {
    app,
    world,
    url: address,
    generatedAdminPassword,
    async close() {
      if (closed) return;
      closed = true;
      await app.close();
      await world.close();
      await engine.close();
    },
  };
}
