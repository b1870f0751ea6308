/**
 * One queue per hardware device (a switch, a BMC, a headnode VM): the calls for one device run
 * one at a time, in the order they were made, and different devices run in parallel. Real
 * devices misbehave when two clients talk to them at once (switch CLIs, small BMCs), and a VM
 * must never be started and stopped at the same time.
 *
 * Every call has a deadline, and the queue, not the driver, enforces it. A call receives an
 * AbortSignal; at its deadline the signal aborts (a driver then ends what it is doing: kills its
 * child process, closes its connection) and the caller is answered at once with a timeout
 * error. The device is not given to the next call until the timed-out one has really finished
 * (or had `settleMs` to do so): a timed-out call may still be changing the device, and nothing
 * else may touch it meanwhile.
 */
import { settledWithin, sleep } from '../lib/time';

export type DeviceCall<T> = (signal: AbortSignal) => Promise<T>;

export interface CallOptions {
  /** Bound on this call (default: the queue's timeoutMs). */
  timeoutMs?: number;
  /**
   * Where the deadline counts from. `start` (default): the call gets its whole timeout once it
   * has the device. `submit`: time spent waiting behind earlier calls counts too, so every call
   * is answered within its timeout of being made; one still waiting then never runs.
   */
  from?: 'start' | 'submit';
  /** Names the call in the timeout message, e.g. "chassis power status". */
  what?: string;
}

export interface DeviceQueueOptions {
  /** Default bound on each call. */
  timeoutMs: number;
  /** After a call timed out, how long it may take to finish before the next call gets the device anyway. Default 4 × timeoutMs. */
  settleMs?: number;
  /** Quiet time between the end of one call and the start of the next on one device (a BMC that drops sessions when hurried). */
  minIntervalMs?: number;
  /** A call is not started with less time than this left before its deadline: it could only be killed again. */
  minRunMs?: number;
  /**
   * Runs in the device's turn each time its queue has emptied after work (e.g. logging out of a
   * switch session), bounded by timeoutMs; calls made meanwhile wait for it.
   */
  onIdle?: (device: string, signal: AbortSignal) => Promise<void>;
  /**
   * Builds the error of a call that ran out of time (drivers' error classes map to HTTP
   * differently); `timeout` lets a caller word the message its own way.
   */
  timeoutError?: (message: string, timeout: TimedOut) => Error;
  /** Told how each call ended and how long it waited for its device (metrics: actors/telemetry.ts). */
  observe?: (ended: CallEnded) => void;
}

/** A call's end, for observe. */
export interface CallEnded {
  device: string;
  /** the call's `what` */
  what: string;
  /** from being made to getting the device (or to giving up waiting for it) */
  waitedMs: number;
  /** `expired`: it never got the device in time and never ran; `timeout`: it ran out of time on it */
  outcome: 'ok' | 'error' | 'timeout' | 'expired';
}

/** What ran out of time, for timeoutError. */
export interface TimedOut {
  device: string;
  /** the call's `what` */
  what: string;
  timeoutMs: number;
  /** true: it never got the device (still busy with an earlier call); false: it ran too long */
  waiting: boolean;
}

interface Entry {
  call: DeviceCall<unknown>;
  resolve: (v: unknown) => void;
  reject: (err: Error) => void;
  timeoutMs: number;
  /** absolute deadline when it counts from submission */
  deadline?: number;
  what: string;
  /** answered already (timed out while waiting): skip it */
  settled: boolean;
  waitTimer?: NodeJS.Timeout;
  /** when it was made */
  made: number;
  /** the queue's own work (onIdle): not observed */
  quiet?: boolean;
}

interface Line {
  queue: Entry[];
  running: boolean;
  /** work ran since the last onIdle */
  dirty: boolean;
  /** when the last call on the device ended */
  lastEnd: number;
}


export class DeviceTimeoutError extends Error {
  override name = 'DeviceTimeoutError';
}

export class DeviceQueue {
  private readonly lines = new Map<string, Line>();
  private readonly settleMs: number;
  private readonly makeTimeout: (message: string, timeout: TimedOut) => Error;

  constructor(private readonly opts: DeviceQueueOptions) {
    this.settleMs = opts.settleMs ?? opts.timeoutMs * 4;
    this.makeTimeout = opts.timeoutError ?? ((m) => new DeviceTimeoutError(m));
  }

