/**
 * One SSH session to a switch's command line: the only place that talks SSH. It owns the
 * connection (ssh2's Client, explicit timeouts and keepalives), the host key check, the login
 * dialogue of each vendor (SSH password or keyboard-interactive authentication; or, on the
 * PowerConnect 55xx, SSH `none` authentication followed by an in-band `User Name:` /
 * `Password:` dialogue), `enable`, paging, prompt detection, the per-command check for the
 * lines a vendor prints when it refuses a command, retrying the login on transport errors
 * only, and masking the password in every log line and error text.
 *
 * Prompts are found as real terminals show them: a newline, then the prompt, at the end of what
 * the switch sent. After login the prompt's stem (`switch` of `switch#`, `admin@sonic` of
 * `admin@sonic:~$`) is learned, and from then on only `stem#`, `stem>`, `stem(<mode>)#` and a
 * shell's `stem:<dir>$` end a command's output, so output that happens to end in `#` does not.
 *
 * Switches whose CLI is a Linux shell (SONiC, Cumulus) report a refusal by the tool's exit
 * status, not by a line of their own: their dialect has `exitStatus`, and each command is sent
 * as `<command>; echo $?`, the status read off the output's last line.
 *
 * Nothing here keeps a timer of its own for a command: every wait ends when the AbortSignal of
 * the caller aborts (the login's, or the one given to `run`), or when the session is destroyed,
 * which the service does at a call's deadline (hardware/switch-sessions.ts).
 *
 * Longer than our other modules on purpose: it is one state machine (connect, authenticate,
 * in-band login, enable, paging, prompt, command, error check), and every vendor's dialogue is a
 * path through it.
 */
import { createHash } from 'node:crypto';
import { setTimeout as pause } from 'node:timers/promises';
import type { Client } from 'ssh2';
import type { Algorithms, AuthMethod, ClientChannel, ConnectConfig, KeyboardInteractiveAuthMethod } from 'ssh2';
import { SwitchError, SwitchLog } from '../types';
import { lazyModule } from '../../../lib/lazy';

const ssh2 = lazyModule(() => require('ssh2') as typeof import('ssh2'));

/** Where and as whom to log in. */
export interface CliTarget {
  /** the switch's name in the service, for messages */
  name: string;
  host: string;
  port: number;
  username: string;
  /** never logged, never in an error text */
  password: string;
  /** the recorded host key fingerprint; absent: the first key is trusted */
  hostKey?: string;
}

/** How a vendor's CLI behaves at login and around each command. */
export interface CliDialect {
  /** SSH authentication methods to offer, in order. */
  auth: ReadonlyArray<'none' | 'password' | 'keyboard-interactive'>;
  /** In-band login after SSH (PowerConnect 55xx): the user name and password prompts. */
  inband?: { user: RegExp; password: RegExp };
  /** Send `enable` when the CLI starts at a `>` prompt (no enable password is sent). */
  enable: boolean;
  /** Commands that turn paging off, run after login; a refusal is ignored (the pager is answered anyway). */
  pagingOff: readonly string[];
  /** The pager's prompt at the end of the output; answered with a space. */
  pager: RegExp;
  /** A line matching one of these (trimmed) means the command was refused. */
  errors: readonly RegExp[];
  /** Offer older SSH algorithms after the modern ones (switches of the 2010s speak nothing newer). */
  legacyAlgorithms?: boolean;
  /**
   * A Linux shell (SONiC, Cumulus): each command is followed by `echo $?` on the same line, and a
   * non-zero status is a refusal (with the tool's error lines, or its last lines, as the reason).
   */
  exitStatus?: boolean;
  /** A question any command may ask that is answered with the login password (`[sudo] password for admin:`). */
  passwordQuestion?: RegExp;
  /**
   * The CLI echoes every command line it reads: a prompt that comes before the echo is one
   * printed again after a log message (synchronous logging), not the end of the command, which
   * would otherwise leave every later command with the output of the one before.
   */
  echoes?: boolean;
}

export interface CliOptions {
  /** ssh2's bound on the TCP connect, key exchange and authentication (default 30 s); the caller's signal usually ends the wait first. */
  readyTimeoutMs?: number;
  /** ssh2's keepalive interval on an open session (default 15 s; 3 unanswered end it). */
  keepaliveMs?: number;
  /** logins tried when the transport fails (refused, reset, no answer); default 3 */
  loginAttempts?: number;
  /** pause before the second attempt, doubled before each later one; default 200 ms */
  retryDelayMs?: number;
  log?: SwitchLog;
}

