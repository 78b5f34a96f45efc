import type { Services } from './services';
import { DAY, dayOf } from './time';

/** Daily counters (bucket `YYYY-MM-DD`) of a tenant's error responses; the audit summary reads them. */
export const RESPONSE_METRICS = { clientErrors: 'responses_4xx', serverErrors: 'responses_5xx' } as const;

/** A day's rows outlive the longest audit retention (90 days), then maintenance purges them. */
const KEEP_MS = 92 * DAY;

/**
 * Counts one authenticated request answered 4xx or 5xx. Durable and exact (the batched counter
 * store); the caller awaits it but must never let a counting failure become the response.
 */
export async function countErrorResponse(services: Services, tenantId: string, status: number, now: Date): Promise<void> {
  if (status < 400) return;
  const bucket = dayOf(now);
  await services.counters.consume({
    tenantId,
    metric: status >= 500 ? RESPONSE_METRICS.serverErrors : RESPONSE_METRICS.clientErrors,
    bucket,
    limit: null,
    expiresAt: new Date(Date.parse(`${bucket}T00:00:00Z`) + KEEP_MS),
  });
}
