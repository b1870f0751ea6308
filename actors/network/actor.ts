import { Behavior, Decision, needsEntity } from '../runtime';
import { HiltError, blocked, duplicate, notFound, unauthorized } from '../errors';
import type { ReadModel } from '../readmodel';
import type { NetworkUseBook } from './uses';
import type { VlanPool } from './pool';
import { counted, listed } from '../../lib/text';
import type { NetworkCommand, NetworkEvent, NetworkReplies, NetworkState } from './protocol';
import { applyNetwork } from './state';

/** What the network actor needs: the committed view, the reservations of its users, the VLAN pool. */
export interface NetworkDeps {
  rm: ReadModel;
  uses: NetworkUseBook;
  vlanPool: VlanPool;
}

/** A port and the nic wired to it. */
interface BlockedPort { port: string; switch: string; node: string; nic: string }

export function networkBehavior({ rm, uses, vlanPool: pool }: NetworkDeps): Behavior<NetworkState, NetworkCommand, NetworkEvent, NetworkReplies> {
  /** A command on an existing network. */
  const live = needsEntity<NetworkState>((id) => notFound(`network ${id}`));

  /** Projects attached to (nodes and headnodes), connecting to, or reserving the network. */
  const usersOf = (id: string) => [
    ...rm.attachmentsOf(id).map((a) => a.project), ...rm.hnicProjectsOn(id),
    ...rm.pendingConnectsTo(id).map((a) => a.project), ...uses.reservedBy(id),
  ];

  /**
   * A port in doubt that may carry the network's VLAN (hardware/port-hardware.ts), wired to a node
   * of a project `of` picks: that node may be on the network until the port's set-back is confirmed.
   */
  function doubtedPortOf(vlan: number, of: (project: string) => boolean): BlockedPort | undefined {
    for (const p of rm.portsInDoubtWith(vlan)) {
      const project = p.wire && rm.nodes.get(p.wire.node)?.project;
      if (p.wire && project && of(project)) return { port: p.name, switch: p.switch, node: p.wire.node, nic: p.wire.nic };
    }
    return undefined;
  }
  const why = 'a change failed after it may have reached the port; it is being set back';
  const mayCarry = (b: BlockedPort, vlan: number, id: string) => blocked(
    `port ${b.port} of switch ${b.switch} (nic ${b.nic} of node ${b.node}) may still carry VLAN ${vlan} of network ${id} (${why})`,
    `the port of nic ${b.nic} of node ${b.node} may still carry VLAN ${vlan} of network ${id} (${why})`);

  /** The caller was authorized as a member of `owner`, which must still own the network (protocol.ts). */
  function stillOwned(state: NetworkState, owner: string | undefined, id: string): void {
    if (owner !== undefined && state.owner !== owner) throw unauthorized(`network ${id} is no longer owned by project ${owner}`);
  }

  /** Persist a change while no node may reserve the network for a new connect (see uses.ts). */
  function locked(id: string, event: NetworkEvent): Decision<NetworkEvent> {
    uses.lock(id);
    return { events: [event], settle: () => uses.unlock(id) };
  }

  return {
    kind: 'network',

    apply: applyNetwork,

    decide: {
      'network.create': (state, cmd, id) => {
        if (state) throw duplicate(`network ${id}`);
        const { owner, access, vlan: wanted } = cmd.spec;
        const inUse = () => new HiltError('BlockedError', `network id ${wanted} is in use by another network`);
        // An admin-chosen id outside the pool is not reserved: several admin networks may share
        // it, but not with a network the pool gave it to before HILT_VLAN_POOL changed (dynamic
        // ids are unique).
        if (wanted !== null && !pool.contains(wanted)) {
          if (rm.pooledVlans.has(wanted)) throw inUse();
          if (cmd.overQuota) throw new HiltError('BlockedError', cmd.overQuota);
          return { events: [{ type: 'NetworkCreated', owner, access, vlan: wanted, dynamic: false, pooled: false }] };
        }
        const vlan = pool.reserve(wanted);
        if (vlan === null) {
          throw wanted === null
            ? new HiltError('AllocationError', 'no free network id is left in the pool')
            : inUse();
        }
        // Decided here, after the name's own 409: the project could not know whether the name is taken.
        if (cmd.overQuota) {
          pool.release(vlan);
          throw new HiltError('BlockedError', cmd.overQuota);
        }
        return {
          // An admin's chosen id of the pool is reserved there, but was not allocated by it.
          events: [{ type: 'NetworkCreated', owner, access, vlan, dynamic: wanted === null, pooled: true }],
          settle: () => pool.release(vlan),
        };
      },
      'network.delete': live((state, cmd, id) => {
        stillOwned(state, cmd.owner, id);
        const nodes = rm.attachmentsOf(id).map((a) => a.node);
        if (nodes.length) throw new HiltError('BlockedError', `network ${id} is attached to ${counted(new Set(nodes).size, 'node')} (${listed(nodes)})`);
        const heads = [...new Set(rm.hnicsOn(id))];
        if (heads.length) {
          const attached = `network ${id} is attached to ${counted(heads.length, 'headnode')}`;
          // A member of the owner reads no other project's headnode names (nothing else shows them it).
          const own = heads.filter((h) => rm.headnodes.get(h)?.project === state.owner);
          const others = heads.length - own.length;
          throw blocked(`${attached} (${listed(heads)})`,
            others ? `${attached} (${[...(own.length ? [listed(own)] : []), others === 1 ? '1 headnode of another project' : `${others} headnodes of other projects`].join(', ')})` : undefined);
        }
        if (rm.pendingConnectsTo(id).length || uses.reservedBy(id).length) {
          throw new HiltError('BlockedError', `pending network operations involve network ${id}`);
        }
        // A port whose failed change may have left this VLAN on it, its set-back not confirmed
        // (hardware/port-hardware.ts): the pool must not give the VLAN to another network yet.
        const doubted = rm.portsInDoubtWith(state.vlan);
        if (doubted.length) {
          const p = doubted[0];
          const more = doubted.length > 1 ? `, and ${counted(doubted.length - 1, 'other port')}` : '';
          throw blocked(`port ${p.name} of switch ${p.switch} may still carry VLAN ${state.vlan} of network ${id} (${why})${more}`,
            `${counted(doubted.length, 'switch port')} may still carry VLAN ${state.vlan} of network ${id} (${why})`);
        }
        return locked(id, { type: 'NetworkDeleted' });
      }),
      'network.grant': live((state, cmd, id) => {
        stillOwned(state, cmd.owner, id);
        if (state.access.includes(cmd.project)) throw duplicate(`access of project ${cmd.project} to network ${id}`);
        if (!state.access.length && usersOf(id).some((p) => p !== cmd.project)) {
          // A public network would become [P]: others attached to it would lose their access.
          throw new HiltError('BlockedError', `nodes or headnodes of other projects use public network ${id}`);
        }
        // … or may be on it still: a port whose failed connect may have left its VLAN there.
        const doubted = state.access.length ? undefined : doubtedPortOf(state.vlan, (p) => p !== cmd.project);
        if (doubted) throw mayCarry(doubted, state.vlan, id);
        return locked(id, { type: 'AccessGranted', project: cmd.project });
      }),
      'network.revoke': live((state, cmd, id) => {
        stillOwned(state, cmd.owner, id);
        if (!state.access.includes(cmd.project)) throw notFound(`access of project ${cmd.project} to network ${id}`);
        if (state.owner === cmd.project) throw new HiltError('BlockedError', `project ${cmd.project} owns network ${id}`);
        if (rm.attachmentsOf(id).some((a) => a.project === cmd.project)) {
          throw new HiltError('BlockedError', `a node of project ${cmd.project} is attached to network ${id}`);
        }
        if (rm.hnicProjectsOn(id).includes(cmd.project)) {
          throw new HiltError('BlockedError', `a headnode of project ${cmd.project} is attached to network ${id}`);
        }
        if (rm.pendingConnectsTo(id).some((a) => a.project === cmd.project) || uses.reservedBy(id).includes(cmd.project)) {
          throw new HiltError('BlockedError', `a node of project ${cmd.project} has a pending connect to network ${id}`);
        }
        // Otherwise the project's node may stay on the network it no longer has access to.
        const doubted = doubtedPortOf(state.vlan, (p) => p === cmd.project);
        if (doubted) throw mayCarry(doubted, state.vlan, id);
        return locked(id, { type: 'AccessRevoked', project: cmd.project });
      }),
    },
  };
}
