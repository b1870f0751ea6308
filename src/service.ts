/**
 * startService, the facade: open the HTTP listener (src/gate.ts), then become active and serve
 * the API. close() stops in the safe order: HTTP, then actors, then storage.
 *
 * On the embedded engines (lmdb, memory) the process activates once (src/activation.ts) and is
 * active from its start to its end. On PostgreSQL (docs/high-availability.md) any number of
 * processes share one database and the lease decides which one is active: the standby loop
 * (src/standby.ts) waits for the lease, activates, and steps down when it is lost (503 at once,
 * the activation closed), again and again until close().
 */
import { chmodSync, readFileSync, statSync } from 'node:fs';
import { mkdirDurable } from '../lib/durable';
import { hostname } from 'node:os';
import { createSecureContext } from 'node:tls';
import pino from 'pino';
import type { FastifyBaseLogger, FastifyInstance, FastifyServerOptions } from 'fastify';
import type { Config } from './config';
import type { World } from '../actors/world';
import { leaseCandidate, SchemaTooNewError } from '../actors/persistence';
import type { HeldLease } from '../actors/persistence/lease';
import type { PersistenceEngine } from '../actors/persistence/engine';
import { closeDrivers, Drivers, ExtraDrivers, startDrivers } from './drivers';
import type { HeadnodeControl } from '../hardware/headnode-control';
import type { HeadnodeDriver } from '../drivers/headnode/types';
import type { Consoles } from '../hardware/consoles';
import type { Lifecycle } from './lifecycle';
import type { Retention } from './retention';
import { Activation, ActivationContext, activate, closeBudgetMs } from './activation';
import { prepareSchema, standBy } from './standby';
import { Gate, Role } from './gate';
import { Metrics } from './metrics';
import { version } from './version';
import { settledWithin } from '../lib/time';
import { lockFolder } from './folder-lock';

export type { Role } from './gate';

export interface Service {
  /** the API of the current (or last) activation */
  readonly app: FastifyInstance;
  readonly world: World;
  /** every driver of each kind, one instance each (tests reach the mocks' hardware here) */
  drivers: Drivers;
  /** headnode VMs: HTTP calls, recovery, monitor; `.driver` is the configured driver */
  readonly headnodes: HeadnodeControl;
  /** resolves once every headnode was recovered after the current activation */
  readonly headnodesRecovered: Promise<void>;
  /** the serial consoles of the current activation */
  readonly consoles: Consoles;
  /** the tenant lifecycle's runners of the current activation (release hooks are registered here) */
  readonly lifecycle: Lifecycle;
  /** journal retention's passes of the current activation */
  readonly retention: Retention;
  /** the service's metrics (GET /metrics), across activations */
  readonly metrics: Metrics;
  url: string;
  /** `active` while this process serves the API; `standby` while another one does (or none yet) */
  readonly role: Role;
  /** this process's name (lease, /health) */
  instance: string;
  /** the service's logger (silent when none was given) */
  log: FastifyBaseLogger;
  /** resolves once this process is active (at once on the embedded engines) */
  whenActive(): Promise<void>;
  /** set only when the bootstrap admin was created by this process with a generated password */
  generatedAdminPassword?: string;
  close(): Promise<void>;
}

export interface ServiceDeps {
  logger?: FastifyServerOptions['logger'];
  /** switch and OBM drivers offered beside the built-in ones (tests, labs) */
  extraDrivers?: ExtraDrivers;
  /** replaces the configured headnode driver */
  headnodeDriver?: HeadnodeDriver;
  /**
   * false: resolve as soon as the listener is open, active or not (the process does this, so a
   * standby answers /health and 503s while it waits). Default: resolve once active.
   */
  waitForActive?: boolean;
  /** wraps the storage engine (tests inject storage faults) */
  wrapEngine?: (engine: PersistenceEngine) => PersistenceEngine;
  /** told the generated password of the bootstrap admin as soon as it is created, before the start goes on */
  onAdminCreated?: (password: string) => void;
}

