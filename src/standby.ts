/**
 * The life of a process on a shared store (PostgreSQL, docs/high-availability.md): prepare the
 * database's schema (retried while the database cannot be reached), then, until the service
 * closes: stand by, take the lease, activate, serve until the lease is lost or the database
 * says this process's writes are in doubt, step down, and stand by again. A later activation
 * rebuilds everything from the database.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config';
import { restoredWarning, type Activation } from './activation';
import type { Gate } from './gate';
import { prepareStorage, SchemaTooNewError } from '../actors/persistence';
import type { HeldLease, LeaseCandidate } from '../actors/persistence/lease';
import { sleep } from '../lib/time';

/** What the standby loop drives; the service (src/service.ts) gives it. */
export interface StandbyDeps {
  config: Config;
  log: FastifyBaseLogger;
  gate: Gate;
  candidate: LeaseCandidate;
  /** this process's name (lease, logs) */
  instance: string;
  /** aborts when the service closes: the loop ends (an activation under way stops and closes itself) */
  signal: AbortSignal;
  activate(held: HeldLease, onTrouble: (why: string) => void, signal: AbortSignal): Promise<Activation>;
  /** serve an activation's API */
  serve(a: Activation): void;
  /** stop serving the current activation and close it */
  stepDown(why: string): Promise<void>;
  /** an activation failed: its metrics are no longer this process's */
  failed(): void;
  /** the lease this process holds now (undefined once released) */
  holding(held: HeldLease | undefined): void;
}

/** Create or migrate the database's schema; says so in the log when it changed it. */
export async function prepareSchema(config: Config, log: FastifyBaseLogger): Promise<void> {
  const migrated = await prepareStorage(config);
  if (migrated && migrated.from !== migrated.to) log.info(migrated, `created or migrated the database schema from version ${migrated.from} to ${migrated.to}`);
  if (migrated?.restoreGap) log.warn({ gap: migrated.restoreGap }, restoredWarning(migrated.restoreGap));
}

/**
 * Run until the service closes. `schemaError`: why the first preparation of the schema failed
 * (undefined: it succeeded); it is retried every 2 s, standing by, unless the database is too
 * new for this release (then this process stays a standby for good).
 */
export async function standBy(deps: StandbyDeps, schemaError: Error | undefined): Promise<void> {
  const { config, log, gate, signal } = deps;
  for (let attempt = 0, err = schemaError; err && !signal.aborted; attempt++) {
    if (err instanceof SchemaTooNewError) {
      log.fatal({ err: err.message }, 'this release cannot use the database; standing by');
      gate.standby(err.message);
      return;
    }
    if (attempt % 30 === 0) log.warn({ err: err.message }, 'cannot prepare the database yet; retrying every 2 s');
    // The details (addresses, user names) are for the log, not for unauthenticated callers.
    gate.standby('waiting for the database (the log says why)');
    await sleep(2000, signal);
    if (signal.aborted) return;
    err = await prepareSchema(config, log).then(() => undefined, (e: Error) => e);
  }
  while (!signal.aborted) {
    log.info({ instance: deps.instance }, 'standing by: waiting for the lease');
    let reported = false;
    const held = await deps.candidate.acquire(signal, (err) => {
      if (!reported) log.warn({ err: err.message }, 'cannot reach the database to take the lease; retrying');
      reported = true;
    });
    if (!held || signal.aborted) {
      await held?.release();
      return;
    }
    deps.holding(held);
    try {
      await serveWhileHeld(deps, held);
    } finally {
      if (!signal.aborted) {
        await held.release();
        deps.holding(undefined);
      }
    }
  }
}

/** Activate under `held` and serve until it is lost or the database is in doubt; then step down. */
async function serveWhileHeld(deps: StandbyDeps, held: HeldLease): Promise<void> {
  const { config, log, gate, signal } = deps;
  log.info({ instance: deps.instance, token: held.token }, 'took the lease: activating');
  gate.standby('taking over: rebuilding from the database');
  let trouble: string | undefined;
  let wake!: () => void;
  const troubled = new Promise<void>((r) => (wake = r));
  const onTrouble = (why: string) => {
    trouble ??= why;
    wake();
  };
  try {
    const a = await deps.activate(held, onTrouble, signal);
    if (trouble || !held.held()) {
      await a.close();
      throw new Error(trouble ?? held.reason ?? 'the lease was lost while activating');
    }
    deps.serve(a);
    log.info({ instance: deps.instance, token: held.token }, 'active: serving the API');
    // The service's close ends the loop here; it closes the activation it serves itself.
    let onAbort!: () => void;
    const closing = new Promise<string>((r) => signal.addEventListener('abort', (onAbort = () => r('closing')), { once: true }));
    const ended = await Promise.race([held.lost, troubled.then(() => trouble!), closing]).finally(() => signal.removeEventListener('abort', onAbort));
    if (signal.aborted) return;
    // A write refused for the token ends the lease too (src/activation.ts): the refusal says more.
    const why = trouble ?? ended;
    log.warn({ instance: deps.instance, token: held.token, why }, 'stepping down');
    await deps.stepDown('stepped down (the log says why); standing by');
  } catch (err) {
    deps.failed();
    if (signal.aborted) return;
    log.error({ err: (err as Error).message }, 'could not activate; standing by');
    gate.standby('could not activate (the log says why); standing by');
    // Let another process try (or this one, after a pause).
    await held.release();
    await sleep(Math.min(5000, config.leaseTtlMs), signal);
  }
}
