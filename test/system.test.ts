import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, createEngine, errorOf, freshIp, storageName, type TestEngine, uniqueEmail } from './harness';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

/** The parts of /openapi.json these tests read (the document is not a route body of its own). */
type OpenApiDoc = {
  openapi: string;
  paths: Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
};

describe('probes', () => {
  it('GET /healthz is always ok and public', async () => {
    const res = await engine.request('GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('GET /health is minimal in public and full with a key', async () => {
    const pub = await engine.request('GET', '/health');
    expect(pub.status).toBe(200);
    expect(pub.body).toMatchObject({ status: 'healthy', version: expect.any(String), enterprise_available: true });
    expect(pub.body.checks).toBeUndefined();
    expect(pub.body.warnings).toBeUndefined();

    const t = await engine.newTenant();
    const full = await engine.request('GET', '/health', { key: t.key });
    expect(full.body.checks?.database).toMatchObject({ status: 'ok' });
    expect(full.body.checks?.redis?.status).toBe(storageName === 'postgres' ? 'ok' : 'disabled');
    expect(Array.isArray(full.body.warnings)).toBe(true);
    expect((await engine.request('GET', '/health', { key: 'sk_bogusbogusbogusbogusbogus' })).status).toBe(401);
  });

  it('GET /health reports unhealthy with 503 when the database is gone', async () => {
    const broken = await createEngine();
    const t = await broken.newTenant();
    const services = broken.node.services;
    const realDb = services.db;
    services.db = new Proxy(realDb, {
      get: (target, prop) => (prop === 'execute' ? () => Promise.reject(new Error('connection refused')) : Reflect.get(target, prop)),
    });
    try {
      const res = await broken.request('GET', '/health');
      expect(res.status).toBe(503);
      expect(errorOf(res).status).toBe('unhealthy');
    } finally {
      services.db = realDb;
      await broken.close();
    }
    expect(t.key).toBeTruthy();
  });

  it('GET /v1/status: basic in public, uptime/memories/latency with a key', async () => {
    const pub = await engine.request('GET', '/v1/status');
    expect(pub.body).toEqual({ version: expect.any(String), status: 'operational', timestamp: expect.any(String) });
    const t = await engine.newTenant();
    const full = await engine.request('GET', '/v1/status', { key: t.key });
    expect(full.body).toMatchObject({ status: 'operational', total_memories_stored: 0 });
    expect(full.body.uptime_seconds).toBeGreaterThanOrEqual(0);
    expect(full.body.avg_response_time_ms).toBeGreaterThan(0);
  });
});

describe('errors share one body', () => {
  it('unknown routes are 404 NOT_FOUND', async () => {
    const res = await engine.request('GET', '/v1/nope');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'NOT_FOUND', status: 404, error: expect.any(String), message: expect.any(String) });
    expect(errorOf(res).request_id).toBe(res.headers.get('x-request-id'));
  });

  it('malformed JSON is 400 VALIDATION_ERROR; an unknown field is 400 naming it', async () => {
    const bad = await engine.request('POST', '/v1/keys', { raw: '{"email":', headers: { 'content-type': 'application/json' } });
    expect(bad.status).toBe(400);
    expect(errorOf(bad).code).toBe('VALIDATION_ERROR');
    const extra = await engine.request('POST', '/v1/keys', {
      body: { email: uniqueEmail(), surprise: true },
      headers: { 'x-forwarded-for': freshIp() },
    });
    expect([extra.status, errorOf(extra).code, errorOf(extra).details?.[0]?.path]).toEqual([400, 'VALIDATION_ERROR', 'surprise']);
  });

  it('a body that is not JSON is 415 UNSUPPORTED_MEDIA_TYPE, with or without a content type', async () => {
    const plain = await engine.request('POST', '/v1/keys', { raw: 'email=a@b.c', headers: { 'content-type': 'text/plain' } });
    expect(plain.status).toBe(415);
    expect(plain.body).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', status: 415 });
    const untyped = await engine.request('POST', '/v1/keys', { raw: '{"email":"a@example.com"}' });
    expect(untyped.status).toBe(415);
  });

  it('bodies over 1 MiB are 413', async () => {
    const res = await engine.request('POST', '/v1/keys', {
      raw: JSON.stringify({ email: 'a@example.com', pad: 'x'.repeat(1024 * 1024) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(413);
    expect(errorOf(res).code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('keeps a caller’s well-formed X-Request-Id and replaces a bad one', async () => {
    const kept = await engine.request('GET', '/healthz', { headers: { 'x-request-id': 'trace-123' } });
    expect(kept.headers.get('x-request-id')).toBe('trace-123');
    const replaced = await engine.request('GET', '/healthz', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(replaced.headers.get('x-request-id')).toMatch(/^req_/);
    const longest = 'a'.repeat(128);
    expect((await engine.request('GET', '/healthz', { headers: { 'x-request-id': longest } })).headers.get('x-request-id')).toBe(longest);
    const tooLong = await engine.request('GET', '/healthz', { headers: { 'x-request-id': `${longest}a` } });
    expect(tooLong.headers.get('x-request-id')).toMatch(/^req_/);
    const unknown = await engine.request('GET', '/v1/nowhere', { headers: { 'x-request-id': 'trace-404' } });
    expect(unknown.status).toBe(404);
    expect(errorOf(unknown).request_id).toBe('trace-404');
  });
});

describe('operator API', () => {
  it('creates, reads and re-tiers tenants; tier changes apply to the next request', async () => {
    const email = uniqueEmail('ops');
    const created = await engine.admin('POST', '/admin/v1/tenants', { email, tier: 'starter' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ email, tier: 'starter', tenant_id: expect.stringMatching(/^ten_/), key_id: expect.stringMatching(/^key_/) });
    const key = created.body.api_key;
    expect((await engine.request('GET', '/v1/usage', { key })).body.tier).toBe('starter');

    const got = await engine.admin('GET', `/admin/v1/tenants/${created.body.tenant_id}`);
    expect(got.body).toEqual({ tenant_id: created.body.tenant_id, email, tier: 'starter', created_at: expect.any(String) });
    const patched = await engine.admin('PATCH', `/admin/v1/tenants/${created.body.tenant_id}`, { tier: 'pro' });
    expect(patched.body.tier).toBe('pro');
    expect((await engine.request('GET', '/v1/usage', { key })).body.tier).toBe('pro');

    expect((await engine.admin('POST', '/admin/v1/tenants', { email, tier: 'free' })).status).toBe(409);
    expect((await engine.admin('POST', '/admin/v1/tenants', { email: uniqueEmail(), tier: 'platinum' })).status).toBe(400);
    expect((await engine.admin('GET', '/admin/v1/tenants/ten_missing')).status).toBe(404);
    expect((await engine.admin('PATCH', '/admin/v1/tenants/ten_missing', { tier: 'pro' })).status).toBe(404);
  });

  it('refuses a wrong token, and a tenant key is not an admin token', async () => {
    const t = await engine.newTenant();
    for (const key of ['wrong-token-wrong-token', t.key]) {
      const res = await engine.request('GET', '/admin/v1/tenants/ten_x', { key });
      expect(res.status).toBe(401);
    }
    expect((await engine.request('GET', '/admin/v1/tenants/ten_x')).status).toBe(401);
  });

  it('does not exist without ADMIN_TOKEN', async () => {
    const closed = await createEngine({ env: { ADMIN_TOKEN: '' } });
    try {
      const res = await closed.request('POST', '/admin/v1/tenants', { key: ADMIN_TOKEN, body: { email: uniqueEmail() } });
      expect(res.status).toBe(404);
    } finally {
      await closed.close();
    }
  });
});

describe('API documentation', () => {
  it('serves OpenAPI 3.1 documenting every route with security and error bodies', async () => {
    const res = await engine.request<OpenApiDoc>('GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const paths = Object.keys(res.body.paths);
    for (const p of [
      '/v1/keys',
      '/v1/verify',
      '/v1/keys/rotate',
      '/v1/keys/revoke',
      '/v1/usage',
      '/v1/dashboard',
      '/healthz',
      '/health',
      '/v1/status',
      '/v1/milestones',
      '/admin/v1/tenants',
      '/admin/v1/tenants/{tenant_id}',
      '/admin/v1/mail',
    ]) {
      expect(paths, p).toContain(p);
    }
    expect(res.body.paths['/v1/usage'].get.security).toEqual([{ bearerAuth: [] }]);
    expect(res.body.paths['/v1/usage'].get.responses['429']).toBeDefined();
    expect(res.body.components.schemas.Error).toBeDefined();
    expect(res.body.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    // Cached: the same document object is served again.
    expect((await engine.request('GET', '/openapi.json')).text).toBe(res.text);
  });

  it('renders an interactive reference at /docs', async () => {
    const res = await engine.request('GET', '/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(res.text).toContain('/openapi.json');
  });
});

describe('the worker with a broken configuration', () => {
  it('answers 500 with the one error body, its request_id a string and in X-Request-Id', async () => {
    const worker = (await import('../functions/worker')).default;
    const ctx = { waitUntil: () => {}, passThroughOnException: () => {} } as unknown as Parameters<typeof worker.fetch>[2];
    const res = await worker.fetch(new Request('https://engram.example/v1/usage'), {} as Parameters<typeof worker.fetch>[1], ctx);
    expect(res.status).toBe(500);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      code: 'INTERNAL_ERROR',
      status: 500,
      error: 'Service misconfigured',
      message: 'Service misconfigured',
      request_id: expect.any(String),
    });
    expect(res.headers.get('x-request-id')).toBe(body.request_id);
  });
});
