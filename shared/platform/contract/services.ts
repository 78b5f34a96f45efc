import type { Context } from 'hono';
import type { Config } from './config';
import type { CounterStore } from '../data/counters';
import type { Db, StorageKind } from '../data/db';
import type { Embedder } from '../../memory/embeddings';
import type { Reranker } from '../../memory/rerank';
import type { EventBus } from '../data/event-bus';
import type { KeyCache } from '../data/key-cache';
import type { Logger } from '../data/log';
import type { JobHandlers } from '../../jobs/outbox';
import type { RateLimiter } from '../limits/ratelimit';
import type { RedisOps } from '../data/redis';
import type { RequestGate } from '../limits/request-gate';
import type { Clock } from './time';
import type { SigningKeySource } from './trace-signing';
import type { Metrics } from '../http/metrics';
import type { Tracing } from '../http/tracing';

export const VERSION = '0.1.0';

/** Per-process request statistics for /v1/status (a cache of facts, not state others need). */
export class RequestStats {
  readonly startedAt = Date.now();
  private count = 0;
  private totalMs = 0;
  record(ms: number) {
    this.count += 1;
    this.totalMs += ms;
  }
  get averageMs(): number {
    return this.count ? Math.round((this.totalMs / this.count) * 100) / 100 : 0;
  }
}

/**
 * Where each request connects to Postgres afresh (Workers: no I/O outlives a request), a second
 * statement sent while one runs opens a second connection, a WebSocket and a PostgreSQL startup,
 * which costs more than waiting for the first, and Neon limits the connections a compute holds.
 * There, statements that could run side by side run one after the other.
 */
export const oneConnectionPerRequest = (services: Pick<Services, 'runtime'>) => services.runtime === 'workers';

/** Everything a handler or service verb may use; built once per process (Node) or request (Workers). */
export interface Services {
  config: Config;
  db: Db;
  storage: StorageKind;
  runtime: 'node' | 'workers';
  clock: Clock;
  log: Logger;
  counters: CounterStore;
  embedder: Embedder;
  /** RERANK_PROVIDER's reranker; unset when it is `none` (shared/memory/rerank.ts). */
  reranker?: Reranker;
  rateLimiter: RateLimiter;
  redis: RedisOps | null;
  /**
   * Where one process owns the database (embedded), and with Redis behind the key epoch of `gate`;
   * elsewhere (Postgres without Redis, Workers) every request reads its key.
   */
  keyCache: KeyCache | null;
  /** Node with Postgres and Redis: key epochs, rate and api_calls counted in one Redis call (request-gate.ts). */
  gate: RequestGate | null;
  /** Called after a commit that wrote outbox jobs: wakes the local dispatcher or publishes to QStash. */
  notifyJobs(): void;
  /**
   * Wakes this process's live event streams right after a commit that stored events (Node). Null on
   * Workers, where every request has its own services: streams there find new events by polling.
   */
  eventBus: EventBus | null;
  /**
   * Work that must finish before the request's own resources close (Workers: the per-request pool
   * ends when the response body does, and a stream's lease is released after that). Unset on Node.
   */
  waitUntil?(work: Promise<unknown>): void;
  /** A job was put back to run in `delayMs`: QStash is asked to call back then (Workers); Node's poll finds it anyway. */
  scheduleJobs?(delayMs: number): void;
  /** The addresses a host name resolves to, for the outbound address rule (webhooks). */
  resolveHost(hostname: string): Promise<string[]>;
  /**
   * Node: `fetch` that connects to `addresses` (those the address rule checked) instead of resolving
   * the URL's name again, keeping the name for TLS and the Host header. Unset on Workers, whose
   * fetch cannot reach private or loopback addresses whatever a name resolves to.
   */
  fetchAt?(url: string, init: RequestInit, addresses: string[]): Promise<Response>;
  /** The key that signs sealed traces; rejects with 503 where none is configured. */
  signingKey: SigningKeySource;
  jobHandlers: JobHandlers;
  stats: RequestStats;
  /** Node: what `/metrics` serves (shared/platform/http/metrics.ts). Unset on Workers. */
  metrics?: Metrics;
  /** Node with OTEL_EXPORTER_OTLP_ENDPOINT: the tracer of this server's spans (shared/platform/http/tracing.ts). */
  tracing?: Tracing;
  /**
   * Synchronous SHA-256 where the runtime has one (Node): WebCrypto's digest hops through a thread
   * pool, which under load queues every authenticated request behind the others. Key hashing
   * and trace step hashing (hex of the UTF-8 string) use it.
   */
  hashSecret?: (secret: string) => string;
  /** Client address: CF-Connecting-IP on Workers; socket or trusted X-Forwarded-For on Node. */
  clientIp(c: Context): string | null;
  /** The /docs page's script (Scalar's standalone bundle), from node_modules or the worker's assets. */
  docsScript?(request: Request): Promise<Response>;
}
