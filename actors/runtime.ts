/**
 * The actor runtime: one nact persistent actor per entity key (`<kind>:<id>`), spawned when a
 * message first needs it and stopped after it has been idle (DESIGN.md rules 2, 5, 6).
 *
 * Every entity actor runs the same loop over its kind's Behavior:
 *   decide(state, command)  -> events (or a HiltError)        may ask actors lower in the ask order
 *   persist(events)         -> durable LMDB commit
 *   apply(state, event)     -> next state (pure; also replays during recovery)
 *   onCommit(prev, next)    -> read models updated
 *   reply                   -> only now does the caller (and the HTTP client) hear "ok"
 */
import { start, spawnPersistent, query, dispatch, stop, configurePersistence } from 'nact';
import { HiltError } from '../src/errors';
import { PersistenceEngine } from './persistence/engine';

export interface Command { type: string; /** acting user, recorded in the journal */ by: string }
export interface Event { type: string }
/** What the runtime adds to every persisted event. */
export interface Stamp { by?: string; at?: number }

export interface Decision<E> {
  events: E[];
  value?: unknown;
  /** Runs once the events are committed or have failed (e.g. to drop a reservation). */
  settle?: () => void;
  /** Side effect after a successful commit (never during recovery): e.g. hand work to hardware. */
  afterCommit?: () => void;
}

export interface Behavior<S, C extends Command, E extends Event> {
  readonly kind: string;
  /** Pure: the only place state changes. Never mutate `state`: read models hold it. */
  apply(state: S | null, event: E & Stamp, id: string): S | null;
  /** Validate a command against the current state; throw HiltError to refuse. */
  decide(state: S | null, cmd: C, id: string): Decision<E> | Promise<Decision<E>>;
}

type Reply = { ok: true; value: unknown } | { ok: false; error: HiltError };
type Envelope<C> = C & { replyTo: unknown };

export interface RuntimeOptions {
  /** An entity actor idle this long is stopped (it wakes again from LMDB on the next message). */
  idleMs?: number;
  /** Bound on how long a caller waits for an actor's answer. */
  askTimeoutMs?: number;
  /**
   * Snapshot an entity after this many persisted events. Every snapshot is one more LMDB
   * commit in the write pipeline; a wake or a start replays at most this many events.
   */
  snapshotEvery?: number;
}

interface LiveActor { ref: any; inflight: number; lastUsed: number }

export class ActorRuntime {
  readonly system: any;
  readonly idleMs: number;
  readonly askTimeoutMs: number;
  readonly snapshotEvery: number;
  private readonly kinds = new Map<string, EntityRegistry<any, any, any>>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(readonly engine: PersistenceEngine, opts: RuntimeOptions = {}) {
    this.system = start(configurePersistence(engine as any));
    this.idleMs = opts.idleMs ?? 60_000;
    this.askTimeoutMs = opts.askTimeoutMs ?? 30_000;
    this.snapshotEvery = opts.snapshotEvery ?? 16;
    this.sweeper = setInterval(() => this.sweep(), Math.max(50, Math.min(this.idleMs, 10_000))).unref();
  }

  register<S, C extends Command, E extends Event>(
    behavior: Behavior<S, C, E>,
    onCommit: (id: string, prev: S | null, next: S | null) => void,
  ): EntityRegistry<S, C, E> {
    const reg = new EntityRegistry(this, behavior, onCommit);
    this.kinds.set(behavior.kind, reg);
    return reg;
  }

  registry(kind: string): EntityRegistry<any, any, any> | undefined {
    return this.kinds.get(kind);
  }

  kindNames(): string[] {
    return [...this.kinds.keys()];
  }

  private sweep(): void {
    const now = Date.now();
    for (const reg of this.kinds.values()) reg.sleepIdle(now, this.idleMs);
  }

