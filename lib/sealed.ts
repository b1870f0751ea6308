/**
 * Credentials at rest (docs/identity.md): a secret value is stored as `{"$sealed": "v1:<key
 * id>:<nonce>:<ciphertext>:<tag>"}`, AES-256-GCM under a 32-byte key with a random 96-bit nonce
 * per value. GCM authenticates: a value opened with the wrong key (or changed on disk) is an
 * error, never a garbage password. The key id (a digest of the key, not the key) names the key
 * a value needs, so that a store and a key file that do not belong together are told apart.
 * Below everything: every layer may import it, it imports nothing of the project.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes, randomFillSync } from 'node:crypto';

export const KEY_BYTES = 32;
const VERSION = 'v1';
const b64 = (b: Buffer) => b.toString('base64url');

/**
 * Nonces are cut from a pool of random bytes filled at once (a call into the random generator
 * per value was ~2% of a registration's CPU); each byte is handed out once, from the same
 * CSPRNG, so nonces stay random and unrepeated.
 */
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const pool = Buffer.alloc(NONCE_BYTES * 256);
let poolAt = pool.length;
function nonce(): Buffer {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  // A copy: the pool's bytes are overwritten at the next fill.
  return Buffer.from(pool.subarray(poolAt, (poolAt += NONCE_BYTES)));
}

/** A sealed value as stored. */
export interface Sealed { $sealed: string }

export const isSealed = (v: unknown): v is Sealed =>
  !!v && typeof v === 'object' && !Array.isArray(v) && typeof (v as Sealed).$sealed === 'string' && Object.keys(v).length === 1;

/** The id of a key: 16 hex digits of a SHA-256 over a label and the key. */
export function keyId(key: Buffer): string {
  return createHash('sha256').update('hilt secret key id\0').update(key).digest('hex').slice(0, 16);
}

/** The key id a sealed value needs, or null when it is not one of ours. */
export function sealedKeyId(v: Sealed): string | null {
  const parts = v.$sealed.split(':');
  return parts.length === 5 && parts[0] === VERSION ? parts[1] : null;
}

/** A key file's text: the 32 bytes in base64 (`openssl rand -base64 32`) or hex. */
export function parseKey(text: string): Buffer | null {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/]{43}=$/.test(t) || /^[A-Za-z0-9_-]{43}$/.test(t)) return Buffer.from(t, t.length === 44 ? 'base64' : 'base64url');
  return null;
}

/** A new key's file text. */
export const newKeyText = (): string => `${randomBytes(KEY_BYTES).toString('base64')}\n`;

export class SealError extends Error {}

/**
 * The keys a process holds: the current one seals, any of them opens (during a key rotation,
 * values under the old key are still being re-sealed).
 */
export class Keyring {
  private readonly keys = new Map<string, Buffer>();
  private currentId: string;

  constructor(current: Buffer) {
    this.currentId = this.add(current);
  }

  get current(): string {
    return this.currentId;
  }

  has(id: string): boolean {
    return this.keys.has(id);
  }

  add(key: Buffer): string {
    if (key.length !== KEY_BYTES) throw new SealError(`a key is ${KEY_BYTES} bytes, not ${key.length}`);
    const id = keyId(key);
    this.keys.set(id, Buffer.from(key));
    return id;
  }

  /** Seal with `id` (held) from now on. */
  use(id: string): void {
    if (!this.keys.has(id)) throw new SealError(`no key ${id} is held`);
    this.currentId = id;
  }

  /** Forget a key that no value needs any more. */
  drop(id: string): void {
    if (id !== this.currentId) this.keys.delete(id);
  }

  seal(plain: string): Sealed {
    const iv = nonce();
    const c = createCipheriv('aes-256-gcm', this.keys.get(this.currentId)!, iv);
    const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return { $sealed: [VERSION, this.currentId, b64(iv), b64(ct), b64(c.getAuthTag())].join(':') };
  }

  open(v: Sealed): string {
    const [version, id, nonce, ct, tag] = v.$sealed.split(':');
    if (version !== VERSION || tag === undefined) throw new SealError('not a sealed value of this release');
    const key = this.keys.get(id);
    if (!key) throw new SealError(`the value is sealed under key ${id}, which this process does not hold`);
    try {
      // The whole tag: without authTagLength GCM accepts a tag cut to 4 bytes, checking only those.
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(nonce, 'base64url'), { authTagLength: TAG_BYTES });
      d.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
    } catch {
      throw new SealError(`a value sealed under key ${id} does not open: it was changed, or the key is not that one`);
    }
  }

  /** The value under the current key (already so: the same object). */
  reseal(v: Sealed): Sealed {
    return sealedKeyId(v) === this.currentId ? v : this.seal(this.open(v));
  }
}
