/**
 * What the actor world reports as it works, for the service's metrics (src/metrics.ts turns it
 * into Prometheus metrics). The runtime, the device queues, the switch sessions, power control,
 * headnode control and the network operations call these small hooks where things happen, and
 * know nothing of how they are counted. The default does nothing. A hook must be quick, must not
 * throw, and never changes what the world does.
 */

/** The kinds of hardware driver. */
export type DriverKind = 'switch' | 'obm' | 'headnode';

/** A network operation as metrics name it. */
export type OperationType = 'connect' | 'detach' | 'revert' | 'reapply';

/** How a device queue call ended: `expired` never got the device in time, `timeout` ran out of time on it. */
export type DeviceOutcome = 'ok' | 'error' | 'timeout' | 'expired';

export interface Telemetry {
  /** One decision's events were handed to storage: how long the durable commit took, and whether it was refused. */
  committed(kind: string, events: number, seconds: number, ok: boolean): void;
  /** A network operation was accepted (PENDING), for a port of switch `sw`. */
  operationAccepted(sw: string, type: OperationType): void;
  /** A network operation's outcome was committed, `seconds` after it was accepted. */
  operationFinished(sw: string, type: OperationType, status: 'DONE' | 'ERROR', seconds: number): void;
  /** One call of a hardware driver (`driver`: its type's short name, e.g. `ipmi`), its duration and outcome. */
  driverCall(kind: DriverKind, driver: string, call: string, seconds: number, ok: boolean): void;
  /** A switch session was opened (a login succeeded). */
  sessionOpened(sw: string): void;
  /** A switch session was closed after carrying `operations` port operations. */
  sessionClosed(sw: string, operations: number): void;
  /** A call on a device queue (`queue`: switch, obm or headnode) ended, after waiting `waitedSeconds` for its device. */
  deviceCall(queue: DriverKind, waitedSeconds: number, outcome: DeviceOutcome): void;
}

export const NO_TELEMETRY: Telemetry = {
  committed() {},
  operationAccepted() {},
  operationFinished() {},
  driverCall() {},
  sessionOpened() {},
  sessionClosed() {},
  deviceCall() {},
};

/** A driver type's short name for metrics: the last segment of HIL's type URL (`…/v0/obm/ipmi` → `ipmi`). */
export function driverName(type: string): string {
  return type.replace(/\/+$/, '').split('/').pop() || type;
}

const seconds = (t0: number) => (performance.now() - t0) / 1000;

/** Runs `call`, reporting its duration and whether it succeeded. */
export async function timed<T>(call: () => Promise<T>, report: (seconds: number, ok: boolean) => void): Promise<T> {
  const t0 = performance.now();
  try {
    const value = await call();
    report(seconds(t0), true);
    return value;
  } catch (err) {
    report(seconds(t0), false);
    throw err;
  }
}

/**
 * `target` with the named methods timed (method name → call name in metrics); everything else,
 * a mock's own methods included, is the target's. The target itself is what the methods run on.
 */
export function instrument<T extends object>(target: T, calls: Record<string, string>, report: (call: string, seconds: number, ok: boolean) => void): T {
  type Method = (...args: unknown[]) => Promise<unknown>;
  const wrapped = new WeakMap<Method, Method>();
  return new Proxy(target, {
    get(t, prop) {
      const value = Reflect.get(t, prop, t);
      const call = typeof prop === 'string' && Object.hasOwn(calls, prop) ? calls[prop] : undefined;
      if (call === undefined || typeof value !== 'function') return value;
      const method = value as Method;
      let fn = wrapped.get(method);
      if (!fn) {
        fn = (...args: unknown[]) => timed(() => method.apply(t, args), (s, ok) => report(call, s, ok));
        wrapped.set(method, fn);
      }
      return fn;
    },
  });
}
