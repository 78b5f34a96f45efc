import { defineConfig } from 'vitest/config';

/**
 * `npm run fuzz`: the fuzz tests alone (the API and /mcp), longer and with more parallel workers (races show up with
 * them). Embedded by default; with TEST_DATABASE_URL (and TEST_REDIS_URL) against Postgres (and
 * Redis). FUZZ_SECONDS, FUZZ_REQUESTS, FUZZ_CONCURRENCY and FUZZ_SEED override the defaults.
 */
const seconds = Number(process.env.FUZZ_SECONDS ?? 300);

export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/fuzz.test.ts', 'test/fuzz-mcp.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    env: { FUZZ_SECONDS: String(seconds), FUZZ_CONCURRENCY: process.env.FUZZ_CONCURRENCY ?? '8' },
    testTimeout: (seconds + 300) * 1000,
    hookTimeout: 60_000,
  },
});
