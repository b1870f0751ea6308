/**
 * The contract every entity actor's behaviour is written against: commands, events, replies
 * typed per command, decisions, handlers, and the asks of the actors below (docs/actors.md).
 * The loop that runs a behaviour is actors/entity.ts; the runtime that hosts every kind is
 * actors/runtime.ts.
 */
import type { HiltError } from './errors';

export interface Command { type: string; /** acting user, recorded in the journal */ by: string }
export interface Event { type: string }

/** What the runtime adds to every persisted event. */
export interface Stamp { by?: string; at?: number; about?: EventAbout }

/**
 * What the event stream needs to know of an event that the event itself does not say, as of its
 * commit (src/events/describe.ts): the projects it concerns (who may see it), and for a network
 * operation its public status. Stored with the event, so that a replay tells what the live
 * stream told.
 */
export interface EventAbout { projects?: string[]; [detail: string]: unknown }

/** Describes an event as it is committed (kind, entity id, the entity's state before it, the event). */
export type Describe = (kind: string, id: string, state: unknown, event: Event & Record<string, unknown>) => EventAbout | undefined;

/** What each command of a protocol answers: command type → reply value. */
export type Replies<C extends Command> = { [K in C['type']]: unknown };

/**
 * What a handler decides for one command: the events to commit, and the answer its protocol's
 * Replies give that command (required unless the reply is void; a promise defers it: the mailbox
 * moves on).
 */
export type Decision<E, V = void> = {
  events: E[];
  /** Runs once the events are committed or have failed (e.g. to drop a reservation). */
  settle?: () => void;
  /** Side effect after a successful commit (never during recovery): e.g. hand work to hardware. */
  afterCommit?: () => void;
} & ([V] extends [void] ? { value?: Promise<void> } : { value: V | Promise<V> });

/** A decision as the runtime handles it, whatever its command. */
export type AnyDecision<E> = { events: E[]; value?: unknown; settle?: () => void; afterCommit?: () => void };

/**
 * One handler per command of the protocol: it validates the command against the actor's state
 * (throw a HiltError to refuse) and decides the events and the answer, typed by the protocol's
 * Replies, so a handler cannot answer its command with the wrong type.
 */
export type Handlers<S, C extends Command, E, R extends Replies<C>> = {
  [K in C['type']]: (state: S | null, cmd: Extract<C, { type: K }>, id: string) => Decision<E, R[K]> | Promise<Decision<E, R[K]>>;
};

export interface Behavior<S, C extends Command, E extends Event, R extends Replies<C>> {
  readonly kind: string;
  /** Pure: the only place state changes. Never mutate `state`: read models hold it. */
  apply(state: S | null, event: E & Stamp, id: string): S | null;
  readonly decide: Handlers<S, C, E, R>;
}

/** A handler of a command that needs the entity to exist: `missing(id)` refuses it otherwise. */
export function existing<S, Cmd, D>(missing: (id: string) => HiltError, handler: (state: S, cmd: Cmd, id: string) => D): (state: S | null, cmd: Cmd, id: string) => D {
  return (state, cmd, id) => {
    if (state === null) throw missing(id);
    return handler(state, cmd, id);
  };
}

/** `existing` for one kind: `live(handler)` wraps each handler of a command on an entity that must exist. */
export function needsEntity<S>(missing: (id: string) => HiltError) {
  return <Cmd, D>(handler: (state: S, cmd: Cmd, id: string) => D) => existing(missing, handler);
}

export interface AskOptions {
  /**
   * Wait without bound. An actor asking an actor below it waits for the answer however long
   * the commit takes: if it gave up, its own mailbox would move on while the change it asked for
   * may still be committed (only the edge, a route, answers 503 after askTimeoutMs).
   */
  unbounded?: boolean;
  /**
   * A deferred answer that waits on hardware (the device queue bounds it): unbounded, and it
   * neither holds the actor awake nor delays a shutdown.
   */
  hardware?: boolean;
  /**
   * Checked when the message's turn comes, before its decide (throws the refusal): what the route
   * authorized may have changed while the message waited (its caller left the project).
   */
  still?: () => void;
}

/** What a behavior may ask of the actors below it: their typed commands, nothing else. */
export interface Asker<C extends Command, R extends Replies<C>> {
  ask<K extends C['type']>(id: string, cmd: Extract<C, { type: K }>, opts?: AskOptions): Promise<R[K]>;
}

/** What an actor gives the actors above it: asks that wait for the answer without bound. */
export function below<C extends Command, R extends Replies<C>>(reg: Asker<C, R>): Asker<C, R> {
  return { ask: (id, cmd, opts) => reg.ask(id, cmd, { unbounded: true, ...opts }) };
}

/** Exhaustiveness check for protocol switches (the TS counterpart of a sealed trait). */
export function assertNever(x: never): never {
  throw new Error(`unexpected message ${JSON.stringify(x)}`);
}
