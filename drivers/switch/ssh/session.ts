/**
 * One logged-in session of a table driver (driver.ts): the contract's operations over a vendor's
 * table (table.ts) and the CLI session (cli.ts).
 *
 * Each change reads the port first (once per session: later changes of the port start from the
 * reading of the last one), creates the VLANs it puts on the port where the table says they
 * must exist, sends the table's commands, then reads the port back and compares the reading
 * with what was asked.
 *
 * On a table with a candidate configuration (`commit`: Junos, NVUE) a change is staged instead:
 * its lines go into the candidate, the reading it must leave is kept, and `commit` later applies
 * every staged change at once and reads each staged port back. A staged change the switch
 * refuses, or one of whose lines fails otherwise while the session lives, is taken out again
 * (the candidate is discarded and the earlier changes staged anew),
 * so a failed operation never rides on the next commit. Logging out discards whatever is still
 * staged: nothing uncommitted is left behind on the switch (NVUE keeps a user's pending
 * revision across sessions).
 *
 * A family with an administrative-state table also brings ports up and down (`setEnabled`, read
 * back the same way, or staged and read back after the commit) and reports the state in
 * getPortVlans; one with a wiring table reads the switch's learned MACs and LLDP neighbours, one
 * command each for the whole switch.
 *
 * Over 400 lines for one reason: a session's caches (readings, states, the switch's VLANs, the
 * staged changes) are read and reset by every call, the commit's included; split, each part
 * would have to hand them all to the others.
 */
import { PortVlans, PortWiring, SwitchError, SwitchLog } from '../types';
import { CliCommandError, CliSession } from './cli';
import type { AdminStateTable, BundleTable, CommitTable, PortReading, SwitchTable, TableContext, WiringTable } from './table';
import { macRows, wiringByPort } from '../wiring';
import { configCommands, describe, opText, planChange, PortOp, portVlans, sameList } from './plan';
import { VlanListError } from './vlans';
import { PortOpSession } from '../ops';

export class TableSession extends PortOpSession {
  readonly hostKey?: string;
  /** the plan lines sent so far (the contract's changesSent), or on a candidate configuration the commits: reads, entering a port and the session's setup do not count */
  changesSent = 0;
  /** each port's reading, as the last read or verified (or staged) change of this session left it */
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
  /** the session is in configuration mode (a table that stays there between changes) */
  private inConfig = false;
  /** the switch's VLANs (id → name), once read or made in this session */
  private known?: Map<number, string>;
  /** ports with a staged change, and what it must leave once committed: the reading, the administrative state */
  private readonly staged = new Map<string, Staged>();
  /** the commands of each staged change, in order: staged anew after one is taken out */
  private stagedCommands: string[][] = [];
  /** the VLANs the staged changes make (on a candidate configuration) */
  private stagedVlans = new Set<number>();

  constructor(readonly table: SwitchTable, readonly cli: CliSession, readonly ctx: TableContext, readonly save: boolean, readonly log?: SwitchLog) {
    super();
    this.hostKey = cli.hostKey;
    if (table.commit) this.uncommitted = new Set();
    const { adminState, wiring } = table;
    if (adminState) this.setEnabled = (port, enabled) => this.enable(port, enabled, adminState);
    if (wiring) this.readWiring = (ports) => this.call(() => this.wiring(ports, wiring));
  }

  /** ports with a staged change (tables with a candidate configuration only) */
  readonly uncommitted?: Set<string>;

  getPortVlans(port: string): Promise<PortVlans> {
    return this.call(async () => {
      const staged = this.staged.get(port);
      const v = portVlans(staged?.reading ?? (await this.read(port)), this.table.nativeNeedsAllowed);
      const { adminState } = this.table;
      if (!adminState) return v;
      return { ...v, enabled: staged?.enabled ?? this.stagedState(port) ?? (await this.readState(port, adminState)) };
    });
  }

  /** A staged port's administrative state as its staged changes leave it (undefined: not staged). */
  private stagedState(port: string): boolean | undefined {
    return this.staged.has(port) ? this.states.get(port) : undefined;
  }

  /** Bring the port up or down (once per session it is read first), then read it back (or stage it). */
  private enable(port: string, enabled: boolean, t: AdminStateTable): Promise<void> {
    return this.call(async () => {
      const before = this.states.get(port) ?? (await this.readState(port, t));
      if (before === enabled) return;
      const lines = t.set(enabled, port);
      if (this.table.commit) return this.stage(port, lines, { vlans: [], lines: [] }, { enabled });
      await this.configure(port, lines, []);
      this.changed = true;
      this.states.delete(port);
      const after = await this.readState(port, t);
      if (after !== enabled) throw this.fail(port, `does not read back as asked after "${stateText(enabled)}": the switch shows it administratively ${after ? 'up' : 'down'}`);
    });
  }

