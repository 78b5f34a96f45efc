/** @jsxImportSource hono/jsx */
import { deliveriesVerb, getWebhookVerb, listWebhooksVerb, redeliverVerb, sendTestVerb } from '../webhooks/verbs';
import type { ConsoleContext } from './http';
import { messageOf, tenantOf, viewerOf } from './viewer';
import { WebhookPage, WebhooksPage } from './views/webhooks';

const DELIVERIES = 50;

export async function webhooksPage(c: ConsoleContext) {
  const listed = await listWebhooksVerb(tenantOf(c), { limit: 50 });
  return c.html(<WebhooksPage viewer={viewerOf(c)} listed={listed} />);
}

const SENT: Record<string, string> = {
  test: 'Test ping queued: its delivery appears below once the receiver answered (reload to see it).',
  redeliver: 'Redelivery queued: a new delivery appears below once the receiver answered (reload to see it).',
};

/** A webhook and its deliveries, newest first (`GET /v1/webhooks/{webhook_id}/deliveries`). */
export async function webhookPage(c: ConsoleContext, problem?: string, status = 200) {
  const ctx = tenantOf(c);
  const webhook_id = c.req.param('webhook_id');
  const hook = await getWebhookVerb(ctx, { webhook_id });
  const deliveries = await deliveriesVerb(ctx, { webhook_id, limit: DELIVERIES });
  const notice = SENT[c.req.query('sent') ?? ''];
  return c.html(<WebhookPage viewer={viewerOf(c)} hook={hook} deliveries={deliveries} notice={notice} problem={problem} />, status as 200);
}

/** `POST /v1/webhooks/{webhook_id}/test`; then back to the webhook's page, or its refusal there. */
export async function webhookTest(c: ConsoleContext) {
  try {
    await sendTestVerb(tenantOf(c), c.req.param());
  } catch (err) {
    return webhookPage(c, messageOf(err), (err as { status: number }).status);
  }
  return c.redirect(`/console/webhooks/${encodeURIComponent(c.req.param('webhook_id') ?? '')}?sent=test`, 303);
}

/** `POST /v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver`; then back to the webhook's page. */
export async function webhookRedeliver(c: ConsoleContext) {
  try {
    await redeliverVerb(tenantOf(c), c.req.param());
  } catch (err) {
    if ((err as { status?: number }).status === 404) throw err;
    return webhookPage(c, messageOf(err), (err as { status: number }).status);
  }
  return c.redirect(`/console/webhooks/${encodeURIComponent(c.req.param('webhook_id') ?? '')}?sent=redeliver`, 303);
}
