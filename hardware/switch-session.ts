/**
 * The one wrapper of a driver's switch session (SwitchSessions applies it at each login): it
 * times every call for metrics, refuses every change once this process may no longer act (the
 * lease of a standby pair: src/lease-guard.ts says why), and counts the changes sent.
 *
 * Counting: a failed switch call may have changed a port only when its session's `changesSent`
 * moved while the call held the switch; the service sets a port back after a failure only then
 * (hardware/port-hardware.ts), since setting back a port that was never touched costs a second
 * timeout on a switch that is gone and tells the operator to repair nothing. A driver that
 * cannot tell (no `changesSent`) is counted here: every change call counts from its start, so
 * for it any failure after a change call began sets the port back. A call whose login failed,
 * or that never got a session, sent nothing.
 */
import { SwitchError, type SwitchSession } from '../drivers/switch/types';

/** The session calls, as metrics name them; `change` marks the calls that may change a port. */
const CALLS: Record<string, { metric: string; change: boolean }> = {
  setNative: { metric: 'set_native', change: true },
  removeNative: { metric: 'remove_native', change: true },
  addTagged: { metric: 'add_tagged', change: true },
  removeTagged: { metric: 'remove_tagged', change: true },
  resetPort: { metric: 'reset_port', change: true },
  setEnabled: { metric: 'set_enabled', change: true },
  getPortVlans: { metric: 'get_port_vlans', change: false },
  readWiring: { metric: 'read_wiring', change: false },
  commit: { metric: 'commit', change: true },
  close: { metric: 'logout', change: false },
};

export interface SessionWrap {
  /** one call's duration and outcome, by its metrics name */
  report(call: string, seconds: number, ok: boolean): void;
  /** false once this process may no longer change hardware (absent: always may) */
  mayAct?: () => boolean;
  /** told the port of each change call (its first argument) as it starts */
  changing?: (port: string) => void;
}

/** The refusal of a switch call by a process that lost its lease. */
export function leaseLost(): SwitchError {
  return new SwitchError('this hilt process no longer holds the lease; the active one carries the operation out');
}

/** `session` timed, guarded and counting its changes (the driver's own count where it keeps one). */
export function wrapSession(session: SwitchSession, wrap: SessionWrap): SwitchSession {
  const ownCount = session.changesSent !== undefined;
  let started = 0;
  type Method = (...args: unknown[]) => Promise<unknown>;
  const wrapped = new Map<string, Method>();
  return new Proxy(session, {
    get(t, prop) {
      if (prop === 'changesSent') return ownCount ? t.changesSent : started;
      const value = Reflect.get(t, prop, t);
      const call = typeof prop === 'string' && Object.hasOwn(CALLS, prop) ? CALLS[prop]! : undefined;
      if (!call || typeof value !== 'function') return value;
      let fn = wrapped.get(prop as string);
      if (!fn) {
        const method = value as Method;
        fn = async (...args: unknown[]) => {
          if (call.change && wrap.mayAct && !wrap.mayAct()) throw leaseLost();
          if (call.change && !ownCount) started++;
          if (call.change && typeof args[0] === 'string') wrap.changing?.(args[0]);
          const t0 = performance.now();
          try {
            const out = await method.apply(t, args);
            wrap.report(call.metric, (performance.now() - t0) / 1000, true);
            return out;
          } catch (err) {
            wrap.report(call.metric, (performance.now() - t0) / 1000, false);
            throw err;
          }
        };
        wrapped.set(prop as string, fn);
      }
      return fn;
    },
  });
}

/** One call's view of its session: set once its work starts. */
export class CallProgress {
  private session?: SwitchSession;
  private before = 0;
  /** the ports its change calls were for */
  readonly ports = new Set<string>();

  touch(port: string): void {
    this.ports.add(port);
  }

  /** The call's work starts on `session` (one that counts its changes). */
  start(session: SwitchSession): void {
    this.session = session;
    this.before = session.changesSent ?? 0;
  }

  /** what the call had sent when stop() was called */
  private stopped?: boolean;

  /** The call's own work is over: what the session sends later (committing other calls' changes) is not its own. */
  stop(): void {
    this.stopped ??= this.sentChanges;
  }

  /** Did the call send anything that may have changed a port, so far? */
  get sentChanges(): boolean {
    return this.stopped ?? (!!this.session && (this.session.changesSent ?? 0) !== this.before);
  }
}

/** `err` as the failure of a call that sent nothing (a new error: a driver may throw one object more than once). */
export function nothingSent(err: Error): SwitchError {
  return new SwitchError(err.message, { nothingSent: true });
}
