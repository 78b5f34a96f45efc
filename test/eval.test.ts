import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';

/** Eval (docs/architecture.md#eval-and-cortex) through the API, with the experimental flag on. */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine({ env: { SVC_ENABLE_EXPERIMENTAL: '1' } });
});
afterAll(() => engine.close());

const DAY = 86_400_000;
const post = <T = never, P extends string = string>(t: Tenant, path: P, body?: unknown) => engine.request<T, 'POST', P>('POST', path, { key: t.key, body });
const get = <T = never, P extends string = string>(t: Tenant, path: P) => engine.request<T, 'GET', P>('GET', path, { key: t.key });
async function remember(t: Tenant, observation: string, extra: Record<string, unknown> = {}) {
  const res = await post(t, '/v1/memories', { observation, auto_link: false, on_conflict: 'manual', ...extra });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}
async function evalRun(t: Tenant, body?: unknown) {
  const res = await post(t, '/v1/eval/run', body);
  expect(res.status, res.text).toBe(200);
  return res.body;
}
const TEXTS = [
  'The customer prefers invoices by email every Monday.',
  'Kubernetes cluster upgrades happen during the quarterly maintenance window.',
  'Alice from finance approves refunds above five hundred euros.',
  'The staging database password rotates automatically each night.',
];

