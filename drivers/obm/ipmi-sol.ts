/**
 * IPMI Serial-over-LAN: one `ipmitool … sol activate` child per console session, its stdout the
 * node's serial output and its stdin the node's serial input (the ipmitool driver builds the
 * argv and the environment: no shell, the password in IPMI_PASSWORD, never on a command line).
 *
 * - `usesolkeepalive`: ipmitool's default keepalive (Get Device ID) goes on succeeding after the
 *   BMC dropped the SOL payload (another client took the console, or it was deactivated), and
 *   the session would hang silent forever; the SOL keepalive notices it (ipmitool exits with "No
 *   response to keepalive", measured at 25 s against ipmi_sim) and the session is restarted.
 * - ipmitool's escape character `~` acts only right after a newline (`~.` ends the session, as
 *   in ssh), so a typed `~` there is doubled (`~~` sends one `~`): a viewer can never end or
 *   suspend the service's session by typing.
 * - stdin stays open while the session lives: ipmitool ends the session when it reads EOF. So a
 *   service killed outright leaves no ipmitool behind either: its pipe closes, ipmitool exits.
 * - typed input waits in memory for ipmitool, which reads it only as fast as the BMC takes it:
 *   beyond MAX_PENDING_INPUT it is refused (the viewer is told), never held without bound.
 * - close() ends stdin (ipmitool deactivates the payload and exits) and SIGKILLs the child by
 *   PID if it is still there after CLOSE_GRACE_MS.
 * - ipmitool flushes the node's output as it comes, but not its banner: on a pipe, the banner
 *   that says the session is up would wait in its buffer until the node prints. So it runs under
 *   coreutils' `stdbuf -o0` (which execs it: the PID is ipmitool's).
 */
import { spawn } from 'node:child_process';
import type { ConsoleIo, ConsoleLink } from './types';
import { ObmError } from './types';

/** How long a closed session's ipmitool has to deactivate the payload before it is killed. */
export const CLOSE_GRACE_MS = 2000;

/** Typed bytes held for ipmitool at most (it reads its stdin only as the BMC takes the input). */
export const MAX_PENDING_INPUT = 256 * 1024;

/** What ipmitool prints once the session is up (not the node's output). */
const BANNER = /^\[SOL Session operational\.\s+Use .\? for help\]\r?\n/;

/** ipmitool's complaint that its stdin is no terminal: expected, it works on a pipe. */
const NOISE = /^tcgetattr: Inappropriate ioctl for device$/;

/** Bytes to send for `input` so that ipmitool's escape character never acts; `atLineStart` carries over between calls. */
export function escapeSolInput(input: Buffer, state: { atLineStart: boolean }): Buffer {
  const out: number[] = [];
  for (const b of input) {
    if (b === 0x7e && state.atLineStart) out.push(0x7e); // `~` after a newline: doubled
    out.push(b);
    state.atLineStart = b === 0x0d || b === 0x0a;
  }
  return Buffer.from(out);
}

export interface SolOptions {
  file: string;
  /** ipmitool's argv up to the command (interface, cipher, retries, host, port, user, -E) */
  argv: string[];
  env: NodeJS.ProcessEnv;
  /** the BMC, as messages name it */
  label: string;
  /** removes secrets from ipmitool's text */
  redact: (s: string) => string;
}

/** Starts `sol activate`; resolves once ipmitool says the session is operational. */
export function activateSol(opts: SolOptions, io: ConsoleIo, signal: AbortSignal): Promise<ConsoleLink> {
  const what = `BMC ${opts.label}: ipmitool sol activate`;
  if (signal.aborted) return Promise.reject(new ObmError(`${what} not run: the call was stopped`));
  return new Promise<ConsoleLink>((resolve, reject) => {
    const child = spawn('stdbuf', ['-o0', opts.file, ...opts.argv, 'sol', 'activate', 'usesolkeepalive'], {
      env: opts.env, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true,
    });
    let open = false;
    let exited = false;
    let head = Buffer.alloc(0);
    let stderr = '';
    let killTimer: NodeJS.Timeout | undefined;
    const escape = { atLineStart: true };
    const kill = () => {
      if (!exited) child.kill('SIGKILL');
    };
    const onAbort = () => kill();
    signal.addEventListener('abort', onAbort, { once: true });
    const why = (fallback: string) => {
      const text = opts.redact(stderr).split('\n').map((l) => l.trim()).filter((l) => l && !NOISE.test(l)).join('; ');
      return text || fallback;
    };

    const link: ConsoleLink = {
      pid: child.pid,
      write(bytes) {
        if (exited || !child.stdin.writable) return true; // the session ends: `ended` tells it
        // Input comes as fast as a network sends it; the node takes it at the serial line's rate.
        if (child.stdin.writableLength + bytes.length > MAX_PENDING_INPUT) return false;
        child.stdin.write(escapeSolInput(bytes, escape));
        return true;
      },
      close() {
        if (exited) return;
        child.stdin.end();
        killTimer ??= setTimeout(kill, CLOSE_GRACE_MS);
        killTimer.unref?.();
      },
    };

    child.stdin.on('error', () => { /* the child is gone: its exit reports it */ });
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-2000);
    });
    child.stdout.on('data', (d: Buffer) => {
      if (open) return io.data(d);
      head = Buffer.concat([head, d]);
      // The banner is one short line; output without it (some ipmitool builds) counts as open too.
      const nl = head.indexOf(0x0a);
      if (nl < 0 && head.length < 256) return;
      const text = head.toString('latin1');
      const banner = BANNER.exec(text);
      const rest = banner ? head.subarray(Buffer.byteLength(banner[0], 'latin1')) : head;
      head = Buffer.alloc(0);
      // Too late: the call's deadline passed, its caller was answered; nobody would own the session.
      if (signal.aborted) return kill();
      open = true;
      signal.removeEventListener('abort', onAbort);
      resolve(link);
      if (rest.length) io.data(rest);
    });
    child.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') reject(new ObmError('stdbuf not found: install the coreutils package'));
      else reject(new ObmError(`${what}: could not run ipmitool: ${opts.redact(err.message)}`));
    });
    child.once('exit', () => {
      exited = true;
      if (killTimer) clearTimeout(killTimer);
    });
    // 'close': after the last of its output was read.
    child.once('close', (code, sig) => {
      exited = true;
      signal.removeEventListener('abort', onAbort);
      const status = sig ? `killed by ${sig}` : `exit code ${code}`;
      if (!open) {
        reject(new ObmError(signal.aborted ? `${what} was killed: the call was stopped` : `${what} failed: ${why(status)}`));
        return;
      }
      io.ended(`the SOL session ended: ${why(status)}`);
    });
  });
}
