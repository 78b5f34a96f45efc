import type { z } from '@hono/zod-openapi';
import { cortexSettings, probeNeighbours } from '../../shared/memory/cortex';
import { embedAll } from '../../shared/memory/embeddings';
import { vectorLiteral } from '../../shared/memory/rows';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { AppError, limitReached, notFound } from '../../shared/platform/contract/errors';
import { newId } from '../../shared/platform/contract/ids';
import type { PageInput } from '../../shared/platform/data/pagination';
import { hasFeature, type Tier, TIERS } from '../../shared/platform/contract/tiers';
import { DAY } from '../../shared/platform/contract/time';
import { write } from '../../shared/platform/data/unit-of-work';
import type { MaintenanceTask } from '../../shared/jobs/maintenance';
import * as q from './queries';
import * as s from './schemas';

/** Per-tier eval limits (Enterprise history 365 days as the release notes give). `null` = unlimited. */
export const EVAL_LIMITS: Record<Tier, { runsPerDay: number | null; baselines: number | null; historyDays: number }> = {
  free: { runsPerDay: 3, baselines: 1, historyDays: 7 },
  starter: { runsPerDay: 30, baselines: 5, historyDays: 30 },
  pro: { runsPerDay: null, baselines: null, historyDays: 90 },
  enterprise: { runsPerDay: null, baselines: null, historyDays: 365 },
};

const DRIFT_DAYS = 7;
const SELF_RECALL_SAMPLE = 50;
const TOP_K = 5;
const TOP_TOPICS = 5;

const pct = (x: number) => Math.round(100 * Math.min(1, Math.max(0, x)));
const utcMidnight = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));

type DriftDto = z.infer<typeof s.Drift>;

