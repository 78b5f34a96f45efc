import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const store = async (t: Tenant, observation: string, extra: Record<string, unknown> = {}) => {
  const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation, auto_link: false, ...extra } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
};
const tick = (ms = 1000) => engine.clock.advance(ms);
const now = () => engine.clock.now().toISOString();
const observations = async (t: Tenant) =>
  ((await engine.request('GET', '/v1/memories?limit=100', { key: t.key })).body.memories as { observation: string }[]).map((m) => m.observation).sort();

describe('rollback', () => {
  it('removes what was created, restores what was deleted, reverts what changed; preview has no side effects', async () => {
    const t = await engine.newTenant();
    const kept = await store(t, 'kept as it was');
    const changed = await store(t, 'original wording', { tags: ['a'] });
    const deleted = await store(t, 'deleted later');
    tick();
    const target = now();
    tick();
    await store(t, 'created after the target');
    await engine.request('PATCH', `/v1/memories/${changed}`, { key: t.key, body: { observation: 'new wording', tags: ['b'], importance: 9 } });
    await engine.request('DELETE', `/v1/memories/${deleted}`, { key: t.key });
    tick();

    const preview = await engine.request('GET', `/v1/rollback/preview?target=${encodeURIComponent(target)}`, { key: t.key });
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({
      target_timestamp: target,
      artifacts_deleted: 1,
      artifacts_modified: 2,
      artifacts_restored: 1,
      memories_reverted: 1,
      safe_rollback: false,
    });
    expect(preview.body.size_bytes).toBeGreaterThan(0);
    const warnings = preview.body.warnings.join(' ');
    expect(warnings).toContain('1 memory created after the target will be removed.');
    // Removed is not gone for good: the warning must not say so while a later rollback restores them.
    expect(warnings).not.toMatch(/permanent/);
    expect(warnings).toContain('a rollback to a time after they were created and before this rollback brings them back');
    expect(await observations(t)).toEqual(['created after the target', 'kept as it was', 'new wording']);

    const res = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ success: true, rolled_back_to: target, operations_undone: 1, artifacts_restored: 1, memories_reverted: 1 });
    expect(await observations(t)).toEqual(['deleted later', 'kept as it was', 'original wording']);
    const reverted = await engine.request('GET', `/v1/memories/${changed}`, { key: t.key });
    expect(reverted.body).toMatchObject({ observation: 'original wording', tags: ['a'], importance: 5 });
    const restored = await engine.request('GET', `/v1/memories/${deleted}`, { key: t.key });
    expect(restored.status).toBe(200);
    expect((await engine.request('GET', `/v1/memories/${kept}`, { key: t.key })).status).toBe(200);
    // The restored and reverted memories are searchable again with their old content.
    const found = await engine.request('GET', '/v1/memories/search?q=original%20wording&limit=1', { key: t.key });
    expect(found.body.memories[0].uuid).toBe(changed);
    expect((await engine.request('GET', '/v1/dashboard', { key: t.key })).body.memory_count).toBe(3);

    // Rolling back to the same target again changes nothing.
    tick();
    const again = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target } });
    expect(again.body).toMatchObject({ operations_undone: 0, artifacts_restored: 0, memories_reverted: 0 });
    const quiet = await engine.request('GET', `/v1/rollback/preview?target=${encodeURIComponent(target)}`, { key: t.key });
    expect(quiet.body).toMatchObject({ artifacts_deleted: 0, artifacts_modified: 0, safe_rollback: true, warnings: [] });
  });

  it('a rollback is undone by rolling back to a time before it', async () => {
    const t = await engine.newTenant();
    await store(t, 'first');
    tick();
    const target = now();
    tick();
    await store(t, 'second');
    tick();
    const beforeRollback = now();
    tick();
    await engine.request('POST', '/v1/rollback', { key: t.key, body: { target } });
    expect(await observations(t)).toEqual(['first']);
    tick();
    const undo = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: beforeRollback } });
    expect(undo.body.artifacts_restored).toBe(1);
    expect(await observations(t)).toEqual(['first', 'second']);
  });

  it('writes its audit entry, event, milestone and history; leaves other tenants alone', async () => {
    const t = await engine.newTenant();
    const other = await engine.newTenant();
    tick();
    const target = now();
    tick();
    await store(t, 'mine');
    await store(other, 'theirs');
    const res = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target } });
    expect(res.body.operations_undone).toBe(1);
    expect(await observations(other)).toEqual(['theirs']);

    const audit = await engine.request('GET', '/v1/audit?event_type=rollback', { key: t.key });
    expect(audit.body.entries).toHaveLength(1);
    expect(audit.body.entries[0].metadata).toMatchObject({ target, removed: 1, restored: 0, reverted: 0, rollback_id: res.body.rollback_id });
    const jobs = await engine.sql<{ type: string }>(sql`SELECT type FROM events WHERE tenant_id = ${t.tenantId} ORDER BY seq`);
    expect(jobs.map((r) => r.type)).toContain('rollback.completed');
    const milestones = await engine.request('GET', '/v1/milestones', { key: t.key });
    expect(milestones.body.milestones.map((m: { milestone: string }) => m.milestone)).toContain('first_rollback');
    const history = await engine.request('GET', '/v1/rollback/history', { key: t.key });
    expect(history.body).toMatchObject({ total: 1 });
    expect(history.body.rollbacks[0]).toMatchObject({ rollback_id: res.body.rollback_id, target, operations_undone: 1, actor: t.keyId });
    expect((await engine.request('GET', '/v1/rollback/history', { key: other.key })).body.total).toBe(0);
    const usage = await engine.request('GET', '/v1/usage', { key: t.key });
    expect(usage.body.rollbacks.current).toBe(1);
  });

  it('rollbacks racing deletes, edits and stores of the same tenant: no 5xx, and the live count matches the store', async () => {
    // On Postgres these take the tenant's audit head, live counter and memory rows from many
    // connections at once; a lock-order cycle shows up here as a deadlock (500 or a 1 s stall).
    const t = await engine.newTenant('enterprise');
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await store(t, `fact ${i}`));
    tick(2 * 86_400_000);
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, async (_, worker) => {
        for (let n = 0; n < 16; n++) {
          const id = ids[(worker + n) % ids.length];
          const op = (worker + n) % 4;
          const res =
            op === 0
              ? await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: '1 days ago' } })
              : op === 1
                ? await engine.request('DELETE', `/v1/memories/${id}`, { key: t.key })
                : op === 2
                  ? await engine.request('PATCH', `/v1/memories/${id}`, { key: t.key, body: { importance: 0.9 } })
                  : await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: `new ${worker} ${n}`, auto_link: false } });
          statuses.push(res.status);
        }
      }),
    );
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    const listed = await engine.request('GET', '/v1/memories?limit=1', { key: t.key });
    const dashboard = await engine.request('GET', '/v1/dashboard', { key: t.key });
    expect(dashboard.body.memory_count).toBe(listed.body.total);
  });

  it('accepts "N minutes ago"; refuses future, unparseable and missing targets', async () => {
    const t = await engine.newTenant();
    expect((await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: '10 minutes ago' } })).status).toBe(200);
    expect((await engine.request('GET', '/v1/rollback/preview?target=2%20hours%20ago', { key: t.key })).status).toBe(200);
    const future = new Date(engine.clock.now().getTime() + 3_600_000).toISOString();
    for (const target of [future, 'yesterday-ish', '2026-13-45T00:00:00Z', '2026-02-30T10:00:00Z', '2025-02-29', '2026-01-01T24:00:00Z', '']) {
      const res = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target } });
      expect(res.status, target).toBe(400);
      expect(errorOf(res).details?.[0].path).toBe('target');
    }
    expect((await engine.request('POST', '/v1/rollback', { key: t.key, body: {} })).status).toBe(400);
    expect((await engine.request('GET', '/v1/rollback/preview', { key: t.key })).status).toBe(400);
  });

  it('enforces the monthly limit with 429 and usage', async () => {
    const t = await engine.newTenant('free');
    const period = engine.clock.now().toISOString().slice(0, 7);
    await engine.node.services.db.execute(sql`
      INSERT INTO usage_counters (tenant_id, metric, bucket, value) VALUES (${t.tenantId}, 'rollbacks', ${period}, 10)`);
    const res = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: '1 minutes ago' } });
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({ code: 'RATE_LIMITED', usage: { limit: 10, plan: 'free' } });
    const pro = await engine.newTenant('pro');
    await engine.node.services.db.execute(sql`
      INSERT INTO usage_counters (tenant_id, metric, bucket, value) VALUES (${pro.tenantId}, 'rollbacks', ${period}, 1000)`);
    expect((await engine.request('POST', '/v1/rollback', { key: pro.key, body: { target: '1 minutes ago' } })).status).toBe(200);
  });

  it('warns when the target is older than the audit retention', async () => {
    const t = await engine.newTenant('free');
    await store(t, 'something');
    const res = await engine.request('GET', '/v1/rollback/preview?target=30%20days%20ago', { key: t.key });
    expect(res.body.warnings.join(' ')).toMatch(/7-day audit retention/);
  });
});
