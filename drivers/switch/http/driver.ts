/**
 * The machinery that runs a REST vendor's table (Brocade VDX, Dell OS9) over one HTTP session
 * (session.ts): every operation of the driver contract, written once, as drivers/switch/ssh/ does
 * for the CLIs. A vendor file is its table of requests and parsers plus its registry entry.
 *
 * - `open` sends the table's probe (a cheap authenticated GET): a switch that is unreachable or
 *   refuses the credentials fails at the login, having been sent nothing.
 * - Each change reads the port first (once per session: later changes start from the reading of
 *   the last one), sends the table's requests, then reads the port back and compares it with what
 *   was asked; a mismatch fails the operation (the service then sets the port back). A port not in
 *   the mode the table changes (not a trunk, a trunk of every VLAN) is reset first; one in that
 *   mode with something else the table reads as `other` is only reset, never changed one VLAN at
 *   a time (the reset would drop the service's other VLANs on it).
 * - Every answer outside 2xx (but those a request tolerates, e.g. a 404 for deleting what is gone)
 *   fails the call with the switch's own message; 401/403 says the credentials were refused.
 * - The running configuration is saved when the session closes after changes, where the table
 *   has a save request (HILT_SWITCH_SAVE).
 */
import type { PortVlans, PortWiring, SessionContext, SwitchDriver, SwitchInfo, SwitchLog, SwitchSession } from '../types';
import { SwitchError } from '../types';
import { formatVlanList } from '../vlans';
import { HttpReply, HttpRequest, HttpSession } from './session';
import { restTarget } from './fields';
import { parseXml, XmlError, XmlNode } from './xml';
import { opText, PortOp, PortOpSession } from '../ops';

/** A port as a REST table reads it. */
export interface RestReading {
  /** in the mode the table changes (Brocade: a trunk switchport; OS9: a hybrid switchport) */
  ready: boolean;
  /** the untagged VLAN, or null */
  native: number | null;
  /** the tagged VLANs, ascending; `all` for a trunk that carries every VLAN */
  tagged: number[] | 'all';
  /** administratively up (no shutdown); undefined when the reading left it out (a VLAN change's) */
  enabled?: boolean;
  /** what else the port has, in the switch's terms (the service never sets it) */
  other: string[];
}

/** A request of a table: an HTTP request, and the statuses besides 2xx that mean "already so". */
export interface TableRequest extends HttpRequest {
  tolerate?: number[];
}

/** An answer as tables see it: its XML parsed when it has a body. */
export interface TableReply extends HttpReply {
  xml?: XmlNode;
}

export interface TableContext {
  /** the registration's `interface_type` (e.g. `TenGigabitEthernet`) */
  interfaceType: string;
}

/** The reads of a session, for tables whose wiring needs several requests (a paged table). */
export type Send = (req: TableRequest) => Promise<TableReply>;

export interface RestTable<R extends RestReading = RestReading> {
  /** the family in words, for messages */
  readonly family: string;
  /** the media type of bodies and answers */
  readonly mediaType: string;
  /** a cheap authenticated read: proves the switch answers and takes the credentials */
  readonly probe: TableRequest;
  /**
   * The requests that read one port, in order; `adminState` false: the reading of a VLAN change,
   * which may leave the administrative state out where that costs a request of its own.
   */
  read(port: string, ctx: TableContext, adminState: boolean): TableRequest[];
  /** their answers → the port's reading; throws (SwitchError) on answers it does not understand */
  parse(replies: TableReply[], port: string, ctx: TableContext): R;
  /** into the mode the table changes, carrying no VLAN (port_revert, and the first change of a port not so yet) */
  reset(port: string, before: R, ctx: TableContext): TableRequest[];
  /** untag `vlan`; `old` is the untagged VLAN it replaces */
  setNative(port: string, vlan: number, old: number | null, ctx: TableContext): TableRequest[];
  removeNative(port: string, old: number, ctx: TableContext): TableRequest[];
  addTagged(port: string, vlan: number, ctx: TableContext): TableRequest[];
  removeTagged(port: string, vlan: number, ctx: TableContext): TableRequest[];
  /** `no shutdown` / `shutdown`, leaving everything else of the port as `before` read it */
  setEnabled(port: string, enabled: boolean, before: R, ctx: TableContext): TableRequest[];
  /** the switch's own message in an error answer, if it has one */
  errorText(reply: TableReply): string | undefined;
  /** a change answered 2xx that the switch refused all the same (a CLI's `% Error` line), if so */
  refusal?(reply: TableReply): string | undefined;
  /** the learned MACs and LLDP neighbours of `ports` (and of other ports the switch learned MACs on) */
  wiring(ports: string[], send: Send, ctx: TableContext): Promise<Map<string, PortWiring>>;
  /** saving the running configuration (none: the switch keeps it by itself) */
  readonly save?: TableRequest;
}

