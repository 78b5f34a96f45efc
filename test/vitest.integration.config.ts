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
    // The contract test starts its own embedded server (its webhook must not meet the shared outbox): one run in `npm test` is enough.
    exclude: ['test/workers/**', 'test/browser/**', 'test/sdk/contract.test.ts', 'node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // One file at a time: the files share the database and Redis, and the maintenance, rollbacks and
    // fixed windows some of them run reach what the others wrote.
    fileParallelism: false,
  },
});
