import { availableParallelism } from 'node:os';
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
    // Each file has its own embedded database, so files run side by side. Vitest leaves a core to
    // itself, which on two cores is one worker; the files also wait on their own timers, servers and
    // child processes, so two finish sooner (docs/performance.md, "Measurements behind the code").
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
