import { env, exports } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { errorOf, testClient } from '../client';

/** Idempotency-Key inside workerd: per-request Neon pools, WebCrypto for the kept body's cipher. */
const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;
const bindings = env as unknown as Record<string, string>;

const call = testClient((req) => worker.fetch(req), { base: 'https://engram.test' });

describe('worker in workerd: Idempotency-Key', () => {
  let key = '';
  beforeAll(async () => {
    const res = await call('POST', '/admin/v1/tenants', {
      key: bindings.ADMIN_TOKEN,
      body: { email: `idem-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'free' },
    });
    expect(res.status, res.text).toBe(201);
    key = res.body.api_key;
  });

  it('replays a store once, concurrently too, and refuses the key with another body', async () => {
    const idempotencyKey = crypto.randomUUID();
    const body = { observation: 'Stored once through the worker', tags: ['idem'] };
    const all = await Promise.all(Array.from({ length: 4 }, () => call('POST', '/v1/memories', { key, body, idempotencyKey })));
    expect(all.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    expect(new Set(all.map((r) => r.body.uuid)).size).toBe(1);
    expect(all.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(3);
    const list = await call('GET', '/v1/memories?tags=idem', { key });
    expect(list.body.total).toBe(1);
    const other = await call('POST', '/v1/memories', { key, body: { ...body, importance: 2 }, idempotencyKey });
    expect(other.status).toBe(422);
    expect(errorOf(other).code).toBe('VALIDATION_ERROR');
  });
});
