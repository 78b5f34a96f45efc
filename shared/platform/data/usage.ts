import { type SQL } from 'drizzle-orm';
import { sql } from './db';
import type { AuthContext, Ctx } from '../contract/context';
import { limitReached } from '../contract/errors';
import { type DbOrTx, rows } from './db';
import type { CounterOutcome } from './counters';
import type { Services } from '../contract/services';
import { tiers, type Tier } from '../contract/tiers';
import { dayOf, periodOf, periodResetsAt } from '../contract/time';

export const QUOTA_METRICS = ['api_calls', 'memories', 'rollbacks'] as const;
export type QuotaMetric = (typeof QUOTA_METRICS)[number];

/** Live memories are one counter per tenant (bucket `all`), kept by the memory verbs. */
export const LIVE_MEMORIES = { metric: 'memories_live', bucket: 'all' } as const;
export const DAILY_CALLS = 'api_calls_day';

/**
 * The counters a usage report shows, read in the same statement that counts the request. One list
 * per day, shared by every request of that day (the counter store reads a list once per tenant).
 */
interface ReportList {
  day: string;
  counters: readonly { metric: string; bucket: string }[];
  /** The counters of `counters` kept in Postgres even with Redis, and their buckets as one string (a cache key's part). */
  postgres: readonly { metric: string; bucket: string }[];
  postgresBuckets: string;
}
let reportList: ReportList = { day: '', counters: [], postgres: [], postgresBuckets: '' };
function reportListOf(now: Date): ReportList {
  const day = dayOf(now);
  if (reportList.day !== day) {
    const counters = [...QUOTA_METRICS.map((metric) => ({ metric, bucket: periodOf(now) })), { metric: DAILY_CALLS, bucket: day }, LIVE_MEMORIES];
    const postgres = counters.filter((c) => c.metric !== 'api_calls' && c.metric !== DAILY_CALLS);
    reportList = { day, counters: Object.freeze(counters), postgres: Object.freeze(postgres), postgresBuckets: postgres.map((c) => c.bucket).join(' ') };
  }
  return reportList;
}
export function reportCounters(now: Date): readonly { metric: string; bucket: string }[] {
  return reportListOf(now).counters;
}

/**
 * The routes whose handler reads the counters the count took (`counted`): with the Redis gate,
 * the counters kept in Postgres are read beside the Redis call instead of after it.
 */
export const REPORT_PATHS: ReadonlySet<string> = new Set(['/v1/usage', '/v1/dashboard']);

/**
 * The counters of a report that live in Postgres even with Redis (the write verbs keep them), and
 * their buckets as one string; one list per day, as `reportCounters`.
 */
export function postgresReportCounters(now: Date): { counters: readonly { metric: string; bucket: string }[]; buckets: string } {
  const list = reportListOf(now);
  return { counters: list.postgres, buckets: list.postgresBuckets };
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

/** The `usage` object and upgrade link that every quota 429 carries. */
/** 429 RATE_LIMITED for a monthly quota used up, with `usage` and `Retry-After` until the period resets. */
export function quotaExhausted(services: Services, tier: Tier, metric: QuotaMetric, current: number, now: Date, message: string) {
  const usage = { metric, current, limit: tiers[tier].limits[metric] ?? current, plan: tier, resets_at: periodResetsAt(now).toISOString() };
  return limitReached(message, usage, { now, upgradeUrl: services.config.UPGRADE_URL });
}

/**
 * Tenants whose Postgres-held usage counters (memories, rollbacks, live memories) a transaction
 * changed. The unit of work reads it after commit, so that with Redis every instance's cached copy
 * of those counters goes stale before the write answers (request-gate.ts).
 */
const usageChanges = new WeakMap<object, Set<string>>();
export function markUsageChanged(tx: DbOrTx, tenantId: string) {
  const tenants = usageChanges.get(tx);
  if (tenants) tenants.add(tenantId);
  else usageChanges.set(tx, new Set([tenantId]));
}
export function usageChangedIn(tx: DbOrTx): ReadonlySet<string> | undefined {
  return usageChanges.get(tx);
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
  const updated = await rows<{ value: string }>(tx, quotaUpsertSql(tenantId, metric, now, amount, limit));
  if (updated.length) markUsageChanged(tx, tenantId);
  return updated.length > 0;
}

/** Counts against a monthly quota in the write's transaction; 429 RATE_LIMITED with `usage` when it would pass the limit. */
export async function spendQuota(
  ctx: Ctx,
  tx: DbOrTx,
  metric: Exclude<QuotaMetric, 'api_calls'>,
  owner: { tenantId: string; tier: Tier },
  message: string,
): Promise<void> {
  if (await consumeQuotaInTx(tx, owner.tenantId, owner.tier, metric, ctx.now)) return;
  throw quotaExhausted(ctx.services, owner.tier, metric, tiers[owner.tier].limits[metric] ?? 0, ctx.now, message);
}

/** Keeps the live-memory count (dashboard, status) in step with inserts and deletes. */
export async function adjustLiveMemories(tx: DbOrTx, tenantId: string, delta: number): Promise<void> {
  if (delta === 0) return;
  markUsageChanged(tx, tenantId);
  await tx.execute(liveMemoriesSql(tenantId, delta));
}

/**
 * The rule of a monthly quota, as one statement: `amount` more of `metric` in the period of `now`,
 * unless the count would pass `limit` (null: none); RETURNING the new count, no row when refused.
 * `from`: a relation to read first (one row), so a caller's WITH takes its locks in its order.
 */
export const quotaUpsertSql = (tenantId: string, metric: Exclude<QuotaMetric, 'api_calls'>, now: Date, amount: number, limit: number | null, from?: SQL) => sql`
    INSERT INTO usage_counters (tenant_id, metric, bucket, value) SELECT ${tenantId}, ${metric}, ${periodOf(now)}, ${amount}::bigint ${from ? sql`FROM ${from}` : sql``}
    ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = usage_counters.value + EXCLUDED.value
    WHERE ${limit}::bigint IS NULL OR usage_counters.value + EXCLUDED.value <= ${limit}::bigint
    RETURNING value`;

/** The statement of adjustLiveMemories, to run inside a caller's data-modifying WITH; `from` as in quotaUpsertSql. */
export const liveMemoriesSql = (tenantId: string, delta: number, from?: SQL) => sql`
    INSERT INTO usage_counters (tenant_id, metric, bucket, value) SELECT ${tenantId}, ${LIVE_MEMORIES.metric}, ${LIVE_MEMORIES.bucket}, ${Math.max(delta, 0)}::bigint ${from ? sql`FROM ${from}` : sql``}
    ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = GREATEST(usage_counters.value + ${delta}::bigint, 0)`;
