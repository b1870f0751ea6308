/**
 * The one error catalogue: every refusal the service gives, named by HIL's error classes (HIL's
 * clients read the `type`). Actors, routes and the service throw HiltError; the HTTP layer maps
 * each type to a status in one place (src/errors.ts).
 */
export type ErrorType =
  | 'BadArgumentError'
  | 'AuthorizationError'
  /** Authenticated, with the right to read but not to change (an auditor, a project's reader, a read-only token). */
  | 'ForbiddenError'
  | 'NotFoundError'
  | 'DuplicateError'
  | 'AllocationError'
  | 'BlockedError'
  | 'IllegalStateError'
  | 'ProjectMismatchError'
  | 'RequestTooLargeError'
  /** Hardware (a BMC) failed or timed out: not the client's mistake. */
  | 'OBMError'
  /** A headnode VM (QEMU, Open vSwitch) failed or timed out. */
  | 'HeadnodeError'
  /** A switch could not be reached for a call that waits for it (the drift audit); network operations end ERROR instead. */
  | 'SwitchError'
  /** Storage or an actor did not answer in time; the change was not acknowledged. */
  | 'ServiceUnavailableError'
  /** A bug. Logged with its stack; the client gets a generic message. */
  | 'ServerError'
  /** Too many failed logins for one user name (try again after `retryAfter` seconds), or a node's live console has its most viewers. */
  | 'TooManyRequestsError'
  /** An event stream's id the store no longer keeps (or never gave): start again from the oldest kept. */
  | 'GoneError';

export class HiltError extends Error {
  /** seconds after which the client may try again (sent as Retry-After) */
  retryAfter?: number;

  /**
   * The message for a caller who is not an admin, where `message` names what only operators see
   * (a switch's and a port's names: docs/api-conventions.md §5); the HTTP layer picks it.
   */
  forMembers?: string;

  constructor(readonly type: ErrorType, message: string, opts?: { cause?: unknown; retryAfter?: number; forMembers?: string }) {
    super(message, opts?.cause === undefined ? undefined : { cause: opts.cause });
    if (opts?.retryAfter !== undefined) this.retryAfter = opts.retryAfter;
    if (opts?.forMembers !== undefined) this.forMembers = opts.forMembers;
  }
}

export const notFound = (what: string) => new HiltError('NotFoundError', `${what} does not exist`);
export const duplicate = (what: string) => new HiltError('DuplicateError', `${what} already exists`);
export const blocked = (msg: string, forMembers?: string) => new HiltError('BlockedError', msg, { forMembers });
export const badArgument = (msg: string) => new HiltError('BadArgumentError', msg);
export const unauthorized = (msg = 'you do not have permission for this call') => new HiltError('AuthorizationError', msg);
export const forbidden = (msg: string) => new HiltError('ForbiddenError', msg);
export const conflict = (msg: string) => new HiltError('IllegalStateError', msg);
/** The node is in no project, or its project may not use the network (HIL's class for both). */
export const projectMismatch = (msg: string) => new HiltError('ProjectMismatchError', msg);

