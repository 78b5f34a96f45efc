/** @jsxImportSource hono/jsx */
import { requireFeature } from '../../shared/platform/tiers';
import { DeliveryParams, WebhookParams } from '../webhooks/schemas';
import * as webhooks from '../webhooks/service';
import type { ConsoleContext } from './http';
import { messageOf, tenantOf, viewerOf } from './viewer';
import { WebhookPage, WebhooksPage } from './views/webhooks';

const DELIVERIES = 50;

/** The session's ctx behind the webhooks routes' tier gate (Pro+). */
const gated = (c: ConsoleContext) => {
  const ctx = tenantOf(c);
  requireFeature(ctx.tier, 'webhooks');
  return ctx;
};

const webhookIdOf = (c: ConsoleContext) => WebhookParams.parse({ webhook_id: c.req.param('webhook_id') }).webhook_id;

export async function webhooksPage(c: ConsoleContext) {
  const listed = await webhooks.listWebhooks(gated(c), { limit: 50, offset: 0 });
  return c.html(<WebhooksPage viewer={viewerOf(c)} listed={listed} />);
}

const SENT: Record<string, string> = {
  test: 'Test ping queued: its delivery appears below once the receiver answered (reload to see it).',
  redeliver: 'Redelivery queued: a new delivery appears below once the receiver answered (reload to see it).',
};

/** A webhook and its deliveries, newest first (`GET /v1/webhooks/{webhook_id}/deliveries`). */
export async function webhookPage(c: ConsoleContext, problem?: string, status = 200) {
  const ctx = gated(c);
  const webhookId = webhookIdOf(c);
  const hook = await webhooks.getWebhook(ctx, { webhookId });
  const deliveries = await webhooks.listDeliveries(ctx, { webhookId, limit: DELIVERIES, offset: 0 });
  const notice = SENT[c.req.query('sent') ?? ''];
  return c.html(<WebhookPage viewer={viewerOf(c)} hook={hook} deliveries={deliveries} notice={notice} problem={problem} />, status as 200);
}

/** `POST /v1/webhooks/{webhook_id}/test`; then back to the webhook's page, or its refusal there. */
export async function webhookTest(c: ConsoleContext) {
  const webhookId = webhookIdOf(c);
  try {
    await webhooks.sendTest(gated(c), { webhookId });
  } catch (err) {
    return webhookPage(c, messageOf(err), (err as { status: number }).status);
  }
  return c.redirect(`/console/webhooks/${webhookId}?sent=test`, 303);
}

/** `POST /v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver`; then back to the webhook's page. */
export async function webhookRedeliver(c: ConsoleContext) {
  const { webhook_id: webhookId, delivery_id: deliveryId } = DeliveryParams.parse(c.req.param());
  try {
    await webhooks.redeliver(gated(c), { webhookId, deliveryId });
  } catch (err) {
    if ((err as { status?: number }).status === 404) throw err;
    return webhookPage(c, messageOf(err), (err as { status: number }).status);
  }
  return c.redirect(`/console/webhooks/${webhookId}?sent=redeliver`, 303);
}
