import { hash } from 'node:crypto';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';
import type { Config } from '../config';
import { CounterStore } from '../counters';
import { assertFits, configuredEmbedder, type Embedder } from '../embeddings';
import { KeyCache } from '../key-cache';
import { createLogger, type Logger } from '../log';
import { type MaintenanceTask, platformMaintenance } from '../maintenance';
import type { JobHandlers } from '../outbox';
import { MemoryRateLimiter, PostgresRateLimiter, RedisRateLimiter } from '../ratelimit';
import { RequestStats, type Services } from '../services';
import { type Clock, systemClock } from '../time';
import { type Database, openPglite, openPostgres } from './database';
import { useEmbedder } from './embed-use';
import { ioredisOps } from './redis';
import { NodeRunner } from './runner';

export interface NodeServices {
  services: Services;
  database: Database;
  runner: NodeRunner;
  close(): Promise<void>;
}

function nodeClientIp(trustProxy: boolean) {
  return (c: Context): string | null => {
    if (trustProxy) {
      const forwarded = c.req.header('x-forwarded-for')?.split(',')[0]?.trim();
      if (forwarded) return forwarded;
    }
    try {
      return getConnInfo(c).remote.address ?? null;
    } catch {
      return null; // in-process requests (tests) have no socket
    }
  };
}

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
  } = {},
): Promise<NodeServices> {
  const log = opts.log ?? createLogger(config.LOG_LEVEL);
  const database =
    opts.database ?? (config.DATABASE_URL ? openPostgres(config.DATABASE_URL) : await openPglite({ dataDir: config.DATA_DIR }));
  const applied = await database.migrate();
  if (applied.length) log.info('migrations applied', { applied });
  const redis = config.REDIS_URL ? ioredisOps(config.REDIS_URL) : null;
  const counters = new CounterStore(database.db, database.query);
  const embedder = opts.embedder ?? configuredEmbedder(config) ?? useEmbedder();
  assertFits(embedder);
  const embedded = database.storage === 'embedded';
  const rateLimiter = redis ? new RedisRateLimiter(redis) : embedded ? new MemoryRateLimiter() : new PostgresRateLimiter(counters);

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
    rateLimiter,
    redis,
    keyCache: embedded ? new KeyCache() : null,
    notifyJobs: () => runner?.wake(),
    jobHandlers: { ...opts.jobHandlers },
    stats: new RequestStats(),
    clientIp: nodeClientIp(config.TRUST_PROXY),
    hashSecret: (secret) => hash('sha256', secret, 'hex'), // one-shot: a third of createHash's cost
  };
  runner = new NodeRunner(services, opts.maintenance ?? platformMaintenance);
  return {
    services,
    database,
    runner,
    async close() {
      await runner?.stop();
      await counters.settle();
      await redis?.close?.();
      await database.close();
    },
  };
}
