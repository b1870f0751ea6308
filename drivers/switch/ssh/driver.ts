/**
 * The machinery that runs a vendor's table (table.ts) over an SSH session (cli.ts): every
 * operation of the driver contract, written once.
 *
 * Each change reads the port first (once per session: later changes of the port start from
 * the reading of the last one), sends the table's commands, then reads the port back and
 * compares the reading with what was asked. A mismatch fails the operation, and the service
 * then sets the port back to its own configuration (hardware/port-hardware.ts).
 *
 * A port is never left with an implicit "all VLANs" allowed list: a fresh trunk allows every
 * VLAN on NX-OS, DNOS6 and EOS, and an access port carries its access VLAN, so before the
 * first change of a port that is not an explicit trunk the table's reset is sent (a trunk
 * with an empty allowed list and no untagged VLAN), and a reading of "all" never passes a
 * check.
 *
 * A family with an administrative-state table also brings ports up and down (`setEnabled`, read
 * back the same way) and reports the state in getPortVlans; one with a wiring table reads the
 * switch's learned MACs and LLDP neighbours, one command each for the whole switch.
 *
 * The running configuration is saved once, when the session is closed after changes
 * (HILT_SWITCH_SAVE), as HIL did at the end of each batch.
 */
import { SCHEMA_BASE } from '../../schema';
import type { DriverFields } from '../../registry';
import { HOST_KEY_FIELD, PortVlans, PortWiring, SessionContext, SwitchDriver, SwitchDriverEntry, SwitchError, SwitchInfo, SwitchLog, SwitchSession } from '../types';
import { CliCommandError, CliSession } from './cli';
import type { AdminStateTable, PortReading, SwitchTable, TableContext, WiringTable } from './table';
import { formatVlanList } from '../vlans';
import { macRows, wiringByPort } from '../wiring';
import { VlanList, VlanListError } from './vlans';

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

/** `host`, `host:port`, `[v6]` or `[v6]:port` (default port 22). */
export function parseHostname(text: unknown): { host: string; port: number } | string {
  if (typeof text !== 'string' || !text) return 'hostname must be a non-empty string';
  let host: string;
  let port: string | undefined;
  const v6 = /^\[([0-9A-Fa-f:.]+)\](?::(.*))?$/.exec(text);
  if (v6) [, host, port] = v6 as unknown as [string, string, string | undefined];
  else if (text.split(':').length > 2) return `hostname "${text}": an IPv6 address takes brackets, as [addr]:port`;
  else [host, port] = text.split(':') as [string, string | undefined];
  if (!v6 && !/^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_.])?$/.test(host)) return `hostname "${text}" is not a host name or address`;
  if (port === undefined) return { host, port: 22 };
  const n = /^\d{1,5}$/.test(port) ? Number(port) : NaN;
  if (!(n >= 1 && n <= 65535)) return `hostname "${text}": the port must be 1-65535`;
  return { host, port: n };
}

const EMPTY_TRUNK: PortReading = { mode: 'trunk', access: null, native: null, allowed: [] };

const sameList = (a: VlanList, b: VlanList) => a !== 'all' && b !== 'all' && a.length === b.length && a.every((v, i) => v === b[i]);
const withVlan = (l: VlanList, v: number): VlanList => (l === 'all' ? l : [...new Set([...l, v])].sort((x, y) => x - y));
const withoutVlan = (l: VlanList, v: number | null): VlanList => (l === 'all' || v === null ? l : l.filter((x) => x !== v));

/** A reading in words: `trunk, native 1001, allowed 1001-1003`. */
export function describe(r: PortReading): string {
  if (r.mode === 'access') return `access port on VLAN ${r.access ?? 'none'}`;
  if (r.mode === 'other') return 'not a switch port';
  return `trunk, native ${r.native ?? 'none'}, allowed ${r.allowed === 'all' ? 'ALL VLANs' : formatVlanList(r.allowed)}`;
}

/** Said of a trunk whose allowed list is "all" (never set by the service), as `other`. */
export const EVERY_VLAN = 'trunk allows every VLAN';

/**
 * What the service calls the port's VLANs: the untagged one, and the tagged ones beside it. A
 * trunk that allows every VLAN is said so in `other`, not as 4093 tagged VLANs (as the OVS
 * driver reports an empty trunk list).
 */
