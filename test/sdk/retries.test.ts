import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engram, EngramError, type FetchLike } from '../../sdk/src/index';
import { retryAfterSeconds } from '../../sdk/src/errors';
import { listen } from '../../shared/node/http-server';
import { createEngine, type Tenant, type TestEngine } from '../harness';
import { BASE, engineFetch, sdkFor } from './helpers';

/**
 * Retries, idempotency and failures, with fetch wrappers in front of the real app: a 429 with
 * Retry-After, a 503, a POST whose first answer is lost after the app stored it, a network that
 * never answers; and the SDK over real HTTP on a loopback port.
 */
let engine: TestEngine;
let tenant: Tenant;
let server: Server | undefined;
beforeAll(async () => {
  engine = await createEngine();
  tenant = await engine.newTenant('free');
});
afterAll(async () => {
  server?.close();
  await engine?.close();
});

interface Seen {
  method: string;
  path: string;
  idempotencyKey: string | null;
}

/** Passes every call to the app, answering the first call `first` wants to answer itself. */
function wrapper(first: (url: string, init: RequestInit, pass: () => Promise<Response>) => Promise<Response>) {
  const seen: Seen[] = [];
  const real = engineFetch(engine);
  const fetch: FetchLike = async (url, init) => {
    seen.push({ method: init.method ?? 'GET', path: new URL(url).pathname, idempotencyKey: new Headers(init.headers).get('idempotency-key') });
    return seen.length === 1 ? first(url, init, () => real(url, init)) : real(url, init);
  };
  return { fetch, seen };
}

const errorBody = (status: number, code: string) => JSON.stringify({ error: code, code, status, message: `stand-in ${code}`, request_id: 'req_standin' });

describe('engram-sdk retries and errors', () => {
  it('waits out a 429 for its Retry-After, then succeeds', async () => {
    const { fetch, seen } = wrapper(
      async () => new Response(errorBody(429, 'RATE_LIMITED'), { status: 429, headers: { 'content-type': 'application/json', 'retry-after': '1' } }),
    );
    const started = Date.now();
    const found = await sdkFor(engine, tenant.key, { fetch }).memories.search({ q: 'anything' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(found.memories).toBeInstanceOf(Array);
    expect(seen.map((s) => s.path)).toEqual(['/v1/memories/search', '/v1/memories/search']);
  });

  it('retries a 503 with backoff, and gives up after maxRetries with the last error', async () => {
    const { fetch, seen } = wrapper(
      async () => new Response(errorBody(503, 'SERVICE_UNAVAILABLE'), { status: 503, headers: { 'content-type': 'application/json' } }),
    );
    expect((await sdkFor(engine, tenant.key, { fetch }).usage.get()).tier).toBe('free');
    expect(seen).toHaveLength(2);

    let calls = 0;
    const always503: FetchLike = async () => {
      calls++;
      return new Response(errorBody(503, 'SERVICE_UNAVAILABLE'), { status: 503, headers: { 'content-type': 'application/json' } });
    };
    const err = await sdkFor(engine, tenant.key, { fetch: always503, maxRetries: 1 })
      .usage.get()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngramError);
    expect(err).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', requestId: 'req_standin' });
    expect(calls).toBe(2);
  });

  it('retries a POST whose answer was lost with the same Idempotency-Key: stored once, replayed', async () => {
    let replayed: string | null = null;
    const { fetch, seen } = wrapper(async (_url, _init, pass) => {
      const res = await pass();
      expect(res.status).toBe(201);
      throw new TypeError('fetch failed: connection reset after the request was sent');
    });
    const observation = `stored exactly once ${crypto.randomUUID()}`;
    const engram = sdkFor(engine, tenant.key, {
      fetch: async (url, init) => {
        const res = await fetch(url, init);
        replayed = res.headers.get('idempotent-replayed');
        return res;
      },
    });
    const stored = await engram.memories.store({ observation });
    expect(seen).toHaveLength(2);
    expect(seen[0].idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1].idempotencyKey).toBe(seen[0].idempotencyKey);
    expect(replayed).toBe('true');
    const all = await sdkFor(engine, tenant.key).memories.list({ limit: 100 }).toArray();
    expect(all.filter((m) => m.observation === observation).map((m) => m.uuid)).toEqual([stored.uuid]);
    // Each logical call has its own key.
    await engram.memories.store({ observation: `${observation} again` });
    expect(seen[2].idempotencyKey).not.toBe(seen[0].idempotencyKey);
  });

  it('waits out a 409 whose Idempotency-Key is still running, then gets the answer', async () => {
    const { fetch, seen } = wrapper(
      async () =>
        new Response(errorBody(409, 'CONFLICT'), {
          status: 409,
          headers: { 'content-type': 'application/json', 'retry-after': '1', 'idempotency-status': 'in-progress' },
        }),
    );
    const stored = await sdkFor(engine, tenant.key, { fetch }).memories.store({ observation: 'stored after a conflict' });
    expect(stored.uuid).toMatch(/./);
    expect(seen).toHaveLength(2);
    expect(seen[1].idempotencyKey).toBe(seen[0].idempotencyKey);
    // Any other 409 (a duplicate, a decision asked for too early), even with Retry-After, is the caller's to handle.
    const dup = wrapper(
      async () => new Response(errorBody(409, 'CONFLICT'), { status: 409, headers: { 'content-type': 'application/json', 'retry-after': '5' } }),
    );
    await expect(sdkFor(engine, tenant.key, { fetch: dup.fetch }).memories.store({ observation: 'a duplicate' })).rejects.toMatchObject({ status: 409 });
    expect(dup.seen).toHaveLength(1);
  });

  it('turns a network that keeps failing into EngramError NETWORK_ERROR, and a hung one into TIMEOUT', async () => {
    let calls = 0;
    const down: FetchLike = async () => {
      calls++;
      throw new TypeError('fetch failed');
    };
    const err = (await sdkFor(engine, tenant.key, { fetch: down, maxRetries: 2 })
      .memories.search({ q: 'x' })
      .catch((e: unknown) => e)) as EngramError;
    expect(err).toBeInstanceOf(EngramError);
    expect(err).toMatchObject({ status: 0, code: 'NETWORK_ERROR' });
    expect(calls).toBe(3);

    const hung: FetchLike = (_url, init) => new Promise((_, reject) => init.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
    const slow = new Engram({ apiKey: tenant.key, baseUrl: BASE, fetch: hung, maxRetries: 0, timeoutMs: 50 });
    await expect(slow.memories.search({ q: 'x' })).rejects.toMatchObject({ status: 0, code: 'TIMEOUT' });
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-15T12:00:00Z');
    expect(retryAfterSeconds('3', now)).toBe(3);
    expect(retryAfterSeconds('Sun, 15 Nov 2026 12:00:05 GMT', now)).toBe(5);
    expect(retryAfterSeconds('soon', now)).toBeNull();
  });

  it('works over real HTTP against the Node server', async () => {
    const { server: s, address } = await listen(engine.app.fetch, { host: '127.0.0.1', port: 0 });
    server = s;
    const engram = new Engram({ apiKey: tenant.key, baseUrl: `http://127.0.0.1:${address.port}/` });
    const stored = await engram.memories.store({ observation: 'Stored over a real socket about espresso' });
    const found = await engram.memories.search({ q: 'espresso over a socket' });
    expect(found.memories.map((m) => m.uuid)).toContain(stored.uuid);
    await expect(engram.traces.list().page()).rejects.toMatchObject({ status: 403, code: 'FEATURE_NOT_AVAILABLE' });
  });
});
