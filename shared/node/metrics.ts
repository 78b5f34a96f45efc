import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Embedder } from '../memory/embeddings';
import type { Metrics } from '../platform/http/metrics';
import { inSpan } from '../platform/http/tracing';

/** What the gauges read at scrape time. */
export interface MetricSources {
  /** The Postgres pool (absent on embedded PGlite, which has one in-process connection). */
  pool?: () => { total: number; idle: number; waiting: number };
  /** Pending jobs due now and the age in seconds of the oldest pending one. */
  outbox: () => Promise<{ depth: number; oldestAgeSeconds: number }>;
}

const SECONDS = [0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The Node server's metrics in a registry of its own (prom-client), served at /metrics. */
export function createNodeMetrics(sources: MetricSources): Metrics {
  const registry = new Registry();
  const requests = new Counter({
    name: 'engram_http_requests_total',
    help: 'HTTP requests by operationId and status',
    labelNames: ['operation', 'status'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'engram_http_request_duration_seconds',
    help: 'HTTP request duration by operationId',
    labelNames: ['operation'],
    buckets: SECONDS,
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'engram_limit_refusals_total',
    help: 'Requests refused with 429: the per-key rate window, a monthly quota, or another limit',
    labelNames: ['limit'],
    registers: [registry],
  });
  const deliveries = new Counter({
    name: 'engram_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const embeddings = new Histogram({
    name: 'engram_embedding_call_duration_seconds',
    help: 'Calls to the embedding provider by provider and outcome',
    labelNames: ['provider', 'outcome'],
    buckets: SECONDS,
    registers: [registry],
  });
  const pool = sources.pool;
  if (pool) {
    new Gauge({
      name: 'engram_db_pool_connections',
      help: 'Postgres pool connections in use',
      registers: [registry],
      collect() {
        const p = pool();
        this.set(p.total - p.idle);
      },
    });
    new Gauge({
      name: 'engram_db_pool_waiting',
      help: 'Queries waiting for a pool connection',
      registers: [registry],
      collect() {
        this.set(pool().waiting);
      },
    });
  }
  let outbox: Promise<{ depth: number; oldestAgeSeconds: number }> | null = null;
  // One query serves both outbox gauges of a scrape.
  const readOutbox = () => (outbox ??= sources.outbox().finally(() => setTimeout(() => (outbox = null), 0)));
  new Gauge({
    name: 'engram_outbox_depth',
    help: 'Pending jobs that are due',
    registers: [registry],
    async collect() {
      this.set((await readOutbox()).depth);
    },
  });
  new Gauge({
    name: 'engram_outbox_oldest_age_seconds',
    help: 'Age of the oldest pending job',
    registers: [registry],
    async collect() {
      this.set((await readOutbox()).oldestAgeSeconds);
    },
  });

  return {
    request(operation, status, seconds) {
      requests.inc({ operation, status: String(status) });
      latency.observe({ operation }, seconds);
    },
    refused: (limit) => refusals.inc({ limit }),
    webhookDelivery: (outcome) => deliveries.inc({ outcome }),
    embedding: (provider, outcome, seconds) => embeddings.observe({ provider, outcome }, seconds),
    render: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
  };
}

/** The embedder with each call timed into the metrics and, with tracing on, in a span of its own. */
export function measuredEmbedder(embedder: Embedder, metrics: Metrics): Embedder {
  return {
    name: embedder.name,
    dimension: embedder.dimension,
    ...(embedder.problem ? { problem: () => embedder.problem!() } : {}),
    embed: (texts) =>
      inSpan('embedding', { 'engram.embedding.provider': embedder.name, 'engram.embedding.inputs': texts.length }, async () => {
        const started = performance.now();
        let outcome: 'success' | 'failure' = 'failure';
        try {
          const vectors = await embedder.embed(texts);
          outcome = 'success';
          return vectors;
        } finally {
          metrics.embedding(embedder.name, outcome, (performance.now() - started) / 1000);
        }
      }),
  };
}