describe('eval run', () => {
  it('an empty store scores 100 everywhere, and is stored in the history', async () => {
    const t = await engine.newTenant('pro');
    const r = await evalRun(t);
    expect(r).toMatchObject({
      health_score: 100,
      breakdown: { recall_consistency: 100, drift_score: 100, conflict_score: 100, staleness_score: 100 },
      memory_count: 0,
      conflict_count: 0,
      stale_count: 0,
      passed: null,
      created_at: engine.clock.now().toISOString(),
    });
    expect(r.eval_id).toMatch(/^eval_[0-9A-Za-z]{22}$/);
    expect(r.drift_detail).toMatchObject({ drift_score: 100, period_days: 7, memory_count_delta: 0 });
    const h = await get(t, '/v1/eval/history');
    expect(h.body).toMatchObject({ total_count: 1, has_more: false, entries: [{ eval_id: r.eval_id, health_score: 100 }] });
  });

  it('duplicates lower conflict_score by 100 × (1 − c / live)', async () => {
    const t = await engine.newTenant('pro');
    for (const text of TEXTS) await remember(t, text);
    await remember(t, TEXTS[0]);
    await remember(t, TEXTS[0]);
    // live 6, c = 3 (the three copies of TEXTS[0]): 100 × (1 − 3/6) = 50.
    const r = await evalRun(t, { min_score: 0 });
    expect(r.memory_count).toBe(6);
    expect(r.conflict_count).toBe(3);
    expect(r.breakdown.conflict_score).toBe(50);
    expect(r.passed).toBe(true);
    // Another space is another store: the same text there is no conflict.
  });

  it('stale memories (older than 30 days, not recalled) lower staleness_score; a recall refreshes one', async () => {
    const t = await engine.newTenant('pro');
    for (const text of TEXTS) await remember(t, text);
    engine.clock.advance(31 * DAY);
    await remember(t, 'A fresh memory about the new onboarding checklist.');
    const r = await evalRun(t);
    // live 5, stale 4: 100 × (1 − 4/5) = 20.
    expect(r).toMatchObject({ memory_count: 5, stale_count: 4, breakdown: { staleness_score: 20 } });
    const found = await get(t, `/v1/memories/search?q=${encodeURIComponent(TEXTS[1])}&limit=1&mode=semantic`);
    expect(found.status, found.text).toBe(200);
    const again = await evalRun(t);
    expect(again).toMatchObject({ stale_count: 3, breakdown: { staleness_score: 40 } });
    // Drift: nothing in the 7 days before the last 7, so 100.
    expect(again.breakdown.drift_score).toBe(100);
    // health = round(0.35 rc + 0.25 conflict + 0.20 staleness + 0.20 drift)
    const b = again.breakdown;
    expect(again.health_score).toBe(Math.round(0.35 * b.recall_consistency + 0.25 * b.conflict_score + 0.2 * b.staleness_score + 0.2 * b.drift_score));
  });

  it('baselines drive recall_consistency: an expected observation that is stored scores 100, one that is not scores less', async () => {
    const t = await engine.newTenant('pro');
    for (const text of TEXTS) await remember(t, text);
    const b1 = await post(t, '/v1/eval/baselines', { query: TEXTS[2], expected_observation: TEXTS[2] });
    expect(b1.status, b1.text).toBe(201);
    expect(b1.body).toMatchObject({ query: TEXTS[2], expected_observation: TEXTS[2], expected_score: null });
    expect((await evalRun(t)).breakdown.recall_consistency).toBe(100);
    engine.clock.advance(1_000);
    const b2 = await post(t, '/v1/eval/baselines', { query: 'volcano eruption', expected_observation: 'Penguins migrate across the frozen tundra in spring.' });
    expect(b2.status).toBe(201);
    const r = await evalRun(t);
    expect(r.breakdown.recall_consistency).toBeLessThan(100);
    expect(r.breakdown.recall_consistency).toBeGreaterThanOrEqual(50);
    const list = await get(t, '/v1/eval/baselines');
    expect(list.body.total_count).toBe(2);
    expect(list.body.baselines.map((b: { id: string }) => b.id)).toEqual([b1.body.id, b2.body.id]);
    expect((await engine.request('DELETE', `/v1/eval/baselines/${b2.body.id}`, { key: t.key })).status).toBe(204);
    expect((await engine.request('DELETE', `/v1/eval/baselines/${b2.body.id}`, { key: t.key })).status).toBe(404);
    expect((await evalRun(t)).breakdown.recall_consistency).toBe(100);
  });

  it('without baselines, distinct memories all come back first by their own text: recall_consistency 100', async () => {
    const t = await engine.newTenant('pro');
    for (const text of TEXTS) await remember(t, text);
    expect((await evalRun(t)).breakdown.recall_consistency).toBe(100);
  });

  it('drift_score falls when this week is about something else than last week', async () => {
    const t = await engine.newTenant('pro');
    for (const text of TEXTS.slice(0, 2)) await remember(t, text, { tags: ['ops'] });
    engine.clock.advance(8 * DAY);
    await remember(t, 'Penguins migrate across the frozen tundra in spring.', { tags: ['wildlife'] });
    const d = await get(t, '/v1/eval/drift?days=7');
    expect(d.status, d.text).toBe(200);
    expect(d.body.drift_score).toBeLessThan(100);
    expect(d.body).toMatchObject({
      period_days: 7,
      memory_count_delta: -1,
      avg_importance_delta: 0,
      top_new_topics: [{ topic: 'wildlife', count: 1 }],
      top_lost_topics: [{ topic: 'ops', count: 2 }],
      tag_shifts: { ops: -2, wildlife: 1 },
    });
    const r = await evalRun(t);
    expect(r.breakdown.drift_score).toBe(d.body.drift_score);
    expect(r.drift_detail).toEqual(d.body);
  });
});

describe('gate', () => {
  it('200 with passed: true at or above min_score, 422 GATE_FAILED with the full eval below', async () => {
    const t = await engine.newTenant('pro');
    for (const text of TEXTS) await remember(t, text);
    await remember(t, TEXTS[0]);
    const ok = await post(t, '/v1/eval/gate', { min_score: 50 });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.passed).toBe(true);
    const fail = await post(t, '/v1/eval/gate', { min_score: 100 });
    expect(fail.status, fail.text).toBe(422);
    expect(errorOf(fail).code).toBe('GATE_FAILED');
    expect(errorOf(fail).eval).toMatchObject({ passed: false, memory_count: 5, conflict_count: 2, breakdown: { conflict_score: 60 } });
    expect((await get(t, '/v1/eval/history')).body.total_count).toBe(2);
    expect((await post(t, '/v1/eval/gate', {})).status).toBe(400);
  });

  it('is Pro+: free and starter get 403 FEATURE_NOT_AVAILABLE', async () => {
    for (const tier of ['free', 'starter'] as const) {
      const res = await post(await engine.newTenant(tier), '/v1/eval/gate', { min_score: 10 });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'pro', current_tier: tier });
    }
  });
});

