import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { type RequestOptions, testClient } from '../client';
import worker from '../../functions/worker';

/**
 * Event time and as_of inside workerd (docs/memories.md#event-time): a mem0 export keeps its dates,
 * and an as_of search answers what the store held before later changes. The clock is real here.
 */
const bindings = env as unknown as Record<string, string>;
const pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
const request = testClient((req) => worker.fetch(req, bindings, ctx), { base: 'https://engram.test' });
const call = async (method: string, path: string, opts: RequestOptions = {}): Promise<{ status: number; text: string; body: any }> => {
  const res = await request<never, string, string>(method, path, opts);
  await Promise.all(pending.splice(0));
  return res as never;
};

describe('worker in workerd: event time and as_of', () => {
  it('a mem0 import keeps its dates; as_of search answers what the store held before', async () => {
    const tenant = await call('POST', '/admin/v1/tenants', {
      key: bindings.ADMIN_TOKEN,
      body: { email: `event-time-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
    });
    expect(tenant.status, tenant.text).toBe(201);
    const key = tenant.body.api_key as string;
    const file = JSON.stringify({
      results: [
        { id: 'w-1', memory: 'Alice lives in Seattle', user_id: 'alice', run_id: 'r1', created_at: '2024-07-20T01:41:05.123456-07:00' },
        { id: 'w-2', memory: 'Alice had a dentist appointment', user_id: 'alice', deleted_at: '2024-06-02T00:00:00Z' },
      ],
    });
    const imported = await call('POST', '/v1/import?format=mem0', { key, raw: file, headers: { 'content-type': 'application/json' } });
    expect(imported.status, imported.text).toBe(200);
    expect(imported.body).toMatchObject({ stored: { memory: 1 }, skipped: { deleted: 1 } });
    const list = await call('GET', '/v1/memories', { key });
    expect(list.body.memories[0]).toMatchObject({ observation: 'Alice lives in Seattle', occurred_at: '2024-07-20T08:41:05.123Z' });
    const id = list.body.memories[0].uuid as string;

    await new Promise((r) => setTimeout(r, 1_100));
    const before = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await call('PATCH', `/v1/memories/${id}`, { key, body: { observation: 'Alice lives in Portland' } })).status).toBe(200);

    const now = await call('GET', '/v1/memories/search?q=where%20does%20Alice%20live&mode=hybrid', { key });
    expect(now.body.memories[0].observation).toBe('Alice lives in Portland');
    const then = await call('GET', `/v1/memories/search?q=where%20does%20Alice%20live&mode=hybrid&as_of=${encodeURIComponent(before)}`, { key });
    expect(then.status, then.text).toBe(200);
    expect(then.body.memories[0]).toMatchObject({ observation: 'Alice lives in Seattle', occurred_at: '2024-07-20T08:41:05.123Z' });
  });
});