  /** The port's administrative state, fresh from the switch. */
  private async readState(port: string, t: AdminStateTable): Promise<boolean> {
    const show = t.show(port);
    const output = await this.cli.run(this.inConfig && this.table.fromConfig ? this.table.fromConfig(show) : show);
    let up: boolean;
    try {
      up = t.parse(output, port);
    } catch (err) {
      throw new SwitchError(this.cli.mask(`switch ${this.cli.target.name} (${this.cli.address}): cannot read the administrative state of port ${port} from "${show}": ${(err as Error).message}`));
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
    const run = (c: string) => this.cli.run(this.inConfig && this.table.fromConfig ? this.table.fromConfig(c) : c);
    const macOutput = await run(w.macTable);
    let lldpOutput = '';
    try {
      lldpOutput = await run(w.lldp);
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

  private context(port: string): TableContext {
    return { ...this.ctx, port, ...(this.known ? { vlans: this.known } : {}) };
  }

  private fail(port: string, text: string): SwitchError {
    return new SwitchError(this.cli.mask(`switch ${this.cli.target.name} (${this.cli.address}): port ${port} ${text}`));
  }

  /** Read the port (once per session), send the plan's commands, then read it back and compare (or stage them). */
  protected change(port: string, op: PortOp): Promise<void> {
    return this.call(async () => {
      const before = this.readings.get(port) ?? (await this.read(port));
      // A port whose VLANs are not its own (a bundle member's are the bundle's): no change of
      // its switchport settings makes it carry what is asked, and on a candidate configuration
      // the commit refused for it would fail the other changes staged with it.
      if (before.other?.length) throw this.fail(port, `is a ${before.other.join(', ')}: take it out first; nothing was sent`);
      const plan = planChange(this.table, this.context(port), op, before);
      if (!plan) return;
      const create = await this.vlansToCreate(plan.vlans);
      if (this.table.commit) return this.stage(port, plan.lines, create, { reading: plan.expected });
      await this.configure(port, plan.lines, create.lines);
      this.made(create.vlans);
      this.changed = true;
      this.readings.delete(port);
      const after = await this.read(port);
      if (!matches(after, plan.expected)) {
        throw this.fail(port, `does not read back as asked after "${opText(op)}": expected ${describe(plan.expected)}, the switch shows ${describe(after)}`);
      }
    });
  }

  /** The VLANs of `vlans` the switch lacks (as far as this session knows), and the lines that create them. */
  private async vlansToCreate(vlans: number[]): Promise<{ vlans: number[]; lines: string[] }> {
    const t = this.table.vlans;
    if (!t || !vlans.length) return { vlans: [], lines: [] };
    const known = await this.switchVlans();
    const missing = vlans.filter((v) => !known.has(v));
    return { vlans: missing, lines: missing.flatMap((v) => t.create(v, this.ctx)) };
  }

  /** The switch's VLANs: read once per session where the table can list them, else those this session made. */
  private async switchVlans(): Promise<Map<number, string>> {
    const t = this.table.vlans;
    if (this.known) return this.known;
    if (!t?.show || !t.parse) return (this.known = new Map());
    const output = await this.cli.run(this.inConfig && this.table.fromConfig ? this.table.fromConfig(t.show) : t.show);
    try {
      return (this.known = t.parse(output));
    } catch (err) {
      throw new SwitchError(this.cli.mask(`switch ${this.cli.target.name} (${this.cli.address}): cannot read the switch's VLANs from "${t.show}": ${(err as Error).message}`));
    }
  }

  /** The VLANs of `vlans` now exist (the lines that made them were accepted), by the names the table gives new ones. */
  private made(vlans: number[]): void {
    const t = this.table.vlans;
    if (!t || !vlans.length) return;
    // Not read yet where the switch can list them: the next need reads them (the new ones included, or made again).
    if (!this.known && t.show) return;
    this.known ??= new Map();
    for (const v of vlans) if (!this.known.has(v)) this.known.set(v, t.name?.(v) ?? String(v));
  }

  /** The port's reading, fresh from the switch. */
  private async read(port: string): Promise<PortReading> {
    const bundle = this.table.bundle && (await this.bundleOf(port, this.table.bundle));
    if (bundle) {
      const member: PortReading = { mode: 'other', access: null, native: null, allowed: [], other: [`member of ${bundle} (carries its VLANs)`] };
      this.readings.set(port, member);
      return member;
    }
    const show = this.table.show(port);
    const vt = this.table.vlans;
    // The VLANs first, unless the port's own command lists them too (SONiC's `show vlan brief`).
    const together = vt?.show === show && !!vt.parse;
    if (vt?.show && !together) await this.switchVlans();
    const output = await this.cli.run(this.inConfig && this.table.fromConfig ? this.table.fromConfig(show) : show);
    if (together && !this.known) {
      try {
        this.known = vt.parse!(output);
      } catch {
        // the port's parse below says what it cannot read
      }
    }
    let reading: PortReading;
    try {
      reading = this.table.parse(output, port, this.context(port));
    } catch (err) {
      const why = err instanceof VlanListError || err instanceof SwitchError ? err.message : String(err);
      throw new SwitchError(this.cli.mask(`switch ${this.cli.target.name} (${this.cli.address}): cannot read port ${port} from "${show}": ${why}`));
    }
    this.readings.set(port, reading);
    return reading;
  }

  /** The link aggregation the port is a member of, fresh from the switch, or null. */
  private async bundleOf(port: string, t: BundleTable): Promise<string | null> {
    const show = t.show(port);
    const output = await this.cli.run(this.inConfig && this.table.fromConfig ? this.table.fromConfig(show) : show);
    try {
      return t.parse(output, port);
    } catch (err) {
      throw new SwitchError(this.cli.mask(`switch ${this.cli.target.name} (${this.cli.address}): cannot tell whether port ${port} is in a link aggregation from "${show}": ${(err as Error).message}`));
    }
  }

  /** The session's setup, once, before its first change. */
  private async setup(): Promise<void> {
    if (this.setUp || !this.table.setup) return;
    const lines = this.table.setup(this.ctx);
    if (this.table.commit) await this.send(lines);
    else await this.send([...(this.table.configure ? [this.table.configure] : []), ...lines, ...this.table.leave]);
    this.setUp = true;
  }

  /** Configuration mode, the VLANs, the port's interface, the lines, back to the privileged prompt. */
  private async configure(port: string, lines: string[], create: string[]): Promise<void> {
    await this.setup();
    const commands = configCommands(this.table, port, lines, create);
    const first = commands.length - lines.length - this.table.leave.length;
    await this.send(commands, { from: first, to: first + lines.length });
  }

  /** Stage a change in the candidate configuration; a refused (or failed) line takes the whole change out again. */
  private async stage(port: string, lines: string[], create: { vlans: number[]; lines: string[] }, expected: Staged): Promise<void> {
    await this.setup();
    await this.enterConfig();
    const commands = configCommands(this.table, port, lines, create.lines, true);
    try {
      await this.send(commands);
    } catch (err) {
      // Not only a refusal: a line whose outcome is unknown (no exit status, a sudo question)
      // leaves the lines before it in the candidate, and the commit of the changes staged
      // before it would carry them. A session that is gone took its candidate with it.
      if (this.cli.alive) await this.restage(err as Error);
      throw err;
    }
    this.stagedCommands.push(commands);
    for (const v of create.vlans) this.stagedVlans.add(v);
    const was = this.staged.get(port);
    this.staged.set(port, { reading: expected.reading ?? was?.reading, enabled: expected.enabled ?? was?.enabled });
    this.uncommitted!.add(port);
    if (expected.reading) this.readings.set(port, expected.reading);
    if (expected.enabled !== undefined) this.states.set(port, expected.enabled);
    this.made(create.vlans);
  }

  /** Throw the candidate away, then stage the earlier changes again; if that fails, the session is broken. */
  private async restage(cause: Error): Promise<void> {
    try {
      await this.discard();
      for (const commands of this.stagedCommands) {
        await this.enterConfig();
        await this.send(commands);
      }
    } catch (err) {
      this.log?.warn({ switch: this.cli.target.name }, this.cli.mask(`could not stage the earlier changes again after "${cause.message}": ${(err as Error).message}`));
      this.cli.destroy();
    }
  }

  /** Into configuration mode, on a table that stays there between staged changes. */
  private async enterConfig(): Promise<void> {
    if (!this.table.configure || this.inConfig) return;
    await this.cli.run(this.table.configure);
    this.inConfig = true;
  }

  /** Throw away every staged line (and leave configuration mode). */
  private async discard(): Promise<void> {
    const c = this.table.commit!;
    if (!this.table.configure || this.inConfig) for (const cmd of c.discard) await this.cli.run(cmd, { answers: c.answers });
    this.inConfig = false;
    // what the discarded lines made is gone again
    if (this.table.vlans?.show) this.known = undefined;
    else this.known?.clear();
  }

  /** The changes staged so far are forgotten (committed, or discarded). */
  private unstage(): void {
    for (const p of this.staged.keys()) {
      this.readings.delete(p);
      this.states.delete(p);
    }
    this.staged.clear();
    this.uncommitted?.clear();
    this.stagedCommands = [];
    this.stagedVlans.clear();
  }

  commit(): Promise<Map<string, string>> {
    return this.call(async () => {
      const c = this.table.commit;
      const verdicts = new Map<string, string>();
      if (!c || !this.staged.size) return verdicts;
      const staged = new Map(this.staged);
      if (c.check) await this.checkCandidate(c.check);
      this.changesSent++;
      let unconfirmed = false;
      try {
        const out = await this.cli.run(c.command);
        unconfirmed = !c.done.test(out);
        const last = out.trim().split('\n').slice(-2);
        if (unconfirmed) throw new CliCommandError(this.cli.mask(`switch ${this.cli.target.name} (${this.cli.address}): "${c.command}" did not confirm the commit: ${last.join(' / ')}`), c.command, last);
      } catch (err) {
        if (!(err instanceof CliCommandError)) throw err;
        // Leave nothing staged behind.
        await this.discard().catch(() => this.cli.destroy());
        this.unstage();
        // Its reasons are the lines around the error (Junos prints the statement and why above it).
        const why = err.output.split('\n').map((l) => l.trim()).filter((l) => l && !/^\[edit\]$/.test(l)).slice(-8).join(' / ') || err.lines.join(' / ');
        // Refused before anything was written, the switch's configuration is as it was; an
        // unconfirmed commit, or one that failed half-way, may have changed ports.
        if (!unconfirmed && !c.partial?.test(err.output)) {
          throw new SwitchError(this.cli.mask(`switch ${this.cli.target.name} (${this.cli.address}) refused "${c.command}": ${why}; nothing was applied (the staged changes were discarded)`), { nothingSent: true });
        }
        throw new SwitchError(this.cli.mask(`switch ${this.cli.target.name} (${this.cli.address}): "${c.command}" failed: ${why}; the switch may have applied part of the staged changes`));
      }
      this.inConfig = false;
      this.changed = true;
      this.unstage();
      for (const [port, expected] of staged) {
        const wrong: string[] = [];
        if (expected.reading) {
          const after = await this.read(port);
          if (!matches(after, expected.reading)) wrong.push(`expected ${describe(expected.reading)}, the switch shows ${describe(after)}`);
        }
        if (expected.enabled !== undefined && this.table.adminState) {
          const up = await this.readState(port, this.table.adminState);
          if (up !== expected.enabled) wrong.push(`expected it administratively ${expected.enabled ? 'up' : 'down'}, the switch shows it ${up ? 'up' : 'down'}`);
        }
        if (wrong.length) verdicts.set(port, `does not read back as asked after the commit: ${wrong.join('; ')}`);
      }
      for (const [port, why] of verdicts) verdicts.set(port, this.fail(port, why).message);
      return verdicts;
    });
  }

  /** The candidate holds only what this session staged; else it is discarded and the commit refused. */
  private async checkCandidate(check: NonNullable<CommitTable['check']>): Promise<void> {
    const where = `switch ${this.cli.target.name} (${this.cli.address})`;
    let why: string | undefined;
    try {
      const foreign = check.foreign(await this.cli.run(check.command), { ports: [...this.staged.keys()], vlans: [...this.stagedVlans] });
      if (foreign.length) why = `the pending revision holds changes this session did not stage (another login as the same user?): ${foreign.slice(0, 8).join(', ')}${foreign.length > 8 ? ', …' : ''}`;
    } catch (err) {
      if (!(err instanceof SwitchError)) throw err;
      why = `cannot tell what the pending revision holds from "${check.command}": ${err.message}`;
    }
    if (why === undefined) return;
    await this.discard().catch(() => this.cli.destroy());
    this.unstage();
    throw new SwitchError(this.cli.mask(`${where}: ${why}; nothing was applied (the staged changes were discarded, any others with them)`), { nothingSent: true });
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
      if (err instanceof CliCommandError && !this.table.commit) for (const l of this.table.leave) await this.cli.run(l).catch(() => undefined);
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
      if (this.staged.size && this.cli.alive) {
        await this.discard().catch((err: Error) => this.log?.warn({ switch: this.cli.target.name }, this.cli.mask(`could not discard the uncommitted changes on switch ${this.cli.target.name}: ${err.message}`)));
        this.unstage();
      }
      const save = this.table.save;
      if (save && this.changed && this.save && this.cli.alive) {
        try {
          const out = await this.cli.run(save.command, { signal, answers: save.answers });
          if (!save.done.test(out)) throw new SwitchError(`"${save.command}" did not confirm the save: ${out.trim().split('\n').slice(-2).join(' / ')}`);
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

/** What a staged change of a port must leave once committed. */
interface Staged { reading?: PortReading; enabled?: boolean }

const stateText = (enabled: boolean) => (enabled ? 'bring the port up' : 'shut the port down');

/** Does the reading show what was asked? */
function matches(after: PortReading, expected: PortReading): boolean {
  return after.mode === 'trunk' && after.native === expected.native && sameList(after.allowed, expected.allowed);
}
