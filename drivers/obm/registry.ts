/**
 * OBM types the service accepts at node registration, each with its exact fields.
 * Validation happens here once; the node actor stores what passed.
 */
import { SCHEMA_BASE } from '../schema';
import { ObmError, ObmInfo } from './types';
import { validateObmInfo } from './ipmitool';

export const OBM_TYPES = {
  ipmi: `${SCHEMA_BASE}/v0/obm/ipmi`,
  mock: `${SCHEMA_BASE}/v0/obm/mock`,
} as const;

export type ObmKind = keyof typeof OBM_TYPES;
export interface ObmConfig { type: string; fields: ObmInfo & Record<string, unknown> }

const FIELDS = ['host', 'user', 'password'];

export function obmKind(type: string): ObmKind | undefined {
  return (Object.keys(OBM_TYPES) as ObmKind[]).find((k) => OBM_TYPES[k] === type);
}

/** Returns the validated OBM settings, or a reason why they are not acceptable. */
export function validateObm(obm: Record<string, unknown>): ObmConfig | string {
  if (typeof obm.type !== 'string') return 'obm.type must be a string';
  if (!obmKind(obm.type)) return `unknown OBM type "${obm.type}" (known: ${Object.values(OBM_TYPES).join(', ')})`;
  const extra = Object.keys(obm).filter((k) => k !== 'type' && !FIELDS.includes(k));
  if (extra.length) return `unexpected OBM field(s): ${extra.join(', ')}`;
  for (const f of FIELDS) if (typeof obm[f] !== 'string') return `obm.${f} must be a string`;
  const info = { host: obm.host as string, user: obm.user as string, password: obm.password as string };
  if (obmKind(obm.type) === 'ipmi') {
    // Refuse settings ipmitool could never use now (400), rather than at the first power call (502).
    try {
      validateObmInfo(info);
    } catch (err) {
      if (err instanceof ObmError) return err.message;
      throw err;
    }
  }
  return { type: obm.type, fields: info };
}
