/**
 * IPMI power control by running `ipmitool -I lanplus` (IPMI v2 / RMCP+), as HIL's IPMI driver did.
 * No JavaScript RMCP+ client exists on npm; ipmitool is the tool operators already trust.
 *
 * - argv array through execFile, never a shell; the password goes in the child's environment
 *   (`-E` reads IPMI_PASSWORD), so it is not on any command line or in `ps` output.
 * - The service runs the calls of one BMC one at a time, spaced out and each with a deadline
 *   (its entry's `device` and `pacing`): small BMCs drop sessions or answer "busy" when several
 *   clients talk to them at once. At the deadline the call's signal aborts and the running
 *   ipmitool is SIGKILLed.
 */
import { execFile as nodeExecFile } from 'node:child_process';
import type { ChildProcess, ExecFileException, ExecFileOptionsWithStringEncoding } from 'node:child_process';
import { setTimeout as pause } from 'node:timers/promises';
import type { DriverFields } from '../registry';
import { requiredStrings, SCHEMA_BASE } from '../schema';
import { parseHostPort } from '../host';
import { ObmError } from './types';
import type { BootDevice, ConsoleIo, ConsoleLink, ObmDriver, ObmDriverEntry, PowerState } from './types';
import { activateSol } from './ipmi-sol';

/** The subset of child_process.execFile the driver uses; tests inject a spy with this shape. */
export type ExecFileFn = (
  file: string,
  args: string[],
  options: ExecFileOptionsWithStringEncoding,
  callback: (error: ExecFileException | null, stdout: string, stderr: string) => void,
) => ChildProcess;

export interface IpmitoolOptions {
  /** `-C`: RMCP+ cipher suite. Unset lets ipmitool ask the BMC (real BMCs mostly use 17); ipmi_sim needs "3". */
  cipherSuite?: string;
  /** `-R`: session retransmissions. Default 1. (ipmitool treats 0 as its default, 4.) */
  retries?: number;
  /** `-N`: seconds before the first retransmission; ipmitool adds 1 s per retry. Default 2. */
  retryTimeoutS?: number;
  /** Default "ipmitool" (looked up on PATH). */
  ipmitoolPath?: string;
  /** Quiet time between two ipmitool runs of one call (a power cycle runs three). Default 100. */
  minIntervalMs?: number;
  /** For tests: replaces child_process.execFile. */
  execFile?: ExecFileFn;
}

/**
 * ipmitool stderr text we recognise. `retry`: the BMC said "busy, try again", so the driver repeats
 * the command once (ipmitool's -R only covers lost packets). `hint` is appended to the error for the
 * operator. "Unable to establish ... session" is NOT retried: a wrong password, a wrong cipher suite
 * and an unreachable BMC all print it (only -v tells them apart), and repeating would double the wait.
 */
export const IPMITOOL_KNOWN_ERRORS: ReadonlyArray<{ match: RegExp; retry: boolean; hint: string }> = [
  { match: /Unable to establish IPMI v2 \/ RMCP\+ session/, retry: false,
    hint: 'wrong user or password, cipher suite not supported, or BMC unreachable' },
  { match: /Address lookup for .* failed/, retry: false, hint: 'BMC host name does not resolve' },
  { match: /invalid authentication algorithm|Invalid cipher suite/i, retry: false, hint: 'cipher suite not supported by this BMC' },
  { match: /Invalid data field in request/, retry: false, hint: 'the BMC rejected the command' },
  { match: /Node busy/i, retry: true, hint: 'BMC busy' },
  { match: /insufficient resources/i, retry: true, hint: 'BMC session table full' },
];

/** Quiet time between two ipmitool runs against one BMC, within a call and between calls. */
const MIN_INTERVAL_MS = 100;

/** No IPMI session completes faster (ipmi_sim on loopback: 30-40 ms per command). */
const MIN_RUN_MS = 50;

/** Pause before repeating a command the BMC called busy. */
const BUSY_RETRY_DELAY_MS = 500;

export interface BmcAddress {
  /** What ipmitool's -H gets: a name, an IPv4 address, or an IPv6 address without brackets. */
  address: string;
  port: number;
  /** For messages and as the serialization key: `host:port` or `[v6]:port`. */
  label: string;
}

