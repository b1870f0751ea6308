/**
 * The machinery that runs a vendor's table (table.ts) over an SSH session (cli.ts): every
 * operation of the driver contract, written once: the plans of each change (plan.ts), the
 * logged-in session that sends, reads back and, on a candidate configuration, commits them
 * (session.ts), and a vendor's registry entry from its table.
 *
 * A mismatch between a change and its read-back fails the operation, and the service then sets
 * the port back to its own configuration (hardware/port-hardware.ts). The running configuration
 * is saved once, when the session is closed after changes (HILT_SWITCH_SAVE), as HIL did at the
 * end of each batch.
 */
import { SCHEMA_BASE } from '../../schema';
import { parseHostPort } from '../../host';
import type { DriverFields } from '../../registry';
import { HOST_KEY_FIELD, SessionContext, SwitchDriver, SwitchDriverEntry, SwitchError, SwitchInfo, SwitchSession } from '../types';
import { CliSession } from './cli';
import type { SwitchTable } from './table';
import { TableSession } from './session';

/**
 * The user name and password are typed as lines (the in-band login of PowerConnect 55xx, the
 * answer to sudo's question): a control character in them would end the line and type more.
 */
const CONTROL = /[\u0000-\u001f\u007f]/;

export * from './plan';
export { TableSession };

export interface CliDriverOptions {
  /** save the running configuration at the end of each session that changed something (HILT_SWITCH_SAVE) */
  save: boolean;
  /** ssh2's bound on connecting and authenticating (the call's deadline usually comes first) */
  readyTimeoutMs: number;
  /** logins tried on transport errors (default 3) */
  loginAttempts?: number;
  /** pause before a second login attempt, doubled before each later one (default 200 ms) */
  retryDelayMs?: number;
}

/** `host`, `host:port`, a bare IPv6 address, `[v6]` or `[v6]:port` (default port 22). */
export function parseHostname(text: unknown): { host: string; port: number } | string {
  if (typeof text !== 'string' || !text) return 'hostname must be a non-empty string';
  const where = parseHostPort(text, 22);
  return typeof where === 'string' ? `hostname ${where}` : where;
}

export class CliSwitchDriver implements SwitchDriver {
  constructor(readonly table: SwitchTable, readonly opts: CliDriverOptions) {}

  async open(sw: SwitchInfo, signal: AbortSignal, ctx: SessionContext = {}): Promise<SwitchSession> {
    const where = parseHostname(sw.fields.hostname);
    if (typeof where === 'string') throw new SwitchError(`switch ${sw.name}: ${where}`);
    const dummy = sw.fields.dummy_vlan;
    const cli = await CliSession.open({
      name: sw.name, host: where.host, port: where.port,
      username: String(sw.fields.username), password: String(sw.fields.password), hostKey: sw.hostKey,
    }, this.table.dialect, signal, {
      readyTimeoutMs: this.opts.readyTimeoutMs, loginAttempts: this.opts.loginAttempts, retryDelayMs: this.opts.retryDelayMs, log: ctx.log,
    });
    return new TableSession(this.table, cli, { dummyVlan: dummy === undefined ? undefined : Number(dummy) }, this.opts.save, ctx.log);
  }
}

/** A host key fingerprint as `ssh-keygen -l` prints it. */
export const FINGERPRINT = /^SHA256:[A-Za-z0-9+/]{43}$/;

export interface SshEntrySpec {
  /** the last part of the type identifier and of the extension name: `nexus` */
  name: string;
  table: SwitchTable;
  portName: RegExp;
  portFormat: string;
  /** the switch has HIL's `dummy_vlan` field (an int or a numeric string), with these bounds */
  dummyVlan?: { min: number; max: number };
}

/** A vendor's registry entry, from its table. */
export function sshSwitchEntry(spec: SshEntrySpec): SwitchDriverEntry<CliSwitchDriver> {
  const required = ['hostname', 'username', 'password', ...(spec.dummyVlan ? ['dummy_vlan'] : [])];
  const properties: Record<string, object> = {
    hostname: { type: 'string' }, username: { type: 'string' }, password: { type: 'string' },
    // HIL took the dummy VLAN as a number or a numeric string: checked below.
    ...(spec.dummyVlan ? { dummy_vlan: {} } : {}),
    [HOST_KEY_FIELD]: { type: 'string' },
  };
  return {
    type: `${SCHEMA_BASE}/v0/switches/${spec.name}`,
    extension: `hilt.switches.${spec.name}`,
    fields: { type: 'object', additionalProperties: false, required, properties },
    check: (fields: DriverFields) => {
      const where = parseHostname(fields.hostname);
      if (typeof where === 'string') return where;
      if (!fields.username) return 'username must not be empty';
      if (CONTROL.test(String(fields.username))) return 'username must not contain control characters';
      if (CONTROL.test(String(fields.password))) return 'password must not contain control characters';
      if (spec.dummyVlan) {
        const d = fields.dummy_vlan;
        const n = typeof d === 'number' ? d : /^\s*\d+\s*$/.test(String(d)) ? Number(d) : NaN;
        if (!(Number.isInteger(n) && n >= spec.dummyVlan.min && n <= spec.dummyVlan.max)) {
          return `dummy_vlan must be a VLAN id from ${spec.dummyVlan.min} to ${spec.dummyVlan.max}`;
        }
      }
      const pin = fields[HOST_KEY_FIELD];
      if (pin !== undefined && !FINGERPRINT.test(String(pin))) return `${HOST_KEY_FIELD} must be a SHA256 fingerprint as ssh-keygen -l prints it (SHA256: and 43 base64 characters)`;
      return null;
    },
    portName: spec.portName,
    portFormat: spec.portFormat,
    family: spec.table.family,
    sshHostKey: true,
    create: ({ settings: config }) => new CliSwitchDriver(spec.table, { save: config.switchSave, readyTimeoutMs: config.switchTimeoutMs }),
  };
}
