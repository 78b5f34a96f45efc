import { defineConfig } from 'vitest/config';

/** `npm run test:browser`: the console in Debian's headless Chromium against a real server. */
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/browser/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
