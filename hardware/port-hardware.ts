/**
 * The port actor's hardware calls, outside its mailbox (docs/actors.md, rule 4): a change goes to
 * the switch's session (one session per switch; operations queued meanwhile share it), and only
 * once the switch applied it does the port's configuration change. A failed or timed-out change
 * may have altered the port all the same, so the port is then set back to the configuration the
 * service holds: a port never keeps a VLAN the service does not know about, which could
 * otherwise leak a reused VLAN into another tenant's network. A failure that sent the switch
 * nothing that could change the port (`SwitchError.nothingSent`: a failed login, a command
 * refused before any change) left it as it was, and is answered as it is.
 *
 * The set-back is queued on the switch before the failure is answered, so every later call of
 * that switch (the nic's next operation, a drift audit) comes after it, and the port counts as
 * having a change under way until it ends. The answer waits for it only until the failed call's
 * deadline: an operation ends within one switch timeout, and a set-back still running then
 * (always so after a timeout) goes on without holding the operation's status.
 *
 * The port's record of a change is written beside the nic's record of the operation's outcome,
 * not before it: every operation would otherwise wait for one more commit. Until it is written,
 * the change is held here (with the wiring it was made for): the next change of the port, a
 * set-back and a force-detach all start from it, and one writer per port always writes the
 * newest. A crash between the two records is repaired at the next start
 * (World.repairPortRecords): the nic records DONE only after the switch applied the change.
 * A set-back or a repair reads the configuration it sets in its switch turn, not when it was
 * queued: a force-detach meanwhile (no nic operation is pending then) took a VLAN off the
 * record, and putting it back would leave it on the port of the node's next holder; nor does it
 * clear a doubt when the record changed while it ran.
 *
 * A port in doubt (docs/actors.md, "Ports in doubt"): the switch may carry VLANs beyond its
 * record. A failed change whose set-back is not confirmed by the time the port answers (still
 * queued behind a hung call, or failed too) records it (`PortInDoubt`), durably, before the
 * answer, and so before the nic's outcome: a stop before the set-back ran leaves the port in
 * doubt, and the next start sets it back first. A resumed operation (handed on again at a
 * start) may have reached the port in the earlier process, so its failure is never taken for
 * harmless (`nothingSent`): its port is read and, unless it carries its record, set back. The
 * doubt is cleared (`PortDoubtCleared`) in a switch turn that confirmed the port: a set-back, a
 * revert or re-apply, a drift repair, or a read-back that matches (where the switch only stages
 * changes for a commit, once the commit applied them); the marks and clears of one
 * port are written in the order their switch turns came, and a clear confirmed before a
 * force-detach (which marks the port in its own turn) is dropped. While in doubt, the port is
 * set back again with backoff. An admin may clear a doubt by hand (`port.clearDoubt`), for a
 * switch gone for good: the holds end, but the port still owes its set-back (`setBackOwed`), a
 * switch that was only unreachable may come back with the VLANs, so it is set back the same way
 * (with backoff, and at each start) until the switch confirms it.
 *
 * Inactive ports (HILT_INACTIVE_PORTS=shutdown, the default): a port that carries none of the
 * service's networks is administratively down, where its driver can do that (`setEnabled`). The
 * state is not a fact of its own but follows from the configuration held: the change that
 * gives a port its first network brings it up in the same switch call, after the VLAN change
 * (a port the service never set may still sit on the switch's default VLAN: it comes up only
 * once it carries exactly the tenant's VLAN); the change that takes its last network away, a
 * revert, and a set-back or re-apply to nothing shut it first, before its VLANs change. So a
 * port is up only while it carries what the service holds. A force-detach (for a dead switch:
 * the switch is not told) puts the port in doubt of the VLAN it forgot, and queues its set-back
 * at once: on a switch that is alive after all it removes the VLAN (and shuts a port left with
 * nothing); on one still gone it fails, and is tried again with backoff until the switch comes
 * back or an admin clears the doubt by hand. Nothing is shut at start: a port of an older
 * release is treated by this policy when it next changes, or by a repair.
 *
 * The drift audit (check) reads a port back and, when asked, repairs it, in one switch call:
 * no change of the port can come between the reading and the repair, and a change queued after
 * it sees the repaired port. A port with a change under way here (its outcome, or the set-back
 * after a failure, not known yet) or whose nic has an operation pending is not read at all: the
 * configuration held for it is about to change. Under the shutdown policy it also compares the
 * port's administrative state (where the driver reads one) with the one its configuration asks.
 */
