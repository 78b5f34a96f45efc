import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError, errorCodes, SHOULD_RETRY_HEADER, shouldRetry, shouldRetryOf } from '../shared/platform/contract/errors';
import { createEngine, type Tenant, type TestEngine } from './harness';

/**
 * Every error answer carries `x-should-retry` (docs/errors.md), whichever layer wrote it: the
 * error handler, the unknown-route and wrong-method answers, the body limit, auth.
 */
let engine: TestEngine;
let tenant: Tenant;
beforeAll(async () => {
  engine = await createEngine();
  tenant = await engine.newTenant('free');
});
afterAll(async () => {
  await engine?.close();
});

const BASE = 'http://engram.test';

async function answer(method: string, path: string, init: { key?: string; body?: string | Uint8Array; type?: string } = {}) {
  const headers: Record<string, string> = {};
  if (init.key) headers.authorization = `Bearer ${init.key}`;
  if (init.body !== undefined) headers['content-type'] = init.type ?? 'application/json';
  const res = await engine.app.fetch(new Request(`${BASE}${path}`, { method, headers, body: init.body as BodyInit | undefined }));
  const body = (await res.json().catch(() => null)) as { code?: string } | null;
  return { status: res.status, code: body?.code, shouldRetry: res.headers.get(SHOULD_RETRY_HEADER) };
}

describe('x-should-retry on every error answer', () => {
  it('says what the error table says for each kind of error', async () => {
    const kinds = [
      await answer('GET', '/v1/memories'), // 401: no key
      await answer('GET', '/v1/memories', { key: 'engram_not_a_key' }), // 401: unknown key
      await answer('GET', '/v1/no-such-route', { key: tenant.key }), // 404: no route
      await answer('GET', '/v1/memories/mem_00000000000000000000000000', { key: tenant.key }), // 404: no such memory
      await answer('PUT', '/v1/memories', { key: tenant.key, body: '{}' }), // 405
      await answer('POST', '/v1/memories', { key: tenant.key, body: '{}' }), // 400: validation
      await answer('POST', '/v1/memories', { key: tenant.key, body: 'x', type: 'text/plain' }), // 415
      await answer('POST', '/v1/memories', { key: tenant.key, body: JSON.stringify({ observation: 'x'.repeat(1024 * 1024 + 10) }) }), // 413
    ];
    expect(kinds.map((k) => k.status)).toEqual([401, 401, 404, 404, 405, 400, 415, 413]);
    for (const kind of kinds) {
      expect(kind.code, JSON.stringify(kind)).toBeTypeOf('string');
      expect(kind.shouldRetry, JSON.stringify(kind)).toBe(String(errorCodes[kind.code as keyof typeof errorCodes].retryable));
    }
  });

  it('is absent on a success', async () => {
    const res = await engine.app.fetch(new Request(`${BASE}/v1/memories`, { headers: { authorization: `Bearer ${tenant.key}` } }));
    expect(res.status).toBe(200);
    expect(res.headers.has(SHOULD_RETRY_HEADER)).toBe(false);
  });

  it('is true for the transient codes, false for the rest, and an AppError may say otherwise', () => {
    const retryable = Object.entries(errorCodes)
      .filter(([, e]) => e.retryable)
      .map(([code]) => code)
      .sort();
    expect(retryable).toEqual(['INTERNAL_ERROR', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE', 'UPSTREAM_ERROR']);
    expect(shouldRetry(new AppError('CONFLICT', 'a duplicate'))).toBe(false);
    const running = new AppError('CONFLICT', 'still running');
    running.retryable = true;
    expect(shouldRetry(running)).toBe(true);
    // A body that names no code of the table: by status.
    expect([429, 500, 502, 503, 504, 400, 404, 501].map((s) => shouldRetryOf(s, undefined))).toEqual([true, true, true, true, true, false, false, false]);
  });
});
