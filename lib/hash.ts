/** SHA-256 digests of short strings: node's one-shot crypto.hash where it exists (Node ≥ 20.12), a Hash object otherwise. */
import * as crypto from 'node:crypto';

type OneShot = (algorithm: string, data: string, encoding: 'base64' | 'hex') => string;
const oneShot = (crypto as unknown as { hash?: OneShot }).hash;

/** The SHA-256 of `data` (UTF-8), base64 or hex. */
export function sha256(data: string, encoding: 'base64' | 'hex' = 'base64'): string {
  return oneShot ? oneShot('sha256', data, encoding) : crypto.createHash('sha256').update(data).digest(encoding);
}