import { SwitchError, type PortVlans, type SwitchInfo, type SwitchSession } from '../drivers/switch/types';
import { formatVlanList } from '../drivers/switch/vlans';
import type { PortWork, SubmitOptions } from './switch-sessions';
import { HiltError } from '../actors/errors';
import { portId } from '../actors/ids';
import { configAfter, sameConfig } from '../actors/port/config';
import type { PortChange, PortCheck, PortConfig, PortExpected, PortFound, PortState, Wire } from '../actors/port/protocol';
import { operationTrace } from './op-trace';
import { backoff, sleep, within } from '../lib/time';

/** HILT_INACTIVE_PORTS: a port that carries none of the service's networks is shut (`shutdown`), or left as it is (`keep`). */
export type InactivePorts = 'shutdown' | 'keep';
export const INACTIVE_PORTS: readonly InactivePorts[] = ['shutdown', 'keep'];

/** What the hardware path needs: the switches' sessions, a switch's driver settings, and a way to record a port's configuration. */
export interface PortHardwareDeps {
  sessions: { submit(sw: SwitchInfo, work: PortWork, opts?: SubmitOptions): Promise<void> };
  /** Does the nic have an operation pending (accepted, outcome not recorded)? */
  operationPending(wire: Wire): boolean;
  switchInfo(name: string): SwitchInfo | undefined;
  /** One attempt at committing the port's configuration for `wire` (the port actor's `port.configured`). */
  record(id: string, config: PortConfig, wire: Wire | null): Promise<void>;
  /** The service is stopping: give up writing (the next start repairs the record). */
  stopping(): boolean;
  /** One attempt at committing that the port is in doubt, may carry `vlans` beyond its record (`port.doubt`). */
  doubt(id: string, vlans: number[]): Promise<void>;
  /** One attempt at committing that the switch confirmed the port carries its record (`port.settled`), `forgets` as counted in that switch turn. */
  settled(id: string, forgets: number): Promise<void>;
  /** Have the port actor set the port back to its record (`port.settle`): null once it carries it. */
  settle(id: string): Promise<string | null>;
  /** Is the port in doubt, or owing a set-back since an admin's clear of its doubt (committed)? */
  owesSetBack(id: string): boolean;
  /** The port's committed state (absent: the state a call was given is taken as the latest). */
  committed?(id: string): PortState | undefined;
  /** The first pause before a port in doubt (or owing a set-back) is set back again (doubled each time, at most 5 minutes); default 1 s. */
  settleRetryMs?: number;
  /** HILT_INACTIVE_PORTS (default `shutdown`) */
  inactivePorts?: InactivePorts;
}

interface Unrecorded { config: PortConfig; wire: Wire | null }

const sameWire = (a: Wire | null, b: Wire | null) => a === b || (!!a && !!b && a.node === b.node && a.nic === b.nic);

const vlansOf = (c: PortConfig) => (c.native === null ? c.tagged : [c.native, ...c.tagged]);

/** The VLANs `after` has that `config` does not: what a change from `config` may have left beyond it. */
const beyond = (config: PortConfig, after: PortConfig) => [...new Set(vlansOf(after).filter((v) => !vlansOf(config).includes(v)))].sort((a, b) => a - b);

/** Does the switch carry exactly `config`'s VLANs on the port (its administrative state aside)? */
const carriesExactly = (actual: PortFound, config: PortConfig) => !actual.other?.length && sameConfig(actual, config);

/** Does the switch say the port carries a VLAN `config` does not hold, or something the service never sets? */
const carriesOther = (v: PortVlans, config: PortConfig) => !!v.other?.length || [v.native, ...v.tagged].some((x) => x !== null && !vlansOf(config).includes(x));

/** Does the configuration carry any network? */
const carries = (c: PortConfig) => c.native !== null || c.tagged.length > 0;

