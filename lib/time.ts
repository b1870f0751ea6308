/**
 * Waiting: pauses, bounds on how long to wait for something, and backoff between retries.
 * Below everything: every layer may import it, it imports nothing of the project.
 */

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Runs `fn` once the clock (Date.now) reaches `at`; the function returned cancels it. A timer
 * may fire a little early by Date.now, and takes at most 2^31-1 ms: it is set again until `at`.
 */
export function onceAt(at: number, fn: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    const wait = at - Date.now();
    if (wait <= 0) {
      timer = undefined;
      fn();
      return;
    }
    timer = setTimeout(arm, Math.min(wait, 2 ** 31 - 1));
  };
  if (at !== Infinity) arm();
  return () => clearTimeout(timer);
}

/** `work`'s value if it settles within `ms`, else `otherwise`; the work goes on either way. */
export function within<T>(work: Promise<T>, ms: number, otherwise: T): Promise<T> {
  if (ms <= 0) return Promise.resolve(otherwise);
  let timer: NodeJS.Timeout;
  const late = new Promise<T>((r) => { timer = setTimeout(() => r(otherwise), ms); });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** Whether `work` settled (fulfilled or rejected) within `ms`; the work goes on either way. */
export function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  return within(work.then(() => true, () => true), ms, false);
}

/** The pause before retry number `attempt` (0 first): `baseMs` doubled each time, at most `capMs`. */
export function backoff(attempt: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** attempt);
}

/** Waiting that `signal` ends: it rejects with the signal's reason, as drivers' calls do. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The number of days of a month (1–12) of a year, every year taken as itself (Date.UTC reads years 0–99 as 1900–1999). */
export function daysInMonth(year: number, month: number): number {
  const last = new Date(0);
  last.setUTCFullYear(year, month, 0);
  return last.getUTCDate();
}
