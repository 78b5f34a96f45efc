import { Webhook } from 'standardwebhooks';
import { type DeliveryJob, type EventPayload } from '../../shared/jobs/events';
import { sendMail } from '../../shared/jobs/mail';
import type { JobHandler } from '../../shared/jobs/outbox';
import { systemCtx } from '../../shared/platform/contract/context';
import { newId } from '../../shared/platform/contract/ids';
import { checkDestination } from '../../shared/platform/http/outbound';
import type { Services } from '../../shared/platform/contract/services';
import { DAY } from '../../shared/platform/contract/time';
import { write } from '../../shared/platform/data/unit-of-work';
import { formatBody } from './formats';
import * as q from './queries';
import { contextOf, inSpan, traceHeaders } from '../../shared/platform/http/tracing';

/** A webhook whose deliveries have failed this long without one success is deactivated. */
export const DEACTIVATE_AFTER_MS = 3 * DAY;

interface Outcome {
  statusCode: number;
  success: boolean;
  error: string | null;
  durationMs: number;
}

/**
 * Standard Webhooks headers: `webhook-id` (the event id, the same on every attempt so receivers
 * can drop repeats), `webhook-timestamp` (seconds) and `webhook-signature`, one `v1,<base64 HMAC>`
 * per live secret (two while a rotated-out secret is still honoured).
 */
export function signatureHeaders(secrets: string[], eventId: string, at: Date, body: string): Record<string, string> {
  const signatures = secrets.map((secret) => new Webhook(secret).sign(eventId, at, body));
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}

export function liveSecrets(hook: q.WebhookRow, now: Date): string[] {
  const previous = hook.previousSecret && hook.previousSecretExpiresAt && hook.previousSecretExpiresAt > now ? [hook.previousSecret] : [];
  return [hook.secret, ...previous];
}

/** One attempt: the address rule, then a POST that follows no redirect and gives up after 10 s. */
async function send(services: Services, hook: q.WebhookRow, event: EventPayload, now: Date): Promise<Outcome> {
  const started = Date.now();
  const took = () => Date.now() - started;
  const checked = await checkDestination(hook.url, { allowInsecure: services.config.WEBHOOKS_ALLOW_INSECURE, resolveHost: services.resolveHost });
  if (checked.problem !== null) return { statusCode: 0, success: false, error: `Not sent: the URL ${checked.problem}`, durationMs: took() };
  const body = formatBody(hook.format, event);
  try {
    const init: RequestInit = {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'engram-webhooks/1',
        ...signatureHeaders(liveSecrets(hook, now), event.id, now, body),
        ...traceHeaders(),
      },
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(services.config.WEBHOOK_TIMEOUT_MS),
    };
    // Node connects to the addresses just checked, so a name cannot resolve elsewhere in between.
    // Workers have no such hook, and need none for this: their fetch cannot reach private or
    // loopback addresses (nor the metadata service), so a rebound name fails there on its own.
    const res = checked.addresses && services.fetchAt ? await services.fetchAt(hook.url, init, checked.addresses) : await fetch(hook.url, init);
    // The receiver's answer is never read, let alone kept: it may quote the event (a memory's
    // text), and a delivery log outlives the memory's erasure. The status says what happened.
    await res.body?.cancel().catch(() => undefined);
    if (res.status >= 200 && res.status < 300) return { statusCode: res.status, success: true, error: null, durationMs: took() };
    const why = res.status >= 300 && res.status < 400 ? 'redirect not followed' : `receiver answered ${res.status}`;
    return { statusCode: res.status, success: false, error: why, durationMs: took() };
  } catch (err) {
    const timeout = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
    const message = timeout
      ? `no answer within ${services.config.WEBHOOK_TIMEOUT_MS / 1000} s`
      : `request failed: ${err instanceof Error ? err.message : String(err)}`;
    return { statusCode: 0, success: false, error: message, durationMs: took() };
  }
}

/**
 * Records the attempt, and keeps the failing streak: a success ends it; a failure starts it or,
 * once it has lasted 3 days, deactivates the webhook with a `webhook.deactivated` event, an audit
 * entry and a mail to the owner. In one transaction, so a crash never records half of it.
 */
