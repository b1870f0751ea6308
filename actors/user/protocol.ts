/** User actor protocol (database auth extension): the user owns its password hash, admin flag and memberships. */
export interface UserState {
  name: string;
  /** scrypt hash (src/auth/password.ts); never returned, redacted in inspection */
  passwordHash: string;
  isAdmin: boolean;
  projects: string[];
}

/** What the API's routes (and the bootstrap of the first admin) may send. */
export type UserPublicCommand =
  | { type: 'user.create'; by: string; passwordHash: string; isAdmin: boolean }
  | { type: 'user.delete'; by: string }
  | { type: 'user.setAdmin'; by: string; isAdmin: boolean };

/** What only the project actor sends (project → user): memberships pass the project's mailbox. */
export type UserInternalCommand =
  | { type: 'user.join'; by: string; project: string }
  | { type: 'user.leave'; by: string; project: string; ifMember?: boolean };

export type UserCommand = UserPublicCommand | UserInternalCommand;

export interface UserReplies {
  'user.create': void;
  'user.delete': void;
  'user.setAdmin': void;
  'user.join': void;
  'user.leave': void;
}

export type UserEvent =
  | { type: 'UserCreated'; passwordHash: string; isAdmin: boolean }
  | { type: 'UserDeleted' }
  | { type: 'UserAdminSet'; isAdmin: boolean }
  | { type: 'UserJoined'; project: string }
  | { type: 'UserLeft'; project: string };
