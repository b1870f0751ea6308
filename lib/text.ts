/**
 * Text from outside (a client's input, a device's or storage's message) as messages quote it.
 * Below everything: every layer may import it, it imports nothing of the project.
 */

/** How much of a client's input an error message may quote (docs/api-conventions.md §1). */
export const QUOTE_MAX = 64;

/**
 * A client's input as an error message quotes it: JSON-quoted (control characters escaped), at
 * most QUOTE_MAX characters of it, and how long it was when it is cut.
 */
export function quote(input: unknown, max = QUOTE_MAX): string {
  const s = typeof input === 'string' ? input : String(input);
  const chars = [...s];
  if (chars.length <= max) return JSON.stringify(s);
  return `${JSON.stringify(chars.slice(0, max).join(''))}… (${chars.length} characters)`;
}

/** At most `max` characters of a text (an id, a storage message), marked when cut. */
export const shortText = (s: string, max = QUOTE_MAX * 4): string => (s.length <= max ? s : `${s.slice(0, max)}…`);