export function portVlans(r: PortReading): PortVlans {
  if (r.mode === 'access') return { native: r.access, tagged: [] };
  if (r.mode !== 'trunk') return { native: null, tagged: [] };
  if (r.allowed === 'all') return { native: r.native, tagged: [], other: [EVERY_VLAN] };
  return { native: r.native, tagged: r.allowed.filter((v) => v !== r.native) };
}

/** A change of one port, as the contract asks it. */
export type PortOp =
  | { kind: 'setNative'; vlan: number }
  | { kind: 'removeNative' }
  | { kind: 'addTagged'; vlan: number }
  | { kind: 'removeTagged'; vlan: number }
  | { kind: 'reset' };

/** A change: the configuration lines that make it and the reading it must leave. */
export interface Plan { lines: string[]; expected: PortReading }

/** An operation in words, for messages. */
export function opText(op: PortOp): string {
  switch (op.kind) {
    case 'setNative': return `set the native VLAN to ${op.vlan}`;
    case 'removeNative': return 'remove the native VLAN';
    case 'addTagged': return `add tagged VLAN ${op.vlan}`;
    case 'removeTagged': return `remove tagged VLAN ${op.vlan}`;
    case 'reset': return 'reset the port';
  }
}

/** The table's lines for `op` on a clean trunk read as `b`, or null when the port is already as asked. */
function opPlan(table: SwitchTable, ctx: TableContext, op: PortOp, b: PortReading): Plan | null {
  const has = (v: number) => b.allowed !== 'all' && b.allowed.includes(v);
  switch (op.kind) {
    case 'setNative':
      return b.native === op.vlan && has(op.vlan) ? null : {
        lines: table.setNative(op.vlan, b.native === op.vlan ? null : b.native, ctx),
        expected: { ...b, native: op.vlan, allowed: withVlan(withoutVlan(b.allowed, b.native), op.vlan) },
      };
    case 'removeNative':
      return b.native === null ? null : {
        lines: table.removeNative(b.native, ctx),
        expected: { ...b, native: null, allowed: withoutVlan(b.allowed, b.native) },
      };
    case 'addTagged':
      return has(op.vlan) ? null : { lines: table.addTagged(op.vlan, ctx), expected: { ...b, allowed: withVlan(b.allowed, op.vlan) } };
    case 'removeTagged':
      return !has(op.vlan) ? null : { lines: table.removeTagged(op.vlan, ctx), expected: { ...b, allowed: withoutVlan(b.allowed, op.vlan) } };
    case 'reset':
      return b.native === null && sameList(b.allowed, []) ? null : { lines: table.reset(ctx), expected: EMPTY_TRUNK };
  }
}

/**
 * The configuration lines of `op` on a port read as `before`, and the reading they must
 * leave; null when the port is already as asked. A port that is not an explicit trunk yet (an
 * access port, a fresh trunk that allows every VLAN) is reset first.
 */
export function planChange(table: SwitchTable, ctx: TableContext, op: PortOp, before: PortReading): Plan | null {
  const clean = before.mode === 'trunk' && before.allowed !== 'all';
  const p = opPlan(table, ctx, op, clean ? before : EMPTY_TRUNK);
  if (clean) return p;
  return { lines: [...table.reset(ctx), ...(p?.lines ?? [])], expected: p?.expected ?? EMPTY_TRUNK };
}

