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

/**
 * A refusal's list of what blocks it (docs/api.md, Errors): the first `max` names, sorted, and
 * how many more, so that a message stays short however many there are.
 */
export function listed(names: Iterable<string>, max = 5): string {
  const all = [...new Set(names)].sort();
  const shown = all.slice(0, max).join(', ');
  return all.length > max ? `${shown} and ${all.length - max} more` : shown;
}

/** `n thing` or `n things`. */
export const counted = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** `network a` or `networks a, b` (a refusal naming the networks that block it). */
export const attachedTo = (networks: Iterable<string>): string => {
  const all = [...new Set(networks)];
  return `${all.length === 1 ? 'network' : 'networks'} ${listed(all)}`;
};
