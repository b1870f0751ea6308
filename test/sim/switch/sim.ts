/**
 * A switch's command line over real SSH, for tests, benches and demos: an ssh2 `Server` on
 * 127.0.0.1 that logs users in as the vendor's switch does (SSH password or keyboard-interactive
 * authentication; the PowerConnect 55xx's `none` authentication and in-band `User Name:` /
 * `Password:`), then plays the vendor's CLI (vendors.ts) over one port state per interface.
 *
 * ssh2's server gives no real pty, so this is the terminal: it echoes what is typed (not a
 * password), turns `\n` into `\r\n`, prints a newline before every prompt, pages long output
 * until paging is turned off, and takes one-key answers (the pager, `(y/n)` questions). Its
 * writes are buffered per incoming chunk: echoing one character per write costs tens of
 * milliseconds per command (Nagle and delayed ACK).
 *
 * What the switch learned on its ports, settable by a test (`learn`, `neighbor`): MACs with
 * their VLAN and an LLDP neighbour per port, printed by the vendor's `show mac address-table`
 * and LLDP commands; a shut port shows neither, as a real one learns nothing.
 *
 * Faults, settable at any time: refuse the password, hang after login or at the first
 * configuration command, drop the connection there, answer every configuration command with
 * the vendor's refusal, ignore the command that turns paging off, accept changes without
 * making them, hang right after making a change.
 */
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Server, utils } from 'ssh2';
import type { Connection, ServerChannel } from 'ssh2';
import { carried, CarriedVlans, macHex, SimNeighbor, SimPort, vlanRange } from './model';
import { VENDORS, SimVendor, VendorName } from './vendors';

export interface SimFaults {
  /** refuse every login, the right password too */
  refusePassword?: boolean;
  /** accept the login, then never print a prompt (`login`), or stop answering at the first configuration command (`config`) */
  hang?: 'login' | 'config';
  /** close the connection right after the login (`login`) or at the first configuration command (`config`) */
  drop?: 'login' | 'config';
  /** answer every command in configuration mode (but `exit` and `end`) with the vendor's refusal */
  failConfig?: boolean;
  /** a firmware that refuses the command turning paging off (its pager must then be answered) */
  ignorePagingOff?: boolean;
  /** accept this many of the next interface configuration commands without applying them (a switch that says yes and does nothing) */
  ignoreChanges?: number;
  /** apply the next interface configuration command, then stop answering; one per session, this many sessions (a switch that hangs half-way through a change) */
  hangAfterChange?: number;
  /**
   * A switch with synchronous logging: the next this many prompts are followed, a moment later,
   * by a log message and the prompt printed again, while the CLI waits for a command
   */
  reprintPrompt?: number;
  /** refuse every commit / apply of a candidate configuration (Junos, NVUE), with the switch's own error */
  failCommit?: boolean;
  /**
   * NVUE: the next applies pass their checks, write the revision to the switch, then fail
   * restarting a service (`Failure during apply`): the ports carry the revision all the same
   */
  failApply?: boolean;
}

export interface SimOptions {
  vendor: VendorName;
  /** TCP port; 0 (default) picks a free one */
  port?: number;
  /** the loopback address to listen on (default 127.0.0.1) */
  address?: '127.0.0.1' | '::1';
  username?: string;
  password?: string;
  /** the prompt's name (default: the vendor's factory default, `switch` or `console`) */
  hostname?: string;
  /** VLANs that exist on the switch (Dell switches refuse others); default `1-4093` */
  vlans?: string;
  /** a delay before each command is answered, as a real switch's CLI takes (default 0) */
  commandDelayMs?: number;
  /** a delay before a login is accepted (default 0) */
  loginDelayMs?: number;
  /** lines per page while paging is on (default 24) */
  pageLines?: number;
  /**
   * How a long VLAN list wraps in `show … switchport`: continuation lines indented (default),
   * flush at column 0, or with the comma leading the next line (firmware differ)
   */
  listWrap?: 'indent' | 'flush' | 'leading-comma';
  /** a log message (`terminal monitor`) the switch prints in every long output: inside a wrapped VLAN list if there is one */
  logLine?: string;
  /** a login banner (MOTD) instead of the vendor's, sent on its own a moment before the first prompt */
  banner?: string;
  /** sudo asks for the user's password (once per session) on the Linux-based switches */
  sudoAsksPassword?: boolean;
  /** how long a commit (Junos) or apply (NVUE) takes (default 0; real ones take seconds) */
  commitDelayMs?: number;
  faults?: SimFaults;
}

