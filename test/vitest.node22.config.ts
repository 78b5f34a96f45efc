import { defineConfig } from 'vitest/config';

/**
 * Packages that need Node 22 (engram-ai-sdk: AI SDK 7 requires it): their suites against the same
 * embedded engram as `npm test`, run by .ci/run on Node 22 (`npm run test:node22`).
 */
export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['integrations/ai-sdk/test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
