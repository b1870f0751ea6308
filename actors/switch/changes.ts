/**
 * Whether a failed switch call may have changed a port: the service sets a port back after a
 * failure only then (actors/port/hardware.ts), since setting back a port that was never touched
 * costs a second timeout on a switch that is gone and tells the operator to repair nothing.
 *
 * A call may have changed a port when its session's `changesSent` moved while the call held
 * the switch. A driver that cannot tell (no `changesSent`) is counted here: every change call
 * counts from its start, so for it any failure after a change call began sets the port back.
 * A call whose login failed, or that never got a session, sent nothing.
 */
import { SwitchError, type SwitchSession } from '../../drivers/switch/types';

const CHANGE_CALLS = new Set(['setNative', 'removeNative', 'addTagged', 'removeTagged', 'resetPort']);

/** `session` with a `changesSent` count: the driver's own, or else one change call each. */
export function countingChanges(session: SwitchSession): SwitchSession {
  if (session.changesSent !== undefined) return session;
  let started = 0;
  return new Proxy(session, {
    get(t, prop) {
      if (prop === 'changesSent') return started;
      const value = Reflect.get(t, prop, t);
      if (typeof prop !== 'string' || !CHANGE_CALLS.has(prop) || typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        started++;
        return (value as (...a: unknown[]) => unknown).apply(t, args);
      };
    },
  });
}

/** One call's view of its session: set once its work starts. */
export class CallProgress {
  private session?: SwitchSession;
  private before = 0;

  /** The call's work starts on `session` (one that counts its changes). */
  start(session: SwitchSession): void {
    this.session = session;
    this.before = session.changesSent ?? 0;
  }

  /** Did the call send anything that may have changed a port, so far? */
  get sentChanges(): boolean {
    return !!this.session && (this.session.changesSent ?? 0) !== this.before;
  }
}

/** `err` as the failure of a call that sent nothing (a new error: a driver may throw one object more than once). */
export function nothingSent(err: Error): SwitchError {
  return new SwitchError(err.message, { nothingSent: true });
}