/** The administrative state the policy wants for a port holding `config` (up: true); undefined: left as it is. */
export function wantedState(config: PortConfig, policy: InactivePorts): boolean | undefined {
  return policy === 'shutdown' ? carries(config) : undefined;
}

/** Bring the port up or down, where the driver can and the policy wants it. */
async function enable(s: SwitchSession, port: string, up: boolean | undefined): Promise<void> {
  if (up !== undefined && s.setEnabled) await s.setEnabled(port, up);
}

/** Reset the port, then set exactly `config` (down first, up last, as the policy wants): repairs drift (e.g. a rebooted switch). */
async function setConfig(s: SwitchSession, port: string, config: PortConfig, policy: InactivePorts): Promise<void> {
  const up = wantedState(config, policy);
  if (up === false) await enable(s, port, false);
  await s.resetPort(port);
  if (config.native !== null) await s.setNative(port, config.native);
  for (const v of config.tagged) await s.addTagged(port, v);
  if (up === true) await enable(s, port, true);
}

/** A read-back in the service's terms: tagged VLANs ascending, once each; `other` and `enabled` only when there are. */
function found(v: PortVlans): PortFound {
  const tagged = [...new Set(v.tagged)].sort((a, b) => a - b);
  const out: PortFound = v.other?.length ? { native: v.native, tagged, other: [...v.other] } : { native: v.native, tagged };
  if (v.enabled !== undefined) out.enabled = v.enabled;
  return out;
}

/**
 * Does the switch have exactly `expected` on the port (and nothing the service never sets)? The
 * administrative state counts where both sides know it.
 */
export const matches = (actual: PortFound, expected: PortExpected) => !actual.other?.length && sameConfig(actual, expected)
  && (expected.enabled === undefined || actual.enabled === undefined || actual.enabled === expected.enabled);

/**
 * Change the port from `actual` to `expected` with the fewest changes, as an engineer would (the
 * VLANs that are right are not interrupted); from a state the service cannot describe, reset it
 * and set `expected`. A port to be shut is shut first, one to be brought up last.
 */
async function converge(s: SwitchSession, port: string, actual: PortFound, expected: PortExpected, policy: InactivePorts): Promise<void> {
  if (actual.other?.length) return setConfig(s, port, expected, policy);
  const up = expected.enabled;
  if (up === false && actual.enabled !== false) await enable(s, port, false);
  for (const v of actual.tagged) if (!expected.tagged.includes(v)) await s.removeTagged(port, v);
  if (actual.native !== expected.native) await (expected.native === null ? s.removeNative(port) : s.setNative(port, expected.native));
  for (const v of expected.tagged) if (!actual.tagged.includes(v)) await s.addTagged(port, v);
  if (up === true && actual.enabled === false) await enable(s, port, true);
}

const describe = (v: PortFound) =>
  `native ${v.native ?? 'none'}, tagged ${formatVlanList(v.tagged)}${v.other?.length ? `, ${v.other.join(', ')}` : ''}${v.enabled === undefined ? '' : v.enabled ? ', up' : ', shut down'}`;

/**
 * The driver calls that carry out `change` on a port holding `config` (each idempotent: after a
 * crash it is applied again). The first network comes before the port is brought up; the port
 * is shut before its last network leaves.
 */
function work(change: PortChange, port: string, config: PortConfig, policy: InactivePorts): PortWork {
  const after = configAfter(config, change);
  switch (change.kind) {
    case 'attach':
      return async (s) => {
        // A port the service holds empty may still carry VLANs it never set (a trunk HIL left on
        // every VLAN but those it removed), which a change of one VLAN would leave on it: such a
        // port starts from a reset. Read first, so that a port carrying nothing else (empty, or
        // this change already made by a process before a restart) gets no extra change.
        if (!carries(config) && carriesOther(await s.getPortVlans(port), after)) await s.resetPort(port);
        await (change.native ? s.setNative(port, change.vlan) : s.addTagged(port, change.vlan));
        if (!carries(config)) await enable(s, port, wantedState(after, policy));
      };
    case 'detach':
      return async (s) => {
        if (!carries(after)) await enable(s, port, wantedState(after, policy));
        await (change.native ? s.removeNative(port) : s.removeTagged(port, change.vlan));
      };
    case 'revert':
      return async (s) => {
        await enable(s, port, wantedState(after, policy));
        await s.resetPort(port);
      };
    case 'reapply':
      return (s) => setConfig(s, port, config, policy);
  }
}