  /** Queue `call` on `device`; resolves or rejects with its outcome, or rejects with the timeout error. */
  run<T>(device: string, call: DeviceCall<T>, opts: CallOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timeoutMs = opts.timeoutMs ?? this.opts.timeoutMs;
      const entry: Entry = {
        call, resolve: resolve as (v: unknown) => void, reject, timeoutMs, what: opts.what ?? 'a call', settled: false, made: Date.now(),
      };
      if (opts.from === 'submit') {
        entry.deadline = Date.now() + timeoutMs;
        entry.waitTimer = setTimeout(() => this.expire(entry, device), timeoutMs);
      }
      let line = this.lines.get(device);
      if (!line) this.lines.set(device, (line = { queue: [], running: false, dirty: false, lastEnd: 0 }));
      line.queue.push(entry);
      if (!line.running) void this.drain(device, line);
    });
  }

  /** Calls queued or running on the device. */
  depth(device: string): number {
    const line = this.lines.get(device);
    return line ? line.queue.length + (line.running ? 1 : 0) : 0;
  }

  /** Calls queued or running, on every device. */
  size(): number {
    let n = 0;
    for (const line of this.lines.values()) n += line.queue.length + (line.running ? 1 : 0);
    return n;
  }

  /** Something is queued or running on the device. */
  busy(device: string): boolean {
    return this.lines.has(device);
  }

  /** Resolves once every device is idle (including what gets queued meanwhile). */
  async idle(): Promise<void> {
    while (this.lines.size) await sleep(10);
  }

  /** The error of a call that ran out of time, waiting for the device or running on it. */
  private timeout(entry: Entry, device: string, waiting: boolean): Error {
    const message = `${device}: ${entry.what} did not finish within ${entry.timeoutMs} ms${waiting ? ' (still busy with an earlier call)' : ''}`;
    return this.makeTimeout(message, { device, what: entry.what, timeoutMs: entry.timeoutMs, waiting });
  }

  /** Answers a call that never got the device in time; it will not run. */
  private expire(entry: Entry, device: string): void {
    if (entry.settled) return;
    entry.settled = true;
    this.ended(entry, device, Date.now(), 'expired');
    entry.reject(this.timeout(entry, device, true));
  }

  private ended(entry: Entry, device: string, started: number, outcome: CallEnded['outcome']): void {
    if (!entry.quiet) this.opts.observe?.({ device, what: entry.what, waitedMs: started - entry.made, outcome });
  }

  private async drain(device: string, line: Line): Promise<void> {
    line.running = true;
    try {
      for (;;) {
        const entry = line.queue.shift();
        if (entry) {
          if (entry.settled) continue;
          await this.invoke(device, line, entry);
          line.dirty = true;
        } else if (line.dirty && this.opts.onIdle) {
          line.dirty = false;
          const onIdle = this.opts.onIdle;
          await this.invoke(device, line, {
            call: (signal) => onIdle(device, signal), resolve: () => undefined, reject: () => undefined,
            timeoutMs: this.opts.timeoutMs, what: 'closing', settled: false, made: Date.now(), quiet: true,
          });
        } else {
          break;
        }
      }
    } finally {
      line.running = false;
      this.lines.delete(device);
    }
  }

  /** Run one entry with its deadline; returns once the device is free for the next call. */
  private async invoke(device: string, line: Line, entry: Entry): Promise<void> {
    const interval = this.opts.minIntervalMs ?? 0;
    const wait = line.lastEnd + interval - Date.now();
    if (wait > 0) {
      if (entry.deadline !== undefined && Date.now() + wait >= entry.deadline) {
        clearTimeout(entry.waitTimer);
        return this.expire(entry, device);
      }
      await sleep(wait);
      if (entry.settled) return;
    }
    clearTimeout(entry.waitTimer);
    const left = entry.deadline !== undefined ? entry.deadline - Date.now() : entry.timeoutMs;
    if (left <= 0 || left < (this.opts.minRunMs ?? 0)) return this.expire(entry, device);

    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const started = Date.now();
    const running = Promise.resolve().then(() => entry.call(controller.signal));
    const finished = running.then(
      (v) => {
        if (entry.settled) return;
        entry.settled = true;
        this.ended(entry, device, started, 'ok');
        entry.resolve(v);
      },
      (err: unknown) => {
        if (entry.settled) return;
        entry.settled = true;
        this.ended(entry, device, started, 'error');
        entry.reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
    const deadline = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), left);
    });
    const timedOut = await Promise.race([finished.then(() => false), deadline]);
    clearTimeout(timer);
    if (timedOut) {
      const error = this.timeout(entry, device, false);
      if (!entry.settled) {
        entry.settled = true;
        this.ended(entry, device, started, 'timeout');
        entry.reject(error);
      }
      controller.abort(error);
      // The call may still be changing the device: wait for it to end, within reason.
      await settledWithin(finished, this.settleMs);
    }
    line.lastEnd = Date.now();
  }
}
