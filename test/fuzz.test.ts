import { afterAll, beforeAll, describe as group, expect, it } from 'vitest';
import { ADMIN_TOKEN, createEngine, storageName, type TestEngine } from './harness';
import { describe, fuzz } from './fuzz/fuzzer';

/**
 * Every operation of the app's own /openapi.json, fuzzed with malformed bodies, queries and path
 * parameters (see test/fuzz/). Any 5xx fails, and so does an error without the one error body.
 * FUZZ_SEED repeats a run; FUZZ_SECONDS and FUZZ_REQUESTS bound it (CI: about 40 s);
 * FUZZ_CONCURRENCY sets the parallel workers. `npm run fuzz` is the larger run.
 */
const seed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const seconds = Number(process.env.FUZZ_SECONDS ?? 40);
const requests = process.env.FUZZ_REQUESTS ? Number(process.env.FUZZ_REQUESTS) : undefined;
const concurrency = Number(process.env.FUZZ_CONCURRENCY ?? 3);

let engine: TestEngine;
beforeAll(async () => {
  // Fuzzing is many requests from a few keys: lift the per-key request rate, not the quotas.
  // Server errors are logged, so a 5xx in CI shows its cause beside the failing request.
  engine = await createEngine({ env: { RATE_LIMIT_SCALE: '1000', LOG_LEVEL: 'error', SVC_ENABLE_EXPERIMENTAL: '1' } });
});
afterAll(() => engine?.close());

group(`fuzz (${storageName})`, () => {
  it(
    'no operation answers 5xx or an error without the one error body',
    async () => {
      const doc = (await engine.request('GET', '/openapi.json')).body;
      const report = await fuzz(
        {
          adminToken: ADMIN_TOKEN,
          request: (method, path, o) => engine.request(method, path, { headers: o.headers, raw: o.raw }),
          newTenant: (tier) => engine.newTenant(tier),
        },
        doc,
        { seed, seconds, requests, concurrency },
      );
      const text = describe(report);
      console.log(text.split('\n').slice(0, 2).join('\n'));
      expect(report.operations).toBeGreaterThan(40);
      expect(report.failures.length, text).toBe(0);
    },
    (seconds + 120) * 1000,
  );
});
