import { sql } from 'drizzle-orm';
import type { AuthContext } from './context';
import { type DbOrTx, rows } from './db';
import type { CounterOutcome } from './counters';
import type { Services } from './services';
import { featureFlags, tiers, type Tier } from './tiers';
import { dayOf, periodOf, periodResetsAt } from './time';

export const QUOTA_METRICS = ['api_calls', 'memories', 'rollbacks'] as const;
export type QuotaMetric = (typeof QUOTA_METRICS)[number];

/** Live memories are one counter per tenant (bucket `all`), kept by the memory verbs. */
export const LIVE_MEMORIES = { metric: 'memories_live', bucket: 'all' } as const;
const DAILY_CALLS = 'api_calls_day';

/**
 * The counters a usage report shows, read in the same statement that counts the request. One list
 * per day, shared by every request of that day (the counter store reads a list once per tenant).
 */
let reportList: { day: string; counters: readonly { metric: string; bucket: string }[] } = { day: '', counters: [] };
function reportCounters(now: Date): readonly { metric: string; bucket: string }[] {
  const day = dayOf(now);
  if (reportList.day !== day) {
    const counters = [...QUOTA_METRICS.map((metric) => ({ metric, bucket: periodOf(now) })), { metric: DAILY_CALLS, bucket: day }, LIVE_MEMORIES];
    reportList = { day, counters: Object.freeze(counters) };
  }
  return reportList.counters;
}

/** Counts one authenticated request against the month (with its ceiling) and the day. */
export async function consumeApiCall(services: Services, auth: AuthContext, now: Date): Promise<CounterOutcome> {
  const [month] = await Promise.all([
    services.counters.consume({
      tenantId: auth.tenantId,
      metric: 'api_calls',
      bucket: periodOf(now),
      limit: tiers[auth.tier].limits.api_calls,
      alsoRead: reportCounters(now),
    }),
    services.counters.consume({ tenantId: auth.tenantId, metric: DAILY_CALLS, bucket: dayOf(now), limit: null }),
  ]);
  return month;
}

export interface QuotaLine {
  current: number;
  used: number;
  limit: number | null;
  unlimited: boolean;
}

const line = (current: number, limit: number | null): QuotaLine => ({ current, used: current, limit, unlimited: limit === null });
const percent = (l: QuotaLine) => (l.limit ? Math.min(100, Math.round((l.current / l.limit) * 1000) / 10) : 0);

export function pressureOf(maxPercent: number): 'low' | 'medium' | 'high' | 'critical' {
  if (maxPercent >= 95) return 'critical';
  if (maxPercent >= 80) return 'high';
  if (maxPercent >= 50) return 'medium';
  return 'low';
}

/** The `usage` object and upgrade link that every quota 429 carries. */
export function usageSnapshotForError(services: Services, tier: Tier, metric: QuotaMetric, current: number, now: Date) {
  return {
    usage: { metric, current, limit: tiers[tier].limits[metric], plan: tier, resets_at: periodResetsAt(now).toISOString() },
    retry_after: Math.max(1, Math.ceil((periodResetsAt(now).getTime() - now.getTime()) / 1000)),
    upgrade_url: services.config.UPGRADE_URL,
  };
}

/**
 * The report's counters: from the snapshot taken when this request was counted (the common case:
 * no extra query), else read now.
 */
async function readQuotas(services: Services, tenantId: string, tier: Tier, now: Date, counted?: CounterOutcome) {
  const period = periodOf(now);
  const wanted = reportCounters(now);
  const [apiCalls, memories, rollbacks, today, live] = counted
    ? wanted.map((w, i) => (i === 0 ? counted.value : counted.reading(w.metric, w.bucket)))
    : await services.counters.read(tenantId, wanted);
  const limits = tiers[tier].limits;
  return {
    period,
    quotas: {
      api_calls: line(apiCalls, limits.api_calls),
      memories: line(memories, limits.memories),
      rollbacks: line(rollbacks, limits.rollbacks),
    },
    today,
    live,
  };
}