  /** Wait until no actor has a message in flight, then stop them all. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const deadline = Date.now() + this.askTimeoutMs;
    while ([...this.kinds.values()].some((r) => r.busy()) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    stop(this.system);
  }
}

export class EntityRegistry<S, C extends Command, E extends Event> {
  private readonly live = new Map<string, LiveActor>();
  private counter = 0;

  constructor(
    private readonly rt: ActorRuntime,
    readonly behavior: Behavior<S, C, E>,
    private readonly onCommit: (id: string, prev: S | null, next: S | null) => void,
  ) {}

  get kind(): string {
    return this.behavior.kind;
  }

  key(id: string): string {
    return `${this.behavior.kind}:${id}`;
  }

  /** Send a command to the entity's actor and wait for its decision (after any commit). */
  async ask<T = void>(id: string, cmd: C): Promise<T> {
    const actor = this.wake(id);
    actor.inflight++;
    let reply: Reply;
    try {
      reply = await query(actor.ref, (replyTo: unknown) => ({ ...cmd, replyTo }), this.rt.askTimeoutMs) as Reply;
    } catch {
      throw new HiltError('ServiceUnavailableError', `${this.behavior.kind} ${id} did not answer in time; the change may not have been applied`);
    } finally {
      actor.inflight--;
      actor.lastUsed = Date.now();
    }
    if (!reply.ok) throw reply.error;
    return reply.value as T;
  }

  /** Live actors of this kind, with the number of messages queued or being handled. */
  liveActors(): { id: string; mailbox: number }[] {
    return [...this.live.entries()].map(([id, a]) => ({ id, mailbox: a.inflight }));
  }

  isLive(id: string): boolean {
    return this.live.has(id);
  }

  busy(): boolean {
    for (const a of this.live.values()) if (a.inflight > 0) return true;
    return false;
  }

  /** Rebuild one entity's committed state from storage (used at start for read models). */
  async recoverState(id: string): Promise<S | null> {
    const key = this.key(id);
    const snap = await this.rt.engine.latestSnapshot(key);
    let state = (snap?.data ?? null) as S | null;
    for (const ev of this.rt.engine.events(key, snap?.sequenceNumber ?? 0)) {
      state = this.behavior.apply(state, ev.data as E, id);
    }
    return state;
  }

  /** Ids of every entity of this kind that has ever persisted an event. */
  storedIds(): string[] {
    const prefix = `${this.behavior.kind}:`;
    return this.rt.engine.keys(prefix).map((k) => k.slice(prefix.length));
  }

  sleepIdle(now: number, idleMs: number): void {
    for (const [id, a] of this.live) {
      if (a.inflight === 0 && now - a.lastUsed >= idleMs) {
        // Removed from the map in the same turn as the stop: the next ask spawns a fresh actor.
        this.live.delete(id);
        stop(a.ref);
      }
    }
  }

  private wake(id: string): LiveActor {
    let actor = this.live.get(id);
    if (!actor) {
      const ref = spawnPersistent(
        this.rt.system,
        (state: S | null | undefined, msg: unknown, ctx: any) => this.handle(id, state ?? null, msg, ctx),
        this.key(id),
        `${this.behavior.kind}-${++this.counter}`,
        { snapshotEvery: this.rt.snapshotEvery } as any,
      );
      actor = { ref, inflight: 0, lastUsed: Date.now() };
      this.live.set(id, actor);
    }
    return actor;
  }

  private async handle(id: string, state: S | null, msg: unknown, ctx: any): Promise<S | null> {
    if (ctx.recovering) return this.behavior.apply(state, msg as E, id);
    const cmd = msg as Envelope<C>;
    let next = state;
    let reply: Reply;
    let decision: Decision<E> | undefined;
    try {
      decision = await this.behavior.decide(state, cmd, id);
      if (decision.events.length) {
        const at = Date.now();
        const stamped = decision.events.map((e) => ({ ...e, by: cmd.by, at }));
        try {
          await Promise.all(stamped.map((e) => ctx.persist(e)));
        } catch (err) {
          throw new HiltError('ServiceUnavailableError', `storage refused the change: ${(err as Error).message}`);
        }
        for (const e of stamped) next = this.behavior.apply(next, e, id);
        this.onCommit(id, state, next);
      }
      decision.afterCommit?.();
      reply = { ok: true, value: decision.value };
    } catch (err) {
      reply = { ok: false, error: err instanceof HiltError ? err : new HiltError('ServerError', String((err as Error)?.stack ?? err)) };
    } finally {
      decision?.settle?.();
    }
    dispatch(cmd.replyTo as any, reply);
    return next;
  }
}

/** Exhaustiveness check for protocol switches (the TS counterpart of a sealed trait). */
export function assertNever(x: never): never {
  throw new Error(`unexpected message ${JSON.stringify(x)}`);
}