/** The ipmi driver's registration fields (a type, not an interface: it is a DriverFields record). */
export type IpmiFields = {
  /** BMC address, optionally `host:port` (IPMI default port 623). */
  host: string;
  user: string;
  /** Never logged, never returned by the API, never placed on a command line. */
  password: string;
};

/**
 * Parses IpmiFields.host: `name`, `name:port`, `1.2.3.4:port`, `[v6]`, `[v6]:port` or a bare IPv6
 * address (then the port is the IPMI default, 623). Throws ObmError for anything else, including a
 * leading "-" that ipmitool could mistake for an option.
 */
export function parseBmcHost(host: unknown): BmcAddress {
  if (typeof host !== 'string' || host === '') throw new ObmError('invalid OBM info: host must be a non-empty string');
  // `user:password@bmc` would be quoted back by the refusals below, password and all.
  if (host.includes('@')) throw new ObmError('invalid OBM info: host must not carry credentials: give them as user and password');
  const where = parseHostPort(host, 623);
  if (typeof where === 'string') throw new ObmError(`invalid OBM info: host ${where}`);
  const { host: address, port } = where;
  const label = address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
  return { address, port, label };
}

const CONTROL = /[\u0000-\u001f\u007f]/;

/** A node's ipmi fields, checked, with the BMC's address parsed. */
interface Target extends IpmiFields { bmc: BmcAddress }

/** Checks the whole of a node's ipmi fields; messages never contain the password. */
export function validateObmInfo(fields: unknown): Target {
  if (typeof fields !== 'object' || fields === null) throw new ObmError('invalid OBM info: expected {host, user, password}');
  const { host, user, password } = fields as Record<string, unknown>;
  const bmc = parseBmcHost(host);
  if (typeof user !== 'string' || user === '') throw new ObmError('invalid OBM info: user must be a non-empty string');
  // IPMI v2 limits: 16-byte user names, 20-byte passwords (ipmitool refuses longer ones).
  if (Buffer.byteLength(user) > 16 || CONTROL.test(user)) {
    throw new ObmError('invalid OBM info: user must be at most 16 bytes without control characters');
  }
  if (typeof password !== 'string' || password === '') throw new ObmError('invalid OBM info: password must be a non-empty string');
  if (Buffer.byteLength(password) > 20 || password.includes('\0')) {
    throw new ObmError('invalid OBM info: password must be at most 20 bytes without NUL characters');
  }
  return { bmc, host: host as string, user, password };
}

export class IpmitoolDriver implements ObmDriver {
  private readonly cipherSuite?: string;
  private readonly retries: number;
  private readonly retryTimeoutS: number;
  private readonly ipmitoolPath: string;
  private readonly minIntervalMs: number;
  private readonly execFile: ExecFileFn;

  constructor(opts: IpmitoolOptions = {}) {
    const int = (name: string, v: number | undefined, dflt: number, min: number): number => {
      const n = v ?? dflt;
      if (!Number.isInteger(n) || n < min) throw new Error(`IpmitoolDriver: ${name} must be an integer >= ${min}`);
      return n;
    };
    if (opts.cipherSuite !== undefined && !/^\d{1,2}$/.test(opts.cipherSuite)) {
      throw new Error('IpmitoolDriver: cipherSuite must be a cipher suite number such as "3" or "17"');
    }
    this.cipherSuite = opts.cipherSuite;
    this.retries = int('retries', opts.retries, 1, 1);
    this.retryTimeoutS = int('retryTimeoutS', opts.retryTimeoutS, 2, 1);
    this.minIntervalMs = int('minIntervalMs', opts.minIntervalMs, MIN_INTERVAL_MS, 0);
    this.ipmitoolPath = opts.ipmitoolPath ?? 'ipmitool';
    this.execFile = opts.execFile ?? (nodeExecFile as unknown as ExecFileFn);
  }

  async powerCycle(fields: DriverFields, opts: { force?: boolean }, signal: AbortSignal): Promise<void> {
    const run = this.runner(fields, signal);
    await run(['chassis', 'bootdev', 'pxe'], BOOTDEV_SET);
    // A node that is off cannot be cycled: most BMCs refuse, so turn it on instead.
    const state = parsePowerStatus(await run(['chassis', 'power', 'status']));
    if (state === 'off') {
      await run(['chassis', 'power', 'on']);
      return;
    }
    try {
      await run(['chassis', 'power', opts.force ? 'reset' : 'cycle']);
    } catch (err) {
      // Refused because the node went off since the status read (its OS shut it down): HIL then
      // powered it on, and so do we. A node still on keeps the refusal.
      if (!(err instanceof ObmError && PRESENT_STATE.test(err.message))) throw err;
      if (parsePowerStatus(await run(['chassis', 'power', 'status'])) !== 'off') throw err;
      await run(['chassis', 'power', 'on']);
    }
  }

