import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { errorOf, type RequestOptions, testClient } from '../client';
import worker from '../../functions/worker';

/**
 * The worker's own fetch handler inside workerd, with the bindings of the other workerd tests minus
 * the embedding configuration: no EMBEDDING_PROVIDER (so the default, workers-ai) and no AI binding,
 * which is what a deploy without `[ai]` in wrangler.toml looks like. Routes that do not embed must
 * keep working; what embeds answers 503 with the reason, and /health reports it.
 */
const { EMBEDDING_PROVIDER: _provider, AI: _ai, ...rest } = env as unknown as Record<string, unknown>;
const bindings = rest as Record<string, string>;

const pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
const request = testClient((req) => worker.fetch(req, bindings, ctx), { base: 'https://engram.test' });

/** One request, then the work it left in waitUntil (the per-request pool closes there). */
async function call<T = never, M extends string = string, P extends string = string>(method: M, path: P, opts: RequestOptions = {}) {
  const res = await request<T, M, P>(method, path, opts);
  await Promise.all(pending.splice(0));
  return res;
}

describe('worker in workerd without an embedding provider', () => {
  let key = '';

  beforeAll(async () => {
    expect(bindings.EMBEDDING_PROVIDER).toBeUndefined();
    const res = await call('POST', '/admin/v1/tenants', {
      key: bindings.ADMIN_TOKEN,
      body: { email: `no-embedder-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'free' },
    });
    expect(res.status, res.text).toBe(201);
    key = res.body.api_key;
  });

  it('GET /v1/memories is 200', async () => {
    const res = await call('GET', '/v1/memories', { key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.memories).toEqual([]);
  });

  it('GET /v1/keys is 200', async () => {
    const res = await call('GET', '/v1/keys', { key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.keys).toHaveLength(1);
  });

  it('GET /health is degraded and names the reason', async () => {
    const pub = await call('GET', '/health');
    expect(pub.status, pub.text).toBe(200);
    expect(pub.body.status).toBe('degraded');

    const res = await call('GET', '/health', { key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe('degraded');
    expect(res.body.checks?.database.status).toBe('ok');
    expect(res.body.checks?.embedding).toEqual({ status: 'error', error: 'EMBEDDING_PROVIDER=workers-ai needs the AI binding' });
    expect(res.body.warnings?.join('\n')).toContain('EMBEDDING_PROVIDER=workers-ai needs the AI binding');
  });

  it('POST /v1/memories is 503 with the reason, and stores nothing', async () => {
    const res = await call('POST', '/v1/memories', { key, body: { observation: 'Nothing embeds this' } });
    expect(res.status, res.text).toBe(503);
    expect(res.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', status: 503 });
    expect(errorOf(res).message).toContain('EMBEDDING_PROVIDER=workers-ai needs the AI binding');
    const list = await call('GET', '/v1/memories', { key });
    expect(list.body.total).toBe(0);
  });

  it('GET /v1/memories/search?mode=semantic is 503 with the reason', async () => {
    const res = await call('GET', '/v1/memories/search?q=anything&mode=semantic', { key });
    expect(res.status, res.text).toBe(503);
    expect(errorOf(res).message).toContain('needs the AI binding');
  });
});
