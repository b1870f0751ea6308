/**
 * Webhook actor protocol (`webhook:<id>`): a subscription of an outside receiver to the event
 * stream (src/events/webhooks.ts delivers). The actor owns the subscription's settings, its
 * secret and whether it is failing; its delivery cursor is not an event (a mark beside the
 * journal: one per delivery would flood the journal it reads).
 *
 * The secret is a credential: sealed in the `WebhookCreated` event and the state as BMC and
 * switch passwords are (actors/credentials.ts, docs/identity.md), opened only to sign a delivery,
 * never shown by the API.
 */
export interface WebhookState {
  id: string;
  url: string;
  /** sealed at rest (opened by the delivery runner with the service's credentials) */
  secret: string;
  /** event types delivered (empty: every type) */
  types: string[];
  /** projects whose events are delivered (empty: every event) */
  projects: string[];
  description: string;
  createdAt: number;
  createdBy: string;
  /** why delivery stopped (the receiver kept failing past the retry window); null: delivering */
  failing: string | null;
  failingSince: number | null;
}

export interface WebhookSpec { url: string; secret: string; types: string[]; projects: string[]; description: string }

export type WebhookCommand =
  | { type: 'webhook.create'; by: string; spec: WebhookSpec }
  | { type: 'webhook.delete'; by: string }
  | { type: 'webhook.fail'; by: string; error: string }
  | { type: 'webhook.resume'; by: string };

/** What a route may send (`webhook.fail` is the delivery runner's). */
export type WebhookPublicCommand = Exclude<WebhookCommand, { type: 'webhook.fail' }>;

export interface WebhookReplies {
  'webhook.create': void;
  'webhook.delete': void;
  'webhook.fail': void;
  'webhook.resume': void;
}

export type WebhookEvent =
  | ({ type: 'WebhookCreated' } & WebhookSpec)
  | { type: 'WebhookDeleted' }
  | { type: 'WebhookFailing'; error: string }
  | { type: 'WebhookResumed' };