export interface RestDriverOptions {
  /** bound on each request (the call's deadline usually comes first) */
  requestTimeoutMs: number;
  /** save the running configuration at the end of each session that changed something */
  save: boolean;
}



/**
 * The statuses of a switch refusing its LLDP request (LLDP not enabled, the operation unknown):
 * the wiring check then goes on with the MAC table alone, as for the SSH families. A refused
 * login (401/403) is never among them (RestTableSession.send raises it first), nor a switch's
 * own failure (500, 503: busy, failing), which would hide the neighbours that contradict a wire.
 */
export const LLDP_REFUSED = [400, 404, 405, 501];

/** Said of a port that carries every VLAN (never set by the service). */
export const EVERY_VLAN = 'trunk allows every VLAN';

/** A reading in words: `native 1001, tagged 1002-1003`. */
export function describe(r: RestReading): string {
  const vlans = `native ${r.native ?? 'none'}, tagged ${r.tagged === 'all' ? 'ALL VLANs' : formatVlanList(r.tagged)}`;
  return `${r.ready ? '' : 'not in the mode hilt sets, '}${vlans}${r.other.length ? `, ${r.other.join(', ')}` : ''}`;
}

const clean = (r: RestReading) => r.ready && r.tagged !== 'all' && r.other.length === 0;

/** What a change must leave, from a clean port's VLANs. */
interface Vlans { native: number | null; tagged: number[] }

/** The requests of `op` on a port read as `before`, and the VLANs they must leave; null when the port is already so. */
export function planChange<R extends RestReading>(table: RestTable<R>, ctx: TableContext, port: string, op: PortOp, before: R):
  { requests: TableRequest[]; expected: Vlans } | null {
  const isClean = clean(before);
  const prefix = isClean ? [] : table.reset(port, before, ctx);
  const base: Vlans = isClean ? { native: before.native, tagged: before.tagged as number[] } : { native: null, tagged: [] };
  const sorted = (xs: number[]) => [...new Set(xs)].sort((a, b) => a - b);
  let step: { requests: TableRequest[]; expected: Vlans } | null;
  switch (op.kind) {
    case 'setNative':
      step = base.native === op.vlan ? null
        : { requests: table.setNative(port, op.vlan, base.native, ctx), expected: { native: op.vlan, tagged: base.tagged.filter((v) => v !== op.vlan) } };
      break;
    case 'removeNative':
      step = base.native === null ? null : { requests: table.removeNative(port, base.native, ctx), expected: { ...base, native: null } };
      break;
    case 'addTagged':
      step = base.tagged.includes(op.vlan) ? null
        : { requests: table.addTagged(port, op.vlan, ctx), expected: { ...base, tagged: sorted([...base.tagged, op.vlan]) } };
      break;
    case 'removeTagged':
      step = !base.tagged.includes(op.vlan) ? null
        : { requests: table.removeTagged(port, op.vlan, ctx), expected: { ...base, tagged: base.tagged.filter((v) => v !== op.vlan) } };
      break;
    case 'reset':
      step = isClean && (base.native !== null || base.tagged.length)
        ? { requests: table.reset(port, before, ctx), expected: { native: null, tagged: [] } } : null;
      break;
  }
  if (isClean) return step;
  return { requests: [...prefix, ...(step?.requests ?? [])], expected: step?.expected ?? base };
}

