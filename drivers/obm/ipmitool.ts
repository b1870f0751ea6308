/**
 * IPMI power control by running `ipmitool -I lanplus` (IPMI v2 / RMCP+), as HIL's IPMI driver did.
 * No JavaScript RMCP+ client exists on npm; ipmitool is the tool operators already trust.
 *
 * - argv array through execFile, never a shell; the password goes in the child's environment
 *   (`-E` reads IPMI_PASSWORD), so it is not on any command line or in `ps` output.
 * - Every driver call has one overall deadline (timeoutMs); a child still running then is SIGKILLed.
 * - Calls for one BMC run one at a time and are spaced out: small BMCs drop sessions or answer
 *   "busy" when several clients talk to them at once. Different BMCs run in parallel.
 */
import { execFile as nodeExecFile } from 'node:child_process';
import type { ChildProcess, ExecFileException, ExecFileOptionsWithStringEncoding } from 'node:child_process';
import { ObmError } from './types';
import type { ObmDriver, ObmInfo, PowerState } from './types';

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
  /** Overall bound for one driver call (all its ipmitool runs, and its wait behind earlier calls). Default 10000. */
  timeoutMs?: number;
  /** `-R`: session retransmissions. Default 1. (ipmitool treats 0 as its default, 4.) */
  retries?: number;
  /** `-N`: seconds before the first retransmission; ipmitool adds 1 s per retry. Default 2. */
  retryTimeoutS?: number;
  /** Default "ipmitool" (looked up on PATH). */
  ipmitoolPath?: string;
  /** Quiet time between two ipmitool runs against the same BMC. Default 100. */
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