/** A command the switch refused: its error lines, as the switch printed them. */
export class CliCommandError extends SwitchError {
  constructor(message: string, readonly command: string, readonly lines: string[], readonly output = '') {
    super(message);
  }
}

export interface RunOptions {
  /** ends the wait for the prompt */
  signal?: AbortSignal;
  /** questions the command asks (e.g. the `(y/n)` of a save), each answered once with keystrokes */
  answers?: Array<{ question: RegExp; keys: string }>;
}

/** The connection failed underneath the dialogue (refused, reset, closed, no answer): a login may be tried again. */
class TransportError extends SwitchError {}

const MASK = '********';

/** `SHA256:<base64 without padding>` of a host key blob, as `ssh-keygen -l` prints it. */
export function fingerprint(key: Buffer): string {
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
}

/** Older key exchange, host key, cipher and MAC algorithms, offered after ssh2's defaults. */
const LEGACY: Algorithms = {
  kex: { append: ['diffie-hellman-group14-sha1', 'diffie-hellman-group1-sha1'] },
  serverHostKey: { append: ['ssh-rsa', 'ssh-dss'] },
  cipher: { append: ['aes128-cbc', 'aes256-cbc', '3des-cbc'] },
  hmac: { append: ['hmac-sha1'] },
} as unknown as Algorithms;

/**
 * Any prompt, before its stem is known: a newline, then a host name (letters, digits, `-_.`;
 * `user@host` on Junos and the Linux shells), maybe a mode in parentheses, and `>` or `#`; or a
 * shell's `user@host:<dir>$` (`admin@sonic:~$`, `cumulus@switch:mgmt:~$`). Not any line ending
 * in `#`: a banner of `#####` or `Welcome to switch #` is not a prompt.
 */
