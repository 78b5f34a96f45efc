import { lookup } from 'node:dns/promises';
import { hash } from 'node:crypto';
import { fetchAt } from './fetch-at';
import type { Config } from '../platform/contract/config';
import { CounterStore } from '../platform/data/counters';
import { EventBus } from '../platform/data/event-bus';
import { assertFits, configuredEmbedder, type Embedder } from '../memory/embeddings';
import { configuredReranker, type Reranker } from '../memory/rerank';
import { KeyCache } from '../platform/data/key-cache';
import { createLogger, type Logger } from '../platform/data/log';
import { type MaintenanceTask, platformMaintenance } from '../jobs/maintenance';
import type { JobHandlers } from '../jobs/outbox';
import { MemoryRateLimiter, PostgresRateLimiter, RedisRateLimiter } from '../platform/limits/ratelimit';
import { RequestGate } from '../platform/limits/request-gate';
import { RequestStats, type Services } from '../platform/contract/services';
import type { Tracing } from '../platform/http/tracing';
import { type Clock, systemClock } from '../platform/contract/time';
import { nodeClientIp } from './client-ip';
import { type Database, openPglite, openPostgres } from './database';
import { nodeDocsScript } from './docs-script';
import { useEmbedder } from './embed-use';
import { nodeSigningKey } from './signing-key';
import { ioredisOps } from './redis';
import { createNodeMetrics, measuredEmbedder } from './metrics';
import { NodeRunner } from './runner';

export interface NodeServices {
  services: Services;
  database: Database;
  runner: NodeRunner;
  close(): Promise<void>;
}

/** The outbox gauges of a scrape: pending jobs due now, and how long the oldest pending one has waited. */
const OUTBOX_GAUGES = `SELECT count(*) FILTER (WHERE run_at <= now())::int AS depth, extract(epoch FROM now() - min(created_at))::float8 AS age
  FROM outbox WHERE status = 'pending'`;

/**
 * Wires the Node deployment: PGlite when DATABASE_URL is unset, else Postgres; Redis when
 * REDIS_URL is set. The process-wide services are shared by every request.
 */
export async function createNodeServices(
  config: Config,
  opts: {
    database?: Database;
    clock?: Clock;
    log?: Logger;
    jobHandlers?: JobHandlers;
    maintenance?: Record<string, MaintenanceTask>;
    embedder?: Embedder;
    reranker?: Reranker;
    /** The OpenTelemetry tracer when the server exports spans (shared/node/tracing.ts). */
    tracing?: Tracing;
    /** Name resolution for the outbound address rule; the system resolver by default. */
    resolveHost?: (hostname: string) => Promise<string[]>;
  } = {},
): Promise<NodeServices> {
  const log = opts.log ?? createLogger(config.LOG_LEVEL);
  const database =
    opts.database ??
    (config.DATABASE_URL
      ? openPostgres(config.DATABASE_URL, 10, {
          onConnectionError: (err) => log.warn('database connection lost', { error: err.message }),
          shortcuts: config.DB_DRIVER_SHORTCUTS,
        })
      : await openPglite({ dataDir: config.DATA_DIR, durable: config.PGLITE_FSYNC, shortcuts: config.DB_DRIVER_SHORTCUTS }));
  const applied = await database.migrate();
  if (applied.length) log.info('migrations applied', { applied });
  const redis = config.REDIS_URL ? ioredisOps(config.REDIS_URL) : null;
  const counters = new CounterStore(database.query);
  const metrics = createNodeMetrics({
    ...(database.poolStats ? { pool: database.poolStats } : {}),
    outbox: async () => {
      const [row] = await database.query<{ depth: number; age: number | null }>(OUTBOX_GAUGES, []);
      return { depth: Number(row?.depth ?? 0), oldestAgeSeconds: Number(row?.age ?? 0) };
    },
  });
  const embedder = measuredEmbedder(opts.embedder ?? configuredEmbedder(config) ?? useEmbedder(), metrics);
  assertFits(embedder);
  if (config.RERANK_PROVIDER === 'workers-ai' && !opts.reranker) throw new Error('RERANK_PROVIDER=workers-ai runs on Workers only; use cohere on Node');
  const reranker = opts.reranker ?? configuredReranker(config);
  const embedded = database.storage === 'embedded';
  const rateLimiter = redis ? new RedisRateLimiter(redis) : embedded ? new MemoryRateLimiter() : new PostgresRateLimiter(counters, database.db);
  // Several instances on one Postgres with Redis: keys cached behind their epoch, counting in Redis.
  const gate = redis && !embedded ? new RequestGate(redis, database.query, log) : null;
  gate?.start();

  let runner: NodeRunner | null = null;
  const services: Services = {
    config,
    db: database.db,
    storage: database.storage,
    runtime: 'node',
    clock: opts.clock ?? systemClock,
    log,
    counters,
    embedder,
    ...(reranker ? { reranker } : {}),
    rateLimiter,
    redis,
    keyCache: embedded || gate ? new KeyCache() : null,
    gate,
    notifyJobs: () => runner?.wake(),
    eventBus: new EventBus(),
    jobHandlers: { ...opts.jobHandlers },
    stats: new RequestStats(),
    metrics,
    ...(opts.tracing ? { tracing: opts.tracing } : {}),
    clientIp: nodeClientIp(config.TRUST_PROXY),
    hashSecret: (secret) => hash('sha256', secret, 'hex'), // one-shot: a third of createHash's cost
    docsScript: nodeDocsScript,
    signingKey: nodeSigningKey(config, log, { sharedDatabase: !embedded }),
    resolveHost: opts.resolveHost ?? (async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address)),
    fetchAt,
  };
  runner = new NodeRunner(services, opts.maintenance ?? platformMaintenance);
  return {
    services,
    database,
    runner,
    async close() {
      // Open event streams end first (releasing their leases) while the database is still there.
      await services.eventBus?.close();
      await runner?.stop();
      await counters.settle();
      await gate?.close();
      await redis?.close?.();
      await database.close();
    },
  };
}