/** drift_score and the drift report over two windows of `days` ending now. */
async function drift(ctx: TenantCtx, days: number, detail: boolean): Promise<DriftDto> {
  const to = ctx.now;
  const mid = new Date(to.getTime() - days * DAY);
  const from = new Date(mid.getTime() - days * DAY);
  const w = await q.windows(ctx.db, ctx.tenantId, ctx.now, from, mid, to);
  const driftScore = w.cosine === null ? 100 : pct(1 - Math.min(1, 2 * (1 - w.cosine)));
  const report: DriftDto = {
    drift_score: driftScore,
    period_days: days,
    memory_count_delta: w.current.n - w.previous.n,
    avg_importance_delta: null,
    top_new_topics: null,
    top_lost_topics: null,
    tag_shifts: null,
  };
  if (!detail) return report;
  if (w.current.importance !== null && w.previous.importance !== null) {
    report.avg_importance_delta = Math.round((w.current.importance - w.previous.importance) * 1000) / 1000;
  }
  const t = await q.topics(ctx.db, ctx.tenantId, ctx.now, from, mid, to);
  const change = new Map<string, number>();
  for (const r of t.rows) change.set(r.topic, (change.get(r.topic) ?? 0) + (r.side === 'c' ? 1 : -1) * Number(r.n));
  const shifts = [...change].filter(([, d]) => d !== 0);
  const byTopic = (a: [string, number], b: [string, number]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
  report.top_new_topics = shifts
    .filter(([, d]) => d > 0)
    .sort((a, b) => b[1] - a[1] || byTopic(a, b))
    .slice(0, TOP_TOPICS)
    .map(([topic, d]) => ({ topic, count: d }));
  report.top_lost_topics = shifts
    .filter(([, d]) => d < 0)
    .sort((a, b) => a[1] - b[1] || byTopic(a, b))
    .slice(0, TOP_TOPICS)
    .map(([topic, d]) => ({ topic, count: -d }));
  report.tag_shifts = t.byTags ? Object.fromEntries(shifts.sort(byTopic)) : {};
  return report;
}

/** The tenant's baselines with the embeddings of their query and expected observation, in that order. */
type EmbeddedBaselines = { baselines: Awaited<ReturnType<typeof q.baselines>>; vectors: number[][] };

/**
 * Read and embedded before the eval's transaction: a slow provider must hold no lock (the daily run
 * count's) and no connection. A baseline added meanwhile counts from the next run.
 */
async function embedBaselines(ctx: TenantCtx): Promise<EmbeddedBaselines> {
  const baselines = await q.baselines(ctx.db, ctx.tenantId);
  const vectors = baselines.length
    ? await embedAll(
        ctx.services.embedder,
        baselines.flatMap((b) => [b.query, b.expectedObservation]),
      )
    : [];
  return { baselines, vectors };
}

/** recall_consistency: baselines when the tenant has any, else self-recall of the most recalled memories. */
async function recallConsistency(ctx: TenantCtx, live: number, { baselines, vectors }: EmbeddedBaselines): Promise<number> {
  if (live === 0) return 100;
  if (!baselines.length) {
    const { sampled, first } = await q.selfRecall(ctx.db, ctx.tenantId, ctx.now, SELF_RECALL_SAMPLE);
    return sampled ? pct(first / sampled) : 100;
  }
  let sum = 0;
  for (let i = 0; i < baselines.length; i++) {
    sum += await q.bestMatch(ctx.db, ctx.tenantId, ctx.now, vectorLiteral(vectors[2 * i]), vectorLiteral(vectors[2 * i + 1]), TOP_K);
  }
  return pct(sum / baselines.length);
}

/** Computes and stores one eval. Counts against the daily run limit of the tier. */
async function evaluate(ctx: TenantCtx, minScore: number | undefined) {
  const limit = EVAL_LIMITS[ctx.tier].runsPerDay;
  // The near-duplicate index for what changed since the last probes (maintenance keeps it nearly current).
  await probeNeighbours(ctx.db, ctx.tenantId, ctx.now);
  const embedded = await embedBaselines(ctx);
  return write(ctx, async (work) => {
    const c = work.ctx;
    if (limit !== null) {
      await work.lock(`eval:${ctx.tenantId}`);
      const day = utcMidnight(ctx.now);
      const used = await q.runsSince(work.tx, ctx.tenantId, day);
      if (used >= limit) {
        const resets = new Date(day.getTime() + DAY).toISOString();
        throw limitReached(
          `Daily eval run limit of ${limit} reached`,
          { metric: 'eval_runs', current: used, limit, plan: ctx.tier, resets_at: resets },
          { now: ctx.now, upgradeUrl: ctx.services.config.UPGRADE_URL },
        );
      }
    }
    // The tenant's Cortex threshold and decay age (the defaults without a Cortex config).
    const cortex = await cortexSettings(work.tx, ctx.tenantId);
    const counts = await q.storeCounts(work.tx, ctx.tenantId, ctx.now, {
      threshold: cortex.threshold,
      staleBefore: new Date(ctx.now.getTime() - cortex.decayAgeDays * DAY),
    });
    const detail = hasFeature(ctx.tier, 'eval_drift_detail');
    const report = await drift(c, DRIFT_DAYS, detail);
    const breakdown = {
      recall_consistency: await recallConsistency(c, counts.live, embedded),
      drift_score: report.drift_score,
      conflict_score: counts.live ? pct(1 - counts.conflicts / counts.live) : 100,
      staleness_score: counts.live ? pct(1 - counts.stale / counts.live) : 100,
    };
    const health = Math.round(
      0.35 * breakdown.recall_consistency + 0.25 * breakdown.conflict_score + 0.2 * breakdown.staleness_score + 0.2 * breakdown.drift_score,
    );
    const row = await q.insertRun(work.tx, {
      id: newId('eval'),
      tenantId: ctx.tenantId,
      healthScore: health,
      breakdown,
      memoryCount: counts.live,
      conflictCount: counts.conflicts,
      staleCount: counts.stale,
      // A real column: a value below its range (1e-320) is an error in Postgres; fround stores what a real can hold (0 there).
      minScore: minScore === undefined ? null : Math.fround(minScore),
      passed: minScore === undefined ? null : health >= minScore,
      driftDetail: detail ? report : null,
      createdAt: ctx.now,
    });
    return s.toEvalResult(row);
  });
}

export const run = (ctx: TenantCtx, input: { min_score?: number } | undefined) => evaluate(ctx, input?.min_score);

export async function gate(ctx: TenantCtx, input: { min_score: number }) {
  const result = await evaluate(ctx, input.min_score);
  if (result.passed) return result;
  throw new AppError('GATE_FAILED', `Health score ${result.health_score} is below min_score ${input.min_score}`, { eval: result });
}

export async function history(ctx: TenantCtx, page: PageInput) {
  const found = await q.history(ctx.db, ctx.tenantId, page);
  return { entries: found.page.map(s.toHistoryEntry), ...s.historyMeta(found.total, page, found.page.length) };
}

export const driftReport = (ctx: TenantCtx, input: { days: number }) => drift(ctx, input.days, hasFeature(ctx.tier, 'eval_drift_detail'));

/** A baseline, in the unit of work of the create verb, which counted the tier's cap (functions/eval/verbs.ts). */
export async function createBaseline(ctx: TenantCtx, input: { query: string; expected_observation: string }) {
  return write(ctx, async (work) => {
    const row = await q.insertBaseline(work.tx, {
      id: newId('baseline'),
      tenantId: ctx.tenantId,
      query: input.query,
      expectedObservation: input.expected_observation,
      expectedScore: null,
      createdAt: ctx.now,
    });
    return s.toBaseline(row);
  });
}

export async function listBaselines(ctx: TenantCtx) {
  const found = await q.baselines(ctx.db, ctx.tenantId);
  return { baselines: found.map(s.toBaseline), total_count: found.length };
}

export async function deleteBaseline(ctx: TenantCtx, input: { baselineId: string }) {
  const gone = await write(ctx, (work) => q.deleteBaseline(work.tx, ctx.tenantId, input.baselineId));
  if (!gone) throw notFound('Baseline');
}

/** Maintenance: drops evals older than their tier's history retention. */
export const pruneHistory: MaintenanceTask = async (ctx) => {
  let pruned = 0;
  for (const tier of TIERS) pruned += await q.pruneRuns(ctx.db, tier, new Date(ctx.now.getTime() - EVAL_LIMITS[tier].historyDays * DAY));
  return pruned;
};
