import { Behavior, existing } from '../runtime';
import { duplicate, notFound } from '../errors';
import type { WebhookCommand, WebhookEvent, WebhookReplies, WebhookState } from './protocol';
import { PLAIN, type Credentials } from '../credentials';
import { applyWebhook } from './state';

/** `credentials`: the secret is sealed as it is decided, as BMC and switch passwords are (actors/credentials.ts). */
export function webhookBehavior(credentials: Credentials = PLAIN): Behavior<WebhookState, WebhookCommand, WebhookEvent, WebhookReplies> {
  /** A command on an existing webhook. */
  const live = <Cmd, D>(handler: (state: WebhookState, cmd: Cmd, id: string) => D) => existing((id) => notFound(`webhook ${id}`), handler);

  return {
    kind: 'webhook',

    apply: applyWebhook,

    decide: {
      'webhook.create': (state, cmd, id) => {
        if (state) throw duplicate(`webhook ${id}`);
        const secret = credentials.seal('webhook', '', { secret: cmd.spec.secret }).secret as string;
        return { events: [{ type: 'WebhookCreated', ...cmd.spec, secret }] };
      },
      'webhook.delete': live(() => ({ events: [{ type: 'WebhookDeleted' }] })),
      // Once is enough: the delivery runner may report again after a restart.
      'webhook.fail': live((state, cmd) => ({ events: state.failing ? [] : [{ type: 'WebhookFailing', error: cmd.error }] })),
      'webhook.resume': live((state) => ({ events: state.failing ? [{ type: 'WebhookResumed' }] : [] })),
    },
  };
}
