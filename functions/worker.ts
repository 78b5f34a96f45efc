import { neonConfig, Pool } from '@neondatabase/serverless';
import { Client as QStash } from '@upstash/qstash';
import { drizzle, NeonSession, NeonTransaction } from 'drizzle-orm/neon-serverless';
import { type Config, parseConfig } from '../shared/platform/contract/config';
import { CounterStore } from '../shared/platform/data/counters';
import { configuredEmbedder, lazyEmbedder } from '../shared/memory/embeddings';
import { configuredReranker } from '../shared/memory/rerank';
import type { Db } from '../shared/platform/data/db';
import { installShortcuts } from '../shared/platform/data/driver';
import { AppError, errorBody, SHOULD_RETRY_HEADER, shouldRetry } from '../shared/platform/contract/errors';
import { newId } from '../shared/platform/contract/ids';
import { createLogger, type Logger } from '../shared/platform/data/log';
import { dohResolver } from '../shared/platform/http/outbound';
import { logConfigWarnings } from '../shared/platform/http/startup';
import { runMaintenance } from '../shared/jobs/maintenance';
import { runDueJobs } from '../shared/jobs/outbox';
import { PostgresRateLimiter, RedisRateLimiter } from '../shared/platform/limits/ratelimit';
import { upstashRedis } from '../shared/platform/data/redis-upstash';
import { RequestStats, type Services } from '../shared/platform/contract/services';
import { configuredSigningKey, type SigningKeySource } from '../shared/platform/contract/trace-signing';
import { systemClock } from '../shared/platform/contract/time';
import { buildApp } from './app';
import { JOBS_PATH } from './internal';
import { jobHandlers, maintenanceTasks } from './registry';

type Bindings = Record<string, unknown>;

let cachedConfig: { source: Bindings; config: Config } | null = null;
const stats = new RequestStats();

function configFor(env: Bindings): Config {
  if (cachedConfig?.source !== env) {
    cachedConfig = { source: env, config: parseConfig(env) };
    logConfigWarnings(cachedConfig.config, createLogger(cachedConfig.config.LOG_LEVEL));
  }
  return cachedConfig.config;
}

/**
 * Workers cannot share I/O objects between requests, so every request (and cron run) gets its own
 * Neon pool and services; the counter store batches only the request's own hits.
 */
function workerServices(env: Bindings, ctx: ExecutionContext): { services: Services; pool: Pool; pending: Promise<unknown>[] } {
  const config = configFor(env);
  if (!config.DATABASE_URL) throw new Error('DATABASE_URL binding is required on Workers');
  if (config.NEON_WS_PROXY) {
    // Local development and tests: a plain ws:// proxy in front of an ordinary Postgres.
    const proxy = config.NEON_WS_PROXY;
    neonConfig.wsProxy = (host, port) => `${proxy}/v1?address=${host}:${port}`;
    neonConfig.useSecureWebSocket = false;
    neonConfig.pipelineTLS = false;
    neonConfig.pipelineConnect = false;
  }
  const pool = new Pool({ connectionString: config.DATABASE_URL });
  const db = drizzle(pool) as unknown as Db;
  // A pool lives for one request here: nothing would be prepared twice, so literals go in the text.
  installShortcuts(db, { kind: 'pool', pool, Session: NeonSession, Transaction: NeonTransaction, prepare: false }, config.DB_DRIVER_SHORTCUTS);
  const log = createLogger(config.LOG_LEVEL);
  const redis =
    config.UPSTASH_REDIS_REST_URL && config.UPSTASH_REDIS_REST_TOKEN ? upstashRedis(config.UPSTASH_REDIS_REST_URL, config.UPSTASH_REDIS_REST_TOKEN) : null;
  const counters = new CounterStore(async (text, params) => (await pool.query(text, params)).rows);
  const ai = env.AI as Parameters<typeof configuredEmbedder>[1];
  // Built on first use: a provider that is not configured breaks only what embeds (503 with the
  // reason, reported by /health), not every route.
  const embedder = lazyEmbedder(() => {
    const built = configuredEmbedder({ ...config, EMBEDDING_PROVIDER: config.EMBEDDING_PROVIDER ?? 'workers-ai' }, ai);
    if (!built) throw new Error('EMBEDDING_PROVIDER=use runs on Node only; use workers-ai or openai on Workers');
    return built;
  });
  const reranker = configuredReranker(config, ai);
  // Work that still needs the pool after the response body ended (an event stream's lease release).
  const pending: Promise<unknown>[] = [];
  const qstash = config.QSTASH_TOKEN ? new QStash({ token: config.QSTASH_TOKEN, baseUrl: config.QSTASH_URL }) : null;
  const services: Services = {
    config,
    db,
    storage: 'neon',
    runtime: 'workers',
    clock: systemClock,
    log,
    counters,
    embedder,
    ...(reranker ? { reranker } : {}),
    rateLimiter: redis ? new RedisRateLimiter(redis) : new PostgresRateLimiter(counters, db),
    redis,
    keyCache: null,
    gate: null,
    eventBus: null, // an isolate's requests share no I/O: streams poll
    waitUntil: (work) => {
      pending.push(work.catch(() => undefined));
      ctx.waitUntil(work);
    },
    notifyJobs: () => {
      if (!qstash || !config.PUBLIC_URL) return; // the cron trigger sweeps the outbox anyway
      publishJobsCall(ctx, qstash, config, log, 0);
    },
    scheduleJobs: (delayMs) => {
      if (!qstash || !config.PUBLIC_URL) return; // the cron trigger sweeps the outbox anyway
      publishJobsCall(ctx, qstash, config, log, Math.ceil(delayMs / 1000));
    },
    resolveHost: dohResolver(config.DOH_URL),
    signingKey: workerSigningKey(config),
    jobHandlers: jobHandlers(config, log),
    stats,
    clientIp: (c) => c.req.header('cf-connecting-ip') ?? null,
    docsScript: async (request) => {
      const assets = env.ASSETS as Fetcher | undefined;
      if (!assets) throw new Error('ASSETS binding missing (wrangler.toml [assets])');
      return assets.fetch(new Request(new URL('/standalone.js', request.url), { headers: request.headers }));
    },
  };
  return { services, pool, pending };
}

