import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';
import { insertTrace, type StepInput } from './trace-fixture';

let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const tick = (ms = 1_000) => engine.clock.advance(ms);
const now = () => engine.clock.now();
const iso = (d: Date) => d.toISOString();
const later = (d: Date, ms: number) => new Date(d.getTime() + ms);
/** The frozen test clock makes service timestamps exact: the time the clock read when the request ran. */
const at = (value: string | null, when: Date) => expect(value).toBe(when.toISOString());
const action = (content: string, at: Date, metadata?: Record<string, unknown>): StepInput => ({ type: 'ACTION', content, at, metadata });

const preview = (t: Tenant, body: Record<string, unknown>) => engine.request('POST', '/v1/compensations/preview', { key: t.key, body });
const get = <Path extends string>(t: Tenant, path: Path) => engine.request('GET', path, { key: t.key });
const ack = (t: Tenant, planId: string, index: number | string, body: Record<string, unknown>) =>
  engine.request('PATCH', `/v1/compensations/${planId}/actions/${index}`, { key: t.key, body });

/** A plan over a window holding `n` ACTION steps of one trace. */
async function planWith(t: Tenant, n: number) {
  const start = now();
  tick();
  await insertTrace(
    engine,
    t,
    'ops-agent',
    Array.from({ length: n }, (_, i) => action(`step ${i}`, now())),
  );
  tick();
  const res = await preview(t, { rollback_from: iso(now()), rollback_to: iso(start) });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const outboxEvents = async (tenantId: string, type: string) =>
  (await engine.sql<{ data: Record<string, unknown> }>(sql`SELECT payload->'data' AS data FROM events WHERE tenant_id = ${tenantId} AND type = ${type}`)).map(
    (r) => r.data,
  );

describe('tier gate', () => {
  it('free and starter are 403 FEATURE_NOT_AVAILABLE on every endpoint; pro and enterprise pass', async () => {
    const id = 'comp_4f9Qw2b8Zr1LmT0aXcVe3K';
    const body = { rollback_from: '1 minutes ago', rollback_to: '1 hours ago' };
    for (const tier of ['free', 'starter'] as const) {
      const t = await engine.newTenant(tier);
      for (const res of [
        await preview(t, body),
        await get(t, '/v1/compensations'),
        await get(t, `/v1/compensations/${id}`),
        await ack(t, id, 0, { status: 'completed' }),
      ]) {
        expect(res.status, `${tier} ${res.text}`).toBe(403);
        expect(errorOf(res)).toMatchObject({ code: 'FEATURE_NOT_AVAILABLE', required_tier: 'pro', current_tier: tier });
      }
    }
    for (const tier of ['pro', 'enterprise'] as const) {
      const t = await engine.newTenant(tier);
      expect((await preview(t, body)).status, tier).toBe(201);
      expect((await get(t, '/v1/compensations')).status, tier).toBe(200);
    }
  });
});

describe('POST /v1/compensations/preview', () => {
  it('plans one action per ACTION step in (rollback_to, rollback_from], oldest first, with a suggested reversal', async () => {
    const t = await engine.newTenant('pro');
    const other = await engine.newTenant('pro');
    const base = now();
    tick(60_000);
    const to = later(base, 2_000);
    const from = later(base, 5_000);
    const { traceId, stepIds } = await insertTrace(engine, t, 'billing-agent', [
      action('charge card before the window', later(base, 1_000)),
      action('at exactly rollback_to: excluded', to),
      { type: 'THOUGHT', content: 'the customer wants a refund', at: later(base, 3_000) },
      action('POST /v1/refunds {"charge":"ch_1"}', later(base, 3_000), { tool: 'stripe', compensation: '  Reverse refund re_1  ' }),
      { type: 'OBSERVATION', content: 'refund ok', at: later(base, 3_500) },
      { type: 'OUTPUT', content: 'done', at: later(base, 3_600) },
      { type: 'ERROR', content: 'timeout', at: later(base, 3_700) },
      { type: 'POLICY_CHECK', content: 'allowed', at: later(base, 3_800) },
      action('at exactly rollback_from: included', from, { undo: 'DELETE /v1/tickets/42', compensation: 7 }),
      action('after rollback_from', later(base, 6_000)),
    ]);
    const second = await insertTrace(engine, t, 'mail-agent', [action('send mail to ada@example.com', later(base, 4_000), { compensation: '' })]);
    await insertTrace(engine, other, 'billing-agent', [action("another tenant's action", later(base, 3_000))]);

    const res = await preview(t, { rollback_from: iso(from), rollback_to: iso(to) });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      plan_id: expect.stringMatching(/^comp_[0-9A-Za-z]{22}$/),
      rollback_id: null,
      rollback_from: iso(from),
      rollback_to: iso(to),
      status: 'pending',
      action_count: 3,
      truncated: false,
      counts: { pending: 3, completed: 0, failed: 0, skipped: 0 },
      completed_at: null,
    });
    expect(res.body.actions).toEqual([
      {
        index: 0,
        trace_id: traceId,
        step_id: stepIds[3],
        step_index: 3,
        agent_id: 'billing-agent',
        content: 'POST /v1/refunds {"charge":"ch_1"}',
        metadata: { tool: 'stripe', compensation: '  Reverse refund re_1  ' },
        step_at: iso(later(base, 3_000)),
        suggested: 'Reverse refund re_1',
        status: 'pending',
        detail: null,
        acknowledged_at: null,
        acknowledged_by: null,
      },
      expect.objectContaining({
        index: 1,
        trace_id: second.traceId,
        step_id: second.stepIds[0],
        agent_id: 'mail-agent',
        suggested: 'Review and reverse: send mail to ada@example.com',
      }),
      expect.objectContaining({ index: 2, step_id: stepIds[8], step_at: iso(from), suggested: 'DELETE /v1/tickets/42' }),
    ]);
    // The plan is stored: GET returns the same.
    const stored = await get(t, `/v1/compensations/${res.body.plan_id}`);
    expect(stored.status).toBe(200);
    expect(stored.body).toEqual(res.body);
    const audit = await get(t, '/v1/audit');
    expect(audit.body.entries.find((e: { operation: string }) => e.operation === 'compensation.created')?.metadata).toMatchObject({
      action_count: 3,
      rollback_id: null,
      rollback_to: iso(to),
    });
  });

  it('shortens a long step in the default hint', async () => {
    const t = await engine.newTenant('pro');
    const plan = await planWith(t, 0);
    expect(plan.actions).toEqual([]);
    const start = now();
    tick();
    await insertTrace(engine, t, 'a', [action('x'.repeat(600), now())]);
    const res = await preview(t, { rollback_from: iso(now()), rollback_to: iso(start) });
    expect(res.body.actions[0].suggested).toBe(`Review and reverse: ${'x'.repeat(500)}…`);
    expect(res.body.actions[0].content).toHaveLength(600);
  });

  it('a window without ACTION steps gives a completed plan with no actions; equal ends are an empty window', async () => {
    const t = await engine.newTenant('pro');
    await insertTrace(engine, t, 'a', [{ type: 'THOUGHT', content: 'just thinking', at: now() }]);
    tick();
    const res = await preview(t, { rollback_from: iso(now()), rollback_to: '1 hours ago' });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ status: 'completed', action_count: 0, actions: [], counts: { pending: 0, completed: 0, failed: 0, skipped: 0 } });
    expect(res.body.completed_at).toBe(iso(new Date(res.body.created_at)));
    const stamp = iso(now());
    expect((await preview(t, { rollback_from: stamp, rollback_to: stamp })).body).toMatchObject({ status: 'completed', action_count: 0 });
  });

  it('holds at most 1000 actions, the oldest, and says truncated', async () => {
    const t = await engine.newTenant('pro');
    const start = now();
    tick();
    const base = now();
    await insertTrace(
      engine,
      t,
      'bulk-agent',
      Array.from({ length: 1_001 }, (_, i) => action(`call ${i}`, later(base, i))),
    );
    tick(5_000);
    const res = await preview(t, { rollback_from: iso(now()), rollback_to: iso(start) });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ action_count: 1_000, truncated: true, counts: { pending: 1_000 } });
    expect(res.body.actions).toHaveLength(1_000);
    expect(res.body.actions[999]).toMatchObject({ index: 999, content: 'call 999' });
  });

  it('rollback_to after rollback_from is 422 INVALID_RANGE', async () => {
    const t = await engine.newTenant('pro');
    const res = await preview(t, { rollback_from: '2 hours ago', rollback_to: '1 hours ago' });
    expect(res.status).toBe(422);
    expect(errorOf(res)).toMatchObject({ code: 'INVALID_RANGE', details: [{ path: 'rollback_to' }] });
    expect((await get(t, '/v1/compensations')).body.total).toBe(0);
  });

  it('bad input is 400 naming the field', async () => {
    const t = await engine.newTenant('pro');
    const future = iso(later(now(), 3_600_000));
    const cases: [Record<string, unknown>, string][] = [
      [{ rollback_to: '1 hours ago' }, 'rollback_from'],
      [{ rollback_from: '1 hours ago' }, 'rollback_to'],
      [{ rollback_from: 'yesterday', rollback_to: '1 hours ago' }, 'rollback_from'],
      [{ rollback_from: '1 minutes ago', rollback_to: '2026-02-30T10:00:00Z' }, 'rollback_to'],
      [{ rollback_from: '1 minutes ago', rollback_to: 42 }, 'rollback_to'],
      [{ rollback_from: future, rollback_to: '1 hours ago' }, 'rollback_from'],
    ];
    for (const [body, field] of cases) {
      const res = await preview(t, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(errorOf(res).code).toBe('VALIDATION_ERROR');
      expect(
        errorOf(res).details?.map((d: { path: string }) => d.path),
        JSON.stringify(body),
      ).toContain(field);
    }
  });
});

