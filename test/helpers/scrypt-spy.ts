/**
 * Counts the scrypts the service runs in this process (tests with an in-process server): each
 * with its parameters and when it ended. Used where a test shows that two refusals cost the same
 * by what they run, not by their times, which on two loaded cores in CI differ by more than twice.
 */
import type { ScryptOptions } from 'node:crypto';
// Required, not imported: a namespace import is a copy, and the service's module calls this one.
import crypto = require('node:crypto');
import { expect } from 'chai';
import type { Res } from './server';

export interface ScryptSpy {
  /** Runs `call`, expects it to run exactly one scrypt that ended before its answer came; its parameters. */
  one(call: () => Promise<Res>, status: number): Promise<string>;
  restore(): void;
}

export function spyScrypt(): ScryptSpy {
  const real = crypto.scrypt;
  let runs: { params: string; endedAt: bigint }[] = [];
  (crypto as { scrypt: unknown }).scrypt = (pw: string, salt: Buffer, len: number, opts: ScryptOptions, cb: (e: Error | null, k: Buffer) => void) => {
    const run = { params: `N=${opts.N} r=${opts.r} p=${opts.p} keylen=${len}`, endedAt: 0n };
    runs.push(run);
    real(pw, salt, len, opts, (e, k) => { run.endedAt = process.hrtime.bigint(); cb(e, k); });
  };
  return {
    async one(call, status) {
      runs = [];
      const r = await call();
      const answeredAt = process.hrtime.bigint();
      expect(r.status, r.text).to.equal(status);
      expect(runs, 'scrypts run for the request').to.have.length(1);
      expect(runs[0]!.endedAt > 0n && runs[0]!.endedAt < answeredAt, 'the scrypt ended before the answer came').to.equal(true);
      return runs[0]!.params;
    },
    restore() {
      (crypto as { scrypt: unknown }).scrypt = real;
    },
  };
}
