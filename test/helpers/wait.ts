/** Waiting in tests: a pause, and polling a condition with a bound. */

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every `everyMs` until it holds; fails naming `what` after `timeoutMs`. */
export async function until(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 10_000, everyMs = 20): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await sleep(everyMs);
  }
}
