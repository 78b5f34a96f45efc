import { validationHook } from '../../shared/platform/http/app';
import { defineVerb } from '../../shared/platform/http/verb';
import * as q from './queries';
import * as s from './schemas';
import { assertDestination, createWebhook, getWebhook, listDeliveries, listWebhooks, redeliver, sendTest } from './service';

/** The webhooks verbs the routes and the console share (docs/architecture.md#verbs). */
const feature = 'webhooks' as const;

export const listWebhooksVerb = defineVerb({
  name: 'webhooks.list',
  method: 'get',
  feature,
  input: { query: s.ListQuery },
  run: (ctx, page) => listWebhooks(ctx, page),
});

export const getWebhookVerb = defineVerb({
  name: 'webhooks.get',
  method: 'get',
  feature,
  input: { params: s.WebhookParams },
  run: (ctx, { webhook_id }) => getWebhook(ctx, { webhookId: webhook_id }),
});

export const deliveriesVerb = defineVerb({
  name: 'webhooks.deliveries',
  method: 'get',
  feature,
  input: { params: s.WebhookParams, query: s.DeliveriesQuery },
  run: (ctx, { webhook_id, ...page }) => listDeliveries(ctx, { webhookId: webhook_id, ...page }),
});

export const sendTestVerb = defineVerb({
  name: 'webhooks.test',
  method: 'post',
  feature,
  input: { params: s.WebhookParams },
  run: (ctx, { webhook_id }) => sendTest(ctx, { webhookId: webhook_id }),
});

export const redeliverVerb = defineVerb({
  name: 'webhooks.redeliver',
  method: 'post',
  feature,
  input: { params: s.DeliveryParams },
  run: (ctx, { webhook_id, delivery_id }) => redeliver(ctx, { webhookId: webhook_id, deliveryId: delivery_id }),
});

/**
 * Register a webhook: an invalid body is 422, as the contract answers webhook validation; the
 * destination is resolved before the unit of work opens; at most MAX_WEBHOOKS per tenant, counted
 * under the webhooks lock.
 */
export const createWebhookVerb = defineVerb({
  name: 'webhooks.create',
  method: 'post',
  feature,
  input: { body: s.CreateWebhookBody },
  hook: validationHook(422),
  check: (ctx, body) => assertDestination(ctx, body.url),
  limit: {
    metric: 'webhooks',
    max: () => s.MAX_WEBHOOKS,
    lock: (ctx) => `webhooks:${ctx.tenantId}`,
    count: (tx, ctx) => q.countWebhooks(tx, ctx.tenantId),
    message: (max) => `At most ${max} webhooks per tenant; delete one first`,
  },
  run: (ctx, body) => createWebhook(ctx, body),
});
