/**
 * A webhook's state from its events: the pure apply that a live actor, a rebuild and a checkpoint's
 * replay share. What this module and its imports compile to names the checkpoint's build
 * (actors/checkpoint.ts): keep it free of anything but the state's derivation.
 */
import { assertNever, type Stamp } from '../behavior';
import type { WebhookEvent, WebhookState } from './protocol';

export function applyWebhook(state: WebhookState | null, e: WebhookEvent & Stamp, id: string): WebhookState | null {
  switch (e.type) {
    case 'WebhookCreated':
      return {
        id, url: e.url, secret: e.secret, types: e.types, projects: e.projects, description: e.description,
        createdAt: e.at ?? 0, createdBy: e.by ?? '', failing: null, failingSince: null,
      };
    case 'WebhookDeleted':
      return null;
    case 'WebhookFailing':
      return state && { ...state, failing: e.error, failingSince: e.at ?? 0 };
    case 'WebhookResumed':
      return state && { ...state, failing: null, failingSince: null };
    default:
      return assertNever(e);
  }
}
