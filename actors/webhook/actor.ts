import { Behavior, Stamp, assertNever } from '../runtime';
import { duplicate, notFound } from '../errors';
import type { WebhookCommand, WebhookEvent, WebhookState } from './protocol';

export function webhookBehavior(): Behavior<WebhookState, WebhookCommand, WebhookEvent> {
  return {
    kind: 'webhook',

    apply(state, e: WebhookEvent & Stamp, id) {
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
    },

    decide(state, cmd, id) {
      if (cmd.type === 'webhook.create') {
        if (state) throw duplicate(`webhook ${id}`);
        return { events: [{ type: 'WebhookCreated', ...cmd.spec }] };
      }
      if (!state) throw notFound(`webhook ${id}`);
      switch (cmd.type) {
        case 'webhook.delete':
          return { events: [{ type: 'WebhookDeleted' }] };
        case 'webhook.fail':
          // Once is enough: the delivery runner may report again after a restart.
          return { events: state.failing ? [] : [{ type: 'WebhookFailing', error: cmd.error }] };
        case 'webhook.resume':
          return { events: state.failing ? [{ type: 'WebhookResumed' }] : [] };
        default:
          return assertNever(cmd);
      }
    },
  };
}
