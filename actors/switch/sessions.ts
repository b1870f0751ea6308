/**
 * Drives switches: one session at a time per switch, and every operation queued for that
 * switch while its session is open is applied in the same session (HIL did the same: one
 * login per batch). Different switches work in parallel. Every driver call is bounded by a
 * timeout; a failed or timed-out call fails only its own operation, and the session is
 * dropped so that the next operation starts on a fresh one — but only once the failed call
 * has finished (or had several timeouts to), since a timed-out call may still be changing
 * the switch.
 */
import { SwitchDriver, SwitchError, SwitchInfo, SwitchSession } from '../../drivers/switch/types';

export type PortWork = (session: SwitchSession) => Promise<void>;

interface Queued { work: PortWork; resolve: () => void; reject: (err: Error) => void }

const noop = () => undefined;
/** How many timeouts a failed call gets to finish after its session was closed. */
const SETTLE_TIMEOUTS = 4;

function bounded<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SwitchError(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export class SwitchSessions {
  private readonly queues = new Map<string, Queued[]>();
  private readonly running = new Set<string>();

  constructor(private readonly driverFor: (type: string) => SwitchDriver | undefined, private readonly timeoutMs: number) {}

  /** Queue work on a switch; resolves once applied, rejects with SwitchError. */
  submit(sw: SwitchInfo, work: PortWork): Promise<void> {
    return new Promise((resolve, reject) => {
      const q = this.queues.get(sw.name) ?? [];
      q.push({ work, resolve, reject });
      this.queues.set(sw.name, q);
      if (!this.running.has(sw.name)) void this.drain(sw);
    });
  }

  /** Operations queued or in progress, per switch. */
  depth(sw: string): number {
    return (this.queues.get(sw)?.length ?? 0) + (this.running.has(sw) ? 1 : 0);
  }

  /**
   * After a call failed or timed out: close the session (a driver must end its pending calls
   * then) and give the call up to SETTLE_TIMEOUTS timeouts to finish, so that nothing else
   * touches the switch while it might still be applying a change.
   */
  private async drop(session: SwitchSession | undefined, call: Promise<unknown>): Promise<void> {
    if (session) await bounded(session.close(), this.timeoutMs, 'closing a session').catch(noop);
    await bounded(call.then(noop, noop), this.timeoutMs * SETTLE_TIMEOUTS, 'settling').catch(noop);
  }

  private async drain(sw: SwitchInfo): Promise<void> {
    this.running.add(sw.name);
    const q = this.queues.get(sw.name)!;
    let session: SwitchSession | undefined;
    try {
      while (q.length) {
        const item = q.shift()!;
        let call: Promise<unknown> = Promise.resolve();
        try {
          if (!session) {
            const driver = this.driverFor(sw.type);
            if (!driver) throw new SwitchError(`no driver for switch type ${sw.type}`);
            const opening = driver.open(sw);
            call = opening;
            session = await bounded(opening, this.timeoutMs, `opening a session on switch ${sw.name}`).catch((err) => {
              // A session that arrives after its timeout is closed at once, never used.
              void opening.then((late) => late.close().catch(noop), noop);
              throw err;
            });
          }
          call = item.work(session);
          await bounded(call, this.timeoutMs, `an operation on switch ${sw.name}`);
          item.resolve();
        } catch (err) {
          // The session may be in any state now: drop it; the next operation gets a new one.
          const broken = session;
          session = undefined;
          await this.drop(broken, call);
          item.reject(err instanceof SwitchError ? err : new SwitchError(`switch ${sw.name}: ${(err as Error).message}`));
        }
      }
    } finally {
      // Still "running" while closing: work submitted meanwhile waits in q, never a 2nd session.
      if (session) await bounded(session.close(), this.timeoutMs, `closing the session on switch ${sw.name}`).catch(() => undefined);
      this.running.delete(sw.name);
      if (q.length) void this.drain(sw);
      else this.queues.delete(sw.name);
    }
  }
}