const ANY_PROMPT = /[\r\n]([A-Za-z0-9][\w.-]*(?:@[\w.-]+)?(?:\([^)\r\n]*\))?[>#]|[A-Za-z0-9][\w.-]*@[\w.-]+:[^\s$#>]*[$#]) ?$/;

/** What follows the stem in a prompt: a mode in parentheses, a shell's `:<dir>`, the prompt character. */
const PROMPT_TAIL = '(\\([^)\\r\\n]*\\))?(:[^\\s$#>]*)?[>#$] ?$';

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Terminal noise out of a switch's output: escape sequences, backspaces, overwritten lines. */
export function cleanOutput(raw: string): string {
  let s = raw.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
  while (/[^\x08\n]\x08/.test(s)) s = s.replace(/[^\x08\n]\x08/g, '');
  s = s.replace(/\x08/g, '');
  // A pager erases its own prompt with a carriage return, spaces and another carriage return.
  s = s.replace(/\r +\r/g, '');
  return s.replace(/\r+\n/g, '\n').replace(/\r/g, '');
}

interface Waiter {
  match(buf: string): RegExpExecArray | null;
  resolve(m: RegExpExecArray): void;
  reject(err: Error): void;
}

export class CliSession {
  /** fingerprint of the key the switch presented */
  hostKey?: string;
  private client?: Client;
  private channel?: ClientChannel;
  private buf = '';
  private waiter?: Waiter;
  private prompt: RegExp = ANY_PROMPT;
  private closed = false;
  /** why the connection ended, when it did */
  private ended?: Error;
  private running = false;
  private readonly log?: SwitchLog;

  private constructor(readonly target: CliTarget, readonly dialect: CliDialect, private readonly opts: CliOptions) {
    this.log = opts.log;
  }

  /** `host:port`, or `[v6]:port` */
  get address(): string {
    const { host, port } = this.target;
    return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  }

  /** A command is in progress. */
  get busy(): boolean {
    return this.running;
  }

  get alive(): boolean {
    return !this.closed && !this.ended;
  }

  /** The password out of a text. */
  mask(text: string): string {
    const pw = this.target.password;
    return pw ? text.split(pw).join(MASK) : text;
  }

  /** `switch <name> (<host:port>): <text>`, masked. */
  private error(text: string): SwitchError {
    return new SwitchError(this.mask(`switch ${this.target.name} (${this.address}): ${text}`));
  }

  /**
   * Connect and log in, trying again when the transport fails (and only then: a refused login
   * or a changed host key is final). Ends when `signal` aborts.
   */
  static async open(target: CliTarget, dialect: CliDialect, signal: AbortSignal, opts: CliOptions = {}): Promise<CliSession> {
    const attempts = opts.loginAttempts ?? 3;
    let delay = opts.retryDelayMs ?? 200;
    for (let attempt = 1; ; attempt++) {
      signal.throwIfAborted();
      const session = new CliSession(target, dialect, opts);
      try {
        await session.login(signal);
        return session;
      } catch (err) {
        session.destroy();
        if (signal.aborted) throw signal.reason;
        if (err instanceof TransportError && attempt >= attempts) {
          throw session.error(`${err.message} (${attempt} login attempt${attempt > 1 ? 's' : ''})`);
        }
        if (!(err instanceof TransportError)) throw err instanceof SwitchError ? err : session.error((err as Error).message);
        opts.log?.info({ switch: target.name, address: session.address, attempt }, session.mask(`switch login failed, trying again: ${(err as Error).message}`));
        await pause(delay, undefined, { signal }).catch(() => { throw signal.reason; });
        delay *= 2;
      }
    }
  }

  private async login(signal: AbortSignal): Promise<void> {
    const onAbort = () => this.destroy(signal.reason as Error);
    signal.addEventListener('abort', onAbort);
    try {
      await this.connect();
      await this.openShell();
      await this.dialogue(signal);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  private connect(): Promise<void> {
    const { target, dialect } = this;
    const methods: AuthMethod[] = dialect.auth.map((type) => {
      if (type === 'password') return { type, username: target.username, password: target.password } as AuthMethod;
      if (type === 'keyboard-interactive') {
        const m: KeyboardInteractiveAuthMethod = {
          type, username: target.username,
          // Every prompt that asks for a password gets it; nothing else is answered.
          prompt: (_name, _instructions, _lang, prompts, finish) => finish(prompts.map((p) => (/password/i.test(p.prompt) ? target.password : ''))),
        };
        return m;
      }
      return { type: 'none', username: target.username } as AuthMethod;
    });
    let mismatch: SwitchError | undefined;
    const config: ConnectConfig = {
      host: target.host,
      port: target.port,
      username: target.username,
      authHandler: methods,
      tryKeyboard: dialect.auth.includes('keyboard-interactive'),
      readyTimeout: this.opts.readyTimeoutMs ?? 30_000,
      keepaliveInterval: this.opts.keepaliveMs ?? 15_000,
      keepaliveCountMax: 3,
      hostVerifier: (key: Buffer) => {
        this.hostKey = fingerprint(key);
        if (target.hostKey && target.hostKey !== this.hostKey) {
          mismatch = this.error(
            `host key changed: the service recorded ${target.hostKey}, the switch presented ${this.hostKey}; nothing was changed. `
            + `If the switch's key really changed (e.g. it was replaced), an admin clears the recorded key (DELETE /switch/${target.name}/host_key)`,
          );
          return false;
        }
        return true;
      },
      ...(dialect.legacyAlgorithms ? { algorithms: LEGACY } : {}),
    };
    return new Promise<void>((resolve, reject) => {
      const client = (this.client = new (ssh2().Client)());
      client.on('ready', () => {
        // An interactive session, as OpenSSH treats one: every command is a small write that
        // waits for its answer, and Nagle's algorithm with delayed ACKs would add ~40 ms to each.
        client.setNoDelay(true);
        resolve();
      });
      client.on('error', (err: Error & { level?: string }) => {
        const e = mismatch ?? this.sshError(err);
        this.ended ??= e;
        reject(e);
        this.fail(e);
      });
      client.on('close', () => {
        const e = this.ended ?? new TransportError(this.closed ? 'session closed' : 'the switch closed the connection');
        this.ended ??= e;
        reject(e);
        this.fail(e);
      });
      client.connect(config);
    });
  }

  /** An ssh2 error in words; transport failures (ssh2's `client-socket`, `client-timeout`) are marked for a retry. */
  private sshError(err: Error & { level?: string }): SwitchError {
    switch (err.level) {
      case 'client-socket':
        return new TransportError(`cannot reach the switch (${err.message})`);
      case 'client-timeout':
        return new TransportError(`no SSH answer from the switch (${err.message})`);
      case 'client-authentication':
        return this.error(`login refused for user ${this.target.username}: wrong user name or password (${err.message})`);
      default:
        return this.error(`SSH ${err.level ?? 'error'}: ${err.message}`);
    }
  }

  private openShell(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // A wide terminal, so that echoed commands and long VLAN lists do not wrap.
      this.client!.shell({ term: 'vt100', cols: 512, rows: 24 }, (err, channel) => {
        if (err) return reject(new TransportError(`the switch refused a shell (${err.message})`));
        this.channel = channel;
        channel.setEncoding('latin1');
        channel.on('data', (d: string) => this.onData(d));
        channel.stderr.on('data', (d: Buffer) => this.onData(d.toString('latin1')));
        channel.on('close', () => this.fail(this.ended ??= new TransportError(this.closed ? 'session closed' : 'the switch closed the session')));
        resolve();
      });
    });
  }

  /** From the SSH shell to the privileged prompt, with paging off. */
  private async dialogue(signal: AbortSignal): Promise<void> {
    const { dialect, target } = this;
    const startPatterns = dialect.inband ? [ANY_PROMPT, dialect.inband.user] : [ANY_PROMPT];
    await this.expect(startPatterns, 'the first prompt', signal);
    if (dialect.inband?.user.test(this.lastMatch)) {
      this.send(target.username);
      await this.expect([dialect.inband.password], 'the password prompt', signal);
      this.send(target.password, true);
      await this.expect([ANY_PROMPT, dialect.inband.user], 'the prompt after the password', signal);
      if (dialect.inband.user.test(this.lastMatch)) {
        throw this.error(`login refused for user ${target.username}: wrong user name or password (the switch asked for the user name again)`);
      }
    }
    let prompt = this.lastPromptText();
    if (prompt.endsWith('>') && dialect.enable) {
      this.send('enable');
      await this.expect([ANY_PROMPT, /[Pp]assword: ?$/], 'the prompt after enable', signal);
      if (/[Pp]assword: ?$/.test(this.lastMatch)) throw this.error('enable asks for a password: give the user privilege level 15 (no enable password is sent)');
      prompt = this.lastPromptText();
      if (!prompt.endsWith('#')) throw this.error(`enable did not reach the privileged prompt (got "${prompt}")`);
    }
    // The stem: `switch` of `switch#`, `console` of `console>`, `admin@sonic` of `admin@sonic:~$`.
    const stem = prompt.replace(/(\([^)]*\))?(:[^\s$#>]*)?[>#$]$/, '');
    this.prompt = new RegExp(`[\\r\\n]${escapeRe(stem)}${PROMPT_TAIL}`);
    this.log?.debug({ switch: target.name, address: this.address, hostKey: this.hostKey }, `logged in to the switch (prompt ${prompt})`);
    for (const command of dialect.pagingOff) {
      try {
        await this.exec(command, { signal });
      } catch (err) {
        if (!(err instanceof CliCommandError)) throw err;
        this.log?.debug({ switch: target.name }, `the switch refused "${command}"; its pager will be answered`);
      }
    }
  }

  /** What the last expect matched. */
  private lastMatch = '';

  private lastPromptText(): string {
    return (ANY_PROMPT.exec(this.lastMatch)?.[1] ?? '').trim();
  }

  private send(line: string, secret = false): void {
    if (!secret) this.log?.debug({ switch: this.target.name }, this.mask(`sent: ${line}`));
    this.channel!.write(`${line}\n`);
  }

  /** Send keystrokes as they are (a one-key answer, no newline). */
  private keys(text: string): void {
    this.channel!.write(text);
  }

  private onData(chunk: string): void {
    this.buf += chunk;
    // A pager waits for a key: answer it and drop its prompt from the output.
    const pager = this.dialect.pager.exec(this.buf);
    if (pager && pager.index + pager[0].length === this.buf.length) {
      this.buf = this.buf.slice(0, pager.index);
      this.keys(' ');
      return;
    }
    const w = this.waiter;
    if (!w) return;
    const m = w.match(this.buf);
    if (m) {
      this.waiter = undefined;
      w.resolve(m);
    }
  }

  private fail(err: Error): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.reject(err);
  }

  /** Wait until the buffer ends with one of `patterns`; the text so far is consumed. */
  private expect(patterns: RegExp[], what: string, signal?: AbortSignal): Promise<RegExpExecArray> {
    if (this.ended) return Promise.reject(this.ended);
    return new Promise<RegExpExecArray>((resolve, reject) => {
      const onAbort = () => {
        this.waiter = undefined;
        reject(signal!.reason);
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = () => signal?.removeEventListener('abort', onAbort);
      this.waiter = {
        match: (buf) => {
          for (const p of patterns) {
            const m = p.exec(buf);
            if (m) return m;
          }
          return null;
        },
        resolve: (m) => {
          done();
          // What the wait matched is consumed: the next wait starts on what comes after it.
          this.lastMatch = this.buf;
          this.buf = '';
          resolve(m);
        },
        reject: (err) => {
          done();
          // Still a transport error (a login may be tried again); run() words it for the caller.
          reject(err instanceof TransportError ? new TransportError(`${err.message} while waiting for ${what}`) : err);
        },
      };
      // What arrived already may complete it.
      const m = this.waiter.match(this.buf);
      if (m) {
        const w = this.waiter;
        this.waiter = undefined;
        w.resolve(m);
      }
    });
  }

  /**
   * Run one command and return its output (without the echoed command and the prompt). A line
   * that matches one of the dialect's error patterns rejects with CliCommandError. `answers`
   * reply to questions the command asks (e.g. `(y/n)` of a save), each once, with a keystroke.
   */
  async run(command: string, opts: RunOptions = {}): Promise<string> {
    try {
      return await this.exec(command, opts);
    } catch (err) {
      throw err instanceof TransportError ? this.error(err.message) : err;
    }
  }

  /** run() without the wording of transport errors (the login retries on them). */
  private async exec(command: string, opts: RunOptions = {}): Promise<string> {
    if (this.closed) throw this.error('session closed');
    if (this.running) throw this.error(`"${command}" sent while another command is running`);
    this.running = true;
    try {
      // Whatever the switch printed since the last prompt (a log message) is not this command's output.
      this.buf = '';
      const line = this.dialect.exitStatus ? `${command}; echo $?` : command;
      this.send(line);
      const pending = [...(opts.answers ?? [])];
      const pw = this.dialect.passwordQuestion;
      let raw = '';
      let asked = 0;
      for (;;) {
        await this.expect([this.prompt, ...pending.map((a) => a.question), ...(pw ? [pw] : [])], `the prompt after "${command}"`, opts.signal);
        raw += this.lastMatch;
        if (this.prompt.test(raw) && this.dialect.echoes && !cleanOutput(raw).includes(line)) {
          this.log?.debug({ switch: this.target.name }, this.mask(`a prompt before the echo of "${command}" (printed again after a log message?): skipped`));
          raw = '';
          continue;
        }
        if (this.prompt.test(raw)) break;
        if (pw?.test(this.lastMatch)) {
          // sudo asks for the login password (once: a second question means it was refused)
          if (++asked > 1) throw this.error(`"${command}": sudo refused the login password`);
          this.send(this.target.password, true);
          continue;
        }
        const i = pending.findIndex((a) => a.question.test(raw));
        this.keys(pending[i]!.keys);
        pending.splice(i, 1);
      }
      let output = this.strip(raw, line);
      let status = 0;
      if (this.dialect.exitStatus) {
        const lines = output.split('\n');
        while (lines.length && !lines[lines.length - 1]!.trim()) lines.pop();
        const last = lines.pop()?.trim() ?? '';
        if (!/^\d+$/.test(last)) throw this.error(`"${command}" printed no exit status (got "${this.mask(last).slice(0, 80)}")`);
        status = Number(last);
        output = lines.join('\n');
      }
      // Masked before it is cut into lines and trimmed, which could split the password.
      const all = this.mask(output).split('\n').map((l) => l.trim()).filter(Boolean);
      let refused = all.filter((l) => this.dialect.errors.some((re) => re.test(l)));
      if (status !== 0 && !refused.length) refused = [...all.slice(-3), `exit status ${status}`];
      if (refused.length) {
        throw new CliCommandError(this.mask(`switch ${this.target.name} (${this.address}) refused "${command}": ${refused.join(' / ')}`), command, refused, this.mask(output));
      }
      return output;
    } finally {
      this.running = false;
    }
  }

  /** The output of `command` out of what the switch sent: no echo, no prompt, no terminal noise. */
  private strip(raw: string, command: string): string {
    const lines = cleanOutput(raw).split('\n');
    if (lines.length && lines[0]!.trimEnd().endsWith(command)) lines.shift();
    lines.pop(); // the prompt
    return lines.join('\n');
  }

  /** Log out politely (`exit`), then close the connection. */
  async logout(): Promise<void> {
    if (this.closed) return;
    if (this.alive && this.channel) {
      try {
        this.channel.write('exit\n');
        this.channel.end();
      } catch {
        // the connection is going anyway
      }
    }
    this.destroy();
  }

  /** Cut the connection now; a command in progress rejects. */
  destroy(reason?: Error): void {
    if (this.closed) return;
    this.closed = true;
    const err = reason ?? this.error('session closed');
    this.ended ??= err;
    this.fail(err);
    this.client?.end();
    this.client?.destroy();
  }
}
