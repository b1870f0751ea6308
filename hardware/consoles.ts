/**
 * Serial consoles (docs/consoles.md): one console session per node whose console is being
 * recorded, its output appended to the node's log (hardware/console-log.ts) and sent to every
 * viewer of the live console. Like the network operations runner it owns no fact: the node
 * actor owns "node N's console is being recorded" (`NodeState.console`, durable), and this
 * runner follows the committed node states (World.nodeWatchers) outside every mailbox
 * (docs/actors.md, rule 4):
 *
 * - a node that records gets a session: opened in its BMC's turn on the device queue
 *   (PowerControl.openConsole: `sol deactivate`, then `sol activate`), then living outside the
 *   queue; when it drops it is opened again after a backoff (1 s, doubled up to a minute; a
 *   session that lived a minute starts over at 1 s), with a notice in the log and to viewers;
 * - a node that stops recording (DELETE …/console, a release or an assignment, its deletion)
 *   loses its session (its child killed by PID within a bound), its viewers and its log:
 *   `forget(node)`, the seam other code calling for that deletion uses too;
 * - at start, every node that records gets its session again and every other log is deleted;
 *   at stop, every session ends and every viewer is told.
 *
 * Viewers are checked again on every user and node commit, every few seconds, and at the expiry
 * of a viewer's credentials (src/routes/consoles.ts): one who may no longer see the node is
 * disconnected at once.
 */
import { join } from 'node:path';
import type { ReadModel } from '../actors/readmodel';
import type { NodeState } from '../actors/node/protocol';
import type { ConsoleLink } from '../drivers/obm/types';
import type { PowerControl } from './power';
import { ConsoleLogs } from './console-log';
import { backoff, settledWithin, sleep } from '../lib/time';
import { CLOSE_GRACE_MS } from '../drivers/obm/ipmi-sol';
import { HiltError } from '../actors/errors';

/** A watcher of a node's live console (a WebSocket, src/routes/console-stream.ts). */
export interface Viewer {
  /** may it still watch? (its user, membership, session) */
  allowed(): boolean;
  /** may it type now? */
  mayType(): boolean;
  send(chunk: Buffer): void;
  /** bytes sent and not yet taken by the network: a viewer that falls too far behind is dropped */
  backlog(): number;
  close(code: number, reason: string): void;
}

/** How a viewer's connection ends (WebSocket close codes: 4000 + the HTTP status it resembles). */
export const CLOSE = {
  accessLost: { code: 4403, reason: 'you may no longer see this node\'s console' },
  stopped: { code: 4410, reason: 'the node\'s console is no longer recorded' },
  slow: { code: 4429, reason: 'the viewer fell too far behind the console\'s output' },
  full: { code: 4429, reason: 'the node\'s console has its most viewers (HILT_CONSOLE_VIEWERS): try again once one has closed' },
  shutdown: { code: 1001, reason: 'the service is stopping' },
  notActive: { code: 4503, reason: 'this hilt process is no longer the active one: connect again (the active one serves the console)' },
} as const;

/** A viewer further behind the output than this is disconnected (a console prints at most ~11 KiB/s at 115200 baud). */
const MAX_BACKLOG = 4 << 20;

/** How often viewers are checked again without a commit (sessions expire, tokens go). */
const RECHECK_MS = 5000;

export interface ConsoleTelemetry {
  /** a session dropped or could not open, and is opened again */
  consoleRestarted(): void;
}

export interface ConsoleLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface ConsolesOptions {
  rm: ReadModel;
  power: PowerControl;
  /** the service's data folder: logs go in its `consoles/` */
  dataDir: string;
  /** the bound of each node's log (HILT_CONSOLE_LOG_BYTES) */
  logBytes: number;
  /** viewers of one node at once (HILT_CONSOLE_VIEWERS): each new one is sent up to `logBytes` */
  maxViewers?: number;
  telemetry?: ConsoleTelemetry;
  /** first pause before reopening a dropped session (tests make it short) */
  retryMs?: number;
}

