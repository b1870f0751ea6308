import { randomUUID } from 'node:crypto';

/**
 * A registration's random id (a node's, a nic's): 12 hex digits. A name registered again gets
 * a new one, so ids handed out for the earlier registration never match the new one.
 * randomUUID draws from a pool; a randomBytes call per registration cost ~4% of node_register's CPU.
 */
export const newIncarnation = () => randomUUID().replace(/-/g, '').slice(0, 12);

/**
 * Actor ids of the entities that live inside another: a nic is `<node>/<nic>`, a switch port
 * `<switch>/<port>`. Each part has `%` and `/` escaped (port names such as `gi1/0/3` contain
 * `/`), so an id splits back into its two names unambiguously, and ordinary names stay
 * readable (`nic:n1/eth0`).
 */
// Most names have neither character: they are returned as they are (a start joins and splits
// an id per nic and port, hundreds of thousands at a large site).
const escape = (s: string) => (s.includes('%') || s.includes('/') ? s.replace(/%/g, '%25').replace(/\//g, '%2F') : s);
// Every `%` of a name is escaped, so `%2F` in an id is always an escaped `/`: undone first, then `%25`.
const unescape = (s: string) => (s.includes('%') ? s.replaceAll('%2F', '/').replaceAll('%25', '%') : s);
/** One part of an id (the text on either side of its first `/`) → the name it escapes. */
export const unescapeName = unescape;

const join = (outer: string, inner: string) => `${escape(outer)}/${escape(inner)}`;

export const nicId = join;
export const portId = join;

/** An id made by nicId or portId → its two names. */
export function splitId(id: string): [string, string] {
  const i = id.indexOf('/');
  if (i < 0) return [unescape(id), ''];
  // An id without `%` has neither part escaped (a start splits one per nic and port).
  if (!id.includes('%')) return [id.slice(0, i), id.slice(i + 1)];
  return [unescape(id.slice(0, i)), unescape(id.slice(i + 1))];
}

/** The id prefix of every nic of a node (or port of a switch): for range reads. */
export const childPrefix = (outer: string) => `${escape(outer)}/`;
