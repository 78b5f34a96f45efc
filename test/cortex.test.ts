import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';
import { withMemoryDeletedOnFirstInsert } from './races';

/** Cortex (docs/architecture.md#eval-and-cortex) through the API, with the experimental flag on. */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine({ env: { SVC_ENABLE_EXPERIMENTAL: '1' } });
});
afterAll(() => engine.close());

const DAY = 86_400_000;
const post = <T = never, P extends string = string>(t: Tenant, path: P, body?: unknown) => engine.request<T, 'POST', P>('POST', path, { key: t.key, body });
const get = <T = never, P extends string = string>(t: Tenant, path: P) => engine.request<T, 'GET', P>('GET', path, { key: t.key });
const patch = (t: Tenant, body: unknown) => engine.request('PATCH', '/v1/cortex/config', { key: t.key, body });
async function remember(t: Tenant, observation: string, extra: Record<string, unknown> = {}) {
  const res = await post(t, '/v1/memories', { observation, auto_link: false, on_conflict: 'manual', ...extra });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}
const memory = async (t: Tenant, id: string) => (await get(t, `/v1/memories/${id}`)).body;
async function run(t: Tenant, dry = false) {
  const res = await post(t, `/v1/cortex/run${dry ? '?dry_run=true' : ''}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}
const cortexAudit = async (t: Tenant) =>
  ((await get(t, '/v1/audit?limit=1000')).body.entries as { actor: string; source_operation: string; memory_id: string | null }[]).filter(
    (e) => e.actor === 'cortex',
  );
const A = 'The customer prefers invoices by email every Monday.';
const B = 'Kubernetes cluster upgrades happen during the quarterly maintenance window.';
const C = 'Alice from finance approves refunds above five hundred euros.';

describe('config and status', () => {
  it('defaults until changed; PATCH and PUT change fields within the bounds; status shows it', async () => {
    const t = await engine.newTenant('pro');
    const d = await get(t, '/v1/cortex/config');
    expect(d.status, d.text).toBe(200);
    expect(d.body).toEqual({
      tenant_id: t.tenantId,
      enabled: false,
      consolidation_enabled: true,
      consolidation_threshold: 0.9,
      reinforcement_enabled: true,
      decay_enabled: true,
      decay_age_days: 30,
      insight_generation_enabled: false,
      last_run_at: null,
      run_stats: {},
    });
    for (const bad of [
      { consolidation_threshold: 0.49 },
      { consolidation_threshold: 1.01 },
      { decay_age_days: 0 },
      { decay_age_days: 366 },
      { decay_age_days: 2.5 },
      { tenant_id: 'x' },
      { last_run_at: null },
    ]) {
      const res = await patch(t, bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(errorOf(res).code).toBe('VALIDATION_ERROR');
    }
    for (const ok of [{ consolidation_threshold: 0.5 }, { consolidation_threshold: 1 }, { decay_age_days: 1 }, { decay_age_days: 365 }])
      expect((await patch(t, ok)).status).toBe(200);
    const changed = await patch(t, { enabled: true, consolidation_threshold: 0.95, decay_age_days: 45 });
    expect(changed.body).toMatchObject({ enabled: true, consolidation_threshold: 0.95, decay_age_days: 45, reinforcement_enabled: true });
    const put = await engine.request('PUT', '/v1/cortex/config', { key: t.key, body: { decay_enabled: false } });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({ enabled: true, consolidation_threshold: 0.95, decay_age_days: 45, decay_enabled: false });
    const st = await get(t, '/v1/cortex/status');
    expect(st.body).toMatchObject({ enabled: true, last_run_at: null, run_stats: {}, config: { decay_age_days: 45, decay_enabled: false } });
  });

  it('insights need Enterprise; Cortex needs Pro', async () => {
    const pro = await engine.newTenant('pro');
    const refused = await patch(pro, { insight_generation_enabled: true });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'enterprise', current_tier: 'pro' });
    expect((await patch(pro, { insight_generation_enabled: false })).status).toBe(200);
    const ent = await engine.newTenant('enterprise');
    expect((await patch(ent, { insight_generation_enabled: true })).body.insight_generation_enabled).toBe(true);
    const starter = await engine.newTenant('starter');
    for (const [method, path] of [
      ['GET', '/v1/cortex/config'],
      ['GET', '/v1/cortex/status'],
      ['POST', '/v1/cortex/run'],
      ['PATCH', '/v1/cortex/config'],
    ] as const) {
      const res = await engine.request(method, path, { key: starter.key, body: method === 'PATCH' ? { enabled: true } : undefined });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'pro', current_tier: 'starter' });
    }
  });

  it("eval scores staleness by the tenant's decay age", async () => {
    const t = await engine.newTenant('pro');
    await remember(t, A);
    engine.clock.advance(11 * DAY);
    expect((await post(t, '/v1/eval/run')).body.stale_count).toBe(0);
    await patch(t, { decay_age_days: 10 });
    expect((await post(t, '/v1/eval/run')).body.stale_count).toBe(1);
  });
});

describe('run', () => {
  it('consolidate: the newer of two duplicates in a space supersedes the older; nothing is deleted; a dry run writes nothing', async () => {
    const t = await engine.newTenant('pro');
    const old = await remember(t, A);
    engine.clock.advance(1000);
    const other = await remember(t, B);
    engine.clock.advance(1000);
    const fresh = await remember(t, A);
    engine.clock.advance(1000);
    const dry = await run(t, true);
    expect(dry).toMatchObject({ consolidated: 1, boosted: 0, decayed: 0, insights_generated: 0, dry_run: true });
    expect(dry.changes).toEqual([{ memory_id: (await memory(t, old)).uuid, pass: 'consolidate', detail: { superseded_by: (await memory(t, fresh)).uuid } }]);
    expect((await memory(t, old)).superseded_by).toBeNull();
    expect(await cortexAudit(t)).toEqual([]);
    expect((await get(t, '/v1/cortex/status')).body.last_run_at).toBeNull();

    const real = await run(t);
    expect(real).toEqual({ consolidated: 1, boosted: 0, decayed: 0, insights_generated: 0, dry_run: false, queued_changes: 0 });
    const m = await memory(t, old);
    expect(m.superseded_by).toBe((await memory(t, fresh)).uuid);
    expect((await memory(t, other)).superseded_by).toBeNull();
    expect((await get(t, '/v1/memories')).body.memories.length).toBe(3);
    const st = (await get(t, '/v1/cortex/status')).body;
    expect(st).toMatchObject({ last_run_at: engine.clock.now().toISOString(), run_stats: { consolidated: 1, boosted: 0, decayed: 0 } });
    expect((await run(t)).consolidated).toBe(0);
    const milestones = (await get(t, '/v1/milestones')).body;
    expect(JSON.stringify(milestones)).toContain('first_cortex');
  });

  it('consolidate: three copies collapse onto the newest; another space is another store; the threshold is the config', async () => {
    const t = await engine.newTenant('pro');
    const ids = [];
    for (let i = 0; i < 3; i++) {
      ids.push(await remember(t, C));
      engine.clock.advance(1000);
    }
    await patch(t, { consolidation_enabled: false });
    expect((await run(t, true)).consolidated).toBe(0);
    await patch(t, { consolidation_enabled: true });
    expect((await run(t)).consolidated).toBe(2);
    const newest = (await memory(t, ids[2])).uuid;
    expect((await memory(t, ids[0])).superseded_by).toBe(newest);
    expect((await memory(t, ids[1])).superseded_by).toBe(newest);
    expect((await memory(t, ids[2])).superseded_by).toBeNull();
  });

  it('reinforce: recalled 3 times in the last 7 days: importance +1, at most once a week', async () => {
    const t = await engine.newTenant('pro');
    const id = await remember(t, B, { importance: 5 });
    for (let i = 0; i < 3; i++) expect((await get(t, `/v1/memories/search?q=${encodeURIComponent(B)}&limit=1&mode=semantic`)).status).toBe(200);
    expect((await memory(t, id)).recall_count).toBe(3);
    const dry = await run(t, true);
    expect(dry).toMatchObject({ boosted: 1, changes: [{ pass: 'reinforce', detail: { importance: { from: 5, to: 6 } } }] });
    expect((await run(t)).boosted).toBe(1);
    expect((await memory(t, id)).importance).toBe(6);
    engine.clock.advance(DAY);
    await get(t, `/v1/memories/search?q=${encodeURIComponent(B)}&limit=1&mode=semantic`);
    expect((await run(t)).boosted).toBe(0);
    engine.clock.advance(6 * DAY + 1000);
    expect((await run(t)).boosted).toBe(1);
    expect((await memory(t, id)).importance).toBe(7);
    engine.clock.advance(8 * DAY);
    expect((await run(t)).boosted).toBe(0); // not recalled in the last 7 days
  });

  it('decay: older than decay_age_days and not recalled since: importance −1, confidence ×0.9, down to 1', async () => {
    const t = await engine.newTenant('pro');
    const id = await remember(t, A, { importance: 2 });
    const before = await memory(t, id);
    engine.clock.advance(29 * DAY);
    expect((await run(t)).decayed).toBe(0);
    engine.clock.advance(2 * DAY);
    const dry = await run(t, true);
    expect(dry.changes).toEqual([
      {
        memory_id: before.uuid,
        pass: 'decay',
        detail: { importance: { from: 2, to: 1 }, confidence: { from: before.confidence, to: Math.round(before.confidence * 0.9 * 1e6) / 1e6 } },
      },
    ]);
    expect((await run(t)).decayed).toBe(1);
    const after = await memory(t, id);
    expect(after.importance).toBe(1);
    expect(after.confidence).toBeCloseTo(before.confidence * 0.9, 5);
    expect((await run(t)).decayed).toBe(0); // importance 1 stays
  });

  it('a run is audited (actor cortex), in the memory history, and a rollback undoes it', async () => {
    const t = await engine.newTenant('pro');
    const old = await remember(t, A, { importance: 4 });
    engine.clock.advance(31 * DAY);
    const fresh = await remember(t, A);
    const target = engine.clock.now().toISOString();
    engine.clock.advance(60_000);
    expect(await run(t)).toMatchObject({ consolidated: 1, decayed: 0 });
    const audit = await cortexAudit(t);
    expect(audit.map((e) => e.source_operation).sort()).toEqual(['cortex.run', 'memory.update']);
    const history = await get(t, `/v1/replay/memory/${old}`);
    expect(history.status, history.text).toBe(200);
    expect(JSON.stringify(history.body)).toContain('cortex');
    engine.clock.advance(60_000);
    const rb = await post(t, '/v1/rollback', { target });
    expect(rb.status, rb.text).toBe(200);
    expect(rb.body.memories_reverted).toBe(1);
    expect((await memory(t, old)).superseded_by).toBeNull();
    expect((await memory(t, fresh)).superseded_by).toBeNull();
  });

  it('the daily maintenance runs tenants with Cortex enabled, once a day', async () => {
    const on = await engine.newTenant('pro');
    const off = await engine.newTenant('pro');
    for (const t of [on, off]) {
      await remember(t, C);
      await remember(t, C);
    }
    await patch(on, { enabled: true });
    engine.clock.advance(1000);
    const done = await engine.node.runner.maintain();
    expect(done.cortex_daily).toBeGreaterThanOrEqual(1);
    expect((await get(on, '/v1/cortex/status')).body).toMatchObject({ last_run_at: engine.clock.now().toISOString(), run_stats: { consolidated: 1 } });
    expect((await get(off, '/v1/cortex/status')).body.last_run_at).toBeNull();
    const again = await engine.node.runner.maintain();
    expect(again.cortex_daily).toBe(0);
  });
});

describe('the near-duplicate index (eval conflicts and consolidation)', () => {
  const evalConflicts = async (t: Tenant) => {
    const res = await post(t, '/v1/eval/run');
    expect(res.status, res.text).toBe(200);
    return res.body.conflict_count as number;
  };
  const edit = async (t: Tenant, id: string, observation: string) => {
    const res = await engine.request('PATCH', `/v1/memories/${id}`, { key: t.key, body: { observation } });
    expect(res.status, res.text).toBe(200);
  };

  it('finds near duplicates (other text, cosine ≥ threshold) and follows edits both ways', async () => {
    const t = await engine.newTenant('pro');
    await remember(t, A);
    const other = await remember(t, B);
    expect(await evalConflicts(t)).toBe(0);
    // One word more: a near duplicate of A (cosine about 0.94 with the test embedder), not the same hash.
    await edit(t, other, `${A} Really`);
    expect(await evalConflicts(t)).toBe(2);
    await patch(t, { consolidation_threshold: 0.99 });
    expect(await evalConflicts(t)).toBe(0);
    await patch(t, { consolidation_threshold: 0.9 });
    // Edited away again: the pairs its old text made are gone, from either side.
    await edit(t, other, C);
    expect(await evalConflicts(t)).toBe(0);
    await edit(t, other, `${A} Really`);
    expect((await run(t)).consolidated).toBe(1);
    expect(await evalConflicts(t)).toBe(0);
  });

  it('a deleted neighbour no longer counts', async () => {
    const t = await engine.newTenant('pro');
    const first = await remember(t, A);
    await remember(t, `${A} Really`);
    expect(await evalConflicts(t)).toBe(2);
    expect((await engine.request('DELETE', `/v1/memories/${first}`, { key: t.key })).status).toBe(200);
    expect(await evalConflicts(t)).toBe(0);
  });

  it('a memory deleted while it is probed: the probe runs again instead of failing the request', async () => {
    const t = await engine.newTenant('pro');
    await remember(t, A);
    await remember(t, `${A} Really`);
    // A DELETE committing between the probe's snapshot and its insert.
    const race = await withMemoryDeletedOnFirstInsert(engine, t, { table: 'memory_neighbour_probes', column: 'memory_id' }, () => evalConflicts(t));
    expect(race.result).toBe(2);
    expect(race.inserts).toBeGreaterThan(1);
  });

  it("another tenant's near duplicates are not this tenant's", async () => {
    const [t, u] = [await engine.newTenant('pro'), await engine.newTenant('pro')];
    await remember(t, A);
    await remember(u, `${A} Really`);
    expect(await evalConflicts(t)).toBe(0);
    expect(await evalConflicts(u)).toBe(0);
    expect((await run(t, true)).consolidated).toBe(0);
  });
});

describe('the near-duplicate index in the background (maintenance)', () => {
  /** A database of its own (on Postgres), so only these tenants wait; 10 probes a tick. */
  let own: TestEngine;
  beforeAll(async () => {
    own = await createEngine({ env: { SVC_ENABLE_EXPERIMENTAL: '1', NEAR_DUPLICATE_PROBES_PER_TICK: '10' }, ownDatabase: true });
  });
  afterAll(() => own?.close());

  const probes = async (t: Tenant) =>
    Number((await own.sql<{ n: string }>(sql`SELECT count(*) AS n FROM memory_neighbour_probes WHERE tenant_id = ${t.tenantId}`))[0].n);
  /** One maintenance tick, a minute after the last: how many memories it probed. */
  const tick = async () => {
    own.clock.advance(60_000);
    return (await own.node.runner.maintain()).near_duplicate_index as number;
  };
  const store = async (t: Tenant, texts: string[]) => {
    const res = await own.request('POST', '/v1/memories/batch', {
      key: t.key,
      body: { memories: texts.map((observation) => ({ observation, auto_link: false })) },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.stored).toBe(texts.length);
  };
  const texts = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix} note ${i}: ${C}`);

  it('probes new memories, and an eval then finds their pairs', async () => {
    const t = await own.newTenant('pro');
    await store(t, [A, `${A} Really`]);
    expect(await probes(t)).toBe(0);
    expect(await tick()).toBe(2);
    expect(await probes(t)).toBe(2);
    const res = await own.request('POST', '/v1/eval/run', { key: t.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.conflict_count).toBe(2);
    expect(await tick()).toBe(0);
  });

  it("a tick's probes are shared: a large backlog takes what a small one leaves, not all of it", async () => {
    const [large, small] = [await own.newTenant('pro'), await own.newTenant('pro')];
    await store(large, texts('large', 25));
    await store(small, texts('small', 2));
    expect(await tick()).toBe(10);
    expect(await probes(small)).toBe(2);
    expect(await probes(large)).toBe(8);
    expect(await tick()).toBe(10);
    expect(await tick()).toBe(7);
    expect(await probes(large)).toBe(25);
  });

  it('tenants take turns: one served in a tick waits behind those that were not', async () => {
    const tenants = [];
    for (let i = 0; i < 12; i++) tenants.push(await own.newTenant('pro'));
    for (const [i, t] of tenants.entries()) await store(t, texts(`tenant ${i}`, 2));
    // 12 tenants waiting, 10 probes a tick: one each for 10 of them, then the other two go first.
    expect(await tick()).toBe(10);
    expect(await tick()).toBe(10);
    for (const t of tenants) expect(await probes(t)).toBeGreaterThanOrEqual(1);
    expect(await tick()).toBe(4);
    for (const t of tenants) expect(await probes(t)).toBe(2);
  });
});