export class RestSwitchDriver<R extends RestReading = RestReading> implements SwitchDriver {
  constructor(readonly table: RestTable<R>, readonly opts: RestDriverOptions) {}

  async open(sw: SwitchInfo, signal: AbortSignal, ctx: SessionContext = {}): Promise<SwitchSession> {
    const http = new HttpSession(restTarget(sw.name, sw.fields), { requestTimeoutMs: this.opts.requestTimeoutMs, mediaType: this.table.mediaType, log: ctx.log });
    const session = new RestTableSession(this.table, http, { interfaceType: String(sw.fields.interface_type) }, this.opts.save, ctx.log);
    const onAbort = () => http.destroy();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await session.send(this.table.probe, 'logging in');
      return session;
    } catch (err) {
      http.destroy();
      throw err;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}

/** One session with a switch: the contract's operations over the table. */
export class RestTableSession<R extends RestReading = RestReading> extends PortOpSession {
  /** each port's reading, as the last read or verified change of this session left it */
  private readonly readings = new Map<string, R>();
  private changed = false;
  private inCall = false;
  private closing?: Promise<void>;

  constructor(readonly table: RestTable<R>, readonly http: HttpSession, readonly ctx: TableContext, readonly save: boolean, readonly log?: SwitchLog) {
    super();
  }

  get changesSent(): number {
    return this.http.changesSent;
  }

  getPortVlans(port: string): Promise<PortVlans> {
    return this.call(async () => {
      const r = await this.read(port, true);
      const other = [...(r.ready ? [] : ['not in the mode hilt sets']), ...(r.tagged === 'all' ? [EVERY_VLAN] : []), ...r.other];
      return { native: r.native, tagged: r.tagged === 'all' ? [] : r.tagged, enabled: r.enabled, ...(other.length ? { other } : {}) };
    });
  }

  setEnabled(port: string, enabled: boolean): Promise<void> {
    return this.call(async () => {
      const cached = this.readings.get(port);
      const before = cached?.enabled !== undefined ? cached : await this.read(port, true);
      if (before.enabled === enabled) return;
      await this.sendAll(this.table.setEnabled(port, enabled, before, this.ctx), port);
      this.changed = true;
      this.readings.delete(port);
      const after = await this.read(port, true);
      if (after.enabled !== enabled) {
        throw this.http.error(`port ${port} does not read back as asked after "${enabled ? 'no shutdown' : 'shutdown'}": it is administratively ${after.enabled ? 'up' : 'down'}`);
      }
    });
  }

  readWiring(ports: string[]): Promise<Map<string, PortWiring>> {
    return this.call(() => this.table.wiring(ports, (req) => this.send(req, 'reading the wiring tables'), this.ctx));
  }

  /** One call at a time; a closed session refuses. */
  private async call<T>(f: () => Promise<T>): Promise<T> {
    if (this.closing || !this.http.alive) throw this.http.error('session closed');
    this.inCall = true;
    try {
      return await f();
    } finally {
      this.inCall = false;
    }
  }