  async powerOff(fields: DriverFields, signal: AbortSignal): Promise<void> {
    await this.powerTo('off', fields, signal);
  }

  async powerOn(fields: DriverFields, signal: AbortSignal): Promise<void> {
    await this.powerTo('on', fields, signal);
  }

  /** HIL's set_bootdev: `chassis bootdev <dev> options=persistent` (`disk` is what the BMC calls "default"). */
  async setBootDevice(fields: DriverFields, device: BootDevice, signal: AbortSignal): Promise<void> {
    await this.runner(fields, signal)(['chassis', 'bootdev', device, 'options=persistent'], BOOTDEV_SET);
  }

  private async powerTo(state: PowerState, fields: DriverFields, signal: AbortSignal): Promise<void> {
    const run = this.runner(fields, signal);
    try {
      await run(['chassis', 'power', state]);
    } catch (err) {
      // Some BMCs refuse "off" for a node that is already off, or "on" for one already on
      // (completion code 0xD5, "Command not supported in present state"): that state is what
      // was asked for.
      if (err instanceof ObmError && PRESENT_STATE.test(err.message)) {
        if (parsePowerStatus(await run(['chassis', 'power', 'status'])) === state) return;
      }
      throw err;
    }
  }

  async powerStatus(fields: DriverFields, signal: AbortSignal): Promise<PowerState> {
    return parsePowerStatus(await this.runner(fields, signal)(['chassis', 'power', 'status']));
  }

  /** `sol deactivate` (a stale session would refuse ours: "already active on another session"), then `sol activate` (drivers/obm/ipmi-sol.ts). */
  async openConsole(fields: DriverFields, io: ConsoleIo, signal: AbortSignal): Promise<ConsoleLink> {
    const target = validateObmInfo(fields);
    try {
      await this.runner(fields, signal)(['sol', 'deactivate']);
    } catch (err) {
      // The usual case: no session was active.
      if (!(err instanceof ObmError && /already de-?activated/i.test(err.message))) throw err;
    }
    await pause(this.minIntervalMs, undefined, { signal }).catch(() => undefined);
    return activateSol({ file: this.ipmitoolPath, argv: this.argv(target), env: this.env(target), label: target.bmc.label, redact: redactor(target.password) }, io, signal);
  }

  /** ipmitool's options up to the command: the password is not among them (`-E`). */
  private argv(target: Target): string[] {
    const { bmc } = target;
    return [
      '-I', 'lanplus',
      ...(this.cipherSuite !== undefined ? ['-C', this.cipherSuite] : []),
      '-R', String(this.retries), '-N', String(this.retryTimeoutS),
      '-H', bmc.address, '-p', String(bmc.port),
      '-U', target.user,
      '-E', // password from IPMI_PASSWORD: argv is world-readable in /proc, the environment is not
    ];
  }