/**
 * A port's doubt cleared by a switch call's work: at once, in its switch turn, or, where the
 * session only staged the port's change for a commit (Junos, NVUE), once the call succeeded,
 * which it does only after the commit applied it (a refused commit must leave the port in doubt).
 */
class Confirmation {
  private afterCommit = false;
  /** the port's force-detaches counted in the switch turn: a later one makes the clear stale */
  private forgets = 0;

  constructor(private readonly confirm: (forgets: number) => void, private readonly forgetCount: () => number) {}

  /** The work showed (or made) the port as its record, on session `s`. */
  now(s: SwitchSession, port: string): void {
    this.forgets = this.forgetCount();
    if (s.uncommitted?.has(port)) this.afterCommit = true;
    else this.confirm(this.forgets);
  }

  /** The call succeeded. */
  succeeded(): void {
    if (this.afterCommit) this.confirm(this.forgets);
  }
}

export class PortHardware {
  /** port id → the configuration its switch has, while the record of it is being written */
  private readonly unrecorded = new Map<string, Unrecorded>();
  /** ports whose record is being written */
  private readonly writing = new Set<string>();
  /** ports with a change under way (apply, set-back included): how many */
  private readonly changing = new Map<string, number>();
  /** port id → the last of its doubt records (marks and clears) in the order they were made */
  private readonly doubtWrites = new Map<string, Promise<void>>();
  /** port id → how many doubts this process has marked on it (a read-back's clear needs none since it began) */
  private readonly doubtMarks = new Map<string, number>();
  /** port id → how many force-detaches this process has made on it (a clear confirmed before one is stale) */
  private readonly forgets = new Map<string, number>();
  /** ports in doubt set back again with backoff by this process */
  private readonly retrying = new Set<string>();
  /** ends the retries' pauses at close */
  private readonly closed = new AbortController();

  private readonly policy: InactivePorts;

  constructor(private readonly deps: PortHardwareDeps) {
    this.policy = deps.inactivePorts ?? 'shutdown';
  }

  /** The configuration the service holds for the port: its record, or a newer change not yet written. */
  current(port: PortState): PortConfig {
    const held = this.unrecorded.get(portId(port.switch, port.name));
    return held && sameWire(held.wire, port.wire) ? held.config : port.config;
  }

  /**
   * The configuration held for the port now, in a switch turn: a set-back or a repair queued
   * earlier must not put back a VLAN that a force-detach has since taken off the record
   * (`port.forget`, which says nothing to the switch).
   */
  private heldNow(id: string, queued: PortConfig): PortConfig {
    const now = this.deps.committed?.(id);
    return now ? this.current(now) : queued;
  }

  /** Is `config`, which a switch turn just set or read back, still what the service holds (no force-detach meanwhile)? */
  private stillHeld(id: string, config: PortConfig): boolean {
    return sameConfig(config, this.heldNow(id, config));
  }

  /**
   * Carry out `change` on the port: null when done, else why it failed. `resumed`: handed on
   * again at a start, so an earlier process may have carried it out already.
   */
  async apply(port: PortState, change: PortChange, opts: { resumed?: boolean } = {}): Promise<string | null> {
    // Marked before the change is queued (in this turn), cleared once its outcome is held.
    const id = portId(port.switch, port.name);
    if (port.wire) operationTrace.mark(port.wire.node, 'portActor');
    this.mark(id);
    try {
      return await this.applyNow(port, change, !!opts.resumed);
    } finally {
      this.unmark(id);
    }
  }

  private mark(id: string): void {
    this.changing.set(id, (this.changing.get(id) ?? 0) + 1);
  }

  private unmark(id: string): void {
    const left = this.changing.get(id)! - 1;
    if (left) this.changing.set(id, left);
    else this.changing.delete(id);
  }

