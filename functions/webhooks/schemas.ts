import { z } from '@hono/zod-openapi';
import { EVENT_TYPES } from '../../shared/jobs/events';
import { PageQuery, paging } from '../../shared/platform/data/pagination';
import { PrefixedId } from '../../shared/platform/contract/params';
import type { DeliveryRow, WebhookRow } from './queries';

export const MAX_WEBHOOKS = 50;
export const MAX_DESCRIPTION = 200;
export const FORMATS = ['raw', 'slack', 'discord'] as const;
const WEBHOOK_EXAMPLE = 'wh_4f9Qw2b8Zr1LmT0aXcVe3K';
const DELIVERY_EXAMPLE = 'del_7TqL2mXc9RbV0eWz4YkA1s';
const TIME = '2026-11-01T10:00:00.000Z';

const Url = z.string().max(2048).url().openapi({
  description: 'HTTPS URL that must not resolve to a loopback, private, link-local or metadata address (checked now and before every delivery)',
  example: 'https://hooks.example.com/engram',
});
const Events = z
  .array(z.enum(EVENT_TYPES))
  .min(1)
  .max(EVENT_TYPES.length)
  .openapi({ description: `Event types to receive, at least one of: ${EVENT_TYPES.join(', ')}`, example: ['memory.created', 'rollback.completed'] });
const Description = z
  .string()
  .max(MAX_DESCRIPTION)
  .nullable()
  .openapi({ description: `At most ${MAX_DESCRIPTION} characters`, example: 'Sync to the CRM' });
const Format = z
  .enum(FORMATS)
  .openapi({ description: '`raw` (the event JSON, default), `slack` or `discord` (a text summary those services accept)', example: 'raw' });

export const CreateWebhookBody = z
  .object({ url: Url, events: Events, description: Description.optional(), format: Format.default('raw') })
  .openapi('CreateWebhookRequest', {
    example: { url: 'https://hooks.example.com/engram', events: ['memory.created', 'rollback.completed'], description: 'Sync to the CRM', format: 'raw' },
  });

export const UpdateWebhookBody = z
  .object({
    url: Url,
    events: Events,
    active: z.boolean().openapi({ description: 'false pauses deliveries; true resumes them' }),
    description: Description,
    format: Format,
  })
  .partial()
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one of url, events, active, description, format' })
  .openapi('UpdateWebhookRequest', { example: { active: false } });

export const WebhookParams = z.object({ webhook_id: PrefixedId('webhook', 'The webhook') });
export const DeliveryParams = WebhookParams.extend({ delivery_id: PrefixedId('delivery', 'A past delivery attempt of this webhook') });
export const ListQuery = PageQuery({ max: MAX_WEBHOOKS, default: MAX_WEBHOOKS });
export const DeliveriesQuery = PageQuery({ max: 100, default: 20 });
export const ListPaging = paging({ totals: ['total_count'], hasMore: true });

export const WebhookSchema = z
  .object({
    webhook_id: z.string().openapi({ example: WEBHOOK_EXAMPLE }),
    url: z.string().openapi({ example: 'https://hooks.example.com/engram' }),
    events: z.array(z.string()).openapi({ example: ['memory.created', 'rollback.completed'] }),
    active: z.boolean().openapi({ description: 'false when paused, or deactivated after 3 days of failed deliveries' }),
    description: z.string().nullable().openapi({ example: 'Sync to the CRM' }),
    format: z.enum(FORMATS),
    failing_since: z.string().nullable().openapi({ description: 'First failed attempt of the current streak of failures, or null', example: null }),
    created_at: z.string().openapi({ example: TIME }),
    updated_at: z.string().openapi({ example: TIME }),
  })
  .openapi('Webhook');

const Secret = z.string().openapi({
  description: 'The signing secret (Standard Webhooks `whsec_` form). Shown only here: store it now.',
  example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
});

export const CreatedWebhook = WebhookSchema.extend({ secret: Secret }).openapi('CreatedWebhook');

export const RotatedSecret = z
  .object({
    webhook_id: z.string().openapi({ example: WEBHOOK_EXAMPLE }),
    secret: Secret,
    previous_secret_expires_at: z
      .string()
      .openapi({ description: 'Until then every delivery carries a signature with each secret', example: '2026-11-02T10:00:00.000Z' }),
  })
  .openapi('RotatedWebhookSecret');

export const WebhookList = z.object({ webhooks: z.array(WebhookSchema), ...ListPaging.fields }).openapi('WebhookList');

export const DeletedWebhook = z.object({ success: z.literal(true), webhook_id: z.string().openapi({ example: WEBHOOK_EXAMPLE }) }).openapi('DeletedWebhook');

export const DeliverySchema = z
  .object({
    delivery_id: z.string().openapi({ example: DELIVERY_EXAMPLE }),
    event_id: z
      .string()
      .openapi({ description: 'Also the `webhook-id` header the receiver got; the same on every attempt', example: 'evt_0Hc8LwQ1mZp4TfY7sRb2Vn' }),
    event_type: z.string().openapi({ example: 'memory.created' }),
    status_code: z.number().int().openapi({ description: "The receiver's HTTP status; 0 when none came (refused, timed out, blocked address)", example: 200 }),
    success: z.boolean(),
    attempt: z.number().int().openapi({ description: '1 for the first attempt, then one more per retry', example: 1 }),
    error: z.string().nullable().openapi({
      description:
        "Why the attempt failed, in engram's words (`receiver answered 503`, `redirect not followed`, `no answer within 10 s`); null on success. Never the receiver's answer: its body is not kept",
      example: null,
    }),
    duration_ms: z.number().int().openapi({ example: 84 }),
    created_at: z.string().openapi({ example: TIME }),
  })
  .openapi('WebhookDelivery');

export const DeliveryList = z.object({ deliveries: z.array(DeliverySchema), ...ListPaging.fields }).openapi('WebhookDeliveryList');

export const Queued = z
  .object({
    delivery_id: z.string().openapi({ description: 'The id the first attempt will have in the delivery list', example: DELIVERY_EXAMPLE }),
    event_id: z.string().openapi({ example: 'evt_0Hc8LwQ1mZp4TfY7sRb2Vn' }),
    message: z.string().openapi({ example: 'Queued; see GET /v1/webhooks/{webhook_id}/deliveries for the outcome.' }),
  })
  .openapi('WebhookDeliveryQueued');

export function toWebhookDto(w: WebhookRow): z.infer<typeof WebhookSchema> {
  return {
    webhook_id: w.id,
    url: w.url,
    events: w.events,
    active: w.active,
    description: w.description,
    format: w.format,
    failing_since: w.failingSince?.toISOString() ?? null,
    created_at: w.createdAt.toISOString(),
    updated_at: w.updatedAt.toISOString(),
  };
}

export function toDeliveryDto(d: DeliveryRow): z.infer<typeof DeliverySchema> {
  return {
    delivery_id: d.id,
    event_id: d.eventId,
    event_type: d.eventType,
    status_code: d.statusCode,
    success: d.success,
    attempt: d.attempt,
    error: d.error,
    duration_ms: d.durationMs,
    created_at: d.createdAt.toISOString(),
  };
}
