import { z } from '@hono/zod-openapi';
import type { CortexConfigRow } from '../../shared/memory/cortex';
import { CORTEX_DEFAULTS } from '../../shared/memory/cortex';
import type { MemoryRow } from '../../shared/memory/rows';
import { toUrn } from '../../shared/platform/contract/ids';
import { PageQuery, paging } from '../../shared/platform/data/pagination';

const TIME = '2026-11-15T12:00:00.000Z';

export const Config = z
  .object({
    tenant_id: z.string().openapi({ example: 'ten_4Qm3Gx7Lr2Vn8Kp1Zs5Tw0' }),
    enabled: z.boolean().openapi({ description: 'Run Cortex on the daily schedule', example: true }),
    consolidation_enabled: z.boolean().openapi({ example: true }),
    consolidation_threshold: z.number().openapi({ description: 'Cosine at which two memories of a space are near duplicates, 0.5 to 1.0', example: 0.9 }),
    reinforcement_enabled: z.boolean().openapi({ example: true }),
    decay_enabled: z.boolean().openapi({ example: true }),
    decay_age_days: z.number().int().openapi({ description: 'Age (and days without recall) after which a memory decays, 1 to 365', example: 30 }),
    insight_generation_enabled: z.boolean().openapi({ description: 'Enterprise only', example: false }),
    last_run_at: z.string().nullable().openapi({ example: TIME }),
    run_stats: z
      .record(z.string(), z.unknown())
      .openapi({ description: 'Counts of the last run', example: { consolidated: 2, boosted: 1, decayed: 4, insights_generated: 0 } }),
  })
  .openapi('CortexConfig');

export const ConfigPatch = z
  .object({
    enabled: z.boolean().optional(),
    consolidation_enabled: z.boolean().optional(),
    consolidation_threshold: z.number().min(0.5).max(1).optional().openapi({ description: '0.5 to 1.0 (default 0.90)', example: 0.92 }),
    reinforcement_enabled: z.boolean().optional(),
    decay_enabled: z.boolean().optional(),
    decay_age_days: z.number().int().min(1).max(365).optional().openapi({ description: '1 to 365 (default 30)', example: 45 }),
    insight_generation_enabled: z.boolean().optional().openapi({ description: 'true needs Enterprise (403 FEATURE_NOT_AVAILABLE otherwise)' }),
  })
  .strict()
  .openapi('CortexConfigInput', { example: { enabled: true, consolidation_threshold: 0.92, decay_age_days: 45 } });

export const Status = z
  .object({
    enabled: z.boolean(),
    last_run_at: z.string().nullable().openapi({ example: TIME }),
    run_stats: z.record(z.string(), z.unknown()),
    config: Config,
  })
  .openapi('CortexStatus');

export const RunQuery = z.object({
  dry_run: z
    .enum(['true', 'false'])
    .optional()
    .openapi({ description: '`true`: report what a run would change (`changes`) without changing anything', example: 'true' }),
});

const Change = z
  .object({
    memory_id: z.string().openapi({ example: 'urn:uuid:0d5c4a52-4d3f-4f36-9d59-3c1c1d7d8a11' }),
    pass: z
      .enum(['consolidate', 'reinforce', 'decay', 'insights'])
      .openapi({ description: '`insights`: `memory_id` is the most central memory of the cluster the insight would come from' }),
    detail: z.record(z.string(), z.unknown()).openapi({ example: { superseded_by: 'urn:uuid:7a1e1a43-2a80-4a8e-8d53-6b2c8c1f9e02' } }),
  })
  .openapi('CortexChange');

export const RunResult = z
  .object({
    consolidated: z.number().int().openapi({ description: 'Memories superseded by a newer near duplicate in their space', example: 2 }),
    boosted: z.number().int().openapi({ description: 'Frequently recalled memories whose importance rose by 1', example: 1 }),
    decayed: z.number().int().openapi({ description: 'Old unused memories whose importance fell by 1 and confidence ×0.9', example: 4 }),
    insights_generated: z.number().int().openapi({ description: 'Enterprise only; 0 otherwise', example: 0 }),
    dry_run: z.boolean(),
    queued_changes: z.number().int().openapi({
      description:
        'Changes beyond the first 500 (CORTEX_BATCH) are applied by background jobs, as many a job, shortly after the answer; the counts above are what the run planned (a change whose memory no longer qualifies when its job runs is skipped). 0 on a dry run',
      example: 0,
    }),
    changes: z.array(Change).optional().openapi({ description: 'Dry run only: every change the run would make' }),
  })
  .openapi('CortexRunResult');

export function toConfig(tenantId: string, row: CortexConfigRow | null): z.infer<typeof Config> {
  if (!row) return { tenant_id: tenantId, ...CORTEX_DEFAULTS, last_run_at: null, run_stats: {} };
  return {
    tenant_id: tenantId,
    enabled: row.enabled,
    consolidation_enabled: row.consolidationEnabled,
    consolidation_threshold: Math.round(row.consolidationThreshold * 1e4) / 1e4,
    reinforcement_enabled: row.reinforcementEnabled,
    decay_enabled: row.decayEnabled,
    decay_age_days: row.decayAgeDays,
    insight_generation_enabled: row.insightGenerationEnabled,
    last_run_at: row.lastRunAt?.toISOString() ?? null,
    run_stats: row.runStats ?? {},
  };
}

export const InsightsQuery = PageQuery({ max: 100, default: 20 });
const InsightsPaging = paging({ totals: ['total'], hasMore: false });
export const insightsMeta = InsightsPaging.meta;

const Insight = z
  .object({
    uuid: z.string().openapi({ example: 'urn:uuid:0d5c4a52-4d3f-4f36-9d59-3c1c1d7d8a11' }),
    observation: z.string().openapi({ example: 'Insight from 4 related memories: The customer prefers invoices by email.' }),
    tags: z.array(z.string()).openapi({ example: ['insight'] }),
    importance: z.number().int().openapi({ example: 6 }),
    created_at: z.string().openapi({ example: TIME }),
  })
  .openapi('CortexInsight');

export const InsightList = z.object({ insights: z.array(Insight), ...InsightsPaging.fields }).openapi('CortexInsightList');

export const toInsight = (r: MemoryRow): z.infer<typeof Insight> => ({
  uuid: toUrn(r.id),
  observation: r.observation,
  tags: r.tags,
  importance: Number(r.importance),
  created_at: new Date(r.created_at).toISOString(),
});