/** Every command a change of `port` sends, in order: into configuration mode, the port, the lines, back to the privileged prompt. */
export function configCommands(table: SwitchTable, port: string, lines: string[]): string[] {
  return [table.configure, ...table.enterInterface(port), ...lines, ...table.leave];
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

/** One logged-in session: the contract's operations over the table. */
export class TableSession implements SwitchSession {
  readonly hostKey?: string;
  /** the plan lines sent so far (the contract's changesSent): reads, entering a port and the session's setup do not count */
  changesSent = 0;
  /** each port's reading, as the last read or verified change of this session left it */
  private readonly readings = new Map<string, PortReading>();
  /** each port's administrative state (up), likewise */
  private readonly states = new Map<string, boolean>();
  /** present when the table has an administrative-state table */
  readonly setEnabled?: (port: string, enabled: boolean) => Promise<void>;
  /** present when the table has a wiring table */
  readonly readWiring?: (ports: string[]) => Promise<Map<string, PortWiring>>;
  private changed = false;
  private setUp = false;
  /** a call is in progress (between two of its commands too) */
  private inCall = false;
  private closing?: Promise<void>;

  constructor(readonly table: SwitchTable, readonly cli: CliSession, readonly ctx: TableContext, readonly save: boolean, readonly log?: SwitchLog) {
    this.hostKey = cli.hostKey;
    const { adminState, wiring } = table;
    if (adminState) this.setEnabled = (port, enabled) => this.enable(port, enabled, adminState);
    if (wiring) this.readWiring = (ports) => this.call(() => this.wiring(ports, wiring));
  }

  setNative(port: string, vlan: number): Promise<void> {
    return this.change(port, { kind: 'setNative', vlan });
  }

  removeNative(port: string): Promise<void> {
    return this.change(port, { kind: 'removeNative' });
  }

  addTagged(port: string, vlan: number): Promise<void> {
    return this.change(port, { kind: 'addTagged', vlan });
  }

  removeTagged(port: string, vlan: number): Promise<void> {
    return this.change(port, { kind: 'removeTagged', vlan });
  }

  resetPort(port: string): Promise<void> {
    return this.change(port, { kind: 'reset' });
  }

  getPortVlans(port: string): Promise<PortVlans> {
    return this.call(async () => {
      const v = portVlans(await this.read(port));
      const { adminState } = this.table;
      return adminState ? { ...v, enabled: await this.readState(port, adminState) } : v;
    });
  }

  /** Bring the port up or down (once per session it is read first), then read it back. */
  private enable(port: string, enabled: boolean, t: AdminStateTable): Promise<void> {
    return this.call(async () => {
      const before = this.states.get(port) ?? (await this.readState(port, t));
      if (before === enabled) return;
      await this.configure(port, t.set(enabled));
      this.changed = true;
      this.states.delete(port);
      const after = await this.readState(port, t);
      if (after !== enabled) {
        throw new SwitchError(this.cli.mask(`switch ${this.cli.target.name} (${this.cli.address}): port ${port} does not read back as asked after "${enabled ? 'bring the port up' : 'shut the port down'}": `
          + `the switch shows it administratively ${after ? 'up' : 'down'}`));
      }
    });
  }

  /** The port's administrative state, fresh from the switch. */
  private async readState(port: string, t: AdminStateTable): Promise<boolean> {
    const output = await this.cli.run(t.show(port));
    let up: boolean;
    try {
      up = t.parse(output, port);
    } catch (err) {
      throw new SwitchError(this.cli.mask(`switch ${this.cli.target.name} (${this.cli.address}): cannot read the administrative state of port ${port} from "${t.show(port)}": ${(err as Error).message}`));
    }
    this.states.set(port, up);
    return up;
  }

  /**
   * The learned MACs and LLDP neighbours of the whole switch, by port. A switch that refuses
   * the LLDP command (LLDP not enabled on it) still has its MAC table: no neighbours, logged.
   */
  private async wiring(ports: string[], w: WiringTable): Promise<Map<string, PortWiring>> {
    const where = `switch ${this.cli.target.name} (${this.cli.address})`;
    const macOutput = await this.cli.run(w.macTable);
    let lldpOutput = '';
    try {
      lldpOutput = await this.cli.run(w.lldp);
    } catch (err) {
      if (!(err instanceof CliCommandError)) throw err;
      this.log?.info({ switch: this.cli.target.name }, `${err.message}: no LLDP neighbours read (is LLDP enabled on the switch?)`);
    }
    try {
      const macs = w.parseMacs ? w.parseMacs(macOutput) : macRows(macOutput, (t) => (w.portKey(t) ? t : null));
      return wiringByPort(ports, macs, lldpOutput ? w.parseLldp(lldpOutput) : [], (p) => w.portKey(p));
    } catch (err) {
      throw new SwitchError(this.cli.mask(`${where}: cannot read its MAC table or LLDP neighbours: ${(err as Error).message}`));
    }
  }

  /** One call at a time; a closed session refuses. */
  private async call<T>(f: () => Promise<T>): Promise<T> {
    if (this.closing || !this.cli.alive) throw new SwitchError(this.cli.mask(`switch ${this.cli.target.name}: session closed`));
    this.inCall = true;
    try {
      return await f();
    } finally {
      this.inCall = false;
    }
  }

  /** Read the port (once per session), send the plan's commands, then read it back and compare. */
  private change(port: string, op: PortOp): Promise<void> {
    return this.call(async () => {
      const before = this.readings.get(port) ?? (await this.read(port));
      const plan = planChange(this.table, this.ctx, op, before);
      if (!plan) return;
      await this.configure(port, plan.lines);
      this.changed = true;
      this.readings.delete(port);
      const after = await this.read(port);
      const { expected } = plan;
      if (!(after.mode === 'trunk' && after.native === expected.native && sameList(after.allowed, expected.allowed))) {
        throw new SwitchError(this.cli.mask(`switch ${this.cli.target.name} (${this.cli.address}): port ${port} does not read back as asked after "${opText(op)}": `
          + `expected ${describe(expected)}, the switch shows ${describe(after)}`));
      }
    });
  }

  /** The port's reading, fresh from the switch. */
  private async read(port: string): Promise<PortReading> {
    const output = await this.cli.run(this.table.show(port));
    let reading: PortReading;
    try {
      reading = this.table.parse(output, port, this.ctx);
    } catch (err) {
      const why = err instanceof VlanListError || err instanceof SwitchError ? err.message : String(err);
      throw new SwitchError(this.cli.mask(`switch ${this.cli.target.name} (${this.cli.address}): cannot read port ${port} from "${this.table.show(port)}": ${why}`));
    }
    this.readings.set(port, reading);
    return reading;
  }

  /** Configuration mode, the port's interface, the lines, back to the privileged prompt. */
  private async configure(port: string, lines: string[]): Promise<void> {
    if (!this.setUp && this.table.setup) {
      await this.send([this.table.configure, ...this.table.setup(this.ctx), ...this.table.leave]);
      this.setUp = true;
    }
    const commands = configCommands(this.table, port, lines);
    const first = commands.length - lines.length - this.table.leave.length;
    await this.send(commands, { from: first, to: first + lines.length });
  }

  /**
   * Commands in order, each waiting for its prompt; after a refusal, back to the privileged
   * prompt. Those in `changes` (indexes, `to` excluded) count in changesSent as they are sent.
   */
  private async send(commands: string[], changes = { from: 0, to: 0 }): Promise<void> {
    try {
      for (const [i, c] of commands.entries()) {
        // run() writes the line at once unless the session is gone.
        if (i >= changes.from && i < changes.to && this.cli.alive) this.changesSent++;
        await this.cli.run(c);
      }
    } catch (err) {
      // Back to the privileged prompt, so that the session can still save and log out.
      if (err instanceof CliCommandError) for (const l of this.table.leave) await this.cli.run(l).catch(() => undefined);
      throw err;
    }
  }

  close(signal?: AbortSignal): Promise<void> {
    return (this.closing ??= this.logout(signal));
  }

  private async logout(signal?: AbortSignal): Promise<void> {
    // The service gave up on a call still running: cut it now.
    if (this.inCall || this.cli.busy) {
      this.cli.destroy();
      return;
    }
    const onAbort = () => this.cli.destroy();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      if (this.changed && this.save && this.cli.alive) {
        try {
          const out = await this.cli.run(this.table.save.command, { signal, answers: this.table.save.answers });
          if (!this.table.save.done.test(out)) throw new SwitchError(`"${this.table.save.command}" did not confirm the save: ${out.trim().split('\n').slice(-2).join(' / ')}`);
          this.log?.debug({ switch: this.cli.target.name }, 'saved the running configuration');
        } catch (err) {
          this.log?.warn({ switch: this.cli.target.name }, this.cli.mask(`could not save the running configuration of switch ${this.cli.target.name}: ${(err as Error).message}`));
        }
      }
      await this.cli.logout();
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
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
    sshHostKey: true,
    create: ({ settings: config }) => new CliSwitchDriver(spec.table, { save: config.switchSave, readyTimeoutMs: config.switchTimeoutMs }),
  };
}
