import { defineConfig } from 'vitest/config';

/** `npm test`: everything on embedded PGlite, nothing but Node needed. */
export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    exclude: ['test/workers/**', 'test/browser/**', 'test/standins/**', 'node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
