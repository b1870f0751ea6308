/**
 * The HTTP mapping of the error catalogue (actors/errors.ts), here and nowhere else. The body is
 * always {"type": <class>, "msg": <text>} (docs/api-conventions.md §1).
 */
import { ErrorType, HiltError } from '../actors/errors';

export const ERROR_STATUS: Record<ErrorType, number> = {
  BadArgumentError: 400,
  AuthorizationError: 401,
  ForbiddenError: 403,
  NotFoundError: 404,
  DuplicateError: 409,
  AllocationError: 409,
  BlockedError: 409,
  IllegalStateError: 409,
  ProjectMismatchError: 409,
  RequestTooLargeError: 413,
  // Hardware failures are not the client's mistake (docs/api-conventions.md §11).
  OBMError: 502,
  HeadnodeError: 502,
  SwitchError: 502,
  ServiceUnavailableError: 503,
  ServerError: 500,
  TooManyRequestsError: 429,
  GoneError: 410,
};

export const statusOf = (err: HiltError): number => ERROR_STATUS[err.type];

export * from '../actors/errors';
