/**
 * A project's state from its events: the pure apply that a live actor, a rebuild and a checkpoint's
 * replay share. What this module and its imports compile to names the checkpoint's build
 * (actors/checkpoint.ts): keep it free of anything but the state's derivation.
 */
import { assertNever, type Stamp } from '../behavior';
import type { ProjectEvent, ProjectState, Quota } from './protocol';

/** The quota with one limit set (a number), removed (null) or left (undefined). */
function withLimit(quota: Quota | undefined, key: keyof Quota, value: number | null | undefined): Quota | undefined {
  if (value === undefined) return quota;
  const next: Quota = { ...quota };
  if (value === null) delete next[key];
  else next[key] = value;
  return Object.keys(next).length ? next : undefined;
}

export function applyProject(state: ProjectState | null, e: ProjectEvent & Stamp, id: string): ProjectState | null {
  switch (e.type) {
    case 'ProjectCreated':
      return { name: id };
    case 'ProjectDeleted':
      return null;
    case 'ProjectQuotaSet': {
      if (!state) return state;
      const quota = withLimit(withLimit(withLimit(state.quota, 'nodes', e.nodes), 'networks', e.networks), 'headnodes', e.headnodes);
      const { quota: _old, ...rest } = state;
      return quota ? { ...rest, quota } : rest;
    }
    default:
      return assertNever(e);
  }
}