/** `SHA256:…` of an OpenSSH public key line. */
export function fingerprintOf(publicKey: string): string {
  const blob = Buffer.from(publicKey.trim().split(/\s+/)[1]!, 'base64');
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

export class SwitchSim {
  readonly vendor: SimVendor;
  readonly username: string;
  readonly password: string;
  readonly hostname: string;
  readonly faults: SimFaults;
  readonly ports = new Map<string, SimPort>();
  readonly vlans = new Set<number>();
  /** MACs learned per port (canonical name): 12 hex digits and the VLAN */
  readonly macs = new Map<string, Array<{ mac: string; vlan: number }>>();
  /** each port's LLDP neighbour */
  readonly neighbors = new Map<string, SimNeighbor>();
  commandDelayMs: number;
  loginDelayMs: number;
  readonly pageLines: number;
  /** logins that reached the CLI prompt */
  logins = 0;
  /** every command line received at a prompt, in order */
  readonly received: string[] = [];
  /** saves of the running configuration */
  saves = 0;
  /** commits (Junos) or applies (NVUE) of a candidate configuration that changed the switch */
  commits = 0;
  /** the fingerprint of the current host key */
  hostKey = '';
  private privateKey = '';
  private server?: Server;
  private port = 0;
  private readonly conns = new Set<Connection>();

  constructor(readonly opts: SimOptions) {
    this.vendor = VENDORS[opts.vendor];
    this.username = opts.username ?? 'admin';
    this.password = opts.password ?? 'admin';
    this.hostname = opts.hostname ?? this.vendor.hostname;
    this.faults = opts.faults ?? {};
    this.commandDelayMs = opts.commandDelayMs ?? 0;
    this.loginDelayMs = opts.loginDelayMs ?? 0;
    this.pageLines = opts.pageLines ?? 24;
    for (const p of this.vendor.portNames) this.ports.set(p, this.vendor.newPort());
    const vlans = opts.vlans ?? this.vendor.factoryVlans ?? '1-4093';
    if (vlans) for (const v of vlanRange(vlans)) this.vlans.add(v);
    this.newKey();
  }

  /** `127.0.0.1:<port>` (or `[::1]:<port>`), once started */
  get address(): string {
    return this.opts.address === '::1' ? `[::1]:${this.port}` : `127.0.0.1:${this.port}`;
  }

  /** A port's settings by the name the service registers (any spelling the CLI takes). */
  portState(name: string): SimPort {
    const p = this.ports.get(this.vendor.canonical(name) ?? name);
    if (!p) throw new Error(`the ${this.vendor.name} simulator has no port ${name}`);
    return p;
  }

  /** What a port carries, untagged and tagged. */
  carried(name: string): CarriedVlans {
    const p = this.portState(name);
    return this.vendor.carried ? this.vendor.carried(this, p) : carried(p);
  }

  /** Is the port administratively up? */
  isUp(name: string): boolean {
    return !this.portState(name).shutdown;
  }

  /** The switch learns `mac` (any spelling) on a port, on `vlan`; `null` forgets what the port learned. */
  learn(name: string, mac: string | null, vlan = 1): void {
    const port = this.vendor.canonical(name) ?? name;
    this.portState(port);
    if (mac === null) return void this.macs.delete(port);
    const list = this.macs.get(port) ?? [];
    list.push({ mac: macHex(mac), vlan });
    this.macs.set(port, list);
  }

  /** The port's LLDP neighbour, or none. */
  neighbor(name: string, n: SimNeighbor | null): void {
    const port = this.vendor.canonical(name) ?? name;
    this.portState(port);
    if (n) this.neighbors.set(port, n);
    else this.neighbors.delete(port);
  }

  /** What up ports learned, in port order: MAC rows and neighbours (a shut port shows nothing). */
  learned(only?: string): { macs: Array<{ port: string; mac: string; vlan: number }>; neighbors: Array<{ port: string; n: SimNeighbor }> } {
    const macs: Array<{ port: string; mac: string; vlan: number }> = [];
    const neighbors: Array<{ port: string; n: SimNeighbor }> = [];
    for (const [port, p] of this.ports) {
      if (p.shutdown || (only && port !== only)) continue;
      for (const m of this.macs.get(port) ?? []) macs.push({ port, ...m });
      const n = this.neighbors.get(port);
      if (n) neighbors.push({ port, n });
    }
    return { macs, neighbors };
  }

  private newKey(): void {
    // ssh2's generator drops leading zero bytes of an ed25519 public key, so about one key in
    // 256 does not parse (a Server then refuses it): make keys until one does.
    for (;;) {
      const key = utils.generateKeyPairSync('ed25519');
      if (utils.parseKey(key.private) instanceof Error || utils.parseKey(key.public) instanceof Error) continue;
      this.privateKey = key.private;
      this.hostKey = fingerprintOf(key.public);
      return;
    }
  }

  async start(): Promise<this> {
    await this.listen(this.opts.port ?? 0);
    return this;
  }

  private listen(port: number): Promise<void> {
    const server = (this.server = new Server({ hostKeys: [this.privateKey] }, (conn) => this.accept(conn)));
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.opts.address ?? '127.0.0.1', () => {
        this.port = (server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  /** Serve with a new host key on the same port (a replaced switch, or a man in the middle). */
  async rotateHostKey(): Promise<void> {
    await this.stop();
    this.newKey();
    await this.listen(this.port);
  }

  private async stop(): Promise<void> {
    for (const c of this.conns) c.end();
    this.conns.clear();
    const s = this.server;
    this.server = undefined;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }

  async close(): Promise<void> {
    await this.stop();
  }

  private accept(conn: Connection): void {
    // As sshd does for an interactive session (no Nagle delay on each small answer).
    (conn as unknown as { setNoDelay(on: boolean): void }).setNoDelay(true);
    this.conns.add(conn);
    conn.on('close', () => this.conns.delete(conn));
    conn.on('error', () => undefined);
    const inband = this.vendor.inbandLogin;
    conn.on('authentication', (ctx) => {
      const ok = (good: boolean) => {
        if (!good) return ctx.reject(inband ? ['none', 'password', 'keyboard-interactive'] : ['password', 'keyboard-interactive']);
        if (this.loginDelayMs) setTimeout(() => ctx.accept(), this.loginDelayMs);
        else ctx.accept();
      };
      const right = (user: string, pw: string) => !this.faults.refusePassword && user === this.username && pw === this.password;
      if (ctx.method === 'none') return ok(inband);
      if (ctx.method === 'password') return ok(right(ctx.username, ctx.password));
      if (ctx.method === 'keyboard-interactive') {
        return ctx.prompt([{ prompt: 'Password: ', echo: false }], (answers) => ok(right(ctx.username, answers[0] ?? '')));
      }
      return ctx.reject(inband ? ['none', 'password', 'keyboard-interactive'] : ['password', 'keyboard-interactive']);
    });
    conn.on('ready', () => {
      conn.on('session', (acceptSession) => {
        const session = acceptSession();
        session.on('pty', (accept) => accept?.());
        session.on('window-change', (accept) => accept?.());
        session.on('env', (accept) => accept?.());
        session.on('shell', (accept) => {
          const channel = accept();
          void new Shell(this, conn, channel).run().catch(() => conn.end());
        });
      });
    });
  }
}

type Mode = 'user' | 'exec' | 'config' | 'if' | 'vlan';

/** One CLI session on the simulated switch. */
export class Shell {
  mode: Mode;
  /** the interface being configured (canonical name) */
  iface = '';
  vlan = 0;
  paging = true;
  private readonly input: string[] = [];
  private wake?: () => void;
  private out = '';
  private closed = false;
  /** echo typed characters (not while a password is typed) */
  private echo = true;
  /** the last character printed ended a line */
  private atLineStart = false;

  constructor(readonly sim: SwitchSim, readonly conn: Connection, readonly channel: ServerChannel) {
    this.mode = sim.vendor.privilegedAtLogin ? 'exec' : 'user';
    channel.on('data', (d: Buffer) => {
      for (const ch of d.toString('latin1')) this.input.push(ch);
      this.wake?.();
    });
    channel.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
  }

  get vendor(): SimVendor {
    return this.sim.vendor;
  }

  /** Output, `\n` as `\r\n`; sent when the shell next waits. */
  print(text: string): void {
    if (!text) return;
    this.out += text.replace(/\r?\n/g, '\r\n');
    this.atLineStart = text.endsWith('\n');
  }

  line(text = ''): void {
    this.print(`${text}\n`);
  }

  flush(): void {
    if (this.out && !this.closed) this.channel.write(this.out);
    this.out = '';
  }

  private async char(): Promise<string> {
    for (;;) {
      if (this.closed) throw new Error('closed');
      const c = this.input.shift();
      if (c !== undefined) return c;
      this.flush();
      await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
    }
  }

  /** One key (the pager, a `(y/n)` question). */
  async key(): Promise<string> {
    const c = await this.char();
    return c;
  }

  /** A line as typed, echoed (unless `secret`). */
  async readLine(secret = false): Promise<string> {
    let text = '';
    for (;;) {
      const c = await this.char();
      if (c === '\r' || c === '\n') {
        if (c === '\r' && this.input[0] === '\n') this.input.shift();
        this.print('\n');
        return text;
      }
      if (c === '\x7f' || c === '\b') {
        if (text) {
          text = text.slice(0, -1);
          if (!secret) this.print('\b \b');
        }
        continue;
      }
      text += c;
      if (!secret && this.echo) this.print(c);
    }
  }

  /** Output in pages while paging is on: the pager waits for a key (`q` stops). */
  async page(lines: string[]): Promise<void> {
    const log = this.sim.opts.logLine;
    lines = lines.flatMap((l) => l.split('\n'));
    if (log !== undefined && lines.length > 2) {
      // Inside a wrapped list if there is one (the worst place for a reader), else half-way.
      const inList = lines.findIndex((l, j) => j > 0 && (/,$/.test(lines[j - 1]!) || /^\s*,/.test(l)));
      const at = inList > 0 ? inList : lines.length >> 1;
      lines = [...lines.slice(0, at), log, ...lines.slice(at)];
    }
    const per = this.sim.pageLines - 1;
    if (!this.paging || lines.length <= per) {
      for (const l of lines) this.line(l);
      return;
    }
    for (let i = 0; i < lines.length; i += per) {
      for (const l of lines.slice(i, i + per)) this.line(l);
      if (i + per >= lines.length) break;
      this.print(this.vendor.pager);
      const k = await this.key();
      this.print(`\r${' '.repeat(this.vendor.pager.length)}\r`);
      if (k === 'q' || k === 'Q') break;
    }
  }

  prompt(): string {
    return this.vendor.prompt(this.sim.hostname, this.mode, this.iface, this.vlan, this.sim.username);
  }

  async run(): Promise<void> {
    const { sim, vendor } = this;
    if (sim.opts.banner !== undefined) {
      this.print(sim.opts.banner);
      this.flush();
      await new Promise((r) => setTimeout(r, 20));
    } else if (vendor.banner) this.print(vendor.banner);
    if (vendor.inbandLogin && !(await this.inbandLogin())) return;
    if (sim.faults.drop === 'login') return void this.conn.end();
    if (sim.faults.hang === 'login') return new Promise<void>(() => undefined);
    sim.logins++;
    this.print('\n');
    for (;;) {
      // A prompt always starts a line: that is how clients find it.
      if (!this.atLineStart) this.print('\n');
      this.print(this.prompt());
      if (sim.faults.reprintPrompt) {
        sim.faults.reprintPrompt--;
        this.flush();
        await new Promise((r) => setTimeout(r, 20));
        this.print(`\n${sim.opts.logLine ?? '%LINK-I-Up:  port 5'}\n${this.prompt()}`);
        this.flush();
        // as a switch does: what it sends goes out before it reads the next command
        await new Promise((r) => setTimeout(r, 5));
      }
      const line = await this.readLine();
      if (sim.commandDelayMs) {
        this.flush();
        await new Promise((r) => setTimeout(r, sim.commandDelayMs));
      }
      const cmd = line.trim();
      if (cmd) sim.received.push(cmd);
      const configuring = vendor.configuring ? vendor.configuring(this, cmd) : this.mode === 'config' || this.mode === 'if' || this.mode === 'vlan';
      if (configuring && cmd && !/^(exit|end)$/i.test(cmd)) {
        if (sim.faults.drop === 'config') return void this.conn.end();
        if (sim.faults.hang === 'config') {
          this.flush();
          return new Promise<void>(() => undefined);
        }
      }
      if (!cmd) continue;
      const changing = vendor.changing ? vendor.changing(this, cmd) : this.mode === 'if' && !/^(exit|end)$/i.test(cmd);
      const done = await vendor.command(this, cmd);
      if (done === 'logout') {
        this.flush();
        this.conn.end();
        return;
      }
      if (changing && sim.faults.hangAfterChange) {
        sim.faults.hangAfterChange--;
        this.flush();
        return new Promise<void>(() => undefined);
      }
    }
  }

  private async inbandLogin(): Promise<boolean> {
    for (let attempt = 0; attempt < 3; attempt++) {
      this.print('\nUser Name:');
      const user = await this.readLine();
      this.print('Password:');
      const pw = await this.readLine(true);
      if (!this.sim.faults.refusePassword && user === this.sim.username && pw === this.sim.password) {
        this.print('\n');
        return true;
      }
      this.print('\n');
    }
    this.flush();
    this.conn.end();
    return false;
  }

  /** The caret line under the token at `column` of the command typed at the current prompt, then the message. */
  caret(column: number): string {
    return `${' '.repeat(this.prompt().length + column)}^`;
  }
}

/** A simulator per vendor, started, for tests: `await startSim({vendor: 'nexus'})`. */
export async function startSim(opts: SimOptions): Promise<SwitchSim> {
  return new SwitchSim(opts).start();
}

export { carried };
