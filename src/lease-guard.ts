/**
 * Hardware calls only while this process may act as the active one (docs/high-availability.md,
 * "The lease and fencing"). The database refuses a deposed process's writes; hardware cannot: a
 * process paused past its lease, or cut off from the database, must not change a switch port,
 * power a node or touch a headnode VM behind the new active's back. Each guard asks the lease's
 * own view (`mayAct`: by its clock, no later than a standby can take over) right before a call
 * reaches its device, so a call that waited in a device queue across a pause or a takeover is
 * refused there. A call already made cannot be taken back. Switch sessions are guarded where
 * they are wrapped, once (hardware/switch-session.ts, given `mayAct` by the world).
 */
import { HiltError } from '../actors/errors';
import type { ObmDrivers } from '../hardware/power';
import type { HeadnodeDriver } from '../drivers/headnode/types';
import type { ObmDriver } from '../drivers/obm/types';

export type MayAct = () => boolean;

/** `target` whose methods named in `calls` run `check` first; everything else (a mock's own methods too) is the target's. */
function guardCalls<T extends object>(target: T, calls: readonly string[], check: () => void): T {
  type Method = (...args: unknown[]) => Promise<unknown>;
  const wrapped = new WeakMap<Method, Method>();
  return new Proxy(target, {
    get(t, prop) {
      const value = Reflect.get(t, prop, t);
      if (typeof prop !== 'string' || !calls.includes(prop) || typeof value !== 'function') return value;
      const method = value as Method;
      let fn = wrapped.get(method);
      if (!fn) {
        fn = async (...args: unknown[]) => {
          check();
          return method.apply(t, args);
        };
        wrapped.set(method, fn);
      }
      return fn;
    },
  });
}

/** The refusal of a power call or a VM operation: 503, as a standby's, so the client retries at the active one. */
export function notActive(retryAfterS: number): HiltError {
  return new HiltError('ServiceUnavailableError',
    'this hilt process no longer holds the lease, or took it over moments ago from a process that may still be acting until its own lease runs out, so it makes no hardware call now: nothing was sent; try again (the active process serves it)',
    { retryAfter: retryAfterS });
}

const OBM_CALLS: readonly (keyof ObmDriver)[] = ['powerCycle', 'powerOff', 'powerOn', 'powerStatus', 'setBootDevice', 'openConsole'];

/**
 * Power calls: every call, a status read too (two clients at once upset a small BMC). The check
 * runs when the call's turn at the BMC comes, after any wait behind earlier calls.
 */
export function guardObm(set: ObmDrivers, mayAct: MayAct, retryAfterS: number): ObmDrivers {
  const check = () => {
    if (!mayAct()) throw notActive(retryAfterS);
  };
  const guarded = new Map<string, ObmDriver>();
  return {
    registry: set.registry,
    get(type) {
      const found = set.get(type);
      if (!found) return found;
      let driver = guarded.get(type);
      if (!driver) guarded.set(type, (driver = guardCalls(found.driver, OBM_CALLS, check)));
      return { entry: found.entry, driver };
    },
  };
}

/**
 * VM operations: everything that boots, stops or removes a VM. Reads of the local VMs (status,
 * isAlive, the images) pass: they change nothing, and the monitor's reaction to one is a write
 * (fenced) and a stop (guarded). HeadnodeControl records a refused operation as the headnode's
 * error where it still can write, and answers 502 HeadnodeError as for any driver failure.
 */
export function guardHeadnode(driver: HeadnodeDriver, mayAct: MayAct, retryAfterS: number): HeadnodeDriver {
  const calls: readonly (keyof HeadnodeDriver)[] = ['create', 'start', 'stop', 'recover', 'destroy'];
  return guardCalls(driver, calls, () => {
    if (!mayAct()) throw notActive(retryAfterS);
  });
}