  /**
   * The drift audit of one port (see the header): read it back and compare it with the
   * configuration held; with `repair`, set a drifted port to it, and read it back again.
   */
  async check(port: PortState, opts: { repair: boolean; batch?: string; settle?: boolean }): Promise<PortCheck> {
    const id = portId(port.switch, port.name);
    let config = this.current(port);
    // The state the policy wants; once the session shows a driver that cannot set it, none.
    const wanted = (c: PortConfig): PortExpected => {
      const up = wantedState(c, this.policy);
      return up === undefined ? c : { ...c, enabled: up };
    };
    let expected = wanted(config);
    // A port in doubt, or owing a set-back: a switch turn that shows it as held confirms it.
    const unsettled = !!port.doubt || !!port.setBackOwed;
    // A set-back of a port in doubt goes before an operation pending (queued after it, it starts
    // from what the set-back leaves), never beside a change under way here.
    if (this.changing.has(id) || (!opts.settle && port.wire && this.deps.operationPending(port.wire))) {
      return { status: 'pending', expected, actual: null };
    }
    const sw = this.deps.switchInfo(port.switch);
    if (!sw) return { status: opts.repair ? 'failed' : 'unreadable', expected, actual: null, error: `switch ${port.switch} no longer exists` };
    let actual: PortFound | null = null;
    let repaired = false;
    // The port's doubts marked when the read began: a change that failed after it (a read answered
    // past its deadline, when the switch went on to later calls) leaves a doubt the read cannot end.
    let marks = 0;
    const confirmed = this.confirmation(id, () => marks);
    const work: PortWork = async (s) => {
      marks = this.doubtMarks.get(id) ?? 0;
      config = this.heldNow(id, config);
      expected = s.setEnabled ? wanted(config) : config;
      actual = found(await s.getPortVlans(port.name));
      // Its VLANs read back as held, in this switch turn: a port in doubt is no longer (its
      // administrative state is the policy's, not a leak).
      if (unsettled && carriesExactly(actual, config) && this.stillHeld(id, config)) confirmed.now(s, port.name);
      if (!opts.repair || matches(actual, expected)) return;
      await converge(s, port.name, actual, expected, this.policy);
      let after = found(await s.getPortVlans(port.name));
      if (!matches(after, expected)) {
        // The fewest changes did not do it (a switch with ideas of its own): start from nothing.
        await setConfig(s, port.name, config, this.policy);
        after = found(await s.getPortVlans(port.name));
        if (!matches(after, expected)) throw new SwitchError(`after re-applying, the switch has ${describe(after)}`);
      }
      repaired = true;
      if (unsettled && !carriesExactly(actual, config) && this.stillHeld(id, config)) confirmed.now(s, port.name);
    };
    try {
      await this.deps.sessions.submit(sw, work, { batch: opts.batch, what: opts.repair ? 'a port repair' : 'a port read-back' });
      confirmed.succeeded();
    } catch (err) {
      return { status: opts.repair ? 'failed' : 'unreadable', expected, actual, error: (err as Error).message };
    }
    const status = repaired ? 'repaired' : matches(actual!, expected) ? 'in_sync' : 'drifted';
    return { status, expected, actual };
  }

  /**
   * Set a port in doubt (or owing a set-back) back to the configuration held (a drift repair that
   * does not wait for its nic's pending operation, which is queued after it): null once the port
   * carries it and the doubt is cleared (written in order after the mark), else why not.
   */
  async settle(port: PortState): Promise<string | null> {
    if (!port.doubt && !port.setBackOwed) return null;
    const id = portId(port.switch, port.name);
    const checked = await this.check(port, { repair: true, settle: true });
    if (checked.status === 'pending') return 'a change of the port is under way';
    await this.doubtWrites.get(id);
    return this.deps.owesSetBack(id) ? checked.error ?? `the port is ${checked.status}` : null;
  }

  /**
   * After a change that failed (or, resumed, may have reached the port before): record that the
   * port may carry `vlans` beyond its record, retried until written (or the service stops). A
   * clear written later (a confirmed set-back) is queued behind it.
   */
  private inDoubt(id: string, vlans: number[]): Promise<void> {
    this.doubtMarks.set(id, (this.doubtMarks.get(id) ?? 0) + 1);
    return this.inOrder(id, async () => {
      for (let attempt = 0; !this.deps.stopping(); ) {
        try {
          await this.deps.doubt(id, vlans);
          void this.retry(id);
          return;
        } catch (err) {
          if (err instanceof HiltError && err.type === 'NotFoundError') return;
          await sleep(backoff(attempt++, 50, 5_000));
        }
      }
    });
  }

