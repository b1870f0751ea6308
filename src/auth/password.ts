/**
 * Password hashing: scrypt (Node's built-in, memory-hard) with a random 16-byte salt.
 * Stored as `scrypt$N$r$p$<salt b64>$<hash b64>` so parameters can be raised later.
 *
 * Every scrypt runs through one limiter: at most SCRYPT_IN_FLIGHT at once (each takes a thread of
 * libuv's pool, which file system calls and other crypto share, and 16 MiB), the rest wait in
 * line, and past SCRYPT_WAITING_MAX waiting a login is refused at once with a 503. A flood of bad
 * logins so costs a bounded share of the machine, and the service stays responsive.
 */
import { availableParallelism } from 'node:os';
import { randomBytes, scrypt, timingSafeEqual, ScryptOptions } from 'node:crypto';
import { HiltError } from '../errors';

const N = 16384, R = 8, P = 1, KEYLEN = 32;

/** Half the cores (at least one, at most four): the other half stays for the event loop and storage. */
export const SCRYPT_IN_FLIGHT = Math.max(1, Math.min(4, Math.floor(availableParallelism() / 2)));
export const SCRYPT_WAITING_MAX = 1024;

/** A counting semaphore in arrival order. */
export class Limiter {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly maxInFlight: number, readonly maxWaiting: number) {}

  get inFlight(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  async run<T>(f: () => Promise<T>): Promise<T> {
    if (this.running >= this.maxInFlight) {
      if (this.waiting.length >= this.maxWaiting) {
        throw new HiltError('ServiceUnavailableError', 'too many logins are being checked at once; try again shortly', { retryAfter: 1 });
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await f();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next in line.
      if (next) next();
      else this.running--;
    }
  }
}

export const scryptSlots = new Limiter(SCRYPT_IN_FLIGHT, SCRYPT_WAITING_MAX);

function derive(password: string, salt: Buffer, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEYLEN, { ...opts, maxmem: 64 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptSlots.run(() => derive(password, salt, { N, r: R, p: P }));
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export interface VerifyOptions {
  /** runs once the scrypt slot is had, before any work: may throw to give up (a login throttled meanwhile) */
  before?: () => void;
}

export async function verifyPassword(password: string, stored: string, opts: VerifyOptions = {}): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [n, r, p] = parts.slice(1, 4).map(Number);
  const expected = Buffer.from(parts[5], 'base64');
  const key = await scryptSlots.run(() => {
    opts.before?.();
    return derive(password, Buffer.from(parts[4], 'base64'), { N: n, r, p });
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

let dummy: Promise<string> | undefined;

/**
 * A hash in the form and with the parameters of every stored one: a login for a user name that
 * does not exist is verified against it, so that it costs what a wrong password costs and its
 * timing tells nothing about which names exist. Its salt and key are random bytes (no password
 * derives to them, and a name that does not exist is refused whatever the outcome): made
 * without a scrypt, it costs a start nothing.
 */
export function dummyHash(): Promise<string> {
  return (dummy ??= Promise.resolve(`scrypt$${N}$${R}$${P}$${randomBytes(16).toString('base64')}$${randomBytes(KEYLEN).toString('base64')}`));
}