async function settle(services: Services, now: Date, hook: q.WebhookRow, event: EventPayload, attemptId: string, attempt: number, outcome: Outcome) {
  return write(systemCtx(services, now), async (work) => {
    const row = {
      id: attemptId,
      webhookId: hook.id,
      tenantId: hook.tenantId,
      eventId: event.id,
      eventType: event.type,
      attempt,
      statusCode: outcome.statusCode,
      success: outcome.success,
      error: outcome.error?.slice(0, 1000) ?? null,
      durationMs: Math.round(outcome.durationMs),
      createdAt: now,
    };
    if (outcome.success) {
      // The common case takes no lock on the webhook row, so deliveries to one webhook run side by side.
      await q.insertDelivery(work.tx, row);
      await q.endFailingStreak(work.tx, hook.tenantId, hook.id);
      return { deactivated: false };
    }
    const current = await q.webhookOf(work.tx, hook.tenantId, hook.id, true);
    if (!current) return { deactivated: false };
    await q.insertDelivery(work.tx, row);
    if (!current.failingSince) {
      await q.setFailingSince(work.tx, hook.tenantId, hook.id, now);
      return { deactivated: false };
    }
    if (!current.active || now.getTime() - current.failingSince.getTime() < DEACTIVATE_AFTER_MS) return { deactivated: false };
    await q.updateWebhook(work.tx, hook.tenantId, hook.id, { active: false }, now);
    const data = { webhook_id: hook.id, failing_since: current.failingSince.toISOString(), last_error: outcome.error };
    await work.audit({ tenantId: hook.tenantId, operation: 'webhook.deactivated', resourceType: 'webhook', resourceId: hook.id, metadata: data });
    await work.event('webhook.deactivated', data, { tenantId: hook.tenantId });
    const email = await q.ownerEmail(work.tx, hook.tenantId);
    if (email) {
      await sendMail(work, {
        to: email,
        subject: 'engram: a webhook was deactivated',
        text: `Deliveries to your webhook ${hook.id} have failed since ${current.failingSince.toISOString()} (last error: ${outcome.error}). It is now inactive; fix the receiver and set "active": true with PUT /v1/webhooks/${hook.id} to resume.`,
      });
    }
    return { deactivated: true };
  });
}

/**
 * The `webhook.deliver` job: one event to one webhook. A failed attempt throws, so the outbox
 * retries it with its backoff (about 30 s, 2 min, 10 min, 1 h, 6 h, 24 h), then gives up. A
 * webhook deleted, paused or deactivated meanwhile gets nothing more.
 */
export const deliverJob: JobHandler = async (job, { db, now, services }) => {
  const { webhook_id, event_id, delivery_id, traceparent } = job.payload as unknown as DeliveryJob;
  if (!job.tenant_id) return;
  const hook = await q.webhookOf(db, job.tenant_id, webhook_id);
  const stored = await q.eventOf(db, job.tenant_id, event_id);
  if (!hook?.active || !stored) return;
  const event = stored.payload;
  // In the trace of the request that caused the event, when there was one.
  const outcome = await inSpan(
    'webhook.deliver',
    { 'engram.webhook.event_type': event.type, 'engram.webhook.attempt': job.attempts },
    async (span) => {
      const result = await send(services, hook, event, now);
      span?.setAttribute('http.response.status_code', result.statusCode);
      return result;
    },
    { parent: contextOf(traceparent), tracing: services.tracing },
  );
  const attemptId = job.attempts === 1 ? delivery_id : newId('delivery');
  const { deactivated } = await settle(services, now, hook, event, attemptId, job.attempts, outcome);
  services.metrics?.webhookDelivery(outcome.success ? 'success' : 'failure');
  // The receiver's answer stays in the delivery row; the log and the outbox get only the status.
  if (!outcome.success && !deactivated) throw new Error(`webhook ${hook.id} attempt ${job.attempts} failed (status ${outcome.statusCode})`);
};
