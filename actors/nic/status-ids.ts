/**
 * Status ids of network operations, as the API hands them out (202) and takes them back
 * (`GET /status/<id>`): opaque to clients, they name the node's and the nic's registrations and
 * the operation's number, so an id never matches an operation of a later registration.
 */
import type { NodeState } from '../node/protocol';
import type { NicStatusRef } from './protocol';

/**
 * Opaque to clients; names the node's and the nic's registrations and the operation's number.
 * Operations of the first data format keep the ids they were given then (node and number only).
 */
export function encodeStatusId(node: NodeState, ref: NicStatusRef, firstFormat = false): string {
  const id = firstFormat ? [node.name, node.incarnation, ref.seq] : [node.name, node.incarnation, ref.nic, ref.incarnation, ref.seq];
  return Buffer.from(JSON.stringify(id)).toString('base64url');
}

export type StatusId =
  | { node: string; incarnation: string; seq: number; nic?: undefined }
  | { node: string; incarnation: string; seq: number; nic: string; nicIncarnation: string };

export function decodeStatusId(id: string): StatusId | null {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(id, 'base64url').toString('utf8'));
  } catch {
    return null; // not one of ours
  }
  if (!Array.isArray(v) || !v.slice(0, -1).every((x) => typeof x === 'string') || !Number.isInteger(v[v.length - 1])) return null;
  // Only the exact text this service handed out: base64 decoding forgives stray characters.
  if (Buffer.from(JSON.stringify(v)).toString('base64url') !== id) return null;
  if (v.length === 3) return { node: v[0], incarnation: v[1], seq: v[2] };
  if (v.length === 5) return { node: v[0], incarnation: v[1], nic: v[2], nicIncarnation: v[3], seq: v[4] };
  return null;
}
