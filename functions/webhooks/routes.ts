import { ErrorSchema, errors as errorsOf, json, jsonBody, keyRoute } from '../../shared/platform/http/openapi';
import { routeOf } from '../../shared/platform/http/verb';
import * as s from './schemas';
import { createWebhookVerb, deliveriesVerb, getWebhookVerb, listWebhooksVerb, redeliverVerb, sendTestVerb } from './verbs';

const tags = ['Webhooks'];
const feature = 'webhooks' as const;
/** A webhook's body that fails its checks: 422, as the contract answers webhook validation. */
const invalidWebhook = {
  422: {
    description:
      'Invalid webhook (VALIDATION_ERROR, `details` names each field): a URL that is not HTTPS or resolves to a loopback, private, link-local or metadata address, no events or an unknown one, an unknown field',
    content: { 'application/json': { schema: ErrorSchema } },
  },
};

const signing =
  'Deliveries are signed the Standard Webhooks way: `webhook-id` (the event id), `webhook-timestamp` (seconds) and `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed with the secret; docs/teams-and-webhooks.md#verifying-a-delivery shows how a receiver checks it.';

export const createRoute = keyRoute({
  ...routeOf(createWebhookVerb),
  path: '/v1/webhooks',
  tags,
  summary: 'Register a webhook',
  description: `The URL must be HTTPS and must not resolve to a loopback, private, link-local or metadata address; an unknown event type or an empty list is 422 VALIDATION_ERROR (as every invalid field of the body); more than ${s.MAX_WEBHOOKS} webhooks is 403 svc_ram.v1.tier.limit_exceeded with \`usage\`. The answer carries the signing \`secret\`, shown only this once. ${signing}`,
  validationStatus: 422,
  responses: { 201: json(s.CreatedWebhook, 'The webhook and its signing secret'), ...invalidWebhook },
});

export const listRoute = keyRoute({
  ...routeOf(listWebhooksVerb),
  path: '/v1/webhooks',
  tags,
  summary: 'Your webhooks, oldest first',
  responses: { 200: json(s.WebhookList, 'A page of webhooks') },
});

export const getRoute = keyRoute({
  ...routeOf(getWebhookVerb),
  path: '/v1/webhooks/{webhook_id}',
  tags,
  summary: 'A webhook',
  responses: { 200: json(s.WebhookSchema, 'The webhook (without its secret)'), ...errorsOf(404) },
});

export const updateRoute = keyRoute({
  operationId: 'webhooks.update',
  feature,
  method: 'put',
  path: '/v1/webhooks/{webhook_id}',
  tags,
  summary: 'Change a webhook, pause or resume it',
  description:
    'Any of `url`, `events`, `active`, `description`, `format`, checked as at registration (an invalid field is 422 VALIDATION_ERROR). `active: true` resumes a paused or deactivated webhook.',
  request: { params: s.WebhookParams, body: jsonBody(s.UpdateWebhookBody) },
  validationStatus: 422,
  responses: { 200: json(s.WebhookSchema, 'The changed webhook'), ...errorsOf(404), ...invalidWebhook },
});

export const deleteRoute = keyRoute({
  operationId: 'webhooks.delete',
  feature,
  method: 'delete',
  path: '/v1/webhooks/{webhook_id}',
  tags,
  summary: 'Delete a webhook and its delivery log',
  request: { params: s.WebhookParams },
  responses: { 200: json(s.DeletedWebhook, 'Deleted'), ...errorsOf(404) },
});

export const rotateSecretRoute = keyRoute({
  operationId: 'webhooks.rotateSecret',
  feature,
  method: 'post',
  path: '/v1/webhooks/{webhook_id}/rotate-secret',
  tags,
  summary: 'Issue a new signing secret',
  description: 'For 24 hours every delivery carries two signatures, one with each secret, so receivers can switch without losing a delivery.',
  request: { params: s.WebhookParams },
  responses: { 200: json(s.RotatedSecret, 'The new secret, shown only this once'), ...errorsOf(404) },
});

export const deliveriesRoute = keyRoute({
  ...routeOf(deliveriesVerb),
  path: '/v1/webhooks/{webhook_id}/deliveries',
  tags,
  summary: 'Delivery attempts, newest first',
  description:
    'One row per attempt, kept 30 days. Failed deliveries are retried after about 30 s, 2 min, 10 min, 1 h, 6 h and 24 h; a webhook failing for 3 days straight is deactivated (event `webhook.deactivated` and a mail to you).',
  responses: { 200: json(s.DeliveryList, 'A page of attempts'), ...errorsOf(404) },
});

export const testRoute = keyRoute({
  ...routeOf(sendTestVerb),
  path: '/v1/webhooks/{webhook_id}/test',
  tags,
  summary: 'Send a signed webhook.test event',
  description: 'Queues a `webhook.test` event (`data: {webhook_id}`) for this webhook only. An inactive webhook is 409.',
  responses: { 202: json(s.Queued, 'Queued'), ...errorsOf(404) },
});

export const redeliverRoute = keyRoute({
  ...routeOf(redeliverVerb),
  path: '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver',
  tags,
  summary: 'Send the event of a past delivery again',
  description: 'A new delivery with its own attempts and the same `webhook-id`. An inactive webhook is 409.',
  responses: { 202: json(s.Queued, 'Queued'), ...errorsOf(404) },
});