describe('insights (Enterprise)', () => {
  const variants = ['Really', 'Truly', 'Indeed'].map((w) => `${A} ${w}`);

  it('a cluster of 3 close memories gets one insight memory, linked to its sources; listed, once, and undone by a rollback', async () => {
    const t = await engine.newTenant('enterprise');
    expect((await patch(t, { insight_generation_enabled: true, consolidation_enabled: false })).status).toBe(200);
    const sources = [];
    // One source is a tool's output: the insight is trusted no more than it (docs/memories.md#provenance-and-trust).
    for (const [i, text] of variants.entries()) sources.push(await remember(t, text, i === 2 ? { source: { kind: 'tool' } } : {}));
    await remember(t, B);
    await remember(t, C);
    const target = engine.clock.now().toISOString();
    engine.clock.advance(60_000);
    const dry = await run(t, true);
    expect(dry.insights_generated).toBe(1);
    const planned = dry.changes?.filter((c: { pass: string }) => c.pass === 'insights');
    expect(planned).toHaveLength(1);
    expect([...(planned?.[0].detail.sources as string[])].sort()).toEqual((await Promise.all(sources.map(async (id) => (await memory(t, id)).uuid))).sort());
    expect((await get(t, '/v1/cortex/insights')).body).toMatchObject({ insights: [], total: 0 });

    expect((await run(t)).insights_generated).toBe(1);
    const list = await get(t, '/v1/cortex/insights');
    expect(list.status, list.text).toBe(200);
    expect(list.body).toMatchObject({ total: 1, limit: 20, offset: 0 });
    const [insight] = list.body.insights;
    expect(insight.tags).toEqual(['insight']);
    expect(variants.map((v) => `Insight from 3 related memories: ${v}`)).toContain(insight.observation);
    expect(await memory(t, insight.uuid)).toMatchObject({ source: { kind: 'system', via: 'job', key_id: null }, trust: 'external' });
    const audit = await cortexAudit(t);
    expect(audit.filter((e) => e.source_operation === 'memory.create')).toHaveLength(1);
    // The cluster has its insight: the next run makes none.
    expect((await run(t)).insights_generated).toBe(0);

    engine.clock.advance(60_000);
    const rb = await post(t, '/v1/rollback', { target });
    expect(rb.status, rb.text).toBe(200);
    expect((await get(t, '/v1/cortex/insights')).body.total).toBe(0);
  });

  it('off unless insight_generation_enabled; the list is Enterprise; another tenant sees none', async () => {
    const t = await engine.newTenant('enterprise');
    for (const text of variants) await remember(t, text);
    expect((await run(t, true)).insights_generated).toBe(0);
    const pro = await engine.newTenant('pro');
    const refused = await get(pro, '/v1/cortex/insights');
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'enterprise' });
    await patch(t, { insight_generation_enabled: true });
    expect((await run(t)).insights_generated).toBe(1);
    const other = await engine.newTenant('enterprise');
    expect((await get(other, '/v1/cortex/insights')).body.total).toBe(0);
    expect((await get(t, '/v1/cortex/insights?limit=101')).status).toBe(400);
  });
});

