/**
 * What the tenant lifecycle's runners share (docs/lifecycle.md): the system user they act as,
 * how they report to metrics, and how they record an outcome that must not be lost.
 */
import { HiltError } from '../../actors/errors';
import { backoff, sleep } from '../../lib/time';

/** The user the service acts as for its own lifecycle work (lease expiry, outcomes), in every journal. */
export const SYSTEM_USER = 'hilt';

/** What the lifecycle reports (src/metrics.ts counts it). Hooks are quick and never throw. */
export interface LifecycleTelemetry {
  /** a released node moved into the maintenance pool */
  quarantined(): void;
  /** a release's power-off ended */
  releasePowerOff(outcome: 'ok' | 'error'): void;
  /** one POST of a maintenance notice ended */
  maintenanceDelivery(outcome: 'ok' | 'error'): void;
  /** a lease passed and its node's release began */
  leaseExpired(): void;
}

export const NO_LIFECYCLE_TELEMETRY: LifecycleTelemetry = {
  quarantined() {},
  releasePowerOff() {},
  maintenanceDelivery() {},
  leaseExpired() {},
};

/** Where the runners report what went wrong (the service's logger). */
export interface LifecycleLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export const NO_LOG: LifecycleLog = { info() {}, warn() {} };

export const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Runs `ask` until it succeeds or `stop` aborts: an outcome that storage or the actor could not
 * take now (503) is asked again with backoff, since a lost outcome would leave the work pending
 * until the next start. Any other refusal is final (the node is gone). Resolves whether it was
 * recorded.
 */
export async function recordOutcome(ask: () => Promise<unknown>, stop: AbortSignal): Promise<boolean> {
  for (let attempt = 0; !stop.aborted; attempt++) {
    try {
      await ask();
      return true;
    } catch (err) {
      if (!(err instanceof HiltError) || err.type !== 'ServiceUnavailableError') return false;
      await sleep(backoff(attempt, 50, 5_000), stop);
    }
  }
  return false;
}
