/**
 * startService: open the HTTP listener (src/gate.ts), then become active: open storage, bring
 * its data to the current format, rebuild the read models, repair port records, resume pending
 * network operations, create the bootstrap admin on first start, recover headnodes, and serve
 * the API. close() stops in the safe order: HTTP, then actors, then storage.
 *
 * On the embedded engines (lmdb, memory) the process is active from its start to its end. On
 * PostgreSQL (docs/high-availability.md) any number of processes share one database and the
 * lease decides which one is active (actors/persistence/lease.ts): each waits as a standby
 * (503 to every call, /health `standby`) until it holds the lease, then activates exactly as a
 * start does. When it loses the lease (another process took it over, its connection broke, or
 * a write was refused for its fencing token) or a commit's outcome is in doubt, it steps down:
 * 503 at once, its actors, runner, monitors and storage closed, and it waits for the lease
 * again; a later activation rebuilds everything from the database.
 */
import { chmodSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import pino from 'pino';
import type { FastifyBaseLogger, FastifyInstance, FastifyServerOptions } from 'fastify';
import { buildApp } from './app';
import type { Config } from './config';
import { hashPassword } from './auth/password';
import { World } from '../actors/world';
import { leaseCandidate, openEngine, prepareStorage, SchemaTooNewError } from '../actors/persistence';
import type { HeldLease } from '../actors/persistence/lease';
import type { PersistenceEngine } from '../actors/persistence/engine';
import { shortText } from '../actors/runtime';
import { upgradeStorage } from '../actors/persistence/upgrade';
import { PowerControl } from '../hardware/power';
import { closeDrivers, Drivers, ExtraDrivers, startDrivers } from './drivers';
import { HeadnodeControl } from '../hardware/headnode-control';
import { HEADNODE_DRIVERS } from '../drivers/headnode';
import type { HeadnodeDriver } from '../drivers/headnode/types';
import { guardHeadnode, guardObm } from './lease-guard';
import { Gate, Role } from './gate';

export type { Role } from './gate';
import { Metrics } from './metrics';
import { version } from './version';

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
}

/** One activation: what a start builds and a stop (or a step-down) closes. */
interface Activation {
  app: FastifyInstance;
  world: World;
  headnodes: HeadnodeControl;
  headnodesRecovered: Promise<void>;
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  close(): Promise<void>;
}

function headnodeDriver(config: Config): HeadnodeDriver {
  const entry = HEADNODE_DRIVERS.get(config.headnodeDriver);
  if (!entry) throw new Error(`unknown headnode driver "${config.headnodeDriver}" (known: ${HEADNODE_DRIVERS.types().join(', ')})`);
  return entry.create({ config });
}

/** The service's logger from the pino options the caller gives (`stream`: where lines go), else none. */
function makeLogger(logger: ServiceDeps['logger']): FastifyBaseLogger | undefined {
  if (!logger) return undefined;
  if (logger === true) return pino() as FastifyBaseLogger;
  const { stream, ...opts } = logger as pino.LoggerOptions & { stream?: pino.DestinationStream };
  return (stream ? pino(opts, stream) : pino(opts)) as FastifyBaseLogger;
}

/** Run `work`, but give up waiting after `ms` (it goes on; the caller is told). */
async function bounded(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  const done = await Promise.race([work.then(() => true, () => true), late]);
  clearTimeout(timer);
  return done;
}

