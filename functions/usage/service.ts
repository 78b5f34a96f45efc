import * as q from './queries';
import type { TenantCtx } from '../../shared/platform/contract/context';
import type { CounterOutcome } from '../../shared/platform/data/counters';
import type { Services } from '../../shared/platform/contract/services';
import { featureFlags, tiers, type Tier } from '../../shared/platform/contract/tiers';
import { periodOf, periodResetsAt } from '../../shared/platform/contract/time';
import { reportCounters } from '../../shared/platform/data/usage';

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

/**
 * The report's counters: from the snapshot taken when this request was counted (on Postgres and
 * embedded: all of them, no extra query), and whatever that snapshot lacks (with Redis: the
 * counters kept in Postgres) read now.
 */
async function readQuotas(services: Services, tenantId: string, tier: Tier, now: Date, counted?: CounterOutcome) {
  const period = periodOf(now);
  const wanted = reportCounters(now);
  const known = counted ? wanted.map((w, i) => (i === 0 ? counted.value : counted.reading(w.metric, w.bucket))) : wanted.map(() => undefined);
  const unread = wanted.filter((_, i) => known[i] === undefined);
  const read = await services.counters.read(tenantId, unread);
  const [apiCalls, memories, rollbacks, today, live] = known.map((v) => v ?? read.shift() ?? 0);
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
/** `counted` is the snapshot the auth middleware took when it counted this request. */
export async function usageReport(ctx: TenantCtx, counted?: CounterOutcome) {
  const { services, auth, now } = ctx;
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
export async function dashboardReport(ctx: TenantCtx, counted?: CounterOutcome) {
  const { services, auth, now } = ctx;
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

export async function milestones(ctx: TenantCtx) {
  const list = await q.listMilestones(ctx.db, ctx.tenantId);
  return {
    milestones: list.map((m) => ({ milestone: m.milestone, achieved_at: m.achievedAt.toISOString(), metadata: m.metadata })),
    total: list.length,
  };
}
