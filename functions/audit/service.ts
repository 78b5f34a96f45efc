import type { z } from '@hono/zod-openapi';
import type { AuthContext } from '../../shared/context';
import { AppError } from '../../shared/errors';
import { RESPONSE_METRICS } from '../../shared/response-counts';
import type { Services } from '../../shared/services';
import { tiers, type Tier } from '../../shared/tiers';
import { DAY, dayOf } from '../../shared/time';
import * as q from './queries';
import { type ListQuery, publicOperation, STORED_OPERATIONS, type SummaryQuery, toEntryDto } from './schemas';

/** Start of the tier's retention window: older entries are never returned (and are pruned). */
export const retentionStart = (tier: Tier, now: Date) => new Date(now.getTime() - tiers[tier].limits.audit_retention_days * DAY);

export const invalidRange = (startName: string, endName: string) =>
  new AppError('INVALID_RANGE', `${startName} must not be after ${endName}`, {
    details: [{ path: startName, message: `must not be after ${endName}` }],
  });

/** The read window: `since`/`until` clamped to retention; 422 INVALID_RANGE when since is after until. */
export function readWindow(auth: AuthContext, now: Date, input: { since?: Date; until?: Date }, operations?: readonly string[]): q.Window {
  if (input.since && input.until && input.since > input.until) throw invalidRange('since', 'until');
  const start = retentionStart(auth.tier, now);
  const from = input.since && input.since > start ? input.since : start;
  return { from, until: input.until, operations };
}

export async function list(services: Services, auth: AuthContext, query: z.infer<typeof ListQuery>) {
  const now = services.clock.now();
  const operations = query.event_type?.flatMap((t) => STORED_OPERATIONS[t]);
  const where = q.whereInWindow(auth.tenantId, readWindow(auth, now, query, operations));
  const { page, total } = await q.listPage(services.db, where, query.limit, query.offset);
  return {
    entries: page.map(toEntryDto),
    total,
    has_more: query.offset + page.length < total,
    limit: query.limit,
    offset: query.offset,
  };
}

/**
 * Operations from the audit trail; error and anomaly counts from the per-tenant daily response
 * counters that the error handler keeps, so those are whole UTC days from the day of the start.
 */
export async function summary(services: Services, auth: AuthContext, query: z.infer<typeof SummaryQuery>) {
  const now = services.clock.now();
  if (query.since && query.since > now) throw invalidRange('since', 'now');
  const window = readWindow(auth, now, { since: query.since, until: now });
  const counts = await q.countByOperation(services.db, q.whereInWindow(auth.tenantId, window));
  const by_operation: Record<string, number> = {};
  let total = 0;
  for (const c of counts) {
    const name = publicOperation(c.operation);
    by_operation[name] = (by_operation[name] ?? 0) + c.count;
    total += c.count;
  }
  const responses = await q.sumDailyCounters(
    services.db,
    auth.tenantId,
    [RESPONSE_METRICS.clientErrors, RESPONSE_METRICS.serverErrors],
    dayOf(window.from),
    dayOf(now),
  );
  const clientErrors = responses[RESPONSE_METRICS.clientErrors] ?? 0;
  const serverErrors = responses[RESPONSE_METRICS.serverErrors] ?? 0;
  return {
    total_operations: total,
    error_count: clientErrors + serverErrors,
    anomaly_count: serverErrors,
    by_operation,
    period_start: window.from.toISOString(),
    period_end: now.toISOString(),
    retention_days: tiers[auth.tier].limits.audit_retention_days,
  };
}