describe('limits and tiers', () => {
  it('free: 3 runs a day, then 429 RATE_LIMITED with usage; the next UTC day is new', async () => {
    const t = await engine.newTenant('free');
    for (let i = 0; i < 3; i++) await evalRun(t);
    const res = await post(t, '/v1/eval/run');
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({ code: 'RATE_LIMITED', usage: { current: 3, limit: 3, plan: 'free' } });
    const midnight = new Date(errorOf(res).usage?.resets_at ?? '');
    expect(midnight.getUTCHours()).toBe(0);
    engine.clock.set(midnight);
    await evalRun(t);
  });

  it('a min_score below the range of a real (1e-320, found by the fuzzer) is stored, not a 500', async () => {
    const t = await engine.newTenant('pro');
    const r = await evalRun(t, { min_score: 1e-320 });
    expect(r.passed).toBe(true);
  });

  it('starter: 30 runs a day; pro: no limit', async () => {
    const starter = await engine.newTenant('starter');
    for (let i = 0; i < 30; i++) await evalRun(starter);
    expect((await post(starter, '/v1/eval/run')).status).toBe(429);
    const pro = await engine.newTenant('pro');
    for (let i = 0; i < 35; i++) await evalRun(pro);
  });

  it('baselines: free 1, starter 5, then 429; pro unlimited', async () => {
    const body = { query: 'q', expected_observation: 'e' };
    const free = await engine.newTenant('free');
    expect((await post(free, '/v1/eval/baselines', body)).status).toBe(201);
    expect(errorOf(await post(free, '/v1/eval/baselines', body)).code).toBe('RATE_LIMITED');
    const starter = await engine.newTenant('starter');
    for (let i = 0; i < 5; i++) expect((await post(starter, '/v1/eval/baselines', body)).status).toBe(201);
    expect((await post(starter, '/v1/eval/baselines', body)).status).toBe(429);
    const pro = await engine.newTenant('pro');
    for (let i = 0; i < 7; i++) expect((await post(pro, '/v1/eval/baselines', body)).status).toBe(201);
  });

  it('drift is Starter+; below Pro it has no Pro+ fields; free runs have no drift_detail', async () => {
    const free = await engine.newTenant('free');
    expect((await get(free, '/v1/eval/drift')).body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'starter' });
    expect((await evalRun(free)).drift_detail).toBeNull();
    const starter = await engine.newTenant('starter');
    const d = await get(starter, '/v1/eval/drift');
    expect(d.body).toEqual({
      drift_score: 100,
      period_days: 7,
      memory_count_delta: 0,
      avg_importance_delta: null,
      top_new_topics: null,
      top_lost_topics: null,
      tag_shifts: null,
    });
  });

  it('embeds the baselines before taking the daily run lock: another run of the tenant goes through meanwhile', async () => {
    const t = await engine.newTenant('free');
    await remember(t, TEXTS[0]);
    expect((await post(t, '/v1/eval/baselines', { query: 'invoice day', expected_observation: TEXTS[0] })).status).toBe(201);
    // A provider stand-in that, while the eval waits for it, runs a second eval of the same tenant.
    // Were the first holding its transaction and lock, the second would wait for it and neither would end.
    const services = engine.node.services;
    const provider = services.embedder;
    const during: number[] = [];
    let nested = false;
    services.embedder = {
      name: provider.name,
      dimension: provider.dimension,
      embed: async (texts) => {
        if (texts.includes('invoice day') && !nested) {
          nested = true;
          during.push((await post(t, '/v1/eval/run')).status);
        }
        return provider.embed(texts);
      },
    };
    try {
      const outer = await evalRun(t);
      expect(during).toEqual([200]);
      expect(outer.memory_count).toBe(1);
    } finally {
      services.embedder = provider;
    }
    const history = await get(t, '/v1/eval/history');
    expect(history.body.entries).toHaveLength(2);
  }, 60_000);
});