const SILENT: ConsoleLog = { info() {}, warn() {} };

/** The recording of a node that records (its log's owner, hardware/console-log.ts): this registration, since then. */
const recordingOf = (n: NodeState) => `${n.incarnation} ${n.console?.since}`;

/** `[hilt] …` on a line of its own: the service's notes in a node's console output. */
const notice = (text: string) => Buffer.from(`\r\n[hilt] ${text}\r\n`);

class NodeConsole {
  link?: ConsoleLink;
  /** viewers; those not yet sent the recent log hold what came meanwhile */
  readonly viewers = new Map<Viewer, Buffer[] | null>();
  readonly stop = new AbortController();
  /** the log could not be written (warned once, until a write succeeds again) */
  logFailing = false;
  /** resolves when the session loop has ended (its child gone) */
  done: Promise<void> = Promise.resolve();
  constructor(readonly node: string, readonly incarnation: string) {}
}

export class Consoles {
  readonly logs: ConsoleLogs;
  log: ConsoleLog = SILENT;
  private readonly sessions = new Map<string, NodeConsole>();
  /** sessions of nodes forgotten whose child has not exited yet */
  private readonly ending = new Map<string, Promise<void>>();
  private readonly retryMs: number;
  private readonly maxViewers: number;
  /** how much a viewer may have waiting: the log it was sent on attaching, and MAX_BACKLOG of output after it */
  private readonly maxBacklog: number;
  private closed = false;
  private closing?: Promise<void>;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly opts: ConsolesOptions) {
    this.logs = new ConsoleLogs(join(opts.dataDir, 'consoles'), opts.logBytes);
    this.retryMs = opts.retryMs ?? 1000;
    this.maxViewers = opts.maxViewers ?? 16;
    this.maxBacklog = opts.logBytes + MAX_BACKLOG;
    this.timer = setInterval(() => this.recheck(), RECHECK_MS).unref();
  }

  /** After a start: every node that records gets its session; every other log goes. */
  start(): void {
    const recording: NodeState[] = [];
    for (const n of this.opts.rm.nodes.values()) if (n.console) recording.push(n);
    const removed = this.logs.sweep(new Map(recording.map((n) => [n.name, recordingOf(n)])));
    if (removed.length) this.log.info({ files: removed.length }, 'deleted the console logs of recordings that ended');
    for (const n of recording) this.ensure(n);
  }

  /** A node commit (World.nodeWatchers). */
  readonly watch = (id: string, prev: NodeState | null, next: NodeState | null): void => {
    if (prev?.console && (!next?.console || next.incarnation !== prev.incarnation)) void this.forget(id);
    if (next?.console) this.ensure(next);
    this.recheck(id);
  };

  /**
   * Ends the console of a node that no longer records: its session (the child killed), its
   * viewers, and its log, deleted. Idempotent. A release or a deletion calls it, after the commit
   * that dropped the recording, so that the next holder of the node never sees this one's
   * console: it resolves once the log is gone (or its deletion failed, warned of) and the
   * session's child has exited; it never rejects.
   */
  async forget(node: string): Promise<void> {
    // A node that records now started a recording after the one to forget: that one is gone already.
    if (this.opts.rm.nodes.get(node)?.console) return;
    const s = this.sessions.get(node);
    this.sessions.delete(node);
    // end() stops the session's output at once (before its first wait), so the removal, queued
    // now, comes after the session's last append and before a new session's log is created.
    if (s) {
      const ending = this.end(s, CLOSE.stopped);
      this.ending.set(node, ending);
      void ending.then(() => {
        if (this.ending.get(node) === ending) this.ending.delete(node);
      });
    }
    // The change is committed: a log that cannot be deleted now (a read-only disk) is warned of,
    // and the node's next recording starts its log afresh (ConsoleLogs.create).
    await this.logs.remove(node).catch((err: Error) => this.log.warn({ node, err: err.message }, 'could not delete a console log'));
    // A second caller (the route after the commit's watcher) waits for the same child to exit.
    await this.ending.get(node);
  }

  /**
   * The node's recorded output (the last HILT_CONSOLE_LOG_BYTES), or null when none is recorded.
   * A log that cannot be read (a failing disk, or another recording's log that could not be
   * deleted) is warned of and refused: 503, the service's fault, never the client's.
   */
  read(node: string): Promise<Buffer | null> {
    return this.logs.read(node).catch((err: Error) => {
      this.log.warn({ node, err: err.message }, 'could not read a console log');
      throw new HiltError('ServiceUnavailableError', `node ${node}'s console log cannot be read now: the service's disk failed (its log says why)`);
    });
  }

  /** Has the node's console as many viewers as it may (HILT_CONSOLE_VIEWERS)? */
  full(node: string): boolean {
    return (this.sessions.get(node)?.viewers.size ?? 0) >= this.maxViewers;
  }

  /** Why a viewer past the cap is refused before its upgrade. */
  tooMany(node: string): string {
    return `node ${node}'s console has ${this.maxViewers} viewers, the most (HILT_CONSOLE_VIEWERS): try again once one has closed`;
  }

  /**
   * Starts sending the node's console to `viewer`: the recent log first, then the live output.
   * `stopped`: the node does not record; `full`: it has its most viewers (nothing is sent).
   */
  attach(node: string, viewer: Viewer): 'attached' | 'stopped' | 'full' {
    const s = this.sessions.get(node);
    if (!s || this.closed) return 'stopped';
    // Counted here, in the same turn as the viewer joins: the route's early look may race others.
    if (s.viewers.size >= this.maxViewers) return 'full';
    // The read is queued behind every append made so far, and what comes after joins the queue
    // of this viewer: nothing is sent twice or missed.
    s.viewers.set(viewer, []);
    // A log that cannot be read: the viewer is told, and gets the live output.
    const recent = this.read(node).catch(() => notice('the recorded log cannot be read now; the live console follows'));
    void recent.then((recent) => {
      const held = s.viewers.get(viewer);
      if (!held) return;
      if (recent?.length) viewer.send(recent);
      for (const c of held) viewer.send(c);
      s.viewers.set(viewer, null);
    });
    return 'attached';
  }

  detach(node: string, viewer: Viewer): void {
    this.sessions.get(node)?.viewers.delete(viewer);
  }

  /**
   * Input a viewer typed, for the node's serial line (dropped while the session reconnects):
   * `denied` when the viewer may not type, `full` when the node has not taken the earlier input.
   */
  input(node: string, viewer: Viewer, bytes: Buffer): 'sent' | 'denied' | 'full' {
    const s = this.sessions.get(node);
    if (!s?.viewers.has(viewer) || !viewer.mayType()) return 'denied';
    return s.link && !s.link.write(bytes) ? 'full' : 'sent';
  }

  /** Disconnects every viewer (of one node, or all) that may no longer watch. */
  recheck(node?: string): void {
    const check = (s: NodeConsole) => {
      for (const v of s.viewers.keys()) {
        if (v.allowed()) continue;
        s.viewers.delete(v);
        v.close(CLOSE.accessLost.code, CLOSE.accessLost.reason);
      }
    };
    if (node !== undefined) {
      const s = this.sessions.get(node);
      if (s) check(s);
    } else {
      for (const s of this.sessions.values()) check(s);
    }
  }

  /** Sessions whose console is open now (metrics). */
  active(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.link) n++;
    return n;
  }

  viewerCount(): number {
    let n = 0;
    for (const s of this.sessions.values()) n += s.viewers.size;
    return n;
  }

  /** The processes that carry the open sessions, by node (operators, tests). */
  processes(): Map<string, number> {
    const out = new Map<string, number>();
    for (const s of this.sessions.values()) if (s.link?.pid !== undefined) out.set(s.node, s.link.pid);
    return out;
  }

  /**
   * The service stops, or this process lost its lease (`why`): every session ends (its child
   * gone), every viewer is told; the logs stay. A second call waits for the first.
   */
  close(why: { code: number; reason: string } = CLOSE.shutdown): Promise<void> {
    this.closing ??= this.shutdown(why);
    return this.closing;
  }

  private async shutdown(why: { code: number; reason: string }): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(all.map((s) => this.end(s, why)));
    await this.logs.close();
  }

  /** The node's session, started unless it runs. */
  private ensure(node: NodeState): void {
    if (this.closed || !this.opts.power.hasConsole(node.obm)) return;
    const have = this.sessions.get(node.name);
    if (have && have.incarnation === node.incarnation) return;
    // (A session of an earlier registration of the name is ended by forget() at its deletion.)
    if (have) void this.end(have, CLOSE.stopped);
    const s = new NodeConsole(node.name, node.incarnation);
    this.sessions.set(node.name, s);
    // The log exists from now on (GET …/console answers 200, empty at first); after an earlier
    // session's forget() in the node's chain.
    void this.logs.create(node.name, recordingOf(node)).catch((err: Error) => this.log.warn({ node: node.name, err: err.message }, 'could not create a console log'));
    s.done = this.run(s);
  }

  private async end(s: NodeConsole, why: { code: number; reason: string }): Promise<void> {
    s.stop.abort();
    s.link?.close();
    for (const v of s.viewers.keys()) v.close(why.code, why.reason);
    s.viewers.clear();
    // The driver kills its child within CLOSE_GRACE_MS of close(); the loop ends with it.
    if (!(await settledWithin(s.done, CLOSE_GRACE_MS + 3000))) this.log.warn({ node: s.node }, 'a console session did not end in time');
  }

  /** Output of the node (or the service's notice): to the log and every viewer. */
  private output(s: NodeConsole, chunk: Buffer): void {
    if (s.stop.signal.aborted) return;
    // A full disk fails every chunk: warned once, not at the rate of the node's output.
    void this.logs.append(s.node, chunk).then(() => {
      s.logFailing = false;
    }, (err: Error) => {
      if (s.logFailing) return;
      s.logFailing = true;
      this.log.warn({ node: s.node, err: err.message }, 'could not write a console log');
    });
    for (const [v, held] of s.viewers) {
      if (held) {
        held.push(chunk);
      } else if (v.backlog() > this.maxBacklog) {
        s.viewers.delete(v);
        v.close(CLOSE.slow.code, CLOSE.slow.reason);
      } else {
        v.send(chunk);
      }
    }
  }

  /** Opens the session and keeps it open until the node stops recording or the service stops. */
  private async run(s: NodeConsole): Promise<void> {
    const { rm, power, telemetry } = this.opts;
    const signal = s.stop.signal;
    let attempt = 0;
    while (!signal.aborted) {
      const node = rm.nodes.get(s.node);
      if (!node || node.incarnation !== s.incarnation || !node.console) return;
      let opened = 0;
      let why: string;
      try {
        let ended!: (reason: string) => void;
        const over = new Promise<string>((r) => (ended = r));
        const link = await power.openConsole(node.obm, { data: (c) => this.output(s, c), ended }, signal);
        if (signal.aborted) {
          link.close();
          await over;
          return;
        }
        s.link = link;
        opened = Date.now();
        this.log.info({ node: s.node, pid: link.pid }, 'console session open');
        why = await over;
        s.link = undefined;
      } catch (err) {
        why = `could not open it: ${(err as Error).message}`;
      }
      if (signal.aborted) return;
      // A session that lived a minute was a healthy one: the next wait starts short again.
      if (opened && Date.now() - opened > 60_000) attempt = 0;
      const wait = backoff(attempt++, this.retryMs, 60_000);
      this.log.warn({ node: s.node, why, retryInMs: wait }, 'the console session ended; opening it again');
      telemetry?.consoleRestarted();
      this.output(s, notice(`the console session ended; reconnecting in ${Math.ceil(wait / 1000)} s`));
      await sleep(wait, signal);
    }
  }
}
