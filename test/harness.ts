import { readFile } from 'node:fs/promises';
import type { SQL } from 'drizzle-orm';
import pg from 'pg';
import { inject } from 'vitest';
import { buildApp } from '../functions/app';
import { type ErrorBody, errorOf, freshIp, type RequestFn, testClient, type TestResponse, type Typed, uniqueEmail } from './client';
import { conformanceChecker } from './conformance';
import { jobHandlers, maintenanceTasks } from '../functions/registry';
import { parseConfig } from '../shared/platform/contract/config';
import { createLogger } from '../shared/platform/data/log';
import { testResolveHost } from './standins/dns';
import { openPglite, openPostgres } from '../shared/node/database';
import { createNodeServices, type NodeServices } from '../shared/node/services';
import type { JobHandlers } from '../shared/jobs/outbox';
import { ManualClock } from '../shared/platform/contract/time';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/** Where every test engine's clock starts: mid-month, mid-day, so no test straddles a period boundary by chance. */
export const TEST_EPOCH = new Date('2026-11-15T12:00:00.000Z');

/** Real Postgres + Redis when the integration run sets these; embedded PGlite otherwise. */
export const integration = {
  databaseUrl: process.env.TEST_DATABASE_URL,
  redisUrl: process.env.TEST_REDIS_URL,
};
export const storageName = integration.databaseUrl ? 'postgres' : 'embedded';

/**
 * A fresh, empty database on the integration server, for a test about a whole database (the planner's
 * statistics, maintenance across every tenant) that other files' rows would move; `drop` removes it.
 */
export async function ownPostgresDatabase(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `engram_own_${crypto.randomUUID().slice(0, 8)}`;
  const admin = async (statement: string) => {
    const c = new pg.Client({ connectionString: serverUrl });
    await c.connect();
    try {
      await c.query(statement);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

export interface Tenant {
  tenantId: string;
  email: string;
  key: string;
  keyId: string;
  tier: string;
}

export { errorOf, freshIp, uniqueEmail };
export type { ErrorBody, TestResponse };

export interface TestEngine {
  node: NodeServices;
  clock: ManualClock;
  app: ReturnType<typeof buildApp>;
  request: RequestFn;
  admin: <T = never, M extends string = string, P extends string = string>(method: M, path: P, body?: unknown) => Promise<TestResponse<Typed<T, M, P>>>;
  /** The rows of a raw query on the engine's database, typed as the caller says they come back. */
  sql<T = Record<string, unknown>>(query: SQL): Promise<T[]>;
  newTenant(tier?: 'free' | 'starter' | 'pro' | 'enterprise'): Promise<Tenant>;
  latestMailToken(email: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * One engine per test file: the real app in-process over `app.request`, with a movable clock.
 * `env` adds or overrides configuration (as the process environment would). `ownDatabase`: on
 * Postgres, a database of its own instead of the one the integration files share (the embedded
 * default gives every engine its own anyway), dropped on close.
 */
export async function createEngine(
  opts: { env?: Record<string, string>; jobHandlers?: JobHandlers; resolveHost?: (hostname: string) => Promise<string[]>; ownDatabase?: boolean } = {},
): Promise<TestEngine> {
  const own = opts.ownDatabase && integration.databaseUrl ? await ownPostgresDatabase(integration.databaseUrl) : undefined;
  const config = parseConfig({
    ADMIN_TOKEN,
    TRUST_PROXY: '1',
    LOG_LEVEL: 'silent',
    DATA_DIR: 'memory://',
    DATABASE_URL: own?.url ?? integration.databaseUrl,
    REDIS_URL: integration.redisUrl,
    EMBEDDING_PROVIDER: 'hash',
    // `DB_DRIVER_SHORTCUTS=off npm test`: the suite on drizzle's own transactions and statements.
    DB_DRIVER_SHORTCUTS: process.env.DB_DRIVER_SHORTCUTS,
    // Suites share one outbox on Postgres: a delivery to a fuzzed or example host that cannot be
    // reached here must give up fast when another file's runner picks it up.
    WEBHOOK_TIMEOUT_MS: '1000',
    ...opts.env,
  });
  const database = config.DATABASE_URL
    ? openPostgres(config.DATABASE_URL, 5, { shortcuts: config.DB_DRIVER_SHORTCUTS })
    : await openPglite({ loadDataDir: new Blob([await readFile(inject('pgliteSnapshot'))]), shortcuts: config.DB_DRIVER_SHORTCUTS });
  const clock = new ManualClock(TEST_EPOCH);
  const log = createLogger(config.LOG_LEVEL);
  const node = await createNodeServices(config, {
    database,
    clock,
    log,
    jobHandlers: { ...jobHandlers(config, log), ...opts.jobHandlers },
    maintenance: maintenanceTasks,
    resolveHost: opts.resolveHost ?? testResolveHost,
  });
  const app = buildApp(() => node.services);
  const conforms = conformanceChecker(app);

  const request = testClient((req) => app.request(req), {
    check: (method, path, res) => conforms(method, path, res.status, res.headers.get('content-type'), res.body, res.headers),
  });

  const engine: TestEngine = {
    node,
    clock,
    app,
    request,
    admin: ((method: string, path: string, body?: unknown) => request(method, path, { key: ADMIN_TOKEN, body })) as TestEngine['admin'],
    // Every driver answers `execute` with `{ rows }`; drizzle types it per driver, so the one cast is here.
    sql: async <T>(query: SQL) => ((await node.services.db.execute(query)) as unknown as { rows: T[] }).rows,
    async newTenant(tier = 'free') {
      const email = uniqueEmail(tier);
      const res = await engine.admin('POST', '/admin/v1/tenants', { email, tier });
      if (res.status !== 201) throw new Error(`tenant creation failed: ${res.status} ${res.text}`);
      return { tenantId: res.body.tenant_id, email, key: res.body.api_key, keyId: res.body.key_id, tier };
    },
    async latestMailToken(email) {
      const res = await engine.admin('GET', `/admin/v1/mail?to=${encodeURIComponent(email)}`);
      const token = res.body.messages?.find((m: { token: string | null }) => m.token)?.token;
      if (!token) throw new Error(`no mail with a token for ${email}: ${res.text}`);
      return token;
    },
    close: async () => {
      await node.close();
      await own?.drop();
    },
  };
  return engine;
}

/** The texts `engine`'s embedder is given while `run` runs (its calls pass through). */
export async function embeddedBy(engine: TestEngine, run: () => Promise<void>): Promise<string[]> {
  const embedder = engine.node.services.embedder;
  const embed = embedder.embed.bind(embedder);
  const seen: string[] = [];
  (embedder as { embed: typeof embed }).embed = async (texts) => (seen.push(...texts), embed(texts));
  try {
    await run();
  } finally {
    (embedder as { embed: typeof embed }).embed = embed;
  }
  return seen;
}