const HOSTNAME = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_.])?$/;
const IPV6 = /^[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?$/;

/**
 * Parses ObmInfo.host: `name`, `name:port`, `1.2.3.4:port`, `[v6]`, `[v6]:port` or a bare IPv6
 * address (then the port is the IPMI default, 623). Throws ObmError for anything else, including a
 * leading "-" that ipmitool could mistake for an option.
 */
export function parseBmcHost(host: unknown): BmcAddress {
  if (typeof host !== 'string' || host === '') throw new ObmError('invalid OBM info: host must be a non-empty string');
  let address: string;
  let portText: string | undefined;
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(host);
  if (bracketed) {
    address = bracketed[1]!;
    portText = bracketed[2];
    if (!address.includes(':') || !IPV6.test(address)) throw new ObmError(`invalid OBM info: host "${host}" is not an IPv6 address`);
  } else if (host.split(':').length > 2) {
    address = host; // bare IPv6: its colons are not a port separator
    if (!IPV6.test(address)) throw new ObmError(`invalid OBM info: host "${host}" is not a host name or address`);
  } else {
    [address, portText] = host.split(':') as [string, string | undefined];
    if (!HOSTNAME.test(address)) throw new ObmError(`invalid OBM info: host "${host}" is not a host name or address`);
  }
  let port = 623;
  if (portText !== undefined) {
    port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
    if (!(port >= 1 && port <= 65535)) throw new ObmError(`invalid OBM info: port in "${host}" must be 1-65535`);
  }
  const label = address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
  return { address, port, label };
}

const CONTROL = /[\u0000-\u001f\u007f]/;

/** Checks the whole ObmInfo before anything runs. Messages never contain the password. */
export function validateObmInfo(info: ObmInfo): BmcAddress {
  if (typeof info !== 'object' || info === null) throw new ObmError('invalid OBM info: expected {host, user, password}');
  const bmc = parseBmcHost(info.host);
  const { user, password } = info as { user: unknown; password: unknown };
  if (typeof user !== 'string' || user === '') throw new ObmError('invalid OBM info: user must be a non-empty string');
  // IPMI v2 limits: 16-byte user names, 20-byte passwords (ipmitool refuses longer ones).
  if (Buffer.byteLength(user) > 16 || CONTROL.test(user)) {
    throw new ObmError('invalid OBM info: user must be at most 16 bytes without control characters');
  }
  if (typeof password !== 'string' || password === '') throw new ObmError('invalid OBM info: password must be a non-empty string');
  if (Buffer.byteLength(password) > 20 || password.includes('\0')) {
    throw new ObmError('invalid OBM info: password must be at most 20 bytes without NUL characters');
  }
  return bmc;
}

/** Per-BMC queue: `tail` settles when the last queued call is done; `lastEnd` is when ipmitool last exited. */
interface BmcQueue { tail: Promise<void>; lastEnd: number; pending: number }

export class IpmitoolDriver implements ObmDriver {
  private readonly cipherSuite?: string;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly retryTimeoutS: number;
  private readonly ipmitoolPath: string;
  private readonly minIntervalMs: number;
  private readonly execFile: ExecFileFn;
  private readonly queues = new Map<string, BmcQueue>();

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
    this.timeoutMs = int('timeoutMs', opts.timeoutMs, 10_000, 1);
    this.retries = int('retries', opts.retries, 1, 1);
    this.retryTimeoutS = int('retryTimeoutS', opts.retryTimeoutS, 2, 1);
    this.minIntervalMs = int('minIntervalMs', opts.minIntervalMs, 100, 0);
    this.ipmitoolPath = opts.ipmitoolPath ?? 'ipmitool';
    this.execFile = opts.execFile ?? (nodeExecFile as unknown as ExecFileFn);
  }

  async powerCycle(info: ObmInfo, opts: { force?: boolean } = {}): Promise<void> {
    await this.session(info, async (run) => {
      await run(['chassis', 'bootdev', 'pxe']);
      // A node that is off cannot be cycled: most BMCs refuse, so turn it on instead.
      const state = parsePowerStatus(await run(['chassis', 'power', 'status']));
      if (state === 'off') await run(['chassis', 'power', 'on']);
      else await run(['chassis', 'power', opts.force ? 'reset' : 'cycle']);
    });
  }

  async powerOff(info: ObmInfo): Promise<void> {
    await this.session(info, async (run) => {
      try {
        await run(['chassis', 'power', 'off']);
      } catch (err) {
        // Some BMCs refuse "off" for a node that is already off (completion code 0xD5,
        // "Command not supported in present state"): off is what was asked for.
        if (err instanceof ObmError && /present state/i.test(err.message)) {
          if (parsePowerStatus(await run(['chassis', 'power', 'status'])) === 'off') return;
        }
        throw err;
      }
    });
  }

  async powerStatus(info: ObmInfo): Promise<PowerState> {
    return this.session(info, async (run) => parsePowerStatus(await run(['chassis', 'power', 'status'])));
  }

  /**
   * Runs `body` with exclusive use of the BMC, within one deadline. `run` executes one ipmitool
   * command (spaced from the previous one, retried once if the BMC was busy) and returns its stdout.
   */
  private async session<T>(info: ObmInfo, body: (run: (cmd: string[]) => Promise<string>) => Promise<T>): Promise<T> {
    const bmc = validateObmInfo(info);
    const deadline = Date.now() + this.timeoutMs;
    const timedOut = (what: string) => new ObmError(`BMC ${bmc.label} did not answer within ${this.timeoutMs} ms (${what})`);

    let q = this.queues.get(bmc.label);
    if (!q) this.queues.set(bmc.label, (q = { tail: Promise.resolve(), lastEnd: 0, pending: 0 }));
    const queue = q;
    const before = queue.tail;
    let release!: () => void;
    // The next caller waits for `before` too, so giving up early below never lets two calls overlap.
    queue.tail = before.then(() => new Promise<void>((r) => (release = r)));
    queue.pending++;
    try {
      // Getting the BMC with almost no time left only starts an ipmitool run to kill it again.
      if (!(await raceDeadline(before, deadline)) || deadline - Date.now() < MIN_RUN_MS) {
        throw timedOut('still busy with an earlier call');
      }

      const run = async (cmd: string[]): Promise<string> => {
        for (let attempt = 0; ; attempt++) {
          const wait = queue.lastEnd + (attempt ? Math.max(this.minIntervalMs, BUSY_RETRY_DELAY_MS) : this.minIntervalMs) - Date.now();
          if (wait > 0) {
            if (Date.now() + wait >= deadline) throw timedOut(cmd.join(' '));
            await sleep(wait);
          }
          try {
            return await this.ipmitool(bmc, info, cmd, deadline, timedOut);
          } catch (e) {
            if (attempt === 0 && e instanceof RetryableError) continue;
            throw e instanceof RetryableError ? e.obm : e;
          } finally {
            queue.lastEnd = Date.now();
          }
        }
      };
      return await body(run);
    } finally {
      // `release` is set once `before` has settled; chain on it so the order stays intact either way.
      void before.then(() => release());
      if (--queue.pending === 0) {
        // Forget idle BMCs, but only after the spacing interval no longer matters.
        setTimeout(() => { if (queue.pending === 0 && this.queues.get(bmc.label) === queue) this.queues.delete(bmc.label); },
          this.minIntervalMs).unref();
      }
    }
  }

  /** One ipmitool run. Resolves with stdout; rejects with ObmError (or RetryableError wrapping one). */
  private ipmitool(bmc: BmcAddress, info: ObmInfo, cmd: string[], deadline: number,
    timedOut: (what: string) => ObmError): Promise<string> {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return Promise.reject(timedOut(cmd.join(' ')));
    const argv = [
      '-I', 'lanplus',
      ...(this.cipherSuite !== undefined ? ['-C', this.cipherSuite] : []),
      '-R', String(this.retries), '-N', String(this.retryTimeoutS),
      '-H', bmc.address, '-p', String(bmc.port),
      '-U', info.user,
      '-E', // password from IPMI_PASSWORD: argv is world-readable in /proc, the environment is not
      ...cmd,
    ];
    // A minimal environment: ipmitool needs nothing of the service's own (possibly secret) settings.
    const env = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C', IPMI_PASSWORD: info.password };
    const redact = (s: string) => s.split(info.password).join('***');

    return new Promise<string>((resolve, reject) => {
      let done = false;
      let child: ChildProcess | undefined;
      const timer = setTimeout(() => {
        done = true;
        child?.kill('SIGKILL');
        reject(timedOut(cmd.join(' ')));
      }, remaining);
      try {
        child = this.execFile(this.ipmitoolPath, argv, { env, encoding: 'utf8', maxBuffer: 1 << 20, windowsHide: true },
          (err, stdout, stderr) => {
            clearTimeout(timer);
            if (done) return;
            done = true;
            if (!err) return resolve(stdout);
            if (err.code === 'ENOENT') {
              return reject(new ObmError(`ipmitool not found ("${this.ipmitoolPath}"): install the ipmitool package`));
            }
            const text = redact(stderr.trim() || stdout.trim()).split('\n').map((l) => l.trim()).filter(Boolean).join('; ');
            const known = IPMITOOL_KNOWN_ERRORS.find((k) => k.match.test(text));
            const why = text || (err.signal ? `killed by ${err.signal}` : `exit code ${err.code}`);
            const error = new ObmError(`BMC ${bmc.label}: ipmitool ${cmd.join(' ')} failed: ${why}${known ? ` (${known.hint})` : ''}`);
            reject(known?.retry ? new RetryableError(error) : error);
          });
        child.stdin?.end(); // ipmitool never reads stdin; make sure nothing can wait on it
      } catch (e) {
        // execFile throws synchronously for bad arguments (e.g. a NUL byte); keep the password out of it
        clearTimeout(timer);
        done = true;
        reject(new ObmError(`BMC ${bmc.label}: could not run ipmitool: ${redact((e as Error).message)}`));
      }
    });
  }
}

class RetryableError extends Error {
  constructor(readonly obm: ObmError) { super(obm.message); }
}

export function parsePowerStatus(stdout: string): PowerState {
  const m = /Chassis Power is (on|off)/.exec(stdout);
  if (!m) throw new ObmError(`unexpected ipmitool output for chassis power status: ${JSON.stringify(stdout.trim().slice(0, 200))}`);
  return m[1] as PowerState;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Resolves true when `p` settles before the deadline, false otherwise (p itself never rejects here). */
function raceDeadline(p: Promise<void>, deadline: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
    p.then(() => { clearTimeout(timer); resolve(true); });
  });
}
