/// <reference types="@cloudflare/vitest-plugin/types" />
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import worker from '../../functions/worker';
import { testClient } from '../client';

/**
 * What a request costs Neon in connections. A Worker cannot keep a connection from one request to
 * the next, so every connection a request opens is a WebSocket and a PostgreSQL startup, and Neon
 * limits how many a compute holds: a request must open one, however many statements it sends. The
 * worker runs here against a Neon proxy stand-in of this file's own, which counts (GET /stats).
 */
const bindings = env as unknown as Record<string, string>;
const counted = { ...bindings, NEON_WS_PROXY: bindings.TEST_COUNTING_NEON_WS_PROXY };

/** The request through the worker with the counting proxy; answered once its waitUntil work (the pool's end) is done too. */
const call = testClient(
  async (req) => {
    const ctx = createExecutionContext();
    const res = await worker.fetch(req, counted, ctx);
    const body = await res.arrayBuffer();
    await waitOnExecutionContext(ctx);
    return new Response(body, res);
  },
  { base: 'https://engram.test' },
);

async function stats(): Promise<{ sent: number; opened: number }> {
  return (await fetch(`http://${bindings.TEST_COUNTING_NEON_WS_PROXY}/stats`)).json();
}

describe('worker in workerd: one connection to Postgres a request', () => {
  let key = '';
  beforeAll(async () => {
    const res = await call('POST', '/admin/v1/tenants', {
      key: bindings.ADMIN_TOKEN,
      body: { email: `conn-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
    });
    expect(res.status, res.text).toBe(201);
    key = res.body.api_key;
  });

  it.each([
    { what: 'a counted read (GET /v1/usage)', method: 'GET', path: '/v1/usage', status: 200 },
    { what: 'a store', method: 'POST', path: '/v1/memories', body: { observation: 'Counted connections, one a request' }, status: 201 },
    { what: 'a semantic search', method: 'GET', path: '/v1/memories/search?q=connections&mode=semantic', status: 200 },
    { what: 'a hybrid search', method: 'GET', path: '/v1/memories/search?q=connections&mode=hybrid', status: 200 },
  ])('$what opens one', async ({ method, path, body, status }) => {
    const before = await stats();
    const res = await call(method, path, { key, body });
    expect(res.status, res.text).toBe(status);
    const after = await stats();
    expect(after.opened - before.opened).toBe(1);
  });
});
