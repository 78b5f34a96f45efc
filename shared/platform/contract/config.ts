import { z } from 'zod';

const flag = z
  .enum(['0', '1', 'true', 'false', ''])
  .optional()
  .transform((v) => v === '1' || v === 'true');

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const optionalUrl = optionalString.pipe(z.url().optional());

/**
 * Every setting the service reads, for all three run modes. Only `functions/node.ts` (process.env)
 * and `functions/worker.ts` (bindings) call `parseConfig`; everything else receives the result.
 */
export const configSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8787),
  /** Node: the address to listen on. Loopback by default; `0.0.0.0` or `::` to serve other hosts. */
  HOST: z.string().trim().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().default('./.data'),
  /**
   * Embedded PGlite: flush each commit to disk (fsync) before acknowledging it, so a power loss
   * cannot lose or corrupt acknowledged writes. `0` trades that for faster writes (no flush per commit).
   */
  PGLITE_FSYNC: z
    .enum(['0', '1', 'true', 'false', ''])
    .optional()
    .transform((v) => v !== '0' && v !== 'false'),
  /**
   * `off`: no driver shortcuts (shared/platform/data/driver/): drizzle's own transactions and statements
   * throughout. Slower; for when a drizzle upgrade has moved the internals they rely on.
   */
  DB_DRIVER_SHORTCUTS: z
    .enum(['on', 'off', '1', '0', 'true', 'false', ''])
    .optional()
    .transform((v) => v !== 'off' && v !== '0' && v !== 'false'),
  DATABASE_URL: optionalString.pipe(
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must start with postgres:// or postgresql://')
      .optional(),
  ),
  REDIS_URL: optionalString.pipe(
    z
      .string()
      .regex(/^rediss?:\/\//, 'must start with redis:// or rediss://')
      .optional(),
  ),
  UPSTASH_REDIS_REST_URL: optionalUrl,
  UPSTASH_REDIS_REST_TOKEN: optionalString,
  QSTASH_URL: optionalUrl,
  QSTASH_TOKEN: optionalString,
  QSTASH_CURRENT_SIGNING_KEY: optionalString,
  QSTASH_NEXT_SIGNING_KEY: optionalString,
  /** Public base URL of this deployment; QStash calls the outbox endpoint under it. */
  PUBLIC_URL: optionalUrl,
  /**
   * Comma-separated origins (scheme://host[:port]) whose browser pages may call /mcp, beside
   * PUBLIC_URL's and loopback pages; a request from any other Origin is refused (DNS rebinding).
   */
  MCP_ALLOWED_ORIGINS: optionalString,
  ADMIN_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  MAIL_TRANSPORT: z.enum(['outbox', 'log', 'resend']).default('outbox'),
  MAIL_FROM: z.string().default('engram <no-reply@engram.local>'),
  RESEND_API_KEY: optionalString,
  RESEND_API_URL: z.url().default('https://api.resend.com/emails'),
  /**
   * Node: how many reverse proxies of your own stand in front of the server. The client address is
   * the X-Forwarded-For entry that many hops from the right (`1`/`true`: the one your proxy appended);
   * `0` (default) ignores the header and uses the socket address.
   */
  TRUST_PROXY: z
    .string()
    .trim()
    .optional()
    .transform((v) => (v === undefined || v === '' || v === 'false' ? '0' : v === 'true' ? '1' : v))
    .pipe(
      z
        .string()
        .regex(/^\d{1,2}$/, 'must be 0, 1, true, false or a number of proxy hops')
        .transform(Number),
    ),
  UPGRADE_URL: z.url().default('https://engram.dev/pricing'),
  /** Local development and tests only: webhooks may use http:// and private or loopback addresses. */
  WEBHOOKS_ALLOW_INSECURE: flag,
  /** How long one webhook delivery waits for the receiver's answer. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  /** Workers resolve webhook hosts through this DNS-over-HTTPS endpoint (JSON API) for the address rule. */
  DOH_URL: z.url().default('https://cloudflare-dns.com/dns-query'),
  /** Node: OpenTelemetry traces go to `<endpoint>/v1/traces` over OTLP/HTTP when set. */
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalString,
  /**
   * Memory spans carry the search query (`gen_ai.memory.query.text`) only when this is `true`: the
   * GenAI semantic conventions' opt-in for content, off by default.
   */
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: flag,
  /** The `service.name` of those traces. */
  OTEL_SERVICE_NAME: z.string().min(1).default('engram'),
  /** Node: the bearer token `/metrics` asks for; without it only loopback clients may scrape. */
  METRICS_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  /** Node: on SIGTERM or SIGINT, how long requests in flight may take to finish before their connections close. */
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  /** Multiplies every per-key request-rate limit; operators and benchmarks raise it. */
  RATE_LIMIT_SCALE: z.coerce.number().positive().default(1),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  /** Neon driver over a plain ws:// proxy (local development and tests only). */
  NEON_WS_PROXY: optionalString,
  SVC_ENABLE_EXPERIMENTAL: flag,
  /** A Cortex run applies this many changes in its request and the rest through the job queue, this many a job (Workers' request limits). */
  CORTEX_BATCH: z.coerce.number().int().min(1).max(5_000).default(500),
  /** Memories the `near_duplicate_index` maintenance task probes per tick (each an HNSW lookup), shared among the tenants waiting. */
  NEAR_DUPLICATE_PROBES_PER_TICK: z.coerce.number().int().min(1).max(100_000).default(2_000),
  /** POST /v1/import: a file of at most this many lines is stored while the request waits; a longer one by a job (202). */
  IMPORT_INLINE_MAX_LINES: z.coerce.number().int().min(0).max(100_000).default(10_000),
  /** `use` (offline, Node default), `openai` (any compatible endpoint), `workers-ai`, `hash` (tests). */
  EMBEDDING_PROVIDER: z.enum(['use', 'openai', 'workers-ai', 'hash']).optional(),
  EMBEDDING_BASE_URL: z.url().default('https://api.openai.com/v1'),
  EMBEDDING_API_KEY: optionalString,
  EMBEDDING_MODEL: optionalString,
  /** Native dimension of the provider; at most 512 (shorter vectors are zero-padded). */
  EMBEDDING_DIMENSIONS: z.coerce.number().int().min(1).max(512).default(512),
  /**
   * Search reranks its top candidates with this provider (docs/memories.md#reranking): `cohere`
   * (the Cohere-compatible `POST {RERANK_BASE_URL}/v1/rerank`), `workers-ai` (the AI binding) or
   * `none` (default).
   */
  RERANK_PROVIDER: z.enum(['none', 'cohere', 'workers-ai']).default('none'),
  RERANK_BASE_URL: z.url().default('https://api.cohere.com'),
  RERANK_API_KEY: optionalString,
  /** Default `rerank-v3.5` (cohere) or `@cf/baai/bge-reranker-base` (workers-ai). */
  RERANK_MODEL: optionalString,
  /** How long a search waits for the reranker before it answers in its own order (`rerank: "failed"`). */
  RERANK_TIMEOUT_MS: z.coerce.number().int().min(10).max(30_000).default(800),
  /** How many of the top candidates go to the reranker. */
  RERANK_TOP_N: z.coerce.number().int().min(2).max(400).default(50),
  /** Cosine at or above which `auto_link` links a new memory to an existing one. */
  AUTO_LINK_THRESHOLD: z.coerce.number().min(0).max(1).default(0.8),
  /** Live event stream (`GET /v1/events/stream`): a comment line every this many ms keeps proxies from closing it. */
  EVENT_STREAM_HEARTBEAT_MS: z.coerce.number().int().min(10).max(300_000).default(15_000),
  /**
   * How often an open stream reads the events table when nothing woke it: the delay for events
   * another instance committed (on Workers, for every event).
   */
  EVENT_STREAM_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1_000),
  /** Open event streams one API key may hold at once, across instances. */
  EVENT_STREAMS_PER_KEY: z.coerce.number().int().min(1).max(100).default(5),
  /**
   * The trace signing key, an RSA-4096 private key as PKCS#8 PEM (literal `\n` allowed). Needed on
   * Workers and wherever several instances share one database; without it Node keeps a generated
   * key in DATA_DIR.
   */
  TRACE_SIGNING_KEY: optionalString,
  /** An active trace without a new step for this many hours is sealed as `interrupted` by maintenance. */
  TRACE_IDLE_TIMEOUT_HOURS: z.coerce.number().min(0.01).max(8_760).default(24),
  /** A governed action pending review longer than this many hours is denied (`expired`) by maintenance. */
  ACTION_APPROVAL_TTL_HOURS: z.coerce.number().min(0.01).max(8_760).default(72),
  /** Base of the invitation links in share responses: `{SHARE_BASE_URL}/join?token=...`. */
  SHARE_BASE_URL: optionalUrl,
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  constructor(issues: string[]) {
    super(`Invalid configuration:\n${issues.map((i) => `  - ${i}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function parseConfig(source: Record<string, unknown>): Config {
  const result = configSchema.safeParse(source);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`));
  }
  const config = result.data;
  const problems: string[] = [];
  if (config.MAIL_TRANSPORT === 'resend' && !config.RESEND_API_KEY) {
    problems.push('RESEND_API_KEY: required when MAIL_TRANSPORT=resend');
  }
  if (Boolean(config.UPSTASH_REDIS_REST_URL) !== Boolean(config.UPSTASH_REDIS_REST_TOKEN)) {
    problems.push('UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN: set both or neither');
  }
  if (config.QSTASH_TOKEN && !(config.QSTASH_CURRENT_SIGNING_KEY && config.QSTASH_NEXT_SIGNING_KEY)) {
    problems.push('QSTASH_CURRENT_SIGNING_KEY and QSTASH_NEXT_SIGNING_KEY: required with QSTASH_TOKEN');
  }
  if (config.QSTASH_TOKEN && !config.PUBLIC_URL) {
    problems.push('PUBLIC_URL: required with QSTASH_TOKEN (QStash delivers jobs back to it)');
  }
  if (config.ADMIN_TOKEN && !isLoopbackHost(config.HOST)) {
    const weakness = secretWeakness(config.ADMIN_TOKEN);
    if (weakness) {
      problems.push(
        `ADMIN_TOKEN: ${weakness}; refused on a non-loopback HOST (${config.HOST}). Use at least 32 random characters, e.g. \`openssl rand -hex 32\``,
      );
    }
  }
  if (problems.length) throw new ConfigError(problems);
  return config;
}

/** True for an address only this machine can reach (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  return h === 'localhost' || h === '::1' || /^(::ffff:)?127(\.\d{1,3}){3}$/.test(h);
}

const EXAMPLE_WORDS = /change-?me|example|passw(or)?d|secret|admin|token|test|default|engram|1234|qwerty|letmein/i;

/** Why a secret is too weak to guard an address others can reach, or null when it is fine. */
export function secretWeakness(secret: string): string | null {
  if (secret.length < 32) return 'shorter than 32 characters';
  if (EXAMPLE_WORDS.test(secret)) return 'looks like an example or a word, not a random value';
  if (new Set(secret).size < 12) return 'too few distinct characters';
  return null;
}
