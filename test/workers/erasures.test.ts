import { env } from 'cloudflare:workers';
import canonicalize from 'canonicalize';
import { beforeAll, describe, expect, it } from 'vitest';
import { type RequestOptions, testClient } from '../client';
import worker from '../../functions/worker';
import { verifySignature } from '../../shared/platform/contract/trace-signing';

/**
 * Erasure inside workerd: the memory leaves the Neon stand-in's tables, and the receipt, signed
 * with the TRACE_SIGNING_KEY secret by WebCrypto, verifies with the public key.
 */
const bindings = env as unknown as Record<string, string>;
const pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
const request = testClient((req) => worker.fetch(req, bindings, ctx), { base: 'https://engram.test' });
const call = async <T = never, M extends string = string, P extends string = string>(method: M, path: P, opts: RequestOptions = {}) => {
  const res = await request<T, M, P>(method, path, opts);
  await Promise.all(pending.splice(0));
  return res;
};

let key = '';
beforeAll(async () => {
  const res = await call('POST', '/admin/v1/tenants', {
    key: bindings.ADMIN_TOKEN,
    body: { email: `erasures-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
  });
  expect(res.status, res.text).toBe(201);
  key = res.body.api_key;
});

describe('worker in workerd: erasure', () => {
  it('erases a memory and answers a receipt that verifies with the trace public key', async () => {
    const stored = await call('POST', '/v1/memories', { key, body: { observation: 'workerd erasure subject', tags: ['erase-me'] } });
    expect(stored.status, stored.text).toBe(201);
    const kept = await call('POST', '/v1/memories', { key, body: { observation: 'workerd keeps this one' } });
    expect(kept.status).toBe(201);

    const res = await call('POST', '/v1/erasures', { key, body: { tags: ['erase-me'], reason: 'workerd test' } });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ memory_ids: [stored.body.id], counts: { memories: 1 }, signature_algorithm: 'RSA-PSS-SHA256' });
    expect((await call('GET', `/v1/memories/${stored.body.id}`, { key })).status).toBe(404);
    expect((await call('GET', `/v1/memories/${kept.body.id}`, { key })).status).toBe(200);

    const publicKey = await call('GET', '/v1/traces/public-key', { key });
    expect(publicKey.body.key_id).toBe(res.body.key_id);
    const { signature, ...signed } = res.body;
    expect(await verifySignature(publicKey.body.public_key, canonicalize(signed)!, signature)).toBe(true);
    expect(await verifySignature(publicKey.body.public_key, canonicalize({ ...signed, memory_ids: [] })!, signature)).toBe(false);

    const got = await call('GET', `/v1/erasures/${res.body.erasure_id}`, { key });
    expect(got.body).toEqual(res.body);
    const verify = await call('GET', '/v1/audit/verify', { key });
    expect(verify.body.valid).toBe(true);
  });
});