describe('GET /v1/compensations', () => {
  it('lists plans newest first without actions, with counts; pages and filters by status', async () => {
    const t = await engine.newTenant('pro');
    const empty = await planWith(t, 0);
    tick();
    const two = await planWith(t, 2);
    tick();
    const one = await planWith(t, 1);
    expect((await ack(t, one.plan_id, 0, { status: 'skipped' })).status).toBe(200);

    const all = await get(t, '/v1/compensations');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 3, has_more: false });
    expect(all.body.compensations.map((p: { plan_id: string }) => p.plan_id)).toEqual([one.plan_id, two.plan_id, empty.plan_id]);
    expect(all.body.compensations[0]).toMatchObject({ status: 'completed', action_count: 1, counts: { pending: 0, skipped: 1 } });
    expect(all.body.compensations[1]).toMatchObject({ status: 'pending', action_count: 2, counts: { pending: 2, completed: 0 } });
    expect((all.body.compensations[0] as { actions?: unknown }).actions).toBeUndefined();

    const page = await get(t, '/v1/compensations?limit=1&offset=1');
    expect(page.body).toMatchObject({ total: 3, has_more: true });
    expect(page.body.compensations.map((p: { plan_id: string }) => p.plan_id)).toEqual([two.plan_id]);
    expect((await get(t, '/v1/compensations?limit=2&offset=1')).body.has_more).toBe(false);

    const completed = await get(t, '/v1/compensations?status=completed');
    expect(completed.body.total).toBe(2);
    expect(completed.body.compensations.map((p: { plan_id: string }) => p.plan_id)).toEqual([one.plan_id, empty.plan_id]);
    expect((await get(t, '/v1/compensations?status=pending')).body.compensations.map((p: { plan_id: string }) => p.plan_id)).toEqual([two.plan_id]);
    expect((await get(t, '/v1/compensations?status=in_progress')).body.total).toBe(0);

    const other = await engine.newTenant('pro');
    expect((await get(other, '/v1/compensations')).body).toMatchObject({ total: 0, compensations: [] });
  });

  it('bad query and path values are 400 naming the field', async () => {
    const t = await engine.newTenant('pro');
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['offset=-1', 'offset'],
      ['status=done', 'status'],
    ]) {
      const res = await get(t, `/v1/compensations?${query}`);
      expect(res.status, query).toBe(400);
      expect(errorOf(res).details?.[0].path, query).toBe(field);
    }
    // An id of any shape names nothing: answered as an unknown plan is.
    for (const path of ['/v1/compensations/not-a-plan', '/v1/compensations/comp_short']) {
      const res = await get(t, path);
      expect(res.status, path).toBe(404);
      expect(errorOf(res).code).toBe('NOT_FOUND');
    }
  });

  it("an unknown plan, or another tenant's, is 404", async () => {
    const t = await engine.newTenant('pro');
    const other = await engine.newTenant('pro');
    const plan = await planWith(t, 1);
    expect(errorOf(await get(t, '/v1/compensations/comp_4f9Qw2b8Zr1LmT0aXcVe3K')).code).toBe('NOT_FOUND');
    const theirs = await get(other, `/v1/compensations/${plan.plan_id}`);
    expect(theirs.status).toBe(404);
    expect(errorOf(theirs).code).toBe('NOT_FOUND');
    expect((await ack(other, plan.plan_id, 0, { status: 'completed' })).status).toBe(404);
    expect((await get(t, `/v1/compensations/${plan.plan_id}`)).body.actions[0].status).toBe('pending');
  });
});

