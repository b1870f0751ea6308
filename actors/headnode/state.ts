/**
 * A headnode's state from its events: the pure apply that a live actor, a rebuild and a checkpoint's
 * replay share. What this module and its imports compile to names the checkpoint's build
 * (actors/checkpoint.ts): keep it free of anything but the state's derivation.
 */
import { assertNever, type Stamp } from '../behavior';
import type { HeadnodeEvent, HeadnodeState, Hnic } from './protocol';

const mapHnic = (state: HeadnodeState, hnic: string, f: (h: Hnic) => Hnic): HeadnodeState => ({
  ...state,
  hnics: state.hnics.map((h) => (h.name === hnic ? f(h) : h)),
});

export function applyHeadnode(state: HeadnodeState | null, e: HeadnodeEvent & Stamp, id: string): HeadnodeState | null {
  if (e.type === 'HeadnodeCreated') {
    return { name: id, project: e.project, baseImg: e.baseImg, hnics: [], frozen: false, status: 'created', vncport: null, error: null };
  }
  if (!state) return state;
  switch (e.type) {
    case 'HnicCreated':
      return { ...state, hnics: [...state.hnics, { name: e.hnic, network: null }] };
    case 'HnicDeleted':
      return { ...state, hnics: state.hnics.filter((h) => h.name !== e.hnic) };
    case 'HnicNetworkConnected':
      return mapHnic(state, e.hnic, (h) => ({ ...h, network: e.network }));
    case 'HnicNetworkDetached':
      return mapHnic(state, e.hnic, (h) => ({ ...h, network: null }));
    case 'HeadnodeStartRequested':
      return { ...state, status: 'starting', vncport: null };
    case 'HeadnodeStarted':
      return { ...state, status: 'running', frozen: true, vncport: e.vncport, error: null };
    case 'HeadnodeStartFailed':
      // A VM that could not be powered off may still run on its hnics' VLANs: `stopping` keeps
      // them and has the power-off retried (HeadnodeControl). A headnode that never ran stays modifiable.
      if (e.mayRun) return { ...state, status: 'stopping', vncport: null, error: e.error };
      return { ...state, status: state.frozen ? 'stopped' : 'created', vncport: null, error: e.error };
    case 'HeadnodeStopRequested':
      return { ...state, status: 'stopping' };
    case 'HeadnodeStopped':
      // A headnode that never ran is stopped only after a failed first start (the power-off it
      // owed): it ends as that start left it, changeable, with the start's reason.
      if (!state.frozen) return { ...state, status: 'created', vncport: null };
      return { ...state, status: 'stopped', vncport: null, error: null };
    case 'HeadnodeStopFailed':
      // No VNC port: this was the power-off a failed start or a death owed (HeadnodeStartFailed,
      // HeadnodeDied with mayRun), not a stop of a running VM. It is still owed, and `error`
      // (which says so) stays the start's or the death's.
      if (state.vncport === null) return state;
      return { ...state, status: 'running', error: e.error };
    case 'HeadnodeDied':
      return { ...state, status: e.mayRun ? 'stopping' : 'died', vncport: null, error: e.error };
    case 'HeadnodeDeleteRequested':
      return { ...state, status: 'deleting' };
    case 'HeadnodeDeleteFailed':
      // A failed delete powers the VM off (HeadnodeControl): its VNC port is free for another VM.
      return { ...state, vncport: null, error: e.error };
    case 'HeadnodeDeleted':
      return null;
    default:
      return assertNever(e);
  }
}
