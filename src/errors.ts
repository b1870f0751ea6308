/**
 * The one error catalogue. Actors and routes throw HiltError with a HIL error class name;
 * the HTTP layer maps it to a status here and nowhere else. The body is always
 * {"type": <class>, "msg": <text>} (decisions.md §1).
 */
export const ERROR_STATUS = {
  BadArgumentError: 400,
  AuthorizationError: 401,
  NotFoundError: 404,
  DuplicateError: 409,
  AllocationError: 409,
  BlockedError: 409,
  IllegalStateError: 409,
  ProjectMismatchError: 409,
  RequestTooLargeError: 413,
  /** Hardware (BMC) failed or timed out: not the client's mistake (decisions.md §11). */
  OBMError: 502,
  /** A headnode VM (QEMU, Open vSwitch) failed or timed out. */
  HeadnodeError: 502,
  /** Storage or an actor did not answer in time; the change was not acknowledged. */
  ServiceUnavailableError: 503,
  /** A bug. Logged with its stack; the client gets a generic message. */
  ServerError: 500,
} as const;

export type ErrorType = keyof typeof ERROR_STATUS;

export class HiltError extends Error {
  constructor(readonly type: ErrorType, message: string) {
    super(message);
  }
  get status(): number {
    return ERROR_STATUS[this.type];
  }
}

export const notFound = (what: string) => new HiltError('NotFoundError', `${what} does not exist`);
export const duplicate = (what: string) => new HiltError('DuplicateError', `${what} already exists`);
export const blocked = (msg: string) => new HiltError('BlockedError', msg);
export const badArgument = (msg: string) => new HiltError('BadArgumentError', msg);
export const unauthorized = (msg = 'you do not have permission for this call') => new HiltError('AuthorizationError', msg);
export const conflict = (msg: string) => new HiltError('IllegalStateError', msg);
