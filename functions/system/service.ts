import { sql } from 'drizzle-orm';
import type { Ctx } from '../../shared/platform/contract/context';
import { VERSION } from '../../shared/platform/contract/services';
import { LIVE_MEMORIES } from '../../shared/platform/data/usage';

async function timed(check: () => Promise<unknown>) {
  const started = performance.now();
  try {
    await check();
    return { status: 'ok' as const, latency_ms: Math.round((performance.now() - started) * 100) / 100 };
  } catch (err) {
    return { status: 'error' as const, error: err instanceof Error ? err.message.slice(0, 200) : 'failed' };
  }
}

async function healthChecks({ services }: Ctx) {
  const database = await timed(() => services.db.execute(sql`SELECT 1`));
  const redis = services.redis ? await timed(() => services.redis!.ping()) : { status: 'disabled' as const };
  const warnings: string[] = [];
  if (services.storage === 'embedded') warnings.push('Embedded PGlite storage: single process; set DATABASE_URL for production.');
  if (services.config.MAIL_TRANSPORT === 'outbox') warnings.push('Mail is stored, not sent (MAIL_TRANSPORT=outbox).');
  if (!services.config.ADMIN_TOKEN) warnings.push('Operator API disabled (ADMIN_TOKEN unset).');
  if (redis.status === 'error') warnings.push('Redis unreachable: rate limits cannot be enforced.');
  // Configuration only: calling the provider here would cost a request (and money) per probe.
  const embeddingProblem = services.embedder.problem?.() ?? null;
  const embedding = embeddingProblem ? { status: 'error' as const, error: embeddingProblem } : { status: 'ok' as const };
  if (embeddingProblem) warnings.push(`Embedding provider not configured (${embeddingProblem}): storing memories and semantic search answer 503.`);
  const status = database.status === 'error' ? 'unhealthy' : redis.status === 'error' || embeddingProblem ? 'degraded' : 'healthy';
  return { status: status as 'healthy' | 'degraded' | 'unhealthy', checks: { database, redis, embedding }, warnings };
}

/** Public callers see the overall status; a caller with a key also sees the checks and warnings. */
export async function health(ctx: Ctx) {
  const checked = await healthChecks(ctx);
  return {
    status: checked.status,
    version: VERSION,
    timestamp: ctx.now.toISOString(),
    enterprise_available: true,
    ...(ctx.auth ? { checks: checked.checks, warnings: checked.warnings } : {}),
  };
}

export async function status(ctx: Ctx) {
  const { services, auth } = ctx;
  const base = { version: VERSION, status: 'operational' as const, timestamp: ctx.now.toISOString() };
  if (!auth) return base;
  const [memories] = await services.counters.read(auth.tenantId, [LIVE_MEMORIES]);
  return {
    ...base,
    // Process uptime is wall time by nature, not the request clock.
    uptime_seconds: Math.floor((Date.now() - services.stats.startedAt) / 1000),
    total_memories_stored: memories,
    avg_response_time_ms: services.stats.averageMs,
  };
}