/** Body of GET /v1/usage. Spend figures are list-price estimates, documented in the OpenAPI. */
export async function usageReport(services: Services, auth: AuthContext, counted?: CounterOutcome) {
  const now = services.clock.now();
  const { period, quotas } = await readQuotas(services, auth.tenantId, auth.tier, now, counted);
  const spec = tiers[auth.tier];
  const quota_percent = {
    api_calls: percent(quotas.api_calls),
    memories: percent(quotas.memories),
    rollbacks: percent(quotas.rollbacks),
  };
  const pressure = pressureOf(Math.max(...Object.values(quota_percent)));
  const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const resets = periodResetsAt(now);
  const end = resets.getTime();
  const elapsed = Math.max(now.getTime() - start, 1);
  const fraction = elapsed / (end - start);
  let projected_limit_date: string | null = null;
  const calls = quotas.api_calls;
  if (calls.limit !== null && calls.current > 0) {
    const at = start + (calls.limit / calls.current) * elapsed;
    if (at < end) projected_limit_date = new Date(Math.max(at, now.getTime())).toISOString();
  }
  return {
    tier: auth.tier,
    ...quotas,
    audit_retention_days: spec.limits.audit_retention_days,
    features: featureFlags(auth.tier),
    period,
    resets_at: resets.toISOString(),
    usage_pressure_level: pressure,
    projected_limit_date,
    budget_alert: pressure === 'high' || pressure === 'critical' || projected_limit_date !== null,
    spend_estimate: {
      spend_estimate_usd: Math.round(spec.monthly_usd * fraction * 100) / 100,
      projected_spend_estimate_usd: spec.monthly_usd,
      storage_estimate_usd: Math.round(quotas.memories.current * 0.0001 * 100) / 100,
    },
    quota_percent,
    upgrade_message:
      auth.tier !== 'enterprise' && (pressure === 'high' || pressure === 'critical')
        ? `You have used ${Math.max(...Object.values(quota_percent))}% of a ${auth.tier} quota; upgrade at ${services.config.UPGRADE_URL}`
        : null,
  };
}

/** Body of GET /v1/dashboard. */
export async function dashboardReport(services: Services, auth: AuthContext, counted?: CounterOutcome) {
  const now = services.clock.now();
  const { period, quotas, today, live } = await readQuotas(services, auth.tenantId, auth.tier, now, counted);
  const usage_percent = {
    api_calls: percent(quotas.api_calls),
    memories: percent(quotas.memories),
    rollbacks: percent(quotas.rollbacks),
  };
  return {
    memory_count: live,
    tier: auth.tier,
    features: featureFlags(auth.tier),
    usage_percent,
    pressure: pressureOf(Math.max(...Object.values(usage_percent))),
    api_calls_today: today,
    limits: {
      api_calls: quotas.api_calls.limit,
      memories: quotas.memories.limit,
      rollbacks: quotas.rollbacks.limit,
    },
    period,
  };
}

/**
 * Counts `amount` against a monthly quota inside the caller's transaction, so the write and its
 * count commit or fail together. Returns false (and counts nothing) when it would pass the limit.
 */
export async function consumeQuotaInTx(
  tx: DbOrTx,
  tenantId: string,
  tier: Tier,
  metric: Exclude<QuotaMetric, 'api_calls'>,
  now: Date,
  amount = 1,
): Promise<boolean> {
  const limit = tiers[tier].limits[metric];
  if (limit !== null && amount > limit) return false;
  const updated = await rows<{ value: string }>(
    tx,
    sql`INSERT INTO usage_counters (tenant_id, metric, bucket, value) VALUES (${tenantId}, ${metric}, ${periodOf(now)}, ${amount})
        ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = usage_counters.value + EXCLUDED.value
        WHERE ${limit}::bigint IS NULL OR usage_counters.value + EXCLUDED.value <= ${limit}::bigint
        RETURNING value`,
  );
  return updated.length > 0;
}

/** Keeps the live-memory count (dashboard, status) in step with inserts and deletes. */
export async function adjustLiveMemories(tx: DbOrTx, tenantId: string, delta: number): Promise<void> {
  if (delta === 0) return;
  await tx.execute(sql`
    INSERT INTO usage_counters (tenant_id, metric, bucket, value) VALUES (${tenantId}, ${LIVE_MEMORIES.metric}, ${LIVE_MEMORIES.bucket}, ${Math.max(delta, 0)})
    ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = GREATEST(usage_counters.value + ${delta}, 0)`);
}
