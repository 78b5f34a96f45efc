import { WEBHOOK_DELIVERY_TOPIC } from '../../shared/jobs/events';
import { createRouter, validationHook } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { defineFamily } from '../../shared/platform/http/family';
import { DAY } from '../../shared/platform/contract/time';
import { deliverJob } from './delivery';
import * as q from './queries';
import * as routes from './routes';
import * as service from './service';
import { runFromRoute } from '../../shared/platform/http/verb';
import { createWebhookVerb, deliveriesVerb, getWebhookVerb, listWebhooksVerb, redeliverVerb, sendTestVerb } from './verbs';

const id = (c: { req: { valid(t: 'param'): { webhook_id: string } } }) => c.req.valid('param').webhook_id;

const router = createRouter()
  // An invalid webhook body is 422, as the contract answers webhook validation.
  .openapi(routes.createRoute, async (c) => c.json(await runFromRoute(createWebhookVerb, c), 201), createWebhookVerb.hook)
  .openapi(routes.listRoute, async (c) => c.json(await runFromRoute(listWebhooksVerb, c), 200))
  .openapi(routes.getRoute, async (c) => c.json(await runFromRoute(getWebhookVerb, c), 200))
  .openapi(
    routes.updateRoute,
    async (c) => c.json(await service.updateWebhook(ctxOf(c), { webhookId: id(c), ...c.req.valid('json') }), 200),
    validationHook(422),
  )
  .openapi(routes.deleteRoute, async (c) => c.json(await service.deleteWebhook(ctxOf(c), { webhookId: id(c) }), 200))
  .openapi(routes.rotateSecretRoute, async (c) => c.json(await service.rotateSecret(ctxOf(c), { webhookId: id(c) }), 200))
  .openapi(routes.deliveriesRoute, async (c) => c.json(await runFromRoute(deliveriesVerb, c), 200))
  .openapi(routes.testRoute, async (c) => c.json(await runFromRoute(sendTestVerb, c), 202))
  .openapi(routes.redeliverRoute, async (c) => c.json(await runFromRoute(redeliverVerb, c), 202));

export default defineFamily({
  name: 'webhooks',
  tag: { name: 'Webhooks', description: 'Signed, retried, logged deliveries of your events (Pro+)' },
  router,
  jobs: { [WEBHOOK_DELIVERY_TOPIC]: deliverJob },
  maintenance: {
    old_webhook_deliveries: async ({ db, now }) =>
      Number(((await q.pruneDeliveries(db, new Date(now.getTime() - 30 * DAY))) as { rowCount?: number }).rowCount ?? 0),
  },
});
