/** The release, from package.json. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

let cached: string | undefined;

export function version(): string {
  if (cached === undefined) {
    try {
      // dist/src/version.js → the repository's package.json
      cached = (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
    } catch {
      cached = 'unknown';
    }
  }
  return cached;
}
