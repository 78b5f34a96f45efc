import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actionHelpers, PAYLOADS } from './actions-helpers';
import { createEngine, errorOf, type TestEngine } from './harness';

/**
 * What the control plane tells about past actions: explain (policy result,
 * approval, memories at submission time, audit trail, summary), the dashboard, and an agent's
 * violation history with its `since`/`until` validation.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const h = actionHelpers(() => engine);
const HOUR = 3_600_000;

describe('explain', () => {
  it('tells the policy result, the approval, the memories the agent had then, the audit trail and a summary', async () => {
    const t = await engine.newTenant('pro');
    const before = await h.call(t, 'POST', '/v1/memories', {
      observation: 'Vendor ACME GmbH is paid by wire; the IBAN is on file.',
      tags: ['vendors'],
      importance: 7,
    });
    expect(before.status, before.text).toBe(201);
    engine.clock.advance(1_000);
    const id = await h.pending(t, { ...PAYLOADS.pending, agent_id: 'billing-agent' });
    engine.clock.advance(1_000);
    expect((await h.call(t, 'POST', '/v1/memories', { observation: 'Stored after the action was submitted.' })).status).toBe(201);
    engine.clock.advance(6_000);
    expect((await h.decide(t, id, { reason: 'vendor confirmed by phone', confirmation: 'ROLLBACK', approver_id: 'cfo@example.com' })).body.status).toBe(
      'approved',
    );
    await h.call(t, 'POST', `/v1/actions/${id}/result`, { status: 'executed' });

    const res = await h.call(t, 'GET', `/v1/actions/${id}/explain`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      action_id: id,
      action: 'http.post',
      agent_id: 'billing-agent',
      connector: 'http',
      operation: 'post',
      status: 'executed',
      params: PAYLOADS.pending.params,
      policy_result: { status: 'pending_review', action_id: id },
      approval: {
        approval_id: id,
        status: 'executed',
        approval_mode: 'solo',
        reason: 'vendor confirmed by phone',
        decisions: [{ decision: 'approve', approver_id: 'cfo@example.com', approver_tenant_id: t.tenantId }],
      },
      memories_at_time_total: 1,
      memories_at_time: [
        { memory_id: before.body.id, observation: 'Vendor ACME GmbH is paid by wire; the IBAN is on file.', importance: 7, tags: ['vendors'] },
      ],
    });
    expect(res.body.audit_trail.map((e: { event: string }) => e.event)).toEqual(['action.pending_review', 'action.approved', 'action.executed']);
    const seqs = res.body.audit_trail.map((e: { sequence_number: number }) => e.sequence_number);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(res.body.audit_trail[0].entry_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(res.body.summary).toContain('billing-agent');
    expect(res.body.summary).toContain('held it for review');
    expect(res.body.summary).toContain('cfo@example.com approved it');
    expect(res.body.summary).toContain('reported it executed');
  });

  it('names the memories the submitting key recalled in the 15 minutes before, not the whole store', async () => {
    const t = await engine.newTenant('pro');
    const agent = await h.call(t, 'POST', '/v1/keys/restricted', { name: 'billing', scopes: ['actions:write', 'memories:read'] });
    expect(agent.status, agent.text).toBe(201);
    const asAgent = { ...t, key: agent.body.api_key as string };
    const stored: Record<string, string> = {};
    for (const observation of ['Vendor ACME GmbH is paid by wire.', 'The staging database is pg-staging-2.', 'Lunch is at noon.']) {
      stored[observation] = (await h.call(t, 'POST', '/v1/memories', { observation })).body.id;
    }
    const recall = async (who: typeof t, q: string) => {
      const res = await h.call(who, 'GET', `/v1/memories/search?q=${encodeURIComponent(q)}&limit=1&mode=keyword`);
      expect(res.status, res.text).toBe(200);
      return res.body.memories[0].uuid as string;
    };
    expect(await recall(asAgent, 'ACME')).toBe(stored['Vendor ACME GmbH is paid by wire.']); // too long before
    engine.clock.advance(20 * 60_000);
    expect(await recall(asAgent, 'staging')).toBe(stored['The staging database is pg-staging-2.']);
    engine.clock.advance(60_000);
    await recall(t, 'Lunch'); // another key's recall
    engine.clock.advance(1_000);
    const submitted = await h.call(asAgent, 'POST', '/v1/actions', PAYLOADS.pending);
    engine.clock.advance(1_000);
    await recall(asAgent, 'Lunch'); // after it
    const { body } = await h.call(t, 'GET', `/v1/actions/${submitted.body.action_id}/explain`);
    expect(body.memories_at_time_total).toBe(3);
    expect(body.memories_recalled).toEqual([
      expect.objectContaining({
        memory_id: stored['The staging database is pg-staging-2.'],
        observation: 'The staging database is pg-staging-2.',
        query: 'staging',
        recalls: 1,
      }),
    ]);
    expect(body.summary).toContain('with 3 memories in the store, having recalled 1 of them in the 15 minutes before.');
  });

  it('an allowed action has no approval; unknown and foreign ids are 404 actions.not_found', async () => {
    const [t, other] = [await engine.newTenant('free'), await engine.newTenant('free')];
    const allowed = (await h.submit(t, PAYLOADS.allowed)).body.action_id;
    const res = await h.call(t, 'GET', `/v1/actions/${allowed}/explain`);
    expect(res.body).toMatchObject({ approval: null, memories_at_time: [], memories_at_time_total: 0, memories_recalled: [], status: 'allowed' });
    expect(res.body.summary).toContain('allowed');
    for (const [who, id] of [
      [other, allowed],
      [t, 'act_0000000000000000000000'],
    ] as const) {
      const missing = await h.call(who, 'GET', `/v1/actions/${id}/explain`);
      expect([missing.status, errorOf(missing).code]).toEqual([404, 'actions.not_found']);
    }
    const blocked = (await h.submit(t, PAYLOADS.blocked)).body.action_id;
    expect((await h.call(t, 'GET', `/v1/actions/${blocked}/explain`)).body.summary).toContain('blocked it');
  });
});

describe('dashboard', () => {
  it('totals, violations by policy and agent, and a series with empty buckets filled', async () => {
    const t = await engine.newTenant('starter');
    const start = Math.floor(engine.clock.now().getTime() / HOUR) * HOUR; // its hour bucket
    await h.submit(t, { ...PAYLOADS.allowed, agent_id: 'standup-bot' });
    await h.submit(t, { ...PAYLOADS.pending, agent_id: 'billing-agent' });
    engine.clock.advance(2 * HOUR);
    await h.submit(t, { ...PAYLOADS.blocked, agent_id: 'chatty-agent' });
    await h.submit(t, { ...PAYLOADS.pending, agent_id: 'billing-agent' });
    const res = await h.call(t, 'GET', '/v1/control/dashboard?window=24h');
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      window: '24h',
      bucket: 'hour',
      backend: 'postgres',
      totals: { actions: 4, allowed: 1, blocked: 1, pending_review: 2, shadow: 0 },
    });
    expect(res.body.totals.violations).toBeGreaterThanOrEqual(3);
    expect(res.body.by_status).toMatchObject({ allowed: 1, blocked: 1, pending_review: 2 });
    const agents = Object.fromEntries(res.body.violations_by_agent.map((a: { agent_id: string | null; actions: number }) => [a.agent_id, a.actions]));
    expect(agents).toEqual({ 'billing-agent': 2, 'chatty-agent': 1 });
    const policies = res.body.violations_by_policy.map((p: { policy: string }) => p.policy);
    expect(policies.length).toBeGreaterThanOrEqual(2);
    expect(res.body.series).toHaveLength(25);
    const byStart = Object.fromEntries(res.body.series.map((s: { bucket_start: string; actions: number }) => [s.bucket_start, s.actions]));
    expect(byStart[new Date(start).toISOString()]).toBe(2);
    expect(byStart[new Date(start + HOUR).toISOString()]).toBe(0);
    expect(byStart[new Date(start + 2 * HOUR).toISOString()]).toBe(2);

    const week = await h.call(t, 'GET', '/v1/control/dashboard?window=7d');
    expect(week.body).toMatchObject({ bucket: 'day', totals: { actions: 4 } });
    expect(week.body.series).toHaveLength(8);
    expect((await h.call(t, 'GET', '/v1/control/dashboard?window=30d&bucket=hour')).body.series).toHaveLength(721);
    for (const q of ['window=1y', 'bucket=minute']) expect((await h.call(t, 'GET', `/v1/control/dashboard?${q}`)).status, q).toBe(400);
    const free = await engine.newTenant('free');
    const refused = await h.call(free, 'GET', '/v1/control/dashboard');
    expect([refused.status, errorOf(refused).code, errorOf(refused).required_tier]).toEqual([403, 'FEATURE_NOT_AVAILABLE', 'starter']);
  });
});

describe("an agent's violations", () => {
  it('lists actions with violations in the period, newest first; a bad since or until names the field', async () => {
    const t = await engine.newTenant('free');
    const first = (await h.submit(t, { ...PAYLOADS.pending, agent_id: 'billing-agent' })).body.action_id;
    engine.clock.advance(HOUR);
    await h.submit(t, { ...PAYLOADS.allowed, agent_id: 'billing-agent' });
    const second = (await h.submit(t, { ...PAYLOADS.blocked, agent_id: 'billing-agent' })).body.action_id;
    await h.submit(t, { ...PAYLOADS.pending, agent_id: 'other-agent' });
    const res = await h.call(t, 'GET', '/v1/control/agents/billing-agent/violations');
    expect(res.status, res.text).toBe(200);
    expect(res.body.actions.map((a: { action_id: string }) => a.action_id)).toEqual([second, first]);
    expect(res.body).toMatchObject({ agent_id: 'billing-agent', total: 2, violation_count: 2, until: engine.clock.now().toISOString() });
    expect(res.body.actions[0]).toMatchObject({ status: 'blocked', outcome: 'blocked', violations: [{ on_violation: 'block' }] });
    const since = new Date(engine.clock.now().getTime() - 30 * 60_000).toISOString();
    expect((await h.call(t, 'GET', `/v1/control/agents/billing-agent/violations?since=${since}`)).body.total).toBe(1);
    expect((await h.call(t, 'GET', '/v1/control/agents/nobody/violations')).body.total).toBe(0);
    for (const [query, field] of [
      ['since=yesterday', 'since'],
      ['until=2026-13-01', 'until'],
      ['since=2026-11-20T00:00:00Z&until=2026-11-01T00:00:00Z', 'since'],
    ]) {
      const bad = await h.call(t, 'GET', `/v1/control/agents/billing-agent/violations?${query}`);
      expect([bad.status, errorOf(bad).code, errorOf(bad).field], query).toEqual([400, 'svc_ram.v1.control.invalid_violations_param', field]);
    }
    const other = await engine.newTenant('free');
    expect((await h.call(other, 'GET', '/v1/control/agents/billing-agent/violations')).body.total).toBe(0);
  });
});
