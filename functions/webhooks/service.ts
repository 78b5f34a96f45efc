import type { z } from '@hono/zod-openapi';
import { deliveryJob, insertEvent, WEBHOOK_DELIVERY_TOPIC } from '../../shared/jobs/events';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { AppError, notFound, validationError } from '../../shared/platform/contract/errors';
import { newId } from '../../shared/platform/contract/ids';
import { destinationProblem } from '../../shared/platform/http/outbound';
import type { PageInput } from '../../shared/platform/data/pagination';
import { DAY } from '../../shared/platform/contract/time';
import { type Work, write } from '../../shared/platform/data/unit-of-work';
import * as q from './queries';
import { type CreateWebhookBody, ListPaging, toDeliveryDto, toWebhookDto, type UpdateWebhookBody } from './schemas';

/** After a rotation, deliveries are signed with the old secret too for this long. */
export const SECRET_OVERLAP_MS = DAY;

/** A Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
function newSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

/** The address rule at registration: 422 naming `url`, like the body's other checks. */
export async function assertDestination(ctx: TenantCtx, url: string) {
  const { config } = ctx.services;
  const problem = await destinationProblem(url, { allowInsecure: config.WEBHOOKS_ALLOW_INSECURE, resolveHost: ctx.services.resolveHost });
  if (problem) throw validationError('url', problem, 422);
}

/** URLs can carry tokens (Slack's do): the audit trail keeps only the origin. */
const originOf = (url: string) => new URL(url).origin;

async function webhookFor(ctx: TenantCtx, webhookId: string, lock = false) {
  const found = await q.webhookOf(ctx.db, ctx.tenantId, webhookId, lock);
  if (!found) throw notFound('Webhook');
  return found;
}

const audit = (work: Work<TenantCtx>, operation: string, webhookId: string, metadata: Record<string, unknown>) =>
  work.audit({ operation, resourceType: 'webhook', resourceId: webhookId, metadata });

/**
 * A new webhook, in the unit of work of the create verb, which has counted the tenant's webhooks
 * under the webhooks lock (functions/webhooks/verbs.ts) and checked the destination before it.
 */
export async function createWebhook(ctx: TenantCtx, input: z.infer<typeof CreateWebhookBody>) {
  return write(ctx, async (work) => {
    const secret = newSecret();
    const hook = await q.insertWebhook(work.tx, {
      id: newId('webhook'),
      tenantId: ctx.tenantId,
      url: input.url,
      events: [...new Set(input.events)],
      active: true,
      description: input.description ?? null,
      format: input.format,
      secret,
      createdAt: ctx.now,
      updatedAt: ctx.now,
    });
    await audit(work, 'webhook.created', hook.id, { url_origin: originOf(hook.url), events: hook.events, format: hook.format });
    await work.milestone('first_webhook', { webhook_id: hook.id });
    return { ...toWebhookDto(hook), secret };
  });
}

export async function listWebhooks(ctx: TenantCtx, page: PageInput) {
  const { page: found, total } = await q.listWebhooks(ctx.db, ctx.tenantId, page);
  return { webhooks: found.map(toWebhookDto), ...ListPaging.meta(total, page, found.length) };
}

export async function getWebhook(ctx: TenantCtx, input: { webhookId: string }) {
  return toWebhookDto(await webhookFor(ctx, input.webhookId));
}

export async function updateWebhook(ctx: TenantCtx, input: { webhookId: string } & z.infer<typeof UpdateWebhookBody>) {
  const { webhookId, ...change } = input;
  if (change.url !== undefined) await assertDestination(ctx, change.url);
  return write(ctx, async (work) => {
    const before = await webhookFor(work.ctx, webhookId, true);
    // Turning a webhook back on starts a fresh streak: the 3 days count from its next failure.
    const resumed = change.active === true && !before.active;
    const updated = await q.updateWebhook(
      work.tx,
      ctx.tenantId,
      webhookId,
      { ...change, ...(change.events ? { events: [...new Set(change.events)] } : {}), ...(resumed ? { failingSince: null } : {}) },
      ctx.now,
    );
    const changed = Object.keys(change);
    await audit(work, 'webhook.updated', webhookId, {
      changed,
      ...(change.url ? { url_origin: originOf(change.url) } : {}),
      ...(change.active !== undefined ? { active: change.active } : {}),
    });
    return toWebhookDto(updated);
  });
}