/** The service's logger from the pino options the caller gives (`stream`: where lines go), else none. */
function makeLogger(logger: ServiceDeps['logger']): FastifyBaseLogger | undefined {
  if (!logger) return undefined;
  if (logger === true) return pino() as FastifyBaseLogger;
  const { stream, ...opts } = logger as pino.LoggerOptions & { stream?: pino.DestinationStream };
  return (stream ? pino(opts, stream) : pino(opts)) as FastifyBaseLogger;
}

/** HTTPS's certificate and key, read and tried as a pair: a file that will not do is named with its setting. */
function readTls(config: Config): { cert: Buffer; key: Buffer } | undefined {
  if (!config.tlsCert || !config.tlsKey) return undefined;
  const read = (name: string, path: string) => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(`cannot read ${name} ${path}: ${(err as Error).message}`);
    }
  };
  const pair = { cert: read('HILT_TLS_CERT', config.tlsCert), key: read('HILT_TLS_KEY', config.tlsKey) };
  try {
    createSecureContext(pair);
  } catch (err) {
    throw new Error(`cannot serve HTTPS with HILT_TLS_CERT ${config.tlsCert} and HILT_TLS_KEY ${config.tlsKey}: ${(err as Error).message} (they must be PEM files: the certificate with its chain, and its unencrypted key)`);
  }
  return pair;
}

