import { z } from '@hono/zod-openapi';
import type { evalBaselines, evalRuns } from '../../schema/eval';
import { idPattern } from '../../shared/platform/contract/ids';
import { ErrorSchema } from '../../shared/platform/http/openapi';
import { PrefixedId } from '../../shared/platform/contract/params';
import { PageQuery, paging } from '../../shared/platform/data/pagination';

const TIME = '2026-11-15T12:00:00.000Z';
const Score = (description: string) => z.number().int().min(0).max(100).openapi({ description, example: 92 });
const MinScore = z.number().min(0).max(100).openapi({ description: 'Pass mark, 0 to 100: `passed` is `health_score >= min_score`', example: 80 });

export const RunBody = z.object({ min_score: MinScore.optional() }).openapi('EvalRunInput', { example: { min_score: 80 } });
export const GateBody = z.object({ min_score: MinScore }).openapi('EvalGateInput', { example: { min_score: 80 } });

export const Breakdown = z
  .object({
    recall_consistency: Score(
      'With baselines: mean best cosine (×100) between each expected observation and the top 5 results of its query; without: share of the most-recalled memories found first by their own text',
    ),
    drift_score: Score('100 × (1 − min(1, 2 × (1 − cos(centroid of the last 7 days, centroid of the 7 days before)))); 100 when a window is empty'),
    conflict_score: Score('100 × (1 − conflicting / live): live memories with a duplicate (same content, or cosine ≥ 0.90) in the same space'),
    staleness_score: Score('100 × (1 − stale / live): live memories older than 30 days not recalled in 30 days'),
  })
  .openapi('EvalBreakdown');

const TopicCount = z.object({ topic: z.string().openapi({ example: 'billing' }), count: z.number().int().openapi({ example: 4 }) });

export const Drift = z
  .object({
    drift_score: Score('As the breakdown, with `period_days` for both windows'),
    period_days: z.number().int().openapi({ example: 7 }),
    memory_count_delta: z
      .number()
      .int()
      .openapi({ description: 'Live memories created in the last window minus those created in the window before', example: 12 }),
    avg_importance_delta: z
      .number()
      .nullable()
      .openapi({ description: 'Pro+: mean importance of the last window minus the window before (null when a window is empty, or below Pro)', example: 0.5 }),
    top_new_topics: z.array(TopicCount).nullable().openapi({ description: 'Pro+: tags (or, with no tags, the most frequent content words) that grew most' }),
    top_lost_topics: z.array(TopicCount).nullable().openapi({ description: 'Pro+: tags (or content words) that shrank most' }),
    tag_shifts: z
      .record(z.string(), z.number().int())
      .nullable()
      .openapi({ description: 'Pro+: tag → change in count between the windows (changed tags only)', example: { billing: 3, onboarding: -2 } }),
  })
  .openapi('EvalDrift');

export const EvalResult = z
  .object({
    eval_id: z.string().openapi({ example: idPattern('eval').example }),
    health_score: Score('round(0.35 recall_consistency + 0.25 conflict_score + 0.20 staleness_score + 0.20 drift_score)'),
    breakdown: Breakdown,
    memory_count: z.number().int().openapi({ description: 'Live memories (not expired, not superseded)', example: 120 }),
    conflict_count: z.number().int().openapi({ example: 4 }),
    stale_count: z.number().int().openapi({ example: 9 }),
    passed: z.boolean().nullable().openapi({ description: '`health_score >= min_score`; null when no `min_score` was given' }),
    drift_detail: Drift.nullable().openapi({ description: 'Pro+: the drift report over 7-day windows' }),
    created_at: z.string().openapi({ example: TIME }),
  })
  .openapi('EvalResult');

export const GateFailure = ErrorSchema.extend({ eval: EvalResult.optional().openapi({ description: 'On GATE_FAILED: the full eval' }) }).openapi(
  'EvalGateFailure',
);

export const HistoryQuery = PageQuery({ max: 200, default: 50 });
const HistoryPaging = paging({ totals: ['total_count'], hasMore: true });
export const historyMeta = HistoryPaging.meta;

export const HistoryEntry = z
  .object({
    eval_id: z.string().openapi({ example: idPattern('eval').example }),
    health_score: z.number().int(),
    breakdown: Breakdown,
    memory_count: z.number().int(),
    passed: z.boolean().nullable(),
    created_at: z.string().openapi({ example: TIME }),
  })
  .openapi('EvalHistoryEntry');

export const HistoryResponse = z.object({ entries: z.array(HistoryEntry), ...HistoryPaging.fields }).openapi('EvalHistory');

export const DriftQuery = z.object({
  days: z.coerce
    .number()
    .int()
    .min(1)
    .max(90)
    .default(7)
    .openapi({ description: 'Length of each of the two windows compared, 1 to 90 (default 7)', example: 7 }),
});

export const BaselineBody = z
  .object({
    query: z
      .string()
      .trim()
      .min(1)
      .max(500)
      .openapi({ description: 'What an agent would search, 1 to 500 characters', example: 'Which plan is the customer on?' }),
    expected_observation: z
      .string()
      .trim()
      .min(1)
      .max(2000)
      .openapi({ description: 'The observation that search should find, 1 to 2000 characters', example: 'The customer is on the Pro plan.' }),
  })
  .openapi('EvalBaselineInput', { example: { query: 'Which plan is the customer on?', expected_observation: 'The customer is on the Pro plan.' } });

export const Baseline = z
  .object({
    id: z.string().openapi({ example: idPattern('baseline').example }),
    query: z.string().openapi({ example: 'Which plan is the customer on?' }),
    expected_observation: z.string().openapi({ example: 'The customer is on the Pro plan.' }),
    expected_score: z.number().nullable().openapi({ description: 'Reserved: null', example: null }),
    created_at: z.string().openapi({ example: TIME }),
  })
  .openapi('EvalBaseline');

export const BaselineList = z.object({ baselines: z.array(Baseline), total_count: z.number().int() }).openapi('EvalBaselines');

export const BaselineParams = z.object({ baseline_id: PrefixedId('baseline', 'The baseline') });

export type EvalRunRow = typeof evalRuns.$inferSelect;
export type BaselineRow = typeof evalBaselines.$inferSelect;
export type EvalResultDto = z.infer<typeof EvalResult>;

export const toEvalResult = (r: EvalRunRow): EvalResultDto => ({
  eval_id: r.id,
  health_score: r.healthScore,
  breakdown: r.breakdown,
  memory_count: r.memoryCount,
  conflict_count: r.conflictCount,
  stale_count: r.staleCount,
  passed: r.passed,
  drift_detail: (r.driftDetail as z.infer<typeof Drift> | null) ?? null,
  created_at: r.createdAt.toISOString(),
});

export const toHistoryEntry = (r: EvalRunRow) => ({
  eval_id: r.id,
  health_score: r.healthScore,
  breakdown: r.breakdown,
  memory_count: r.memoryCount,
  passed: r.passed,
  created_at: r.createdAt.toISOString(),
});

export const toBaseline = (r: BaselineRow) => ({
  id: r.id,
  query: r.query,
  expected_observation: r.expectedObservation,
  expected_score: r.expectedScore,
  created_at: r.createdAt.toISOString(),
});
