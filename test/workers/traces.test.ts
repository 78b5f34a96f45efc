import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { errorOf, type RequestOptions, testClient } from '../client';
import worker from '../../functions/worker';

/**
 * Signed traces inside workerd: the key comes from the TRACE_SIGNING_KEY secret (one line, literal
 * \n, as global-setup stores it), WebCrypto signs, Postgres keeps the chain; without the secret,
 * what signs answers 503 and the rest of the family keeps working.
 */
const bindings = env as unknown as Record<string, string>;
const { TRACE_SIGNING_KEY: _key, ...withoutKey } = bindings;

const pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
const clientFor = (b: Record<string, string>) => {
  const request = testClient((req) => worker.fetch(req, b, ctx), { base: 'https://engram.test' });
  return async <T = never, M extends string = string, P extends string = string>(method: M, path: P, opts: RequestOptions = {}) => {
    const res = await request<T, M, P>(method, path, opts);
    await Promise.all(pending.splice(0));
    return res;
  };
};
const call = clientFor(bindings);
const unsigned = clientFor(withoutKey);

let key = '';
beforeAll(async () => {
  const res = await call('POST', '/admin/v1/tenants', {
    key: bindings.ADMIN_TOKEN,
    body: { email: `traces-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
  });
  expect(res.status, res.text).toBe(201);
  key = res.body.api_key;
});

async function traceWithSteps(client: typeof call) {
  const started = await client('POST', '/v1/traces', { key, body: { agent_id: 'workerd-agent' } });
  expect(started.status, started.text).toBe(201);
  const id = started.body.trace_id;
  const steps = await Promise.all(
    Array.from({ length: 5 }, (_, i) => client('POST', `/v1/traces/${id}/steps`, { key, body: { type: 'ACTION', content: `call ${i}`, metadata: { i } } })),
  );
  expect(steps.map((s) => s.status)).toEqual([201, 201, 201, 201, 201]);
  expect(steps.map((s) => s.body.step_index).sort()).toEqual([0, 1, 2, 3, 4]);
  return id as string;
}

describe('worker in workerd: signed traces', () => {
  it('records, seals with the secret key, verifies and certifies', async () => {
    const id = await traceWithSteps(call);
    const done = await call('POST', `/v1/traces/${id}/complete`, { key });
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ status: 'completed', step_count: 5, signature_algorithm: 'RSA-PSS-SHA256' });
    const publicKey = await call('GET', '/v1/traces/public-key', { key });
    expect(publicKey.body.key_id).toBe(done.body.key_id);
    expect((await call('POST', `/v1/traces/${id}/verify`, { key })).body).toMatchObject({
      valid: true,
      chain_valid: true,
      signature_valid: true,
      discrepancies: null,
    });
    const cert = await call('GET', `/v1/traces/${id}/certificate`, { key });
    expect(cert.body).toMatchObject({ public_key: publicKey.body.public_key, step_count: 5 });
    const spki = Uint8Array.from(atob(cert.body.public_key.replace(/-----[^-]+-----|\s/g, '')), (c) => c.charCodeAt(0));
    const verifier = await crypto.subtle.importKey('spki', spki, { name: 'RSA-PSS', hash: 'SHA-256' }, false, ['verify']);
    const signature = Uint8Array.from(atob(cert.body.signature), (c) => c.charCodeAt(0));
    expect(await crypto.subtle.verify({ name: 'RSA-PSS', saltLength: 32 }, verifier, signature, new TextEncoder().encode(cert.body.integrity_root_hash))).toBe(
      true,
    );
  });

  it('without TRACE_SIGNING_KEY: recording works, signing answers 503 naming the secret', async () => {
    const id = await traceWithSteps(unsigned);
    for (const [method, path] of [
      ['POST', `/v1/traces/${id}/complete`],
      ['GET', '/v1/traces/public-key'],
    ] as const) {
      const res = await unsigned(method, path, { key });
      expect(res.status, path).toBe(503);
      expect(errorOf(res).message).toMatch(/TRACE_SIGNING_KEY/);
    }
    expect((await unsigned('GET', `/v1/traces/${id}`, { key })).body.trace.status).toBe('active');
    // With the secret back, the same trace completes.
    expect((await call('POST', `/v1/traces/${id}/complete`, { key })).status).toBe(200);
  });
});