describe('history', () => {
  it('pages newest first with has_more, and maintenance prunes past the tier retention', async () => {
    const t = await engine.newTenant('free');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await evalRun(t)).eval_id);
      engine.clock.advance(3 * DAY);
    }
    const p1 = await get(t, '/v1/eval/history?limit=2');
    expect(p1.body).toMatchObject({ total_count: 3, has_more: true, limit: 2, offset: 0 });
    expect(p1.body.entries.map((e: { eval_id: string }) => e.eval_id)).toEqual([ids[2], ids[1]]);
    const p2 = await get(t, '/v1/eval/history?limit=2&offset=2');
    expect(p2.body).toMatchObject({ has_more: false, entries: [{ eval_id: ids[0] }] });
    // Now 9 days after the first run, 6 after the second: free keeps 7 days.
    const done = await engine.node.runner.maintain();
    expect(done.eval_history).toBeGreaterThanOrEqual(1);
    const after = await get(t, '/v1/eval/history');
    expect(after.body.entries.map((e: { eval_id: string }) => e.eval_id)).toEqual([ids[2], ids[1]]);
  });
});

describe('bad input', () => {
  it('answers 400 VALIDATION_ERROR', async () => {
    const t = await engine.newTenant('pro');
    const cases: [string, string, unknown?][] = [
      ['POST', '/v1/eval/run', { min_score: 101 }],
      ['POST', '/v1/eval/run', { min_score: -1 }],
      ['POST', '/v1/eval/gate', { min_score: 'high' }],
      ['GET', '/v1/eval/history?limit=0'],
      ['GET', '/v1/eval/history?limit=201'],
      ['GET', '/v1/eval/drift?days=0'],
      ['GET', '/v1/eval/drift?days=91'],
      ['POST', '/v1/eval/baselines', { query: '', expected_observation: 'x' }],
      ['POST', '/v1/eval/baselines', { query: 'x'.repeat(501), expected_observation: 'x' }],
      ['POST', '/v1/eval/baselines', { query: 'x', expected_observation: 'x'.repeat(2001) }],
      ['POST', '/v1/eval/baselines', { query: 'x' }],
    ];
    for (const [method, path, body] of cases) {
      const res = await engine.request(method, path, { key: t.key, body });
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(400);
      expect(errorOf(res).code).toBe('VALIDATION_ERROR');
    }
    // An id of another shape names nothing: 404, as an unknown id of ours.
    expect((await engine.request('DELETE', '/v1/eval/baselines/not-an-id', { key: t.key })).status).toBe(404);
    expect((await get(t, '/v1/eval/drift?days=90')).status).toBe(200);
    expect((await get(t, '/v1/eval/history?limit=200')).status).toBe(200);
  });

  it("another tenant's baseline is unknown: 404", async () => {
    const a = await engine.newTenant('pro');
    const b = await engine.newTenant('pro');
    const made = await post(a, '/v1/eval/baselines', { query: 'q', expected_observation: 'e' });
    expect((await engine.request('DELETE', `/v1/eval/baselines/${made.body.id}`, { key: b.key })).status).toBe(404);
    expect((await get(a, '/v1/eval/baselines')).body.total_count).toBe(1);
  });
});

describe('the experimental flag', () => {
  it('off (the default): every experimental route is 403 svc_ram.v1.experimental.disabled before any tier check; 401 still first', async () => {
    const off: TestEngine = await createEngine();
    try {
      const free = await off.newTenant('free');
      const spec = (await off.request('GET', '/openapi.json')).body as { paths: Record<string, Record<string, { 'x-experimental'?: boolean }>> };
      const routes = Object.entries(spec.paths).flatMap(([path, ops]) =>
        Object.entries(ops)
          .filter(([, op]) => op['x-experimental'])
          .map(([method]) => [method.toUpperCase(), path] as const),
      );
      expect(routes.length).toBe(13); // eval 7, cortex 6
      for (const [method, path] of routes) {
        const concrete = path.replace('{baseline_id}', 'bl_4f9Qw2b8Zr1LmT0aXcVe3K');
        const body =
          method === 'POST' ? { min_score: 10, query: 'q', expected_observation: 'e' } : method === 'PATCH' || method === 'PUT' ? { enabled: true } : undefined;
        const res = await off.request(method, concrete, { key: free.key, body });
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(errorOf(res).code).toBe('svc_ram.v1.experimental.disabled');
        expect((await off.request(method, concrete, { body })).status).toBe(401);
      }
    } finally {
      await off.close();
    }
  });
});
