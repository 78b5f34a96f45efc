import { readFile } from 'node:fs/promises';
import { inject } from 'vitest';
import { buildApp } from '../functions/app';
import { freshIp, type RequestFn, testClient, type TestResponse, uniqueEmail } from './client';
import { conformanceChecker } from './conformance';
import { jobHandlers, maintenanceTasks } from '../functions/registry';
import { parseConfig } from '../shared/platform/config';
import { createLogger } from '../shared/platform/log';
import { testResolveHost } from './standins/dns';
import { openPglite, openPostgres } from '../shared/node/database';
import { createNodeServices, type NodeServices } from '../shared/node/services';
import type { JobHandlers } from '../shared/jobs/outbox';
import { ManualClock } from '../shared/platform/time';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/** Where every test engine's clock starts: mid-month, mid-day, so no test straddles a period boundary by chance. */
export const TEST_EPOCH = new Date('2026-11-15T12:00:00.000Z');

/** Real Postgres + Redis when the integration run sets these; embedded PGlite otherwise. */
export const integration = {
  databaseUrl: process.env.TEST_DATABASE_URL,
  redisUrl: process.env.TEST_REDIS_URL,
};
export const storageName = integration.databaseUrl ? 'postgres' : 'embedded';

export interface Tenant {
  tenantId: string;
  email: string;
  key: string;
  keyId: string;
  tier: string;
}

export { freshIp, uniqueEmail };
export type { TestResponse };

export interface TestEngine {
  node: NodeServices;
  clock: ManualClock;
  app: ReturnType<typeof buildApp>;
  request: RequestFn;
  admin<T = any>(method: string, path: string, body?: unknown): Promise<TestResponse<T>>;
  newTenant(tier?: 'free' | 'starter' | 'pro' | 'enterprise'): Promise<Tenant>;
  latestMailToken(email: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * One engine per test file: the real app in-process over `app.request`, with a movable clock.
 * `env` adds or overrides configuration (as the process environment would).
 */
export async function createEngine(
  opts: { env?: Record<string, string>; jobHandlers?: JobHandlers; resolveHost?: (hostname: string) => Promise<string[]> } = {},
): Promise<TestEngine> {
  const config = parseConfig({
    ADMIN_TOKEN,
    TRUST_PROXY: '1',
    LOG_LEVEL: 'silent',
    DATA_DIR: 'memory://',
    DATABASE_URL: integration.databaseUrl,
    REDIS_URL: integration.redisUrl,
    EMBEDDING_PROVIDER: 'hash',
    // Suites share one outbox on Postgres: a delivery to a fuzzed or example host that cannot be
    // reached here must give up fast when another file's runner picks it up.
    WEBHOOK_TIMEOUT_MS: '1000',
    ...opts.env,
  });
  const database = config.DATABASE_URL
    ? openPostgres(config.DATABASE_URL, 5)
    : await openPglite({ loadDataDir: new Blob([await readFile(inject('pgliteSnapshot'))]) });
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
    check: (method, path, res) => conforms(method, path, res.status, res.headers.get('content-type'), res.body),
  });

  const engine: TestEngine = {
    node,
    clock,
    app,
    request,
    admin: (method, path, body) => request(method, path, { key: ADMIN_TOKEN, body }),
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
    close: () => node.close(),
  };
  return engine;
}
