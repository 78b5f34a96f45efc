import { z } from '@hono/zod-openapi';
import { createRouter } from '../../shared/app';
import { authOf } from '../../shared/auth';
import { json, keyRoute } from '../../shared/openapi';
import { dashboardReport, usageReport } from '../../shared/usage';

const tags = ['Usage'];

const Quota = z.object({
  current: z.number().int(),
  used: z.number().int(),
  limit: z.number().int().nullable().openapi({ description: 'null when unlimited' }),
  unlimited: z.boolean(),
});
const Percents = z.object({ api_calls: z.number(), memories: z.number(), rollbacks: z.number() });
const Pressure = z.enum(['low', 'medium', 'high', 'critical']);
const Features = z.record(z.string(), z.boolean()).openapi({ example: { spaces: false, sharing: true, replay: false } });

const Usage = z
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
    projected_limit_date: z.string().nullable().openapi({ description: 'When api_calls reach the limit at this period\'s pace, if before the reset' }),
    budget_alert: z.boolean(),
    spend_estimate: z
      .object({ spend_estimate_usd: z.number(), projected_spend_estimate_usd: z.number(), storage_estimate_usd: z.number() })
      .openapi({ description: 'List-price estimates: the plan price pro rata so far, the whole month, and storage at $0.0001 per memory stored this period' }),
    quota_percent: Percents,
    upgrade_message: z.string().nullable(),
  })
  .openapi('Usage');

const Dashboard = z
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

const usageRoute = keyRoute({
  method: 'get',
  path: '/v1/usage',
  tags,
  summary: 'Quota usage for the current period',
  description: 'Counters are per billing period (YYYY-MM, UTC). This request itself is counted.',
  responses: { 200: json(Usage, 'Usage report') },
});

const dashboardRoute = keyRoute({
  method: 'get',
  path: '/v1/dashboard',
  tags,
  summary: 'Account overview',
  responses: { 200: json(Dashboard, 'Dashboard') },
});

export const usageRouter = createRouter()
  .openapi(usageRoute, async (c) => c.json(await usageReport(c.get('services'), authOf(c), c.get('counted')), 200))
  .openapi(dashboardRoute, async (c) => c.json(await dashboardReport(c.get('services'), authOf(c), c.get('counted')), 200));
