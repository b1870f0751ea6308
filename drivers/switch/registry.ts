/**
 * Switch types the service accepts at registration: the API's `type` string → the driver's
 * registration fields, its port-name format and its extension name. Real vendor drivers add
 * rows here (decisions.md §11 keeps HIL's type names).
 */
import { SCHEMA_BASE } from '../schema';

export interface SwitchTypeInfo {
  type: string;
  /** name reported by list_active_extensions */
  extension: string;
  /** exact registration fields, all strings */
  fields: string[];
  portName: RegExp;
}

/** Null prototype: a `type` such as "constructor" must find nothing. */
export const SWITCH_TYPES: Record<string, SwitchTypeInfo> = Object.create(null);

function add(info: SwitchTypeInfo): void {
  SWITCH_TYPES[info.type] = info;
}

add({
  type: `${SCHEMA_BASE}/v0/switches/mock`,
  extension: 'hilt.switches.mock',
  fields: ['hostname', 'username', 'password'],
  portName: /^(gi|te)\d+\/\d+(\/\d+)?$/,
});

/** Returns the validated driver fields, or a reason why they are not acceptable. */
export function validateSwitch(body: Record<string, unknown>): { type: string; fields: Record<string, string> } | string {
  const info = typeof body.type === 'string' ? SWITCH_TYPES[body.type] : undefined;
  if (!info) return `unknown switch type "${String(body.type)}" (known: ${Object.keys(SWITCH_TYPES).join(', ')})`;
  const extra = Object.keys(body).filter((k) => k !== 'type' && !info.fields.includes(k));
  if (extra.length) return `unexpected field(s) for ${info.type}: ${extra.join(', ')}`;
  const fields: Record<string, string> = {};
  for (const f of info.fields) {
    if (typeof body[f] !== 'string') return `${f} must be a string`;
    fields[f] = body[f] as string;
  }
  return { type: info.type, fields };
}
