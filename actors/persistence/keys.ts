/**
 * msgpackr (lmdb-js's encoding) renames an object key `__proto__` to `__proto_` when it
 * decodes, so a nic named `__proto__` (a legal name: docs/api-conventions.md §1) would come back renamed
 * after a restart. Keys are escaped before they are stored and unescaped when read:
 * `__proto__` and any key starting with ESC get one more ESC in front. Values without such a
 * key (nearly all) are returned as they are, without a copy.
 */
const ESC = '\u0001';
const needsEscape = (k: string) => k === '__proto__' || k.startsWith(ESC);

type Test = (k: string) => boolean;

/** Does any key, at any depth, pass `test`? (No allocation: this runs on every write.) */
function contains(v: unknown, test: Test): boolean {
  if (!v || typeof v !== 'object') return false;
  if (Array.isArray(v)) return v.some((x) => contains(x, test));
  for (const k in v) {
    if (Object.hasOwn(v, k) && (test(k) || contains((v as Record<string, unknown>)[k], test))) return true;
  }
  return false;
}

function rebuild(v: unknown, test: Test, map: (k: string) => string): unknown {
  if (!v || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => rebuild(x, test, map));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    // defineProperty: a plain assignment to "__proto__" would set the prototype instead.
    Object.defineProperty(out, test(k) ? map(k) : k, { value: rebuild(x, test, map), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

const transform = (v: unknown, test: Test, map: (k: string) => string) => (contains(v, test) ? rebuild(v, test, map) : v);

export const escapeKeys = (v: unknown) => transform(v, needsEscape, (k) => ESC + k);
export const unescapeKeys = (v: unknown) => transform(v, (k) => k.startsWith(ESC), (k) => k.slice(1));
