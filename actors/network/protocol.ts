/** Network actor protocol: the network owns its owner, access list and VLAN id. */
export interface NetworkState {
  name: string;
  /** owning project, or 'admin' */
  owner: string;
  /** projects with access; empty = public */
  access: string[];
  vlan: number;
  /** true when the id was allocated from the pool (net_id ""), not chosen by an admin */
  dynamic: boolean;
  /** true when the id belongs to the pool and is reserved there (allocated, or chosen in it) */
  pooled: boolean;
}

/** The project that owns the network; none for the admin's ("admin" is no project, even when one has that name). */
export function ownerProject(net: Pick<NetworkState, 'owner'>): string | undefined {
  return net.owner === 'admin' ? undefined : net.owner;
}

export interface NetworkCreate {
  owner: string;
  access: string[];
  /** admin-assigned VLAN id, or null for the next free id of the pool */
  vlan: number | null;
}

/** What the API's routes may send (a network for a project is created through the project). */
export type NetworkPublicCommand =
  /** `overQuota`: the owning project owns its quota of networks; a new name is refused with this message */
  | { type: 'network.create'; by: string; spec: NetworkCreate; overQuota?: string }
  /** `owner`: see network.grant */
  | { type: 'network.delete'; by: string; owner?: string }
  /** `owner`: see network.grant (absent too when the caller revokes a project it is a member of) */
  | { type: 'network.revoke'; by: string; project: string; owner?: string };

/** What only the actors above it send: the project (project → network), so project_delete sees every grant. */
export type NetworkInternalCommand =
  /**
   * `owner`: the network's owner the caller was authorized through (absent: an admin). Between
   * the route's look and the network's turn (the grantee's mailbox first, for a grant), the
   * network may be deleted and its name taken by another owner.
   */
  | { type: 'network.grant'; by: string; project: string; owner?: string };

export type NetworkCommand = NetworkPublicCommand | NetworkInternalCommand;

export interface NetworkReplies {
  'network.create': void;
  'network.delete': void;
  'network.grant': void;
  'network.revoke': void;
}

export type NetworkEvent =
  /** `pooled` absent (older events): as `dynamic` */
  | { type: 'NetworkCreated'; owner: string; access: string[]; vlan: number; dynamic: boolean; pooled?: boolean }
  | { type: 'NetworkDeleted' }
  | { type: 'AccessGranted'; project: string }
  | { type: 'AccessRevoked'; project: string };