  /**
   * The switch just showed (in its turn) that the port carries what the service holds: clear its
   * doubt, after every doubt record made before. Best effort: a port left in doubt is set back
   * again (see retry). `marks`: the doubts marked when a read-back began; not cleared if one came since.
   */
  private confirm(id: string, forgets: number, marks?: number): void {
    void this.inOrder(id, async () => {
      if (marks !== undefined && (this.doubtMarks.get(id) ?? 0) !== marks) return;
      await this.deps.settled(id, forgets).catch(() => undefined);
    });
  }

  /** A switch call's confirmation of the port (see confirm). */
  private confirmation(id: string, marks?: () => number): Confirmation {
    return new Confirmation((forgets) => this.confirm(id, forgets, marks?.()), () => this.forgetCount(id));
  }

  /** How many force-detaches this process has made on the port (`port.settled` drops a clear confirmed before the last). */
  forgetCount(id: string): number {
    return this.forgets.get(id) ?? 0;
  }

  /**
   * A force-detach takes a VLAN off the port's record (in the port actor's turn) without telling
   * the switch: a clear confirmed before it, and a read-back begun before it, are stale.
   */
  forgetting(id: string): void {
    this.forgets.set(id, this.forgetCount(id) + 1);
    this.doubtMarks.set(id, (this.doubtMarks.get(id) ?? 0) + 1);
  }

  /**
   * After a force-detach put the port in doubt: queue its set-back now (on a live switch it
   * removes the VLAN, and shuts a port left with nothing), then again with backoff while the
   * doubt lasts (a switch that is gone for good: until an admin clears it).
   */
  setBackSoon(id: string): void {
    void this.deps.settle(id).catch(() => undefined).finally(() => void this.retry(id));
  }

  private inOrder(id: string, write: () => Promise<void>): Promise<void> {
    const next = (this.doubtWrites.get(id) ?? Promise.resolve()).then(write);
    this.doubtWrites.set(id, next);
    void next.finally(() => {
      if (this.doubtWrites.get(id) === next) this.doubtWrites.delete(id);
    });
    return next;
  }

  /**
   * While the port is in doubt, or owes a set-back (its doubt cleared by hand), set it back again
   * with backoff (doubling from `settleRetryMs` to 5 minutes): its set-back may have failed, or
   * the switch may have been unreachable at the start. Ends once the switch confirmed the port (a
   * set-back, a re-apply or a drift repair), or the service stops. One loop per port.
   */
  async retry(id: string): Promise<void> {
    if (this.retrying.has(id)) return;
    this.retrying.add(id);
    try {
      for (let attempt = 0; ; ) {
        await sleep(backoff(attempt, this.deps.settleRetryMs ?? 1_000, 300_000), this.closed.signal);
        if (this.deps.stopping() || this.closed.signal.aborted || !this.deps.owesSetBack(id)) return;
        // A set-back (or another change) under way: its outcome first, without a longer pause.
        if (this.changing.has(id)) continue;
        attempt++;
        await this.deps.settle(id).catch(() => undefined);
      }
    } finally {
      this.retrying.delete(id);
    }
  }

  /** The service stops: no further set-back of a port in doubt (the next start sets it back). */
  close(): void {
    this.closed.abort();
  }

