import { Webhook, WebhookVerificationError as SignatureError } from 'standardwebhooks';
import type { components } from './generated/openapi.js';
import type { WebhookHeaders } from './verify.js';

/** Every event type a webhook can subscribe to (CreateWebhookRequest.events), and `webhook.test`. */
export type WebhookEventType = components['schemas']['CreateWebhookRequest']['events'][number] | 'webhook.test';

/** What a `raw` webhook receives (and the live stream sends): the event as stored. */
export interface WebhookEvent<T extends WebhookEventType = WebhookEventType> {
  /** The event id; also the `webhook-id` header, the same on every attempt: drop repeats by it. */
  id: string;
  type: T;
  created_at: string;
  tenant_id: string;
  data: Record<string, unknown>;
}

/** A delivery that is not signed with the secret, too old or too new, or not an event. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

function plainHeaders(headers: WebhookHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof (headers as Headers).forEach === 'function' && typeof (headers as Headers).get === 'function') {
    (headers as Headers).forEach((value, name) => {
      out[name.toLowerCase()] = value;
    });
    return out;
  }
  for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(' ') : value;
  }
  return out;
}

/**
 * Checks a delivery the Standard Webhooks way (the `standardwebhooks` package, which the server
 * signs with: `webhook-id`, `webhook-timestamp` within 5 minutes, a `v1,` HMAC-SHA256 of
 * `id.timestamp.body` keyed with the webhook's `whsec_` secret) and answers the event, typed.
 * Throws WebhookVerificationError otherwise. Pass the body exactly as received (before any JSON
 * parsing): a re-serialized body does not match its signature.
 */
export function unwrapWebhook(rawBody: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEvent {
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  let event: unknown;
  try {
    event = new Webhook(secret).verify(body, plainHeaders(headers));
  } catch (err) {
    throw new WebhookVerificationError(err instanceof SignatureError ? err.message : `Cannot verify the delivery: ${(err as Error)?.message ?? err}`);
  }
  const e = event as Partial<WebhookEvent> | null;
  if (!e || typeof e !== 'object' || typeof e.id !== 'string' || typeof e.type !== 'string') {
    throw new WebhookVerificationError('The delivery is signed but is not an engram event (a slack or discord format webhook?)');
  }
  return e as WebhookEvent;
}
