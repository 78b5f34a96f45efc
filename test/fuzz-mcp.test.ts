import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../shared/node/http-server';
import { createEngine, storageName, type TestEngine } from './harness';
import { describeMcp, fuzzMcp } from './fuzz/mcp';

/**
 * `/mcp` fuzzed over real HTTP (see test/fuzz/mcp.ts): every tool a free and a pro key list,
 * called with arguments generated from its input schema, well-formed and hostile, and malformed
 * JSON-RPC. FUZZ_SEED repeats a run; FUZZ_SECONDS and FUZZ_REQUESTS bound it (CI: about 20 s).
 */
const seed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const seconds = Number(process.env.FUZZ_SECONDS ?? 20);
const requests = process.env.FUZZ_REQUESTS ? Number(process.env.FUZZ_REQUESTS) : undefined;

let engine: TestEngine;
let server: Server;
let base: string;
beforeAll(async () => {
  engine = await createEngine({ env: { RATE_LIMIT_SCALE: '1000', LOG_LEVEL: 'error', SVC_ENABLE_EXPERIMENTAL: '1' } });
  ({ server } = await listen(engine.app.fetch, { host: '127.0.0.1', port: 0 }));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await engine?.close();
});

describe(`MCP fuzz (${storageName})`, () => {
  it(
    'no 5xx, no internal error, API errors are tool results with the one error body',
    async () => {
      const report = await fuzzMcp({ base, newTenant: (tier) => engine.newTenant(tier) }, { seed, seconds, requests });
      const text = describeMcp(report);
      console.log(text.split('\n').slice(0, 2).join('\n'));
      expect(report.tools).toBeGreaterThan(20);
      expect(report.failures.length, text).toBe(0);
    },
    (seconds + 120) * 1000,
  );
});
