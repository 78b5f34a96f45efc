import { defineConfig } from 'vitest/config';

/**
 * The same suite against real Postgres + pgvector and Redis (TEST_DATABASE_URL, TEST_REDIS_URL;
 * `.ci/services.sh` starts private ones), plus the stand-ins for hosted services.
 */
if (!process.env.TEST_DATABASE_URL || !process.env.TEST_REDIS_URL) {
  throw new Error('integration run needs TEST_DATABASE_URL and TEST_REDIS_URL (eval "$(bash .ci/services.sh)")');
}

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    // These start their own embedded servers whatever the run's storage (the contract test's webhook
    // must not meet the shared outbox; the docs' examples run against a fresh embedded server), so
    // one run in `npm test` is enough.
    exclude: ['test/workers/**', 'test/browser/**', 'test/sdk/contract.test.ts', 'test/docs-links.test.ts', 'node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/integration-worker.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two files side by side, each worker on its own copy of the database and its own Redis database
    // (`test/global-setup.ts`): the maintenance, rollbacks and fixed windows some files run reach what
    // the others wrote, so files that share a database run one at a time.
    maxWorkers: 2,
  },
});
