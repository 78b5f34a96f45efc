import type { z } from '@hono/zod-openapi';
import { ANOMALY_KINDS, type AnomalyKind } from '../../shared/platform/data/anomalies';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { assertRange } from '../../shared/platform/contract/params';
import { RESPONSE_METRICS } from '../../shared/platform/limits/response-counts';
import { tiers, type Tier } from '../../shared/platform/contract/tiers';
import { DAY, dayOf } from '../../shared/platform/contract/time';
import * as q from './queries';
import { ListPaging, type ListQuery, publicOperation, STORED_OPERATIONS, type SummaryQuery, toEntryDto } from './schemas';

/** Start of the tier's retention window: older entries are never returned (and are pruned). */
export const retentionStart = (tier: Tier, now: Date) => new Date(now.getTime() - tiers[tier].limits.audit_retention_days * DAY);

/** The read window: `since`/`until` (ordered by the schema) clamped to the retention window. */
export function readWindow({ tier, now }: TenantCtx, input: { since?: Date; until?: Date }, operations?: readonly string[]): q.Window {
  const start = retentionStart(tier, now);
  const from = input.since && input.since > start ? input.since : start;
  return { from, until: input.until, operations };
}

export async function list(ctx: TenantCtx, query: z.infer<typeof ListQuery>) {
  const operations = query.event_type?.flatMap((t) => STORED_OPERATIONS[t]);
  const where = q.whereInWindow(ctx.tenantId, readWindow(ctx, query, operations));
  const { page, total } = await q.listPage(ctx.db, where, query);
  return { entries: page.map(toEntryDto), ...ListPaging.meta(total, query, page.length) };
}

/**
 * Operations from the audit trail; error and anomaly counts from the per-tenant daily response
 * counters that the error handler keeps, so those are whole UTC days from the day of the start.
 * `anomalies` counts the anomaly events of the period by kind, from their audit entries.
 */
export async function summary(ctx: TenantCtx, query: z.infer<typeof SummaryQuery>) {
  const { now, tenantId, tier } = ctx;
  assertRange(query.since, now, 'since', 'now');
  const window = readWindow(ctx, { since: query.since, until: now });
  const counts = await q.countByOperation(ctx.db, q.whereInWindow(tenantId, window));
  const by_operation: Record<string, number> = {};
  let total = 0;
  for (const c of counts) {
    const name = publicOperation(c.operation);
    by_operation[name] = (by_operation[name] ?? 0) + c.count;
    total += c.count;
  }
  const responses = await q.sumDailyCounters(ctx.db, tenantId, [RESPONSE_METRICS.clientErrors, RESPONSE_METRICS.serverErrors], dayOf(window.from), dayOf(now));
  const clientErrors = responses[RESPONSE_METRICS.clientErrors] ?? 0;
  const serverErrors = responses[RESPONSE_METRICS.serverErrors] ?? 0;
  return {
    total_operations: total,
    error_count: clientErrors + serverErrors,
    anomaly_count: serverErrors,
    anomalies: Object.fromEntries(ANOMALY_KINDS.map((kind) => [kind, by_operation[`anomaly.${kind}`] ?? 0])) as Record<AnomalyKind, number>,
    by_operation,
    period_start: window.from.toISOString(),
    period_end: now.toISOString(),
    retention_days: tiers[tier].limits.audit_retention_days,
  };
}