// The imported key outlives a request: importing an RSA-4096 key costs milliseconds per isolate.
let signing: { pem: string | undefined; source: SigningKeySource } | null = null;
function workerSigningKey(config: Config): SigningKeySource {
  if (!signing || signing.pem !== config.TRACE_SIGNING_KEY) signing = { pem: config.TRACE_SIGNING_KEY, source: configuredSigningKey(config.TRACE_SIGNING_KEY) };
  return signing.source;
}

/** Asks QStash to call the outbox endpoint back, now or after `delaySeconds` (a retry's backoff). */
function publishJobsCall(ctx: ExecutionContext, qstash: QStash, config: Config, log: Logger, delaySeconds: number) {
  const url = new URL(JOBS_PATH, config.PUBLIC_URL).toString();
  ctx.waitUntil(
    qstash.publishJSON({ url, body: {}, ...(delaySeconds > 0 ? { delay: delaySeconds } : {}) }).then(
      () => undefined,
      (err: unknown) => log.warn('qstash publish failed', { error: err instanceof Error ? err.message : String(err) }),
    ),
  );
}

const app = buildApp((c) => (c.env as { __services: Services }).__services);

export default {
  async fetch(request: Request, env: Bindings, ctx: ExecutionContext): Promise<Response> {
    // Liveness must answer even when the configuration is broken (that is what /health reports).
    if (new URL(request.url).pathname === '/healthz') {
      return Response.json({ status: 'ok' }, { headers: { 'x-request-id': newId('request') } });
    }
    let built: ReturnType<typeof workerServices>;
    try {
      built = workerServices(env, ctx);
    } catch (err) {
      const requestId = newId('request');
      console.error(JSON.stringify({ level: 'error', msg: 'bad worker configuration', request_id: requestId, error: String(err) }));
      const misconfigured = new AppError('INTERNAL_ERROR', 'Service misconfigured');
      misconfigured.retryable = false; // the same request fails the same way until the operator fixes the configuration
      return Response.json(errorBody(misconfigured, requestId), {
        status: 500,
        headers: { 'x-request-id': requestId, [SHOULD_RETRY_HEADER]: String(shouldRetry(misconfigured)) },
      });
    }
    let res: Response;
    try {
      res = await app.fetch(request, { ...env, __services: built.services }, ctx);
    } catch (err) {
      ctx.waitUntil(built.pool.end());
      throw err;
    }
    if (!res.body) {
      ctx.waitUntil(built.pool.end());
      return res;
    }
    // Streamed bodies (exports, event streams) still read through the pool: close it when the body
    // is done, or the client gone, and what the stream still had to do with it (its lease) is done.
    const { readable, writable } = new TransformStream();
    ctx.waitUntil(
      res.body
        .pipeTo(writable)
        .catch(() => undefined)
        .then(async () => {
          await Promise.allSettled(built.pending);
          await built.pool.end();
        }),
    );
    return new Response(readable, res);
  },

  /** Cron trigger: housekeeping and an outbox sweep for anything QStash did not deliver. */
  async scheduled(_controller: ScheduledController, env: Bindings, ctx: ExecutionContext): Promise<void> {
    const { services, pool } = workerServices(env, ctx);
    try {
      await runDueJobs(services, { limit: 100 });
      await runMaintenance(services, maintenanceTasks);
    } finally {
      ctx.waitUntil(pool.end());
    }
  },
} satisfies ExportedHandler<Bindings>;