export async function startService(config: Config, deps: ServiceDeps = {}): Promise<Service> {
  // The store holds BMC and switch credentials: the folder is the service's alone.
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  if (statSync(config.dataDir).mode & 0o077) chmodSync(config.dataDir, 0o700);
  const instance = config.instanceName ?? `${hostname()}:${process.pid}`;
  const appLogger = makeLogger(deps.logger);
  const log = appLogger ?? (pino({ level: 'silent' }) as FastifyBaseLogger);
  // Drivers first: a driver list that cannot work (two claiming one type) fails before storage opens.
  const drivers = startDrivers(config, deps.extraDrivers);
  const hnDriver = deps.headnodeDriver ?? headnodeDriver(config);
  const candidate = leaseCandidate({ ...config, instanceName: instance });
  if (candidate && config.testFencingOnly) log.warn('HILT_TEST_FENCING_ONLY is set (tests only): this process does not notice by itself that it lost its lease, and its hardware calls are unguarded');
  const metrics: Metrics = new Metrics({ version: version(), storage: config.storage }, () => gate.role === 'active');

  // HTTPS when the operator gives a certificate and its key (HILT_TLS_CERT, HILT_TLS_KEY).
  const tls = config.tlsCert && config.tlsKey ? { cert: readFileSync(config.tlsCert), key: readFileSync(config.tlsKey) } : undefined;
  const retryAfterS = Math.max(1, Math.ceil(config.leaseTtlMs / 1000));
  // A standby has no users to check an admin against: it shows its metrics only when they are open.
  const gate: Gate = new Gate({ instance, retryAfterS, tls, metrics: config.metricsOpen ? metrics : undefined });
  let current: Activation | undefined;
  let last: Activation | undefined;
  let lease: HeldLease | undefined;
  let generatedAdminPassword: string | undefined;
  let closing = false;
  const stopAcquiring = new AbortController();
  let becameActive!: () => void;
  const activeOnce = new Promise<void>((r) => (becameActive = r));
  let activeWaiters: (() => void)[] = [];

  /** Everything a start does, on a fresh engine (fenced by the lease's token on PostgreSQL). */
  async function activate(held: HeldLease | undefined, onTrouble: (why: string) => void): Promise<Activation> {
    const opened = openEngine(config, held ? {
      fence: held.token,
      onFenced: (err) => {
        log.warn({ token: held.token, err: err.message }, 'the database refused a write: this process\'s fencing token is no longer the lease\'s');
        onTrouble(err.message);
      },
      onDoubt: (err) => {
        log.error({ token: held.token, err: err.message }, 'a commit\'s outcome is unknown: rebuilding from the database');
        onTrouble(err.message);
      },
    } : {});
    const engine = deps.wrapEngine ? deps.wrapEngine(opened) : opened;
    const mayAct = () => !!held?.held();

    let world: World | undefined;
    let headnodes: HeadnodeControl | undefined;
    let app: FastifyInstance | undefined;
    const close = async () => {
      await app?.close();
      // Headnode VMs keep running across a restart of the service: the next start adopts them.
      await headnodes?.close();
      await world?.close();
      await engine.close();
    };
    try {
      world = new World(engine, {
        vlanPool: config.vlanPool, idleMs: config.actorIdleMs, askTimeoutMs: config.askTimeoutMs,
        switchDriverFor: (type) => drivers.switches.driver(type), mayAct: held ? mayAct : undefined,
        switchTimeoutMs: config.switchTimeoutMs, telemetry: metrics,
      });
      // Data written by an earlier release is brought to the current format first, once.
      const upgraded = await upgradeStorage(world);
      await world.rebuild();
      const repairedPorts = await world.repairPortRecords();
      world.operations.resumeAll();

      if ((await world.users.storedIds()).length === 0) {
        let generated: string | undefined;
        const password = config.adminPassword ?? (generated = randomBytes(12).toString('base64url'));
        await world.users.ask(config.adminUser, { type: 'user.create', by: 'bootstrap', passwordHash: await hashPassword(password), isAdmin: true });
        if (generated) generatedAdminPassword = generated;
      }

      // On PostgreSQL, no hardware call once the lease is gone (src/lease-guard.ts).
      const power = new PowerControl(held ? guardObm(drivers.obm, mayAct, retryAfterS) : drivers.obm, config.obmTimeoutMs, metrics);
      headnodes = new HeadnodeControl(world, held ? guardHeadnode(hnDriver, mayAct, retryAfterS) : hnDriver, {
        baseImages: config.baseImages, checkMs: config.headnodeCheckMs, timeoutMs: config.headnodeTimeoutMs,
        telemetry: metrics, driverName: deps.headnodeDriver ? 'custom' : config.headnodeDriver,
      });
      let handler!: Activation['handler'];
      app = await buildApp({
        world, config, power, headnodes, drivers, metrics, logger: appLogger,
        // The gate listens; the app only handles what the gate hands it.
        serverFactory: (h) => ((handler = h), createServer()),
      });
      const ui = app.hilt;
      await metrics.attach({
        world, power, headnodes, uiSessions: () => ui.ui?.size() ?? 0,
        events: { streams: () => ui.events.size, webhooks: () => ({ delivering: world!.rm.webhooks.size - ui.webhooks.failing(), failing: ui.webhooks.failing() }) },
      });
      headnodes.log = app.log;
      world.sessions.log = app.log;
      const faultLog = app.log;
      world.runtime.onFault = (f) => faultLog.error(
        { err: f.cause instanceof Error ? f.cause : new Error(String(f.cause)), actor: `${f.kind}:${shortText(f.id, 64)}`, phase: f.phase, answered: f.answered, status: f.error.type },
        'an actor failed; every ask waiting on it was answered, and it is read again from storage on its next message',
      );
      if (upgraded) app.log.info(upgraded, `upgraded the stored data from format ${upgraded.from} to format ${upgraded.to}`);
      if (repairedPorts) app.log.warn({ ports: repairedPorts }, 'set the recorded configuration of switch ports back in line with their nics after an interrupted shutdown');
      // VMs that should run come back (adopted if still running) in the background; calls on a
      // headnode wait for its recovery.
      const headnodesRecovered = headnodes.recover();
      return { app, world, headnodes, headnodesRecovered, handler, close };
    } catch (err) {
      await bounded(close(), config.askTimeoutMs + 5000);
      throw err;
    }
  }

  function serve(a: Activation): void {
    current = last = a;
    gate.activate(a.handler);
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
    if (!(await bounded(a.close(), config.askTimeoutMs + 5000))) log.error({ why }, 'the stepped-down activation did not close in time; going on');
  }

  let url: string;
  if (!candidate) {
    const a = await activate(undefined, () => undefined).catch(async (err) => {
      await closeDrivers(drivers);
      throw err;
    });
    try {
      url = await gate.listen(config.host, config.port);
    } catch (err) {
      await a.close();
      await closeDrivers(drivers);
      throw err;
    }
    serve(a);
  } else {
    // A shared store's schema is created or migrated before anything reads it (standbys too).
    // A database this release must not touch stops the start; one that cannot be reached yet
    // is waited for, standing by.
    let schemaReady = false;
    const prepare = async () => {
      const migrated = await prepareStorage(config);
      if (migrated && migrated.from !== migrated.to) log.info(migrated, `created or migrated the database schema from version ${migrated.from} to ${migrated.to}`);
      schemaReady = true;
    };
    let firstError: Error | undefined;
    await prepare().catch(async (err: Error) => {
      if (!(err instanceof SchemaTooNewError)) return void (firstError = err);
      await closeDrivers(drivers);
      throw err;
    });
    url = await gate.listen(config.host, config.port);
    // Stand by, take the lease, activate, serve until the lease is lost; again, until close().
    gate.standby('waiting for the lease');
    void (async () => {
      for (let attempt = 0; !schemaReady && !closing; attempt++) {
        const err = attempt === 0 ? firstError! : await prepare().then(() => undefined, (e: Error) => e);
        if (!err) break;
        if (err instanceof SchemaTooNewError) {
          log.fatal({ err: err.message }, 'this release cannot use the database; standing by');
          gate.standby(err.message);
          return;
        }
        if (attempt % 30 === 0) log.warn({ err: err.message }, 'cannot prepare the database yet; retrying every 2 s');
        // The details (addresses, user names) are for the log, not for unauthenticated callers.
        gate.standby('waiting for the database (the log says why)');
        await new Promise((r) => setTimeout(r, 2000));
      }
      while (!closing) {
        log.info({ instance }, 'standing by: waiting for the lease');
        let reported = false;
        const held = await candidate.acquire(stopAcquiring.signal, (err) => {
          if (!reported) log.warn({ err: err.message }, 'cannot reach the database to take the lease; retrying');
          reported = true;
        });
        if (!held || closing) {
          await held?.release();
          break;
        }
        lease = held;
        log.info({ instance, token: held.token }, 'took the lease: activating');
        gate.standby('taking over: rebuilding from the database');
        let trouble: string | undefined;
        let wake!: () => void;
        const troubled = new Promise<void>((r) => (wake = r));
        const onTrouble = (why: string) => {
          trouble ??= why;
          wake();
        };
        try {
          const a = await activate(held, onTrouble);
          if (trouble || !held.held()) {
            await a.close();
            throw new Error(trouble ?? held.reason ?? 'the lease was lost while activating');
          }
          serve(a);
          log.info({ instance, token: held.token }, 'active: serving the API');
          const why = await Promise.race([held.lost, troubled.then(() => trouble!)]);
          if (closing) break;
          log.warn({ instance, token: held.token, why }, 'stepping down');
          await stepDown('stepped down (the log says why); standing by');
        } catch (err) {
          metrics.detach();
          if (closing) break;
          log.error({ err: (err as Error).message }, 'could not activate; standing by');
          gate.standby('could not activate (the log says why); standing by');
          // Let another process try (or this one, after a pause).
          await held.release();
          await new Promise((r) => setTimeout(r, Math.min(5000, config.leaseTtlMs)));
        } finally {
          if (!closing) await held.release();
          if (lease === held && !closing) lease = undefined;
        }
      }
    })().catch((err) => log.fatal({ err }, 'the standby loop failed; this process stays a standby'));
  }

  const none = (what: string) => () => {
    throw new Error(`this process has not been active yet: no ${what}`);
  };
  const svc: Service = {
    get app() { return (last ?? { app: none('app')() }).app; },
    get world() { return (last ?? { world: none('world')() }).world; },
    get headnodes() { return (last ?? { headnodes: none('headnodes')() }).headnodes; },
    get headnodesRecovered() { return (last ?? { headnodesRecovered: none('headnodes')() }).headnodesRecovered; },
    get role() { return gate.role; },
    get generatedAdminPassword() { return generatedAdminPassword; },
    drivers,
    metrics,
    url,
    instance,
    log,
    whenActive: () => (gate.role === 'active' ? Promise.resolve() : new Promise<void>((r) => activeWaiters.push(r))),
    async close() {
      if (closing) return;
      closing = true;
      stopAcquiring.abort();
      const closed = gate.close();
      gate.standby('shutting down');
      const a = current;
      current = undefined;
      if (a) await a.close();
      // A clean stop hands over at once: the lease is marked lapsed.
      await lease?.release();
      gate.server.closeAllConnections();
      await closed;
      await closeDrivers(drivers);
    },
  };
  if (deps.waitForActive !== false) await activeOnce;
  return svc;
}