export async function deleteWebhook(ctx: TenantCtx, input: { webhookId: string }) {
  return write(ctx, async (work) => {
    if (!(await q.deleteWebhook(work.tx, ctx.tenantId, input.webhookId))) throw notFound('Webhook');
    await audit(work, 'webhook.deleted', input.webhookId, {});
    return { success: true as const, webhook_id: input.webhookId };
  });
}

export async function rotateSecret(ctx: TenantCtx, input: { webhookId: string }) {
  return write(ctx, async (work) => {
    const hook = await webhookFor(work.ctx, input.webhookId, true);
    const secret = newSecret();
    const overlapUntil = new Date(ctx.now.getTime() + SECRET_OVERLAP_MS);
    await q.updateWebhook(work.tx, ctx.tenantId, hook.id, { secret, previousSecret: hook.secret, previousSecretExpiresAt: overlapUntil }, ctx.now);
    await audit(work, 'webhook.secret_rotated', hook.id, { previous_secret_expires_at: overlapUntil.toISOString() });
    return { webhook_id: hook.id, secret, previous_secret_expires_at: overlapUntil.toISOString() };
  });
}

export async function listDeliveries(ctx: TenantCtx, input: { webhookId: string } & PageInput) {
  await webhookFor(ctx, input.webhookId);
  const { page: found, total } = await q.listDeliveries(ctx.db, ctx.tenantId, input.webhookId, input);
  return { deliveries: found.map(toDeliveryDto), ...ListPaging.meta(total, input, found.length) };
}

const queuedMessage = (webhookId: string) => `Queued; see GET /v1/webhooks/${webhookId}/deliveries for the outcome.`;

/** Sends a signed `webhook.test` event to this (active) webhook only; it is not streamed or sent elsewhere. */
export async function sendTest(ctx: TenantCtx, input: { webhookId: string }) {
  return write(ctx, async (work) => {
    const hook = await webhookFor(work.ctx, input.webhookId);
    if (!hook.active) throw inactive(hook.id);
    const event = await insertEvent(work.tx, { tenantId: ctx.tenantId, type: 'webhook.test', data: { webhook_id: hook.id }, at: ctx.now, seq: null });
    const deliveryId = await queueDelivery(work, hook.id, event.id);
    return { delivery_id: deliveryId, event_id: event.id, message: queuedMessage(hook.id) };
  });
}

/** Sends the event of a past delivery again, as a new delivery with its own attempts. */
export async function redeliver(ctx: TenantCtx, input: { webhookId: string; deliveryId: string }) {
  return write(ctx, async (work) => {
    const hook = await webhookFor(work.ctx, input.webhookId);
    const past = await q.deliveryOf(work.tx, ctx.tenantId, hook.id, input.deliveryId);
    if (!past) throw notFound('Delivery');
    if (!hook.active) throw inactive(hook.id);
    if (!(await q.eventOf(work.tx, ctx.tenantId, past.eventId))) throw new AppError('NOT_FOUND', 'The event of that delivery is past its 30-day retention');
    const deliveryId = await queueDelivery(work, hook.id, past.eventId);
    await audit(work, 'webhook.redelivered', hook.id, { delivery_id: past.id, event_id: past.eventId, new_delivery_id: deliveryId });
    return { delivery_id: deliveryId, event_id: past.eventId, message: queuedMessage(hook.id) };
  });
}

const inactive = (webhookId: string) =>
  new AppError('CONFLICT', `Webhook ${webhookId} is inactive; set "active": true with PUT /v1/webhooks/${webhookId} first`);

async function queueDelivery(work: Work<TenantCtx>, webhookId: string, eventId: string) {
  const job = deliveryJob(webhookId, eventId);
  await work.enqueue({ topic: WEBHOOK_DELIVERY_TOPIC, payload: { ...job } });
  return job.delivery_id;
}
