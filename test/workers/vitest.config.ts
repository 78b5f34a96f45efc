import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { defineConfig } from 'vitest/config';

/**
 * `npm run test:workers`: the worker against real Postgres (through the Neon driver and a local
 * WebSocket proxy), Redis (through an Upstash REST proxy) and a fake QStash. Needs TEST_DATABASE_URL
 * and TEST_REDIS_URL (`.ci/services.sh` starts private ones).
 *
 * Two projects share one Node-side globalSetup (global-setup.ts), which starts the stand-ins and
 * `provide`s the bindings:
 *  - workerd: tests run inside workerd next to the worker (@cloudflare/vitest-plugin); the bindings
 *    reach miniflare through the plugin's options callback, whose `inject` reads provided values.
 *  - wrangler-dev: Node tests that run the real `wrangler dev` CLI with the bindings as `--var`s,
 *    and `npm run worker:dev` as a developer starts it.
 */
const root = new URL('../..', import.meta.url).pathname;

export default defineConfig({
  test: {
    root,
    globalSetup: ['test/workers/global-setup.ts'],
    projects: [
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: `${root}wrangler.toml` },
            // The AI binding in wrangler.toml would need a Cloudflare login (a remote proxy session);
            // tests embed with the `hash` provider (or check what happens without a provider).
            remoteBindings: false,
            // Merged over wrangler.toml's [vars]; these win.
            miniflare: { bindings: { ...inject('workerBindings') } },
          })),
        ],
        test: {
          name: 'workerd',
          root,
          include: ['test/workers/**/*.test.ts'],
          exclude: ['test/workers/wrangler-dev.test.ts', 'test/workers/worker-dev.test.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'wrangler-dev',
          root,
          environment: 'node',
          include: ['test/workers/wrangler-dev.test.ts', 'test/workers/worker-dev.test.ts'],
          testTimeout: 30_000,
          hookTimeout: 90_000,
        },
      },
    ],
  },
});