  private async applyNow(port: PortState, change: PortChange, resumed: boolean): Promise<string | null> {
    const sw = this.deps.switchInfo(port.switch);
    if (!sw) return `switch ${port.switch} no longer exists`;
    const current = this.current(port);
    let deadline: number | undefined;
    const node = port.wire?.node ?? '';
    const id = portId(port.switch, port.name);
    const steps = work(change, port.name, current, this.policy);
    // A revert or re-apply sets the whole port: once done, in its switch turn, a port in doubt is no longer.
    const confirms = (change.kind === 'revert' || change.kind === 'reapply') && (!!port.doubt || !!port.setBackOwed || this.doubtWrites.has(id));
    const confirmed = this.confirmation(id);
    try {
      await this.deps.sessions.submit(sw, confirms ? async (s) => { await steps(s); confirmed.now(s, port.name); } : steps, {
        onStart: (d) => {
          deadline = d;
          operationTrace.mark(node, 'switchTurn');
        },
      });
      confirmed.succeeded();
      operationTrace.mark(node, 'applied');
    } catch (err) {
      // Nothing sent by this call; but a resumed operation may have reached the port before the
      // last process stopped: it is set back like any other.
      if (err instanceof SwitchError && err.nothingSent && !resumed) return err.message;
      const { said, done } = await this.setBack(port, sw, current, deadline ?? Date.now(), resumed);
      // Unless the set-back is confirmed by now, the port is in doubt: recorded before the
      // outcome is (the runner records it once this answers), so that a stop before the
      // set-back ran leaves it in doubt, which the next start sets back. A set-back confirmed
      // later clears it (its clear is written after this record).
      if (!done) await this.inDoubt(id, beyond(current, configAfter(current, change)));
      return `${(err as Error).message}; ${said}`;
    }
    const next = configAfter(current, change);
    if (!sameConfig(current, next)) this.hold(port, next);
    return null;
  }

  /**
   * Set the port back to `config` after a failed change (see the header): queued now, its
   * outcome in words if it ends by `deadline`, else that it is under way.
   */
  private async setBack(port: PortState, sw: SwitchInfo, config: PortConfig, deadline: number, readFirst: boolean): Promise<{ said: string; done: boolean }> {
    const id = portId(port.switch, port.name);
    this.mark(id);
    const reapply = `POST /admin/node/${port.wire?.node}/nic/${port.wire?.nic}/reapply`;
    const confirmed = this.confirmation(id);
    const setBack: PortWork = async (s) => {
      const target = this.heldNow(id, config);
      // A resumed operation's port: whether an earlier process changed it is read first (a
      // switch that refuses every change may still be read, and need not be changed).
      if (!readFirst || !carriesExactly(found(await s.getPortVlans(port.name)), target)) await setConfig(s, port.name, target, this.policy);
      // In this switch turn (or at its commit): after any doubt recorded for an earlier failure.
      if (this.stillHeld(id, target)) confirmed.now(s, port.name);
    };
    const outcome = this.deps.sessions.submit(sw, setBack, { what: `setting port ${port.name} back` }).then(
      () => {
        confirmed.succeeded();
        return { said: 'the port was set back to the configuration the service holds', done: true };
      },
      (e: Error) => ({ said: `setting the port back failed too (${e.message}); an admin can re-apply it (${reapply})`, done: false }),
    ).finally(() => this.unmark(id));
    const running = `the port is being set back to the configuration the service holds (until it is, the port is in doubt, and is set back again if that fails; an admin can re-apply it: ${reapply})`;
    return within(outcome, deadline - Date.now(), { said: running, done: false });
  }

  /**
   * The port actor records `config` itself now (a force-detach): a change not yet written is
   * replaced by it, so the writer never puts back what was just taken away.
   */
  supersede(port: PortState, config: PortConfig): void {
    const id = portId(port.switch, port.name);
    const held = this.unrecorded.get(id);
    if (held && sameWire(held.wire, port.wire)) this.unrecorded.set(id, { config, wire: port.wire });
  }

  /** Hold the port's new configuration and have it written (see the header). */
  private hold(port: PortState, config: PortConfig): void {
    const id = portId(port.switch, port.name);
    this.unrecorded.set(id, { config, wire: port.wire });
    if (!this.writing.has(id)) void this.write(id);
  }

  /** One writer per port: each attempt writes the newest configuration held, until none is left. */
  private async write(id: string): Promise<void> {
    this.writing.add(id);
    try {
      for (let attempt = 0; ; ) {
        const held = this.unrecorded.get(id);
        if (!held || this.deps.stopping()) return;
        try {
          await this.deps.record(id, held.config, held.wire);
          if (this.unrecorded.get(id) === held) this.unrecorded.delete(id);
          attempt = 0;
        } catch (err) {
          // A port deleted meanwhile has nothing left to record.
          if (err instanceof HiltError && err.type === 'NotFoundError') {
            this.unrecorded.delete(id);
            return;
          }
          await sleep(backoff(attempt++, 50, 5_000));
        }
      }
    } finally {
      this.writing.delete(id);
    }
  }
}