describe('a large run', () => {
  it('applies the first CORTEX_BATCH changes in its request and queues the rest as jobs of as many; all of them land', async () => {
    const small: TestEngine = await createEngine({ env: { SVC_ENABLE_EXPERIMENTAL: '1', CORTEX_BATCH: '4' } });
    try {
      const t = await small.newTenant('pro');
      for (let i = 0; i < 11; i++) {
        const res = await small.request('POST', '/v1/memories', { key: t.key, body: { observation: `${TEXTS_11[i]}`, importance: 5, auto_link: false } });
        expect(res.status, res.text).toBe(201);
      }
      small.clock.advance(31 * DAY);
      const runOf = async (dry: boolean) => (await small.request('POST', `/v1/cortex/run${dry ? '?dry_run=true' : ''}`, { key: t.key })).body;
      expect(await runOf(true)).toMatchObject({ decayed: 11, queued_changes: 0 });
      expect(await runOf(false)).toMatchObject({ decayed: 11, queued_changes: 7, dry_run: false });
      await small.node.runner.drain();
      const entries = (await small.request('GET', '/v1/audit?limit=1000', { key: t.key })).body.entries as {
        actor: string;
        source_operation: string;
        memory_id: string;
      }[];
      const decayed = entries.filter((e) => e.actor === 'cortex' && e.source_operation === 'memory.update');
      expect(new Set(decayed.map((e) => e.memory_id)).size).toBe(11);
      expect(decayed).toHaveLength(11);
      expect((await small.request('GET', '/v1/cortex/status', { key: t.key })).body.run_stats).toMatchObject({ decayed: 11, queued_changes: 7 });
    } finally {
      await small.close();
    }
  });
});

const TEXTS_11 = [
  'Invoices go out by email every Monday morning.',
  'The Kubernetes cluster is upgraded each quarter.',
  'Alice approves refunds above five hundred euros.',
  'Staging passwords rotate automatically at night.',
  'The Berlin office closes early on Fridays.',
  'Customer churn rose in the third quarter.',
  'Backups are copied to a second region daily.',
  'Support tickets older than a week are escalated.',
  'The mobile app release train leaves on Thursdays.',
  'Marketing budget reviews happen in January.',
  'New hires get laptops on their first day.',
];
