/**
 * What the event stream needs to know of an event beyond the event itself, worked out as it is
 * committed and stored with it (actors/entity.ts, `about`): the projects it concerns, which
 * decide who may see it (docs/events.md, Access), and for a network operation its public status
 * (what GET /networking_action/<id> answers, with its status id). As of the commit: a replay
 * tells exactly what the live stream told, however the objects changed since.
 */
import type { ReadModel } from '../../actors/readmodel';
import type { Describe, EventAbout } from '../../actors/runtime';
import type { NetworkAction, NicState } from '../../actors/nic/protocol';
import type { NetworkState } from '../../actors/network/protocol';
import type { HeadnodeState } from '../../actors/headnode/protocol';
import { splitId } from '../../actors/ids';
import { statusBody } from '../routes/actions';
import { encodeStatusId } from '../../actors/nic/status-ids';

/** The stored status is the whole one (an admin's); a stream gives members their own (frames.ts). */
const EVERYONE = { isAdmin: true };

const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

/** The projects of a list, without the admin owner and without repeats; undefined when none. */
function projects(...names: (string | null | undefined)[]): string[] | undefined {
  const out = [...new Set(names.filter((n): n is string => !!n && n !== 'admin'))];
  return out.length ? out : undefined;
}

/** A network operation's public status, as of this event. */
function operation(nic: NicState, a: NetworkAction, status: NetworkAction['status'], error?: string): Record<string, unknown> {
  const node = { name: nic.node, incarnation: nic.nodeIncarnation };
  return {
    status_id: encodeStatusId(node as never, { nic: a.nic, incarnation: nic.incarnation, seq: a.seq }, a.firstFormat),
    ...statusBody(node as never, { ...a, status, ...(error !== undefined ? { error } : {}) }, EVERYONE),
  };
}

export function describer(rm: ReadModel): Describe {
  return (kind, id, state, e): EventAbout | undefined => {
    switch (kind) {
      case 'project':
        return { projects: [id] };
      case 'node':
        return { projects: projects(str(e.project) ?? rm.nodes.get(id)?.project) };
      case 'nic': {
        const [node] = splitId(id);
        const about: EventAbout = { projects: projects(rm.nodes.get(node)?.project) };
        const nic = state as NicState | null;
        if (e.type === 'NetworkActionQueued' && nic) about.operation = operation(nic, e.action as NetworkAction, 'PENDING');
        if ((e.type === 'NetworkActionDone' || e.type === 'NetworkActionFailed') && nic) {
          const a = nic.pending?.seq === e.seq ? nic.pending : nic.actions.find((x) => x.seq === e.seq);
          if (a) about.operation = operation(nic, a, e.type === 'NetworkActionDone' ? 'DONE' : 'ERROR', str(e.error));
        }
        return about.projects || about.operation ? about : undefined;
      }
      case 'network': {
        const n = (state as NetworkState | null) ?? (e as unknown as Partial<NetworkState>);
        const p = projects(n.owner, ...(n.access ?? []), str(e.project));
        return p && { projects: p };
      }
      case 'user': {
        const p = projects(str(e.project));
        return p && { projects: p };
      }
      case 'headnode': {
        const p = projects(str(e.project) ?? (state as HeadnodeState | null)?.project ?? rm.headnodes.get(id)?.project);
        return p && { projects: p };
      }
      default:
        return undefined;
    }
  };
}