  /** A minimal environment: ipmitool needs nothing of the service's own (possibly secret) settings. */
  private env(target: Target): NodeJS.ProcessEnv {
    return { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C', IPMI_PASSWORD: target.password };
  }

  /**
   * `run` for one call: executes one ipmitool command against the BMC of `fields` (spaced from
   * the call's previous one, repeated once if the BMC said busy) and resolves with its stdout.
   * Throws ObmError at once for fields ipmitool could not use.
   */
  private runner(fields: DriverFields, signal: AbortSignal): (cmd: string[], confirmed?: RegExp) => Promise<string> {
    const target = validateObmInfo(fields);
    let lastEnd: number | undefined;
    return async (cmd, confirmed) => {
      for (let attempt = 0; ; attempt++) {
        const gap = attempt ? Math.max(this.minIntervalMs, BUSY_RETRY_DELAY_MS) : this.minIntervalMs;
        const wait = lastEnd === undefined ? 0 : lastEnd + gap - Date.now();
        if (wait > 0) await pause(wait, undefined, { signal });
        try {
          return await this.ipmitool(target, cmd, signal, confirmed);
        } catch (e) {
          if (attempt === 0 && e instanceof RetryableError && !signal.aborted) continue;
          throw e instanceof RetryableError ? e.obm : e;
        } finally {
          lastEnd = Date.now();
        }
      }
    };
  }

  /**
   * One ipmitool run, SIGKILLed when the signal aborts. Resolves with stdout; rejects with
   * ObmError (or RetryableError wrapping one), also when it exits 0 without printing `confirmed`.
   */
  private ipmitool(target: Target, cmd: string[], signal: AbortSignal, confirmed?: RegExp): Promise<string> {
    const { bmc, password } = target;
    const what = `BMC ${bmc.label}: ipmitool ${cmd.join(' ')}`;
    if (signal.aborted) return Promise.reject(new ObmError(`${what} not run: the call was stopped`));
    const argv = [...this.argv(target), ...cmd];
    const env = this.env(target);
    const redact = redactor(password);

    return new Promise<string>((resolve, reject) => {
      // Killed by hand: execFile's own `signal` option sends SIGTERM on Node 20, whatever
      // killSignal says, and a stuck RMCP+ session has nothing to clean up.
      let kill: (() => void) | undefined;
      try {
        const child = this.execFile(this.ipmitoolPath, argv, { env, encoding: 'utf8', maxBuffer: 1 << 20, windowsHide: true },
          (err, stdout, stderr) => {
            if (kill) signal.removeEventListener('abort', kill);
            if (signal.aborted) return reject(new ObmError(`${what} was killed: the call was stopped`));
            if (!err && (!confirmed || confirmed.test(stdout))) return resolve(stdout);
            if (err?.code === 'ENOENT') {
              return reject(new ObmError(`ipmitool not found ("${this.ipmitoolPath}"): install the ipmitool package`));
            }
            const text = redact(stderr.trim() || stdout.trim()).split('\n').map((l) => l.trim()).filter(Boolean).join('; ');
            const known = IPMITOOL_KNOWN_ERRORS.find((k) => k.match.test(text));
            const why = text || (!err ? 'no confirmation printed' : err.signal ? `killed by ${err.signal}` : `exit code ${err.code}`);
            const error = new ObmError(`${what} failed: ${why}${known ? ` (${known.hint})` : ''}`);
            reject(known?.retry ? new RetryableError(error) : error);
          });
        kill = () => { child.kill('SIGKILL'); };
        signal.addEventListener('abort', kill, { once: true });
        child.stdin?.end(); // ipmitool never reads stdin; make sure nothing can wait on it
      } catch (e) {
        // execFile throws synchronously for bad arguments (e.g. a NUL byte); keep the password out of it
        reject(new ObmError(`BMC ${bmc.label}: could not run ipmitool: ${redact((e as Error).message)}`));
      }
    });
  }
}

/**
 * What `chassis bootdev` prints once the BMC took the setting: ipmitool exits 0 also when the BMC
 * refused it ("Set Chassis Boot Parameter 5 failed" on stderr), so only this line tells.
 */
const BOOTDEV_SET = /Set Boot Device to/;

/** Completion code 0xD5, "Command not supported in present state", as ipmitool words it. */
const PRESENT_STATE = /present state/i;

const redactor = (password: string) => (s: string) => s.split(password).join('***');

class RetryableError extends Error {
  constructor(readonly obm: ObmError) { super(obm.message); }
}

export function parsePowerStatus(stdout: string): PowerState {
  const m = /Chassis Power is (on|off)/.exec(stdout);
  if (!m) throw new ObmError(`unexpected ipmitool output for chassis power status: ${JSON.stringify(stdout.trim().slice(0, 200))}`);
  return m[1] as PowerState;
}

export const ipmi: ObmDriverEntry<IpmitoolDriver> = {
  type: `${SCHEMA_BASE}/v0/obm/ipmi`,
  extension: 'hilt.obm.ipmi',
  fields: requiredStrings('host', 'user', 'password'),
  // Refuse settings ipmitool could never use now (400), rather than at the first power call (502).
  check: (fields) => {
    try {
      validateObmInfo(fields);
      return null;
    } catch (err) {
      if (err instanceof ObmError) return err.message;
      throw err;
    }
  },
  create: ({ settings: config }) => new IpmitoolDriver({ cipherSuite: config.ipmiCipherSuite }),
  device: (fields) => parseBmcHost(fields.host).label,
  pacing: { minIntervalMs: MIN_INTERVAL_MS, minRunMs: MIN_RUN_MS },
};