describe('PATCH /v1/compensations/{id}/actions/{index}', () => {
  it('acknowledges actions; the plan goes pending → in_progress → completed; each acknowledgment is audited', async () => {
    const t = await engine.newTenant('pro');
    const plan = await planWith(t, 3);
    tick();
    const before = now();
    const first = await ack(t, plan.plan_id, 0, { status: 'completed', detail: 'Refund re_1 reversed' });
    expect(first.status, first.text).toBe(200);
    at(first.body.action.acknowledged_at, before);
    expect(first.body).toMatchObject({
      plan_id: plan.plan_id,
      plan_status: 'in_progress',
      completed_at: null,
      counts: { pending: 2, completed: 1, failed: 0, skipped: 0 },
      action: { index: 0, status: 'completed', detail: 'Refund re_1 reversed', acknowledged_by: t.keyId, content: 'step 0' },
    });
    expect((await ack(t, plan.plan_id, 1, { status: 'skipped' })).body).toMatchObject({
      plan_status: 'in_progress',
      action: { status: 'skipped', detail: null },
    });
    tick();
    const beforeLast = now();
    const last = await ack(t, plan.plan_id, 2, { status: 'failed', detail: 'Provider refused' });
    expect(last.body).toMatchObject({ plan_status: 'completed', counts: { pending: 0, completed: 1, skipped: 1, failed: 1 } });
    at(last.body.completed_at, beforeLast);
    const completedAt = last.body.completed_at;

    // A failed action may be acknowledged again; the plan stays completed from the first time.
    tick();
    const retry = await ack(t, plan.plan_id, 2, { status: 'completed', detail: 'Retried by hand' });
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ plan_status: 'completed', completed_at: completedAt, counts: { completed: 2, failed: 0, skipped: 1 } });

    const stored = await get(t, `/v1/compensations/${plan.plan_id}`);
    expect(stored.body).toMatchObject({ status: 'completed', completed_at: completedAt });
    expect(stored.body.actions.map((a: { status: string; detail: string | null }) => [a.status, a.detail])).toEqual([
      ['completed', 'Refund re_1 reversed'],
      ['skipped', null],
      ['completed', 'Retried by hand'],
    ]);
    const audit = await get(t, '/v1/audit?limit=100');
    const acks = audit.body.entries.filter((e: { operation: string }) => e.operation === 'compensation.acknowledged');
    expect(acks).toHaveLength(4);
    expect(acks[0].metadata).toMatchObject({
      action_index: 2,
      status: 'completed',
      previous_status: 'failed',
      detail: 'Retried by hand',
      plan_status: 'completed',
    });
    const verify = await get(t, '/v1/audit/verify');
    expect(verify.body.valid, verify.text).toBe(true);
  });

  it('a completed or skipped action is final: 409 CONFLICT', async () => {
    const t = await engine.newTenant('pro');
    const plan = await planWith(t, 3);
    await ack(t, plan.plan_id, 0, { status: 'completed' });
    await ack(t, plan.plan_id, 1, { status: 'skipped' });
    for (const [index, was] of [
      [0, 'completed'],
      [1, 'skipped'],
    ] as const) {
      for (const status of ['completed', 'failed', 'skipped']) {
        const res = await ack(t, plan.plan_id, index, { status });
        expect(res.status, `${was} → ${status}`).toBe(409);
        expect(errorOf(res)).toMatchObject({ code: 'CONFLICT', action_status: was });
      }
    }
    const stored = await get(t, `/v1/compensations/${plan.plan_id}`);
    expect(stored.body.actions.map((a: { status: string }) => a.status)).toEqual(['completed', 'skipped', 'pending']);
    expect(stored.body.status).toBe('in_progress');
  });

  it('an index outside the plan is 404; bad path and body values are 400 naming the field', async () => {
    const t = await engine.newTenant('pro');
    const plan = await planWith(t, 2);
    for (const index of [2, 9_999_999]) {
      const res = await ack(t, plan.plan_id, index, { status: 'completed' });
      expect(res.status, String(index)).toBe(404);
      expect(errorOf(res).code).toBe('NOT_FOUND');
    }
    const cases: [string | number, Record<string, unknown>, string][] = [
      ['-1', { status: 'completed' }, 'index'],
      ['one', { status: 'completed' }, 'index'],
      ['1.5', { status: 'completed' }, 'index'],
      [0, {}, 'status'],
      [0, { status: 'pending' }, 'status'],
      [0, { status: 'done' }, 'status'],
      [0, { status: 'completed', detail: 'x'.repeat(2_001) }, 'detail'],
      [0, { status: 'completed', detail: 5 }, 'detail'],
    ];
    for (const [index, body, field] of cases) {
      const res = await ack(t, plan.plan_id, index, body);
      expect(res.status, `${index} ${JSON.stringify(body).slice(0, 60)}`).toBe(400);
      expect(errorOf(res).details?.[0].path).toBe(field);
    }
    expect((await ack(t, 'comp_nope', 0, { status: 'completed' })).status).toBe(404);
    expect((await ack(t, plan.plan_id, 1, { status: 'completed', detail: 'x'.repeat(2_000) })).status).toBe(200);
    expect((await get(t, `/v1/compensations/${plan.plan_id}`)).body.counts).toMatchObject({ pending: 1, completed: 1 });
  });

  it('concurrent acknowledgments lose nothing: all of a plan at once completes it; one action at once is taken once', async () => {
    const t = await engine.newTenant('pro');
    const plan = await planWith(t, 6);
    const all = await Promise.all(Array.from({ length: 6 }, (_, i) => ack(t, plan.plan_id, i, { status: 'completed', detail: `done ${i}` })));
    expect(all.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const stored = await get(t, `/v1/compensations/${plan.plan_id}`);
    expect(stored.body).toMatchObject({ status: 'completed', counts: { pending: 0, completed: 6 } });
    expect(stored.body.completed_at).not.toBeNull();
    expect(all.filter((r) => r.body.plan_status === 'completed')).toHaveLength(1);

    const race = await planWith(t, 2);
    const same = await Promise.all(Array.from({ length: 4 }, () => ack(t, race.plan_id, 0, { status: 'completed' })));
    expect(same.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
    const audit = await get(t, '/v1/audit?limit=100');
    expect(audit.body.entries.filter((e: { operation: string }) => e.operation === 'compensation.acknowledged')).toHaveLength(7);
  });
});

