import { z } from '@hono/zod-openapi';
import { asc, eq, sql } from 'drizzle-orm';
import { milestones } from '../../schema';
import { createRouter } from '../../shared/app';
import { authOf } from '../../shared/auth';
import { json, keyRoute, optionalKeyRoute, publicRoute } from '../../shared/openapi';
import type { Services } from '../../shared/services';
import { LIVE_MEMORIES } from '../../shared/usage';
import { VERSION } from '../../shared/services';

const tags = ['System'];

const Healthz = z.object({ status: z.literal('ok') }).openapi('Healthz');
const Check = z.object({ status: z.enum(['ok', 'error', 'disabled']), latency_ms: z.number().optional(), error: z.string().optional() });
const Health = z
  .object({
    status: z.enum(['healthy', 'degraded', 'unhealthy']),
    version: z.string().openapi({ example: VERSION }),
    timestamp: z.string(),
    enterprise_available: z.boolean(),
    checks: z.record(z.string(), Check).optional().openapi({ description: 'With a key only' }),
    warnings: z.array(z.string()).optional().openapi({ description: 'With a key only' }),
  })
  .openapi('Health');
const Status = z
  .object({
    version: z.string(),
    status: z.literal('operational'),
    timestamp: z.string(),
    uptime_seconds: z.number().optional(),
    total_memories_stored: z.number().optional(),
    avg_response_time_ms: z.number().optional(),
  })
  .openapi('Status');
const MilestoneList = z
  .object({
    milestones: z.array(z.object({ milestone: z.string(), achieved_at: z.string(), metadata: z.record(z.string(), z.unknown()) })),
    total: z.number().int(),
  })
  .openapi('Milestones');

const healthzRoute = publicRoute({
  method: 'get',
  path: '/healthz',
  tags,
  summary: 'Liveness probe',
  description: 'Always 200 while the process runs; touches no dependency.',
  responses: { 200: json(Healthz, 'Alive') },
});

const healthRoute = optionalKeyRoute({
  method: 'get',
  path: '/health',
  tags,
  summary: 'Readiness and dependency health',
  description: 'Public: overall status only. With a key: database and Redis checks with latencies, and warnings. 503 when the database is unreachable.',
  responses: { 200: json(Health, 'Healthy or degraded'), 503: json(Health, 'Unhealthy') },
});

const statusRoute = optionalKeyRoute({
  method: 'get',
  path: '/v1/status',
  tags,
  summary: 'Service status',
  responses: { 200: json(Status, 'Status; more fields with a key') },
});

const milestonesRoute = keyRoute({
  method: 'get',
  path: '/v1/milestones',
  tags: ['Usage'],
  summary: 'Account milestones reached',
  responses: { 200: json(MilestoneList, 'Milestones, oldest first') },
});

async function timed(check: () => Promise<unknown>) {
  const started = performance.now();
  try {
    await check();
    return { status: 'ok' as const, latency_ms: Math.round((performance.now() - started) * 100) / 100 };
  } catch (err) {
    return { status: 'error' as const, error: err instanceof Error ? err.message.slice(0, 200) : 'failed' };
  }
}

async function healthChecks(services: Services) {
  const database = await timed(() => services.db.execute(sql`SELECT 1`));
  const redis = services.redis ? await timed(() => services.redis!.ping()) : { status: 'disabled' as const };
  const warnings: string[] = [];
  if (services.storage === 'embedded') warnings.push('Embedded PGlite storage: single process; set DATABASE_URL for production.');
  if (services.config.MAIL_TRANSPORT === 'outbox') warnings.push('Mail is stored, not sent (MAIL_TRANSPORT=outbox).');
  if (!services.config.ADMIN_TOKEN) warnings.push('Operator API disabled (ADMIN_TOKEN unset).');
  if (redis.status === 'error') warnings.push('Redis unreachable: rate limits cannot be enforced.');
  const status = database.status === 'error' ? 'unhealthy' : redis.status === 'error' ? 'degraded' : 'healthy';
  return { status: status as 'healthy' | 'degraded' | 'unhealthy', checks: { database, redis }, warnings };
}

export const systemRouter = createRouter()
  .openapi(healthzRoute, (c) => c.json({ status: 'ok' as const }, 200))
  .openapi(healthRoute, async (c) => {
    const services = c.get('services');
    const health = await healthChecks(services);
    const body = {
      status: health.status,
      version: VERSION,
      timestamp: services.clock.now().toISOString(),
      enterprise_available: true,
      ...(c.get('auth') ? { checks: health.checks, warnings: health.warnings } : {}),
    };
    return health.status === 'unhealthy' ? c.json(body, 503) : c.json(body, 200);
  })
  .openapi(statusRoute, async (c) => {
    const services = c.get('services');
    const auth = c.get('auth');
    const base = { version: VERSION, status: 'operational' as const, timestamp: services.clock.now().toISOString() };
    if (!auth) return c.json(base, 200);
    const [memories] = await services.counters.read(auth.tenantId, [LIVE_MEMORIES]);
    return c.json(
      {
        ...base,
        uptime_seconds: Math.floor((Date.now() - services.stats.startedAt) / 1000),
        total_memories_stored: memories,
        avg_response_time_ms: services.stats.averageMs,
      },
      200,
    );
  })
  .openapi(milestonesRoute, async (c) => {
    const auth = authOf(c);
    const list = await c
      .get('services')
      .db.select()
      .from(milestones)
      .where(eq(milestones.tenantId, auth.tenantId))
      .orderBy(asc(milestones.achievedAt));
    return c.json(
      {
        milestones: list.map((m) => ({ milestone: m.milestone, achieved_at: m.achievedAt.toISOString(), metadata: m.metadata })),
        total: list.length,
      },
      200,
    );
  });
