/**
 * One activation: everything a start does on a fresh storage engine, and what a stop (or a
 * standby's step-down) closes. It opens the engine (fenced by the lease's token on PostgreSQL),
 * brings the world up from storage (actors/recovery.ts), creates the bootstrap admin on the
 * first start, starts power and headnode control, builds the API and its metrics, and starts
 * recovering headnode VMs. A start that fails closes what it opened.
 *
 * On PostgreSQL every hardware call is guarded by the lease (src/lease-guard.ts): no call once
 * this process may no longer act as the active one.
 */
import { randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { buildApp } from './app';
import type { Config } from './config';
import { hashPassword } from './auth/password';
import { SERVICE } from './audit';
import type { Drivers } from './drivers';
import { guardHeadnode, guardObm } from './lease-guard';
import type { Metrics } from './metrics';
import { World } from '../actors/world';
import { recoverWorld } from '../actors/recovery';
import type { Checkpointer } from '../actors/checkpoint';
import { openEngine } from '../actors/persistence';
import type { HeldLease } from '../actors/persistence/lease';
import type { PersistenceEngine } from '../actors/persistence/engine';
import { PowerControl } from '../hardware/power';
import { Lifecycle } from './lifecycle';
import { HeadnodeControl } from '../hardware/headnode-control';
import { CLOSE, Consoles } from '../hardware/consoles';
import { SecretStore } from './secrets/at-rest';
import { shortText } from '../lib/text';
import { settledWithin } from '../lib/time';
import { archiveDirOf, Retention } from './retention';
import { upgradeHandler } from './upgrade';

export interface Activation {
  app: FastifyInstance;
  world: World;
  headnodes: HeadnodeControl;
  /** the serial consoles' sessions and logs (docs/consoles.md) */
  consoles: Consoles;
  /** the tenant lifecycle's runners (docs/lifecycle.md) */
  lifecycle: Lifecycle;
  /** journal retention's passes (src/retention.ts) */
  retention: Retention;
  /** resolves once every headnode VM was recovered */
  headnodesRecovered: Promise<void>;
  /** the API's request handler, for the Gate to hand requests to */
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** the API's upgrades (the consoles' WebSockets), handed on by the Gate too */
  upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  close(): Promise<void>;
}

/** What every activation of one process shares. */
export interface ActivationContext {
  config: Config;
  drivers: Drivers;
  metrics: Metrics;
  /** the service's logger (silent when none was given) */
  log: FastifyBaseLogger;
  /** the logger the API logs requests with (none: it logs nothing) */
  appLogger?: FastifyBaseLogger;
  /** seconds a refused client should wait (Retry-After) */
  retryAfterS: number;
  /** wraps the storage engine (tests inject storage faults) */
  wrapEngine?: (engine: PersistenceEngine) => PersistenceEngine;
  /** told the generated password of a bootstrap admin this activation created */
  onAdminCreated(password: string): void;
}

/**
 * The first start on a restored store acts on the hardware its backup names (pending network
 * operations carried out, ports' records set, release power-offs resumed): a service still
 * running on the original would have the same switches and BMCs undone under it.
 */
export const restoredWarning = (gap: [number, number]): string =>
  `this store was restored from a backup: it now acts on the switches, BMCs and headnode VMs the backup names (network operations pending in it are carried out, power-offs resumed). The service on the original store must be stopped: two services on the same hardware undo each other's changes. Event ids go on after ${gap[1]}; an id from before (a stream's Last-Event-ID) is answered 410`;

/** Bound on closing an activation that failed or stepped down: a hung database must not keep us. */
export const closeBudgetMs = (config: Config): number => config.askTimeoutMs + 5000;

/**
 * Activate on a fresh engine. `held`: the lease on PostgreSQL (none on the embedded engines);
 * `onTrouble` is told when the database refuses a write for the lease's token or a commit's
 * outcome is in doubt (the caller steps down). `signal`: the service closes; the activation
 * stops at its next step (nothing more is started) and closes what it opened.
 */