export async function startService(config: Config, deps: ServiceDeps = {}): Promise<Service> {
  // HTTPS when the operator gives a certificate and its key (HILT_TLS_CERT, HILT_TLS_KEY).
  const tls = readTls(config);
  // The store holds BMC and switch credentials: the folder is the service's alone. Made
  // durable (its parent fsynced): a power loss right after a first start keeps the store.
  mkdirDurable(config.dataDir, 0o700);
  if (statSync(config.dataDir).mode & 0o077) chmodSync(config.dataDir, 0o700);
  // Before anything opens a store in the folder (the engine, the mock switch's own).
  const unlock = config.storage === 'lmdb' ? await lockFolder(config.dataDir) : async () => undefined;
  const instance = config.instanceName ?? `${hostname()}:${process.pid}`;
  const appLogger = makeLogger(deps.logger);
  const log = appLogger ?? (pino({ level: 'silent' }) as FastifyBaseLogger);
  // Drivers first: a driver list that cannot work (two claiming one type) fails before storage opens.
  let drivers: Drivers;
  try {
    drivers = startDrivers(config, { ...deps.extraDrivers, ...(deps.headnodeDriver ? { headnode: deps.headnodeDriver } : {}) });
  } catch (err) {
    await unlock();
    throw err;
  }
  const candidate = leaseCandidate({ ...config, instanceName: instance });
  if (candidate && config.testFencingOnly) log.warn('HILT_TEST_FENCING_ONLY is set (tests only): this process does not notice by itself that it lost its lease, and its hardware calls are unguarded');
  const metrics: Metrics = new Metrics({ version: version(), storage: config.storage }, () => gate.role === 'active');

  const retryAfterS = Math.max(1, Math.ceil(config.leaseTtlMs / 1000));
  // A standby has no users to check an admin against: it shows its metrics only when they are open.
  const gate: Gate = new Gate({
    instance, retryAfterS, tls, requestTimeoutMs: config.requestTimeoutMs, maxConnections: config.maxConnections, metrics: config.metricsOpen ? metrics : undefined,
    unread: (method, status) => metrics.unread(method, status),
  });
  metrics.listener(gate.server);

  let current: Activation | undefined;
  let last: Activation | undefined;
  let lease: HeldLease | undefined;
  let generatedAdminPassword: string | undefined;
  const closing = new AbortController();
  let becameActive!: () => void;
  const activeOnce = new Promise<void>((r) => (becameActive = r));
  let activeWaiters: (() => void)[] = [];
  /** the standby loop (on PostgreSQL): close() waits for it to end */
  let loop: Promise<void> = Promise.resolve();
  const ctx: ActivationContext = {
    config, drivers, metrics, log, appLogger, retryAfterS, wrapEngine: deps.wrapEngine,
    onAdminCreated: (password) => {
      generatedAdminPassword = password;
      deps.onAdminCreated?.(password);
    },
  };

  function serve(a: Activation): void {
    current = last = a;
    gate.activate(a.handler, a.upgrade);
    becameActive();
    for (const w of activeWaiters) w();
    activeWaiters = [];
  }

  /** Stop serving: 503 at once, then close what the activation runs (bounded: a hung database must not keep us from standing by). */
  async function stepDown(why: string): Promise<void> {
    gate.standby(why);
    metrics.detach();
    const a = current;
    current = undefined;
    if (!a) return;
    if (!(await settledWithin(a.close(), closeBudgetMs(config)))) log.error({ why }, 'the stepped-down activation did not close in time; going on');
  }

  let url: string;
  if (!candidate) {
    const a = await activate(ctx, undefined, () => undefined).catch(async (err) => {
      await closeDrivers(drivers);
      await unlock();
      throw err;
    });
    try {
      url = await gate.listen(config.host, config.port);
    } catch (err) {
      await a.close();
      await closeDrivers(drivers);
      await unlock();
      throw err;
    }
    serve(a);
  } else {
    // A shared store's schema is created or migrated before anything reads it (standbys too).
    // A database this release must not touch stops the start; one that cannot be reached yet
    // is waited for, standing by.
    const schemaError = await prepareSchema(config, log).then(() => undefined, async (err: Error) => {
      if (!(err instanceof SchemaTooNewError)) return err;
      await closeDrivers(drivers);
      throw err;
    });
    url = await gate.listen(config.host, config.port);
    gate.standby('waiting for the lease');
    loop = standBy({
      config, log, gate, candidate, instance, signal: closing.signal,
      activate: (held, onTrouble, signal) => activate(ctx, held, onTrouble, signal),
      serve, stepDown,
      failed: () => metrics.detach(),
      holding: (held) => (lease = held),
    }, schemaError).catch((err) => log.fatal({ err }, 'the standby loop failed; this process stays a standby'));
  }

  const none = (what: string) => () => {
    throw new Error(`this process has not been active yet: no ${what}`);
  };
  const svc: Service = {
    get app() { return (last ?? { app: none('app')() }).app; },
    get world() { return (last ?? { world: none('world')() }).world; },
    get headnodes() { return (last ?? { headnodes: none('headnodes')() }).headnodes; },
    get headnodesRecovered() { return (last ?? { headnodesRecovered: none('headnodes')() }).headnodesRecovered; },
    get consoles() { return (last ?? { consoles: none('consoles')() }).consoles; },
    get lifecycle() { return (last ?? { lifecycle: none('lifecycle')() }).lifecycle; },
    get retention() { return (last ?? { retention: none('retention')() }).retention; },
    get role() { return gate.role; },
    get generatedAdminPassword() { return generatedAdminPassword; },
    drivers,
    metrics,
    url,
    instance,
    log,
    whenActive: () => (gate.role === 'active' ? Promise.resolve() : new Promise<void>((r) => activeWaiters.push(r))),
    async close() {
      if (closing.signal.aborted) return;
      closing.abort();
      const closed = gate.close();
      gate.standby('shutting down');
      // An activation under way stops at its next step and closes what it opened; a step-down
      // finishes closing its activation; a lease just taken is released. Bounded as a step-down.
      if (!(await settledWithin(loop, closeBudgetMs(config)))) log.error('the activation under way did not stop in time; closing anyway');
      const a = current;
      current = undefined;
      if (a) await a.close();
      // A clean stop hands over at once: the lease is marked lapsed.
      await lease?.release();
      gate.server.closeAllConnections();
      await closed;
      await closeDrivers(drivers);
      await unlock();
    },
  };
  if (deps.waitForActive !== false) await activeOnce;
  return svc;
}
