/**
 * User actor protocol (database auth extension): the user owns its password hash, its role, its
 * memberships (each a member's or a reader's) and its API tokens (src/auth/tokens.ts), so that a
 * token dies with its user, and a token scoped to a project with the user's place in it.
 */

/** admin: changes anything; auditor: reads what an admin reads, changes nothing; user: per project. */
export type UserRole = 'admin' | 'auditor' | 'user';
/** member: reads and changes the project's things (HIL's membership); reader: reads them only. */
export type ProjectRole = 'member' | 'reader';

/** An API token as stored: never its secret, only the secret's SHA-256. */
export interface TokenGrant {
  id: string;
  /** hex SHA-256 of the secret (a random 256-bit value, so no slow hash is needed) */
  secretHash: string;
  /** acts only within this project */
  project?: string;
  readOnly: boolean;
  description: string;
  /** ms since the epoch */
  createdAt: number;
  expiresAt: number;
  /** the last use recorded (src/auth/tokens.ts records at most one use per token every few minutes) */
  lastUsedAt?: number;
}

export interface UserState {
  name: string;
  /** scrypt hash (src/auth/password.ts); never returned, redacted in inspection */
  passwordHash: string;
  isAdmin: boolean;
  /** role auditor (never together with isAdmin) */
  auditor?: boolean;
  /** projects the user is a member of */
  projects: string[];
  /** projects the user reads only */
  readerOf?: string[];
  tokens?: TokenGrant[];
}

/** At most this many tokens per user that have not expired. */
export const TOKENS_MAX = 100;

/** What the API's routes (and the bootstrap of the first admin) may send. */
export type UserPublicCommand =
  | { type: 'user.create'; by: string; passwordHash: string; isAdmin: boolean; auditor?: boolean }
  | { type: 'user.delete'; by: string }
  | { type: 'user.setAdmin'; by: string; isAdmin: boolean }
  | { type: 'user.setRole'; by: string; role: UserRole }
  | { type: 'user.createToken'; by: string; grant: TokenGrant }
  | { type: 'user.revokeToken'; by: string; id: string }
  /** from the authentication of a call (src/auth/tokens.ts) */
  | { type: 'user.tokenUsed'; by: string; id: string; at: number };

/** What only the project actor sends (project → user): memberships pass the project's mailbox. */
export type UserInternalCommand =
  | { type: 'user.join'; by: string; project: string; role?: ProjectRole }
  | { type: 'user.leave'; by: string; project: string; ifMember?: boolean };

export type UserCommand = UserPublicCommand | UserInternalCommand;

export interface UserReplies {
  'user.create': void;
  'user.delete': void;
  'user.setAdmin': void;
  'user.setRole': void;
  'user.join': void;
  'user.leave': void;
  'user.createToken': void;
  'user.revokeToken': void;
  'user.tokenUsed': void;
}

export type UserEvent =
  | { type: 'UserCreated'; passwordHash: string; isAdmin: boolean; auditor?: boolean }
  | { type: 'UserDeleted' }
  | { type: 'UserAdminSet'; isAdmin: boolean }
  | { type: 'UserRoleSet'; role: UserRole }
  /** role absent: a member (events written before readers existed) */
  | { type: 'UserJoined'; project: string; role?: 'reader' }
  | { type: 'UserLeft'; project: string }
  | { type: 'TokenCreated'; grant: TokenGrant }
  | { type: 'TokenRevoked'; id: string }
  | { type: 'TokenUsed'; id: string; at: number };