export async function activate(ctx: ActivationContext, held: HeldLease | undefined, onTrouble: (why: string) => void, signal?: AbortSignal): Promise<Activation> {
  const { config, drivers, metrics, log } = ctx;
  const goOn = () => {
    if (signal?.aborted) throw new Error('the service is closing: the activation stopped');
  };
  const opened = openEngine(config, held ? {
    fence: held.token,
    onFenced: (err) => {
      log.warn({ token: held.token, err: err.message }, 'the database refused a write: this process\'s fencing token is no longer the lease\'s');
      // Another process holds the lease for sure: no more hardware calls from here on, whatever
      // this process's own view of the lease (its renewals may not have told it yet).
      held.lose('the database refused a write for this process\'s fencing token: another hilt process took the lease over');
      onTrouble(err.message);
    },
    onDoubt: (err) => {
      log.error({ token: held.token, err: err.message }, 'a commit\'s outcome is unknown: rebuilding from the database');
      onTrouble(err.message);
    },
  } : {});
  const engine = ctx.wrapEngine ? ctx.wrapEngine(opened) : opened;
  // Before anything acts on hardware. (PostgreSQL's restore is noted by prepareSchema.)
  if (opened.restored) log.warn({ gap: opened.restored }, restoredWarning(opened.restored));
  // Hardware calls: while the lease is held, and not before the process it was taken over from
  // can no longer believe it holds it (actors/persistence/lease.ts).
  const mayAct = held ? () => held.mayAct() : undefined;

  let world: World | undefined;
  let headnodes: HeadnodeControl | undefined;
  let app: FastifyInstance | undefined;
  let consoles: Consoles | undefined;
  let lifecycle: Lifecycle | undefined;
  let retention: Retention | undefined;
  let checkpointer: Checkpointer | undefined;
  const calls = new CallsInFlight();
  const close = async () => {
    await retention?.close();
    // The gate no longer hands this app new calls; its event streams and WebSockets end here.
    await app?.close();
    // A call still being answered (a power call waiting on its BMC) gets its answer, not a
    // reset connection, before what it uses closes.
    await settledWithin(calls.drained(), closeBudgetMs(config));
    // Every console session's ipmitool is killed (by PID) before the process goes on.
    await consoles?.close();
    lifecycle?.close();
    // Headnode VMs keep running across a restart of the service: the next start adopts them.
    await headnodes?.close();
    await world?.close();
    // At a clean stop nothing is in flight: the read model's checkpoint, written last.
    await checkpointer?.close();
    await engine.close();
  };
  try {
    // The key of the credentials at rest, checked against the store's (src/secrets/at-rest.ts).
    const secrets = await SecretStore.open(engine, config, drivers, log);
    goOn();
    world = new World(engine, {
      vlanPool: config.vlanPool, idleMs: config.actorIdleMs, askTimeoutMs: config.askTimeoutMs,
      switchDriverFor: (type) => drivers.switches.driver(type), mayAct,
      switchNativeFirst: (type) => !!drivers.switches.get(type)?.entry.nativeFirst,
      switchTimeoutMs: config.switchTimeoutMs, telemetry: metrics, credentials: secrets,
      inactivePorts: config.inactivePorts, wiringConcurrency: config.wiringConcurrency,
      release: { maintenanceProject: config.maintenanceUrl !== undefined ? config.maintenanceProject : undefined, powerOff: config.releasePowerOff },
    });
    world.rm.nodeAnswers.limit = config.answerCacheMiB * 2 ** 20;
    // Plaintext credentials an earlier release stored are sealed once the data is in the current format.
    const recovered = await recoverWorld(world, () => secrets.prepare(), {
      everyEvents: config.checkpointEvents,
      onWritten: (r) => {
        if (!r.ok) log.warn({ ...r }, 'the read model\'s checkpoint was not written (the next start may replay more of the journal)');
        else log.debug({ ...r }, 'wrote the read model\'s checkpoint');
      },
    });
    const { upgraded, repairedPorts } = recovered;
    checkpointer = recovered.checkpointer;
    goOn();
    await bootstrapAdmin(world, config, ctx.onAdminCreated);
    // An earlier release let an admin make them (src/routes/users.ts refuses them now): they keep
    // working, but their calls pass for the service's own in the audit log and the event stream.
    const reserved = [...SERVICE].filter((name) => world!.rm.users.has(name)).sort();
    if (reserved.length) log.warn({ users: reserved }, 'users bear a name the service records its own work under: their calls look like the service\'s own in the audit log and the event stream; move their work to users of other names, then delete these');
    goOn();

    const power = new PowerControl(mayAct ? guardObm(drivers.obm, mayAct, ctx.retryAfterS) : drivers.obm, config.obmTimeoutMs, metrics, secrets);
    // Serial consoles: every node that records gets its session back; the logs of the others go.
    consoles = new Consoles({ rm: world.rm, power, dataDir: config.dataDir, logBytes: config.consoleLogBytes, maxViewers: config.consoleViewers, telemetry: metrics });
    consoles.log = log;
    world.nodeWatchers.push(consoles.watch);
    const viewers = consoles;
    world.userWatchers.push(() => viewers.recheck());
    consoles.start();
    // A session reaches the node's BMC, and a viewer may type into it: it ends as soon as the lease
    // is lost, not only once the step-down has answered the calls still in flight.
    if (held) {
      const ending = consoles;
      void held.lost.then(() => ending.close(CLOSE.notActive));
    }
    // The tenant lifecycle (docs/lifecycle.md): release power-offs, maintenance notices and
    // lease expiries still pending in storage are resumed here, before the API serves.
    lifecycle = new Lifecycle(world, { config, power, telemetry: metrics, mayAct });
    // A release deletes the node's console log (the recording itself ended in the release's commit).
    const forget = consoles;
    lifecycle.release.hooks.push((node) => forget.forget(node.name));
    lifecycle.start(config.maintenanceUrl !== undefined ? config.maintenanceProject : undefined);
    const vms = drivers.headnode;
    headnodes = new HeadnodeControl(world, mayAct ? guardHeadnode(vms.driver, mayAct, ctx.retryAfterS) : vms.driver, {
      baseImages: config.baseImages, checkMs: config.headnodeCheckMs, timeoutMs: config.headnodeTimeoutMs,
      telemetry: metrics, driverName: vms.name, mayAct,
    });
    let handler!: Activation['handler'];
    app = await buildApp({
      world, config, power, headnodes, lifecycle, consoles, drivers, metrics, logger: ctx.appLogger, rotateKey: (file) => secrets.rotate(world!, file),
      // The gate listens; the app only handles what the gate hands it.
      serverFactory: (h) => ((handler = h), createServer()),
    });
    goOn();
    const ui = app.hilt;
    const rm = world.rm;
    await metrics.attach({
      world, power, headnodes, consoles, uiSessions: () => ui.ui?.size() ?? 0,
      events: { streams: () => ui.events.size, webhooks: () => ({ delivering: rm.webhooks.size - ui.webhooks.failing(), failing: ui.webhooks.failing() }) },
    });
    headnodes.log = app.log;
    consoles.log = app.log;
    lifecycle.log = app.log;
    world.sessions.log = app.log;
    const faultLog = app.log;
    world.runtime.onFault = (f) => faultLog.error(
      { err: f.cause instanceof Error ? f.cause : new Error(String(f.cause)), actor: `${f.kind}:${shortText(f.id, 64)}`, phase: f.phase, answered: f.answered, status: f.error.type },
      'an actor failed; every ask waiting on it was answered, and it is read again from storage on its next message',
    );
    if (upgraded) app.log.info(upgraded, `upgraded the stored data from format ${upgraded.from} to format ${upgraded.to}`);
    const cp = recovered.checkpoint;
    if (cp.used) app.log.info({ position: cp.position, replayed: cp.replayed }, 'loaded the read model from its checkpoint and the events after it');
    else if (config.checkpointEvents > 0) app.log.info({ why: cp.why }, 'rebuilt the read model from the journal (no usable checkpoint)');
    if (repairedPorts) app.log.warn({ ports: repairedPorts }, 'set the recorded configuration of switch ports back in line with their nics after an interrupted shutdown');
    // VMs that should run come back (adopted if still running) in the background; calls on a
    // headnode wait for its recovery.
    const headnodesRecovered = headnodes.recover();
    // @fastify/websocket listens for upgrades on the app's own server, which the Gate stands in for.
    const tracked = calls.track(handler);
    const upgrade: Activation['upgrade'] = upgradeHandler(app, tracked);
    // Journal retention runs on the active process only: this activation's writes are fenced.
    // A checkpoint from before a pass's removals cannot be used (a start rebuilds): one is written after it.
    retention = new Retention(world, { days: config.journalRetentionDays, archiveDir: archiveDirOf(config), log: app.log, onRemoved: () => checkpointer?.due(), onRemoving: (upTo) => ui.events.removing(upTo), onPass: (ok) => metrics.retentionPass(ok) });
    retention.start();
    goOn();
    return { app, world, headnodes, lifecycle, consoles, retention, headnodesRecovered, handler: tracked, upgrade, close };
  } catch (err) {
    await settledWithin(close(), closeBudgetMs(config));
    throw err;
  }
}

