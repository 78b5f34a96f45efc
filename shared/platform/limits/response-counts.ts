import { anomalyWindow, crossed, recordAnomaly } from '../data/anomalies';
import { makeCtx } from '../contract/context';
import { errorFields } from '../contract/error-fields';
import type { Services } from '../contract/services';
import { DAY, dayOf } from '../contract/time';
import { write } from '../data/unit-of-work';

/** Daily counters (bucket `YYYY-MM-DD`) of a tenant's error responses; the audit summary reads them. */
export const RESPONSE_METRICS = { clientErrors: 'responses_4xx', serverErrors: 'responses_5xx' } as const;

/** A day's rows outlive the longest audit retention (90 days), then maintenance purges them. */
const KEEP_MS = 92 * DAY;

/**
 * Counts one authenticated request answered 4xx or 5xx. Durable and exact (the batched counter
 * store); the caller awaits it but must never let a counting failure become the response.
 *
 * A 5xx also counts in the tenant's `server_errors` anomaly window, in the same batched statement
 * as the daily count (so it costs no extra round trip; not Redis: the anomaly is written to
 * Postgres anyway). The response that brings the window to its threshold records
 * `anomaly.server_errors` in a transaction of its own (the request's own failed); if that fails
 * (the database may be what is down) it is logged, never thrown, and that window's signal is lost.
 */
export async function countErrorResponse(services: Services, tenantId: string, status: number, now: Date, requestId: string | null = null): Promise<void> {
  if (status < 400) return;
  const bucket = dayOf(now);
  const daily = services.counters.consume({
    tenantId,
    metric: status >= 500 ? RESPONSE_METRICS.serverErrors : RESPONSE_METRICS.clientErrors,
    bucket,
    limit: null,
    expiresAt: new Date(Date.parse(`${bucket}T00:00:00Z`) + KEEP_MS),
  });
  if (status < 500) {
    await daily;
    return;
  }
  const window = anomalyWindow('server_errors', now);
  const [, inWindow] = await Promise.all([
    daily,
    services.counters.consume({ tenantId, metric: window.metric, bucket: window.bucket, limit: null, expiresAt: window.expiresAt }),
  ]);
  if (!crossed('server_errors', inWindow.value, 1)) return;
  try {
    await write(makeCtx(services, { requestId, actor: 'system', now }), (work) =>
      recordAnomaly(work, { tenantId, kind: 'server_errors', now, count: inWindow.value, requestId }),
    );
  } catch (err) {
    services.log.error('could not record anomaly.server_errors', { request_id: requestId, tenant_id: tenantId, ...errorFields(err) });
  }
}
