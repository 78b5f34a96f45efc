import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { errorOf, type RequestOptions, testClient } from '../client';
import worker from '../../functions/worker';

/**
 * Eval and Cortex inside workerd: off unless SVC_ENABLE_EXPERIMENTAL is set (403 experimental.disabled), and
 * with the flag the scores come from the same SQL on Postgres (duplicates lower conflict_score,
 * the gate answers 422 GATE_FAILED with the eval).
 */
const bindings = env as unknown as Record<string, string>;
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
const off = clientFor({ ...bindings, SVC_ENABLE_EXPERIMENTAL: '0' });
const on = clientFor({ ...bindings, SVC_ENABLE_EXPERIMENTAL: '1' });

let key = '';
beforeAll(async () => {
  const res = await on('POST', '/admin/v1/tenants', {
    key: bindings.ADMIN_TOKEN,
    body: { email: `eval-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
  });
  expect(res.status, res.text).toBe(201);
  key = res.body.api_key;
});

describe('eval in workerd', () => {
  it('is 403 experimental.disabled without the flag', async () => {
    const res = await off('POST', '/v1/eval/run', { key, body: {} });
    expect([res.status, errorOf(res).code]).toEqual([403, 'svc_ram.v1.experimental.disabled']);
  });

  it('scores duplicates and gates on min_score with the flag', async () => {
    for (const observation of ['The deploy key lives in vault', 'The deploy key lives in vault', 'Standup is at ten']) {
      const stored = await on('POST', '/v1/memories', { key, body: { observation, on_conflict: 'manual' } });
      expect(stored.status, stored.text).toBe(201);
    }
    const run = await on('POST', '/v1/eval/run', { key, body: {} });
    expect(run.status, run.text).toBe(200);
    expect(run.body).toMatchObject({ memory_count: 3, conflict_count: 2, breakdown: { conflict_score: 33 } });
    const gate = await on('POST', '/v1/eval/gate', { key, body: { min_score: 100 } });
    expect(gate.status, gate.text).toBe(422);
    expect(errorOf(gate)).toMatchObject({ code: 'GATE_FAILED', eval: { passed: false } });
  });

  it('Cortex consolidates the duplicates: a dry run lists the change, a run applies it', async () => {
    const off403 = await off('GET', '/v1/cortex/status', { key });
    expect([off403.status, errorOf(off403).code]).toEqual([403, 'svc_ram.v1.experimental.disabled']);
    const dry = await on('POST', '/v1/cortex/run?dry_run=true', { key });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body).toMatchObject({ consolidated: 1, dry_run: true });
    const run = await on('POST', '/v1/cortex/run', { key });
    expect(run.status, run.text).toBe(200);
    expect(run.body).toMatchObject({ consolidated: 1, dry_run: false });
    const after = await on('POST', '/v1/eval/run', { key, body: {} });
    expect(after.body).toMatchObject({ memory_count: 2, conflict_count: 0 });
  });

  it('Enterprise insights, and a run larger than CORTEX_BATCH finishes through the job queue', async () => {
    const small = clientFor({ ...bindings, SVC_ENABLE_EXPERIMENTAL: '1', CORTEX_BATCH: '1' });
    const created = await small('POST', '/admin/v1/tenants', {
      key: bindings.ADMIN_TOKEN,
      body: { email: `insight-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'enterprise' },
    });
    const k = created.body.api_key;
    expect((await small('PATCH', '/v1/cortex/config', { key: k, body: { insight_generation_enabled: true } })).status).toBe(200);
    const base = 'The customer prefers invoices by email every Monday.';
    for (const observation of [`${base} Really`, `${base} Truly`, `${base} Indeed`, 'Standup is at ten', 'Standup is at ten', 'Standup is at ten']) {
      const stored = await small('POST', '/v1/memories', { key: k, body: { observation, on_conflict: 'manual', auto_link: false } });
      expect(stored.status, stored.text).toBe(201);
    }
    const run = await small('POST', '/v1/cortex/run', { key: k });
    expect(run.status, run.text).toBe(200);
    expect(run.body).toMatchObject({ consolidated: 2, insights_generated: 1, queued_changes: 1 });
    const insights = await small('GET', '/v1/cortex/insights', { key: k });
    expect(insights.body).toMatchObject({ total: 1 });
    // The queued consolidation lands when the job runs (QStash's call, or here the cron's outbox sweep).
    expect((await small('POST', '/v1/eval/run', { key: k, body: {} })).body.memory_count).toBe(6);
    // (Flag off for the sweep: jobs run regardless, and the index maintenance then leaves the shared test database alone.)
    await worker.scheduled({} as ScheduledController, { ...bindings, SVC_ENABLE_EXPERIMENTAL: '0' } as never, ctx);
    await Promise.all(pending.splice(0));
    expect((await small('POST', '/v1/eval/run', { key: k, body: {} })).body.memory_count).toBe(5); // 3 variants, 1 copy, 1 insight
  }, 60_000);
});