/** The API's calls not answered yet, so that a stop can wait for them. */
class CallsInFlight {
  private open = 0;
  private empty?: () => void;

  track(handler: Activation['handler']): Activation['handler'] {
    return (req, res) => {
      this.open++;
      // 'close' comes once per response: answered, or its connection gone. One listener shared
      // by every response: no closure made per call.
      res.on('close', this.closed);
      handler(req, res);
    };
  }

  private readonly closed = () => {
    if (--this.open === 0) this.empty?.();
  };

  drained(): Promise<void> {
    return this.open ? new Promise((r) => (this.empty = r)) : Promise.resolve();
  }
}

/** The first start of a store with no user creates the admin, with HILT_ADMIN_PASSWORD or a generated password. */
async function bootstrapAdmin(world: World, config: Config, onCreated: (password: string) => void): Promise<void> {
  if ((await world.users.storedIds()).length) return;
  // Its calls would pass for the service's own work in the audit log and the event stream.
  if (SERVICE.has(config.adminUser)) {
    throw new Error(`HILT_ADMIN_USER names "${config.adminUser}", a name the service records its own work under (${[...SERVICE].join(', ')}): choose another name for the first admin`);
  }
  let generated: string | undefined;
  const password = config.adminPassword ?? (generated = randomBytes(12).toString('base64url'));
  await world.users.ask(config.adminUser, { type: 'user.create', by: 'bootstrap', passwordHash: await hashPassword(password), isAdmin: true });
  if (generated) onCreated(generated);
}
