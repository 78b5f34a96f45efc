import { z } from '@hono/zod-openapi';

const Quota = z.object({
  current: z.number().int(),
  used: z.number().int(),
  limit: z.number().int().nullable().openapi({ description: 'null when unlimited' }),
  unlimited: z.boolean(),
});
const Percents = z.object({ api_calls: z.number(), memories: z.number(), rollbacks: z.number() });
const Pressure = z.enum(['low', 'medium', 'high', 'critical']);
const Features = z.record(z.string(), z.boolean()).openapi({ example: { spaces: false, sharing: true, replay: false } });

export const Usage = z
  .object({
    tier: z.string().openapi({ example: 'free' }),
    api_calls: Quota,
    memories: Quota.openapi({ description: 'Memories stored this period' }),
    rollbacks: Quota,
    audit_retention_days: z.number().int(),
    features: Features,
    period: z.string().openapi({ example: '2026-11' }),
    resets_at: z.string().nullable(),
    usage_pressure_level: Pressure.openapi({ description: 'From the highest quota percentage: <50 low, <80 medium, <95 high, else critical' }),
    projected_limit_date: z.string().nullable().openapi({ description: "When api_calls reach the limit at this period's pace, if before the reset" }),
    budget_alert: z.boolean(),
    spend_estimate: z
      .object({ spend_estimate_usd: z.number(), projected_spend_estimate_usd: z.number(), storage_estimate_usd: z.number() })
      .openapi({ description: 'List-price estimates: the plan price pro rata so far, the whole month, and storage at $0.0001 per memory stored this period' }),
    quota_percent: Percents,
    upgrade_message: z.string().nullable(),
  })
  .openapi('Usage');

export const Dashboard = z
  .object({
    memory_count: z.number().int(),
    tier: z.string(),
    features: Features,
    usage_percent: Percents,
    pressure: Pressure,
    api_calls_today: z.number().int(),
    limits: z.object({ api_calls: z.number().nullable(), memories: z.number().nullable(), rollbacks: z.number().nullable() }),
    period: z.string(),
  })
  .openapi('Dashboard');

export const MilestoneList = z
  .object({
    milestones: z.array(z.object({ milestone: z.string(), achieved_at: z.string(), metadata: z.record(z.string(), z.unknown()) })),
    total: z.number().int(),
  })
  .openapi('Milestones');