describe('rollback and compensations', () => {
  it('a rollback over ACTION steps creates the plan, returns its id and emits rollback.compensations', async () => {
    const t = await engine.newTenant('pro');
    const target = now();
    tick();
    const memory = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'Refund issued for order 42', auto_link: false } });
    expect(memory.status).toBe(201);
    await insertTrace(engine, t, 'billing-agent', [
      { type: 'THOUGHT', content: 'refund order 42', at: now() },
      action('POST /v1/refunds {"order":42}', now(), { undo: 'Charge order 42 again' }),
      action('send mail "refund issued"', now()),
    ]);
    tick();

    const preview = await get(t, `/v1/rollback/preview?target=${encodeURIComponent(iso(target))}`);
    expect(preview.body.safe_rollback).toBe(false);
    expect(preview.body.warnings.join(' ')).toContain('2 ACTION trace steps after the target may have had external side effects');

    const before = now();
    const res = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target: iso(target) } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.operations_undone).toBe(1);
    expect(res.body.compensation_plan_id).toMatch(/^comp_/);
    expect(res.body.message).toContain(res.body.compensation_plan_id);
    const plan = await get(t, `/v1/compensations/${res.body.compensation_plan_id}`);
    expect(plan.body).toMatchObject({ rollback_id: res.body.rollback_id, rollback_to: iso(target), status: 'pending', action_count: 2 });
    at(plan.body.rollback_from, before);
    expect(plan.body.actions.map((a: { suggested: string }) => a.suggested)).toEqual([
      'Charge order 42 again',
      'Review and reverse: send mail "refund issued"',
    ]);
    expect(await outboxEvents(t.tenantId, 'rollback.compensations')).toEqual([
      { rollback_id: res.body.rollback_id, target: iso(target), action_steps: 2, plan_id: res.body.compensation_plan_id },
    ]);
    expect((await get(t, '/v1/compensations')).body.total).toBe(1);
  });

  it('without ACTION steps in its window a rollback makes no plan and no event', async () => {
    const t = await engine.newTenant('pro');
    await insertTrace(engine, t, 'a', [action('before the target', now()), { type: 'OBSERVATION', content: 'x', at: now() }]);
    tick();
    const target = iso(now());
    tick();
    await insertTrace(engine, t, 'a', [{ type: 'THOUGHT', content: 'after, but no action', at: now() }]);
    tick();
    const preview = await get(t, `/v1/rollback/preview?target=${encodeURIComponent(target)}`);
    expect(preview.body).toMatchObject({ safe_rollback: true, warnings: [] });
    const res = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target } });
    expect(res.body.compensation_plan_id).toBeNull();
    expect(res.body.message).not.toMatch(/ACTION/);
    expect(await outboxEvents(t.tenantId, 'rollback.compensations')).toEqual([]);
    expect((await get(t, '/v1/compensations')).body.total).toBe(0);
  });

  it("below Pro the event still says so, without a plan; other tenants' steps do not count", async () => {
    // Traces need Pro: the tenant recorded its step on Pro and was moved down to Free since.
    const t = await engine.newTenant('pro');
    const other = await engine.newTenant('pro');
    const target = iso(now());
    tick();
    await insertTrace(engine, t, 'a', [action('delete the S3 bucket', now())]);
    await insertTrace(engine, other, 'a', [action('theirs', now()), action('theirs too', now())]);
    expect((await engine.admin('PATCH', `/admin/v1/tenants/${t.tenantId}`, { tier: 'free' })).status).toBe(200);
    tick();
    const preview = await get(t, `/v1/rollback/preview?target=${encodeURIComponent(target)}`);
    // No memory changes: the side effects alone make the rollback unsafe.
    expect(preview.body).toMatchObject({ artifacts_deleted: 0, artifacts_modified: 0, safe_rollback: false });
    expect(preview.body.warnings).toEqual([expect.stringMatching(/^1 ACTION trace steps after the target/)]);
    const res = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target } });
    expect(res.body).toMatchObject({ compensation_plan_id: null });
    expect(res.body.message).toMatch(/1 ACTION trace steps/);
    expect(await outboxEvents(t.tenantId, 'rollback.compensations')).toEqual([{ rollback_id: res.body.rollback_id, target, action_steps: 1, plan_id: null }]);
    const count = await engine.sql<{ n: number }>(sql`SELECT count(*)::int AS n FROM compensation_plans WHERE tenant_id = ${t.tenantId}`);
    expect(count[0].n).toBe(0);
  });
});

describe('OpenAPI', () => {
  it('documents the four routes under the Compensations tag, and the plan id on rollback', async () => {
    type Op = { tags: string[]; responses: Record<string, unknown> };
    type Doc = { paths: Record<string, Record<string, Op>>; components: { schemas: Record<string, { properties: Record<string, unknown> }> } };
    const res = await engine.request<Doc>('GET', '/openapi.json');
    const paths = res.body.paths;
    expect(paths['/v1/compensations/preview'].post.tags).toEqual(['Compensations']);
    expect(paths['/v1/compensations'].get.tags).toEqual(['Compensations']);
    expect(paths['/v1/compensations/{id}'].get.tags).toEqual(['Compensations']);
    expect(paths['/v1/compensations/{id}/actions/{index}'].patch.tags).toEqual(['Compensations']);
    expect(Object.keys(paths['/v1/compensations/preview'].post.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', '422', '429']));
    expect(res.body.components.schemas.RollbackResponse.properties.compensation_plan_id).toBeDefined();
  });
});