  /** Read the port (once per session), send the plan's requests, then read it back and compare. */
  protected change(port: string, op: PortOp): Promise<void> {
    return this.call(async () => {
      const before = this.readings.get(port) ?? (await this.read(port, false));
      // A port in the mode the table sets but with settings the service never sets (a native
      // VLAN sent tagged, an OS9 membership of another kind): the reset that would precede a
      // change of one VLAN also takes off the VLANs the service holds on it, which it would go
      // on holding. Only a reset (port_revert, a set-back, a drift repair) takes such a port.
      if (op.kind !== 'reset' && before.ready && before.other.length) {
        throw this.http.error(`port ${port} has ${before.other.join(', ')}, which the service never sets: "${opText(op)}" not sent `
          + '(a port_revert or a drift repair resets the port); nothing was sent');
      }
      const plan = planChange(this.table, this.ctx, port, op, before);
      if (!plan) return;
      this.readings.delete(port);
      await this.sendAll(plan.requests, port);
      this.changed = true;
      const after = await this.read(port, false);
      const { expected } = plan;
      const same = clean(after) && after.native === expected.native && (after.tagged as number[]).join(',') === expected.tagged.join(',');
      if (!same) {
        throw this.http.error(`port ${port} does not read back as asked after "${opText(op)}": expected native ${expected.native ?? 'none'}, `
          + `tagged ${formatVlanList(expected.tagged)}; the switch shows ${describe(after)}`);
      }
    });
  }

  /** The port's reading, fresh from the switch (with its administrative state, or as a VLAN change needs it). */
  private async read(port: string, adminState: boolean): Promise<R> {
    const replies: TableReply[] = [];
    for (const req of this.table.read(port, this.ctx, adminState)) replies.push(await this.send(req, `reading port ${port}`));
    let reading: R;
    try {
      reading = this.table.parse(replies, port, this.ctx);
    } catch (err) {
      throw this.http.error(`cannot read port ${port}: ${err instanceof SwitchError || err instanceof XmlError ? err.message : String(err)}`);
    }
    this.readings.set(port, reading);
    return reading;
  }

  private async sendAll(requests: TableRequest[], port: string): Promise<void> {
    for (const req of requests) await this.send(req, `changing port ${port}`);
  }

  /** One request of the table: its answer, or SwitchError with the switch's own words. */
  async send(req: TableRequest, what: string): Promise<TableReply> {
    const reply: TableReply = await this.http.send(req);
    const tolerated = req.tolerate?.includes(reply.status) ?? false;
    const ok = reply.status >= 200 && reply.status < 300;
    if (reply.text.trim() && (ok || !tolerated)) {
      try {
        reply.xml = parseXml(reply.text);
      } catch (err) {
        if (ok) throw this.http.error(`${what}: ${req.method} ${req.path} answered HTTP ${reply.status} with ${(err as Error).message}: ${this.http.quoteSwitch(reply.text)}`);
      }
    }
    if (reply.status === 401 || reply.status === 403) {
      throw this.http.error(`${what}: the switch refused the credentials of ${this.http.target.username} (HTTP ${reply.status})${this.said(reply)}`);
    }
    if (!ok && !tolerated) throw this.http.error(`${what}: ${req.method} ${req.path} refused (HTTP ${reply.status})${this.said(reply)}`);
    const refused = ok && req.method !== 'GET' && !req.read ? this.table.refusal?.(reply) : undefined;
    if (refused) throw this.http.error(`${what}: ${req.method} ${req.path} refused: ${this.http.quoteSwitch(refused)}`);
    return reply;
  }

  private said(reply: TableReply): string {
    const text = this.table.errorText(reply) ?? reply.text;
    return text.trim() ? `: ${this.http.quoteSwitch(text)}` : '';
  }

  close(signal?: AbortSignal): Promise<void> {
    return (this.closing ??= this.logout(signal));
  }

  private async logout(signal?: AbortSignal): Promise<void> {
    // The service gave up on a call still running: cut it now.
    if (this.inCall || this.http.inFlight) {
      this.http.destroy();
      return;
    }
    const onAbort = () => this.http.destroy();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      if (this.changed && this.save && this.table.save && this.http.alive) {
        try {
          await this.send(this.table.save, 'saving the running configuration');
          this.log?.debug({ switch: this.http.target.name }, 'saved the running configuration');
        } catch (err) {
          this.log?.warn({ switch: this.http.target.name }, this.http.mask(`could not save the running configuration of switch ${this.http.target.name}: ${(err as Error).message}`));
        }
      }
      await this.http.close();
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
