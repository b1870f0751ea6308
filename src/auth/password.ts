/**
 * Password hashing: scrypt (Node's built-in, memory-hard) with a random 16-byte salt.
 * Stored as `scrypt$N$r$p$<salt b64>$<hash b64>` so parameters can be raised later.
 */
import { randomBytes, scrypt, timingSafeEqual, ScryptOptions } from 'node:crypto';

const N = 16384, R = 8, P = 1, KEYLEN = 32;

function derive(password: string, salt: Buffer, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEYLEN, { ...opts, maxmem: 64 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, { N, r: R, p: P });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [n, r, p] = parts.slice(1, 4).map(Number);
  const expected = Buffer.from(parts[5], 'base64');
  const key = await derive(password, Buffer.from(parts[4], 'base64'), { N: n, r, p });
  return key.length === expected.length && timingSafeEqual(key, expected);
}
