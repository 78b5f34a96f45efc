import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actionHelpers, PAYLOADS } from './actions-helpers';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';
import { SseReader } from './sse';

/**
 * Governed actions through the API: submission and its three outcomes,
 * the 403 BLOCKED body, shadow mode, the connector path form, polling and outcome reports, the
 * approval queue, decisions in solo, team and enterprise mode with their timing against the frozen
 * clock, expiry through maintenance, and the events webhooks and the live stream carry.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const h = actionHelpers(() => engine);
const SECOND = 1_000;
const MINUTE = 60 * SECOND;

async function auditOf(t: Tenant, actionId: string) {
  const res = await h.call(t, 'GET', '/v1/audit?limit=1000');
  expect(res.status, res.text).toBe(200);
  // Newest first on the wire; oldest first here.
  return (res.body.entries as { operation: string; resource_id: string | null; metadata: Record<string, unknown> }[])
    .filter((e) => e.resource_id === actionId)
    .reverse();
}

describe('submitting actions', () => {
  it('allows an action no policy objects to, with the policy result and a message', async () => {
    const t = await engine.newTenant('free');
    const res = await h.submit(t, { ...PAYLOADS.allowed, agent_id: 'standup-bot' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      action: 'slack.post_message',
      connector: 'slack',
      operation: 'post_message',
      agent_id: 'standup-bot',
      status: 'allowed',
      submitted_at: engine.clock.now().toISOString(),
      policy_result: { status: 'allowed', violations: null, warnings: [], evaluation_mode: 'enforcement' },
    });
    expect(res.body.action_id).toMatch(/^act_/);
    expect(res.body.policy_result.action_id).toBeUndefined();
    expect(res.body.policy_result.policies_evaluated.length).toBeGreaterThanOrEqual(2);
    expect(typeof res.body.message).toBe('string');
    const polled = await h.poll(t, res.body.action_id);
    expect(polled.body).toMatchObject({ action_id: res.body.action_id, status: 'allowed', agent_id: 'standup-bot', decided_at: null, approval_mode: null });
    expect((await auditOf(t, res.body.action_id)).map((e) => e.operation)).toEqual(['action.allowed']);
  });

  it('holds a large wire transfer for review: policy_result.action_id, the queue, action.pending_review', async () => {
    const t = await engine.newTenant('free');
    const res = await h.submit(t, { ...PAYLOADS.pending, agent_id: 'billing-agent' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'pending_review', connector: 'http', policy_result: { status: 'pending_review', action_id: res.body.action_id } });
    expect(res.body.policy_result.triggered_policy).toBeTruthy();
    expect(res.body.policy_result.risk_score).toBeGreaterThan(0);
    expect(res.body.policy_result.violations?.length).toBeGreaterThan(0);
    expect(res.body.message).toContain(`/v1/actions/${res.body.action_id}`);
    const polled = await h.poll(t, res.body.action_id);
    expect(polled.body).toMatchObject({ status: 'pending_review', approval_mode: 'solo', decided_at: null });
    const queue = await h.call(t, 'GET', '/v1/approvals');
    expect(queue.body).toMatchObject({
      total: 1,
      approvals: [
        {
          approval_id: res.body.action_id,
          action: 'http.post',
          connector: 'http',
          agent_id: 'billing-agent',
          status: 'pending_review',
          submitted_at: res.body.submitted_at,
        },
      ],
    });
    expect((await auditOf(t, res.body.action_id)).map((e) => e.operation)).toEqual(['action.pending_review']);
  });

  it('blocks a private key: 403 with code BLOCKED and the whole action body, recorded and audited', async () => {
    const t = await engine.newTenant('free');
    const res = await h.submit(t, { ...PAYLOADS.blocked, agent_id: 'chatty-agent' });
    expect(res.status, res.text).toBe(403);
    expect(res.body).toMatchObject({
      code: 'BLOCKED',
      status: 'blocked',
      action: 'slack.post_message',
      agent_id: 'chatty-agent',
      policy_result: { status: 'blocked' },
    });
    expect(errorOf(res).error).toBe(errorOf(res).message);
    expect(errorOf(res).request_id).toMatch(/^req_/);
    expect(res.body.action_id).toMatch(/^act_/);
    expect(res.body.policy_result.triggered_policy).toBeTruthy();
    expect((await h.poll(t, res.body.action_id)).body.status).toBe('blocked');
    expect((await auditOf(t, res.body.action_id)).map((e) => e.operation)).toEqual(['action.blocked']);
    // Never pending: not an approval.
    expect(errorOf(await h.decide(t, res.body.action_id)).code).toBe('svc_ram.v1.control.approval_not_found');
    expect((await h.call(t, 'GET', '/v1/approvals')).body.total).toBe(0);
  });

  it('shadow mode evaluates and records but never blocks or holds', async () => {
    const t = await engine.newTenant('free');
    expect((await h.settings(t, { evaluation_mode: 'shadow' })).status).toBe(200);
    const blocked = await h.submit(t, PAYLOADS.blocked);
    expect(blocked.status, blocked.text).toBe(200);
    expect(blocked.body).toMatchObject({ status: 'allowed', policy_result: { status: 'allowed', shadow_status: 'blocked', evaluation_mode: 'shadow' } });
    expect(blocked.body.message).toMatch(/shadow/);
    const held = await h.submit(t, PAYLOADS.pending);
    expect(held.body).toMatchObject({ status: 'allowed', policy_result: { shadow_status: 'pending_review' } });
    expect(held.body.policy_result.violations?.length).toBeGreaterThan(0);
    expect((await h.call(t, 'GET', '/v1/approvals')).body.total).toBe(0);
    const trail = await auditOf(t, blocked.body.action_id);
    expect(trail).toMatchObject([{ operation: 'action.allowed', metadata: { outcome: 'blocked', evaluation_mode: 'shadow' } }]);
    expect((await h.call(t, 'POST', `/v1/actions/${held.body.action_id}/result`, { status: 'executed' })).body.status).toBe('executed');
  });

  it('takes an action name whose first segment is no known connector, with connector null', async () => {
    const t = await engine.newTenant('free');
    const res = await h.submit(t, { action: 'stripe.refunds.create', params: { charge: 'ch_1' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ connector: null, operation: 'refunds.create', agent_id: null, status: 'allowed' });
  });

  it("a registered runtime agent acts only through its capability packs; the tool's risk level feeds the risk score", async () => {
    const t = await engine.newTenant('free');
    const made = async (path: string, body: Record<string, unknown>) => {
      const res = await h.call(t, 'POST', path, body);
      expect(res.status, res.text).toBe(201);
    };
    await made('/v1/capabilities', {
      name: 'triage',
      tools: [
        { name: 'github.create_issue', description: 'Open an issue' },
        { name: 'slack', description: 'Any Slack action' },
      ],
      risk_levels: { 'github.create_issue': 'high' },
    });
    await made('/v1/agents', { agent_id: 'triager', name: 'Triager', provider: 'openai', model: 'gpt-4o', capabilities: ['triage'] });
    const issue = { action: 'github.create_issue', params: { title: 'Flaky test' } };

    const byTool = await h.submit(t, { ...issue, agent_id: 'triager' });
    expect(byTool.status, byTool.text).toBe(200);
    expect(byTool.body.policy_result).toMatchObject({
      status: 'allowed',
      risk_score: 0.375,
      policies_evaluated: expect.arrayContaining(['AgentCapabilities']),
    });
    const byConnector = await h.submit(t, { ...PAYLOADS.allowed, agent_id: 'triager' });
    expect([byConnector.status, byConnector.body.policy_result.risk_score]).toEqual([200, 0]);

    const outside = await h.submit(t, { action: 'github.delete_repo', params: { repo: 'engram' }, agent_id: 'triager' });
    expect(outside.status, outside.text).toBe(403);
    expect(outside.body).toMatchObject({
      code: 'BLOCKED',
      status: 'blocked',
      policy_result: { triggered_policy: 'AgentCapabilities', severity: 'critical', risk_score: 1 },
    });
    expect(outside.body.policy_result.reason).toBe('Agent triager has no capability pack with a tool for github.delete_repo or github');

    const unregistered = await h.submit(t, { action: 'github.delete_repo', params: { repo: 'engram' }, agent_id: 'someone-else' });
    expect(unregistered.body.status).toBe('allowed');

    expect((await h.call(t, 'PATCH', '/v1/agents/triager', { status: 'paused' })).status).toBe(200);
    const paused = await h.submit(t, { ...issue, agent_id: 'triager' });
    expect([paused.status, paused.body.policy_result.reason]).toEqual([403, 'Agent triager is paused']);
  });

  it('answers 400 to bad submissions', async () => {
    const t = await engine.newTenant('free');
    const bad: unknown[] = [
      {},
      { action: '' },
      { action: 'nodot' },
      { action: 'github.' },
      { action: '.create_issue' },
      { action: 'github.create issue' },
      { action: 'github.create_issue', params: ['a'] },
      { action: 'github.create_issue', params: 'text' },
      { action: 'github.create_issue', params: { blob: 'x'.repeat(64 * 1024) } },
      { action: 'github.create_issue', agent_id: '' },
      { action: 'github.create_issue', agent_id: 'x'.repeat(129) },
    ];
    for (const body of bad) {
      const res = await h.submit(t, body as Record<string, unknown>);
      expect([res.status, errorOf(res).code], JSON.stringify(body).slice(0, 80)).toEqual([400, 'VALIDATION_ERROR']);
    }
    // 64 KB of params is fine (the shared metadata cap of 16 KB does not apply).
    expect((await h.submit(t, { action: 'github.create_issue', params: { blob: 'x'.repeat(40 * 1024) } })).status).toBe(200);
  });

  it('the connector path form takes the body as params and the agent from the query or X-Agent-Id', async () => {
    const t = await engine.newTenant('free');
    const res = await h.call(t, 'POST', '/v1/actions/slack/post_message?agent_id=standup-bot', PAYLOADS.allowed.params);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ action: 'slack.post_message', connector: 'slack', operation: 'post_message', agent_id: 'standup-bot', status: 'allowed' });
    const byHeader = await h.call(t, 'POST', '/v1/actions/http/post', PAYLOADS.pending.params, { 'x-agent-id': 'billing-agent' });
    expect(byHeader.body).toMatchObject({ action: 'http.post', agent_id: 'billing-agent', status: 'pending_review' });
    const deep = await h.call(t, 'POST', '/v1/actions/github/repos/create_issue', { title: 'x' });
    expect(deep.body).toMatchObject({ action: 'github.repos.create_issue', operation: 'repos.create_issue', agent_id: null });
    const blocked = await h.call(t, 'POST', '/v1/actions/slack/post_message', PAYLOADS.blocked.params);
    expect([blocked.status, errorOf(blocked).code, errorOf(blocked).status]).toEqual([403, 'BLOCKED', 'blocked']);
    // An operation literally named "result" is still an action, and results still reach their route.
    // (Sent past the test client: its conformance check reads this path as the result route's.)
    const named = await engine.app.request('/v1/actions/github/result', {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(((await named.json()) as { action: string }).action).toBe('github.result');
    expect((await h.call(t, 'POST', `/v1/actions/${res.body.action_id}/result`, { status: 'executed' })).body.status).toBe('executed');

    const disagree = await h.call(t, 'POST', '/v1/actions/slack/post_message?agent_id=a', { text: 'hi' }, { 'x-agent-id': 'b' });
    expect([disagree.status, errorOf(disagree).code]).toEqual([400, 'VALIDATION_ERROR']);
    expect((await h.call(t, 'POST', '/v1/actions/slack/post_message', ['not', 'an', 'object'])).status).toBe(400);
    expect((await h.call(t, 'POST', '/v1/actions/slack/post%20message', { a: 1 })).status).toBe(400);
    expect((await h.call(t, 'POST', '/v1/actions/slack/post_message', { blob: 'x'.repeat(65 * 1024) })).status).toBe(400);
    const text = await engine.request('POST', '/v1/actions/slack/post_message', { key: t.key, raw: 'hello', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
    expect((await engine.request('POST', '/v1/actions/slack/post_message', { body: { a: 1 } })).status).toBe(401);
    // Unknown connectors have no path form.
    expect((await h.call(t, 'POST', '/v1/actions/stripe/refund', { a: 1 })).status).toBe(404);
  });

  it('replays an idempotent submission instead of recording it twice', async () => {
    const t = await engine.newTenant('free');
    const headers = { 'idempotency-key': 'submit-wire-1' };
    const first = await h.submit(t, PAYLOADS.pending, headers);
    const again = await h.submit(t, PAYLOADS.pending, headers);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.action_id).toBe(first.body.action_id);
    const blockedHeaders = { 'idempotency-key': 'submit-key-1' };
    const b1 = await h.submit(t, PAYLOADS.blocked, blockedHeaders);
    const b2 = await h.submit(t, PAYLOADS.blocked, blockedHeaders);
    expect([b2.status, b2.body.action_id]).toEqual([403, b1.body.action_id]);
    expect((await h.call(t, 'GET', '/v1/approvals')).body.total).toBe(1);
    expect((await h.submit(t, PAYLOADS.allowed, headers)).status).toBe(422);
  });

  it('matches rules against decoded values: a newline inside a value is whitespace to \\s', async () => {
    const t = await engine.newTenant('free');
    const res = await h.submit(t, { action: 'db.query', params: { sql: 'SELECT *\nFROM customers' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      status: 'pending_review',
      policy_result: { triggered_policy: 'DataExfiltrationPolicy', violations: [{ match: 'SELECT *\nFROM', field: '$.params.sql' }] },
    });
  });
});

describe('the evaluation budget', () => {
  /** Two policies of 100 rules with no literal for the prefilter: each rule scans the whole action. */
  async function heavyTenant() {
    const t = await engine.newTenant('pro');
    for (const p of [0, 1]) {
      const rules = Array.from({ length: 100 }, (_, i) => ({ match: String.raw`\d{${p * 100 + i + 3}}[xyz]`, severity: 'critical' }));
      const res = await h.call(t, 'POST', '/v1/control/policies', { name: `Heavy${p}`, rules });
      expect(res.status, res.text).toBe(201);
    }
    return t;
  }
  /** About 60 KB of params, under the route's 64 KB. */
  const big = { action: 'http.post', params: { text: 'lorem ipsum dolor sit amet '.repeat(2_200) } };

  it('holds an action whose evaluation exceeds the budget for review, saying so; never allows it', async () => {
    const t = await heavyTenant();
    const res = await h.submit(t, big);
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe('pending_review');
    expect(res.body.policy_result.reason).toMatch(/^Policy evaluation budget exceeded: /);
    expect(res.body.policy_result.action_id).toBe(res.body.action_id);
    expect((await h.poll(t, res.body.action_id)).body).toMatchObject({
      status: 'pending_review',
      reason: expect.stringMatching(/^Policy evaluation budget exceeded/),
    });
    // The same action, small, runs every rule and is allowed.
    expect((await h.submit(t, { action: 'http.post', params: { text: 'lorem ipsum' } })).body.status).toBe('allowed');
  });

  it("another tenant's requests complete while a heavy evaluation is under way", async () => {
    const t = await heavyTenant();
    const other = await engine.newTenant('free');
    let finished = false;
    const heavy = h.submit(t, big).then((res) => {
      finished = true;
      return res;
    });
    let during = 0;
    while (!finished) {
      const usage = await h.call(other, 'GET', '/v1/usage');
      expect(usage.status).toBe(200);
      if (!finished) during += 1;
    }
    expect(during).toBeGreaterThanOrEqual(5);
    expect((await heavy).body.status).toBe('pending_review');
  });
});

describe('polling and outcomes', () => {
  it('an approved action reports executed once; results from other states are 409', async () => {
    const t = await engine.newTenant('free');
    const id = await h.pending(t, PAYLOADS.pendingPlain);
    const early = await h.call(t, 'POST', `/v1/actions/${id}/result`, { status: 'executed' });
    expect([early.status, errorOf(early).code, errorOf(early).action_status]).toEqual([409, 'CONFLICT', 'pending_review']);
    engine.clock.advance(6 * SECOND);
    expect((await h.decide(t, id, { reason: 'ok' })).body.status).toBe('approved');
    const polled = await h.poll(t, id);
    expect(polled.body).toMatchObject({ status: 'approved', reason: 'ok', decided_at: engine.clock.now().toISOString() });
    const done = await h.call(t, 'POST', `/v1/actions/${id}/result`, { status: 'executed', detail: { transfer_id: 'tr_1' } });
    expect(done.body).toMatchObject({ status: 'executed', result_detail: { transfer_id: 'tr_1' } });
    expect((await h.call(t, 'POST', `/v1/actions/${id}/result`, { status: 'failed' })).status).toBe(409);
    expect((await auditOf(t, id)).map((e) => e.operation)).toEqual(['action.pending_review', 'action.approved', 'action.executed']);
    const allowed = (await h.submit(t, PAYLOADS.allowed)).body.action_id;
    expect((await h.call(t, 'POST', `/v1/actions/${allowed}/result`, { status: 'failed', detail: 'slack was down' })).body).toMatchObject({
      status: 'failed',
      result_detail: 'slack was down',
    });
    const blocked = (await h.submit(t, PAYLOADS.blocked)).body.action_id;
    expect(errorOf(await h.call(t, 'POST', `/v1/actions/${blocked}/result`, { status: 'executed' })).action_status).toBe('blocked');
    expect((await h.call(t, 'POST', `/v1/actions/${allowed}/result`, { status: 'done' })).status).toBe(400);
  });

  it("another tenant's action is 404 to poll and report, as an unknown one", async () => {
    const [a, b] = [await engine.newTenant('free'), await engine.newTenant('free')];
    const id = await h.pending(a);
    expect((await h.poll(b, id)).status).toBe(404);
    expect((await h.poll(b, 'act_0000000000000000000000')).status).toBe(404);
    expect((await h.call(b, 'POST', `/v1/actions/${id}/result`, { status: 'executed' })).status).toBe(404);
    expect((await h.poll(a, 'not-an-id')).status).toBe(404);
  });
});

describe('the approval queue', () => {
  it('lists the latest state per approval in audit order, with status and status_filter', async () => {
    const t = await engine.newTenant('free');
    const a = await h.pending(t, PAYLOADS.pendingPlain);
    const b = await h.pending(t, PAYLOADS.pendingPlain);
    const c = await h.pending(t, PAYLOADS.pendingPlain);
    await h.submit(t, PAYLOADS.allowed);
    engine.clock.advance(6 * SECOND);
    // Deciding `a` makes it the latest event: it moves to the end, whatever its submission time.
    expect((await h.decide(t, a, { decision: 'deny' })).body.status).toBe('denied');
    const all = await h.call(t, 'GET', '/v1/approvals');
    expect(all.body.approvals.map((x: { approval_id: string }) => x.approval_id)).toEqual([b, c, a]);
    expect(all.body).toMatchObject({ total: 3, limit: 50, offset: 0, has_more: false });
    expect(all.body.approvals[2]).toMatchObject({
      status: 'denied',
      decided_at: engine.clock.now().toISOString(),
      approval_mode: 'solo',
      risk_score: expect.any(Number),
    });
    const pendingOnly = await h.call(t, 'GET', '/v1/approvals?status=pending_review');
    expect(pendingOnly.body.approvals.map((x: { approval_id: string }) => x.approval_id)).toEqual([b, c]);
    const denied = await h.call(t, 'GET', '/v1/approvals?status_filter=denied');
    expect(denied.body.approvals.map((x: { approval_id: string }) => x.approval_id)).toEqual([a]);
    expect((await h.call(t, 'GET', '/v1/approvals?status=denied&status_filter=denied')).body.total).toBe(1);
    expect((await h.call(t, 'GET', '/v1/approvals?limit=1')).body).toMatchObject({ total: 3, has_more: true, approvals: [{ approval_id: b }] });
    for (const q of ['limit=0', 'limit=501', 'status=maybe', 'status_filter=blocked', 'status=denied&status_filter=approved']) {
      expect((await h.call(t, 'GET', `/v1/approvals?${q}`)).status, q).toBe(400);
    }
    const other = await engine.newTenant('free');
    expect((await h.call(other, 'GET', '/v1/approvals')).body.total).toBe(0);
  });
});

describe('decisions (solo mode, the default)', () => {
  it('refuses a decision 2 s after submission (409 CONFLICT with retry_after) and takes one at 6 s', async () => {
    const t = await engine.newTenant('free');
    const id = await h.pending(t, PAYLOADS.pendingPlain);
    engine.clock.advance(2 * SECOND);
    const early = await h.decide(t, id);
    expect([early.status, errorOf(early).code, errorOf(early).retry_after]).toEqual([409, 'CONFLICT', 3]);
    expect(errorOf(early).message).toMatch(/; retry after 3 seconds$/); // the number, never a field name
    expect(early.headers.get('retry-after')).toBe('3');
    engine.clock.advance(4 * SECOND);
    const ok = await h.decide(t, id, { reason: 'expected invoice run' });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({
      approval_id: id,
      decision: 'approve',
      reason: 'expected invoice run',
      status: 'approved',
      approver_id: t.email,
      approvals: 1,
      approvals_required: 1,
    });
  });

  it('approving a destructive action needs confirmation ROLLBACK (400 VALIDATION_ERROR without); denying does not', async () => {
    const t = await engine.newTenant('free');
    const id = await h.pending(t); // a wire transfer: "transfer" makes it destructive
    engine.clock.advance(6 * SECOND);
    const without = await h.decide(t, id);
    expect([without.status, errorOf(without).code]).toEqual([400, 'VALIDATION_ERROR']);
    expect(errorOf(without).details?.[0].path).toBe('confirmation');
    expect((await h.decide(t, id, { confirmation: 'rollback' })).status).toBe(400);
    expect((await h.decide(t, id, { confirmation: 'ROLLBACK' })).body.status).toBe('approved');

    const other = await h.pending(t);
    engine.clock.advance(6 * SECOND);
    expect((await h.decide(t, other, { decision: 'deny' })).body.status).toBe('denied');
  });

  it('decisions are immutable: a second one is 409 approval_already_decided', async () => {
    const t = await engine.newTenant('free');
    const id = await h.pending(t, PAYLOADS.pendingPlain);
    engine.clock.advance(6 * SECOND);
    expect((await h.decide(t, id, { decision: 'deny', reason: 'not today' })).body).toMatchObject({ status: 'denied', reason: 'not today' });
    for (const decision of ['approve', 'deny']) {
      const again = await h.decide(t, id, { decision });
      expect([again.status, errorOf(again).code], decision).toEqual([409, 'svc_ram.v1.control.approval_already_decided']);
    }
    expect((await h.poll(t, id)).body).toMatchObject({ status: 'denied', reason: 'not today' });
  });

  it("decision: maybe is 400 control.invalid_decision; unknown, never-pending and other tenants' ids are 404", async () => {
    const [t, other] = [await engine.newTenant('free'), await engine.newTenant('free')];
    const id = await h.pending(t, PAYLOADS.pendingPlain);
    engine.clock.advance(6 * SECOND);
    const maybe = await h.decide(t, id, { decision: 'maybe' });
    expect([maybe.status, errorOf(maybe).code, errorOf(maybe).alias]).toEqual([400, 'control.invalid_decision', 'svc_ram.v1.control.invalid_decision']);
    expect(errorOf(await h.decide(t, id, undefined, '?decision=maybe')).code).toBe('control.invalid_decision');
    for (const decision of [5, true, null, '', 'x'.repeat(500)]) {
      const odd = await h.decide(t, id, { decision });
      expect([odd.status, errorOf(odd).code], JSON.stringify(decision).slice(0, 20)).toEqual([400, 'control.invalid_decision']);
    }
    const unknown = await h.decide(t, 'act_0000000000000000000000');
    expect([unknown.status, errorOf(unknown).code]).toEqual([404, 'svc_ram.v1.control.approval_not_found']);
    const allowed = (await h.submit(t, PAYLOADS.allowed)).body.action_id;
    expect(errorOf(await h.decide(t, allowed)).code).toBe('svc_ram.v1.control.approval_not_found');
    const foreign = await h.decide(other, id);
    expect([foreign.status, errorOf(foreign).code]).toEqual([404, 'svc_ram.v1.control.approval_not_found']);
    expect((await h.poll(t, id)).body.status).toBe('pending_review');
    // Case and surrounding spaces do not matter.
    expect((await h.decide(t, id, { decision: ' Deny ' })).body).toMatchObject({ status: 'denied', decision: 'deny' });
  });

  it('takes the decision from query parameters; a body field wins over the same query parameter', async () => {
    const t = await engine.newTenant('free');
    const a = await h.pending(t, PAYLOADS.pendingPlain);
    const b = await h.pending(t, PAYLOADS.pendingPlain);
    engine.clock.advance(6 * SECOND);
    const byQuery = await h.decide(t, a, undefined, '?decision=deny&reason=by%20query&approver_id=ops%40example.com');
    expect(byQuery.body).toMatchObject({ status: 'denied', decision: 'deny', reason: 'by query', approver_id: 'ops@example.com' });
    const mixed = await h.decide(t, b, { decision: 'approve' }, '?decision=deny&reason=from%20query');
    expect(mixed.body).toMatchObject({ status: 'approved', decision: 'approve', reason: 'from query' });
    // A client that sends Content-Type: application/json on every request, with no body or an empty one.
    for (const raw of [undefined, '', '  ']) {
      const c = await h.pending(t, PAYLOADS.pendingPlain);
      engine.clock.advance(6 * SECOND);
      const res = await engine.request('POST', `/v1/approvals/${c}/decision?decision=deny`, {
        key: t.key,
        raw,
        headers: { 'content-type': 'application/json' },
      });
      expect([res.status, res.body.status], res.text).toEqual([200, 'denied']);
    }
    const broken = await engine.request('POST', `/v1/approvals/${b}/decision`, {
      key: t.key,
      raw: '{"decision":',
      headers: { 'content-type': 'application/json' },
    });
    expect([broken.status, errorOf(broken).code]).toEqual([400, 'VALIDATION_ERROR']);
  });

  it('concurrent decisions on one action: exactly one wins, the others are 409', async () => {
    const t = await engine.newTenant('free');
    const id = await h.pending(t, PAYLOADS.pendingPlain);
    engine.clock.advance(6 * SECOND);
    const results = await Promise.all(['approve', 'deny', 'approve', 'deny', 'approve'].map((decision) => h.decide(t, id, { decision })));
    const won = results.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    expect(results.filter((r) => r.status === 409).every((r) => errorOf(r).code === 'svc_ram.v1.control.approval_already_decided')).toBe(true);
    expect((await h.poll(t, id)).body.status).toBe(won[0].body.status);
    expect((await auditOf(t, id)).filter((e) => e.operation !== 'action.pending_review')).toHaveLength(1);
  });
});

describe('settings', () => {
  it('defaults, partial updates, tier checks per mode, bounds, audit', async () => {
    const free = await engine.newTenant('free');
    const got = await h.call(free, 'GET', '/v1/control/settings');
    expect(got.body).toEqual({
      approval_mode: 'solo',
      evaluation_mode: 'enforcement',
      min_approvals: 2,
      require_manager: false,
      allowed_roles: [],
      memory_guard: false,
      effective_approval_mode: 'solo',
      approval_mode_unavailable: null,
      updated_at: null,
    });
    // The control plane's code, the same POST /v1/actions answers for the same missing feature.
    const team = await h.settings(free, { approval_mode: 'team' });
    expect([team.status, errorOf(team).code, errorOf(team).feature, errorOf(team).required_tier, errorOf(team).current_tier]).toEqual([
      403,
      'svc_ram.v1.tier.feature_required',
      'team_approvals',
      'starter',
      'free',
    ]);
    const starter = await engine.newTenant('starter');
    expect((await h.settings(starter, { approval_mode: 'team' })).body).toMatchObject({
      approval_mode: 'team',
      effective_approval_mode: 'team',
      updated_at: engine.clock.now().toISOString(),
    });
    const ent = await h.settings(starter, { approval_mode: 'enterprise' });
    expect([ent.status, errorOf(ent).code, errorOf(ent).feature, errorOf(ent).required_tier]).toEqual([
      403,
      'svc_ram.v1.tier.feature_required',
      'enterprise_approvals',
      'enterprise',
    ]);
    const enterprise = await engine.newTenant('enterprise');
    const set = await h.settings(enterprise, { approval_mode: 'enterprise', min_approvals: 3, require_manager: true, allowed_roles: ['owner', 'admin'] });
    expect(set.body).toMatchObject({
      approval_mode: 'enterprise',
      min_approvals: 3,
      require_manager: true,
      allowed_roles: ['owner', 'admin'],
      evaluation_mode: 'enforcement',
    });
    expect((await h.settings(enterprise, { evaluation_mode: 'shadow' })).body).toMatchObject({
      approval_mode: 'enterprise',
      min_approvals: 3,
      evaluation_mode: 'shadow',
    });
    for (const body of [
      { min_approvals: 0 },
      { min_approvals: 11 },
      { min_approvals: 1.5 },
      { allowed_roles: ['readonly'] },
      { allowed_roles: ['boss'] },
      { approval_mode: 'anarchy' },
      { evaluation_mode: 'off' },
    ]) {
      expect((await h.settings(enterprise, body)).status, JSON.stringify(body)).toBe(400);
    }
    const audit = await h.call(enterprise, 'GET', '/v1/audit?limit=100');
    expect(audit.body.entries.filter((e: { operation: string }) => e.operation === 'control.settings_updated')).toHaveLength(2);
  });

  it('a tenant downgraded below its approval mode is refused 403 feature_required when an action needs review, not decided in solo', async () => {
    for (const [tier, mode, lower, feature, required] of [
      ['starter', 'team', 'free', 'team_approvals', 'starter'],
      ['enterprise', 'enterprise', 'pro', 'enterprise_approvals', 'enterprise'],
    ] as const) {
      const t = await engine.newTenant(tier);
      expect((await h.settings(t, { approval_mode: mode })).status).toBe(200);
      expect((await engine.admin('PATCH', `/admin/v1/tenants/${t.tenantId}`, { tier: lower })).status).toBe(200);
      const held = await h.submit(t, PAYLOADS.pending);
      expect([held.status, errorOf(held).code, errorOf(held).feature, errorOf(held).required_tier, errorOf(held).current_tier]).toEqual([
        403,
        'svc_ram.v1.tier.feature_required',
        feature,
        required,
        lower,
      ]);
      // The settings tell the same story: the chosen mode is still in force, and it is refused.
      const settings = await h.call(t, 'GET', '/v1/control/settings');
      expect(settings.body).toMatchObject({
        approval_mode: mode,
        effective_approval_mode: mode,
        approval_mode_unavailable: { code: errorOf(held).code, feature, required_tier: required, current_tier: lower },
      });
      // The same code on the control plane's other route for the same feature.
      const again = await h.settings(t, { approval_mode: mode });
      expect([again.status, errorOf(again).code, errorOf(again).feature]).toEqual([403, errorOf(held).code, feature]);
      // Nothing was recorded; an action no rule holds is still allowed.
      expect((await h.call(t, 'GET', '/v1/approvals')).body.total).toBe(0);
      expect((await h.submit(t, PAYLOADS.allowed)).body.status).toBe('allowed');
      // Choosing solo lifts the refusal.
      expect((await h.settings(t, { approval_mode: 'solo' })).body).toMatchObject({ effective_approval_mode: 'solo', approval_mode_unavailable: null });
      expect((await h.submit(t, PAYLOADS.pending)).body.status).toBe('pending_review');
    }
  });
});

describe('team mode', () => {
  async function teamSetup() {
    const [owner, member, readonly, outsider] = await Promise.all(['pro', 'pro', 'pro', 'pro'].map(() => engine.newTenant('pro')));
    await h.team(owner, [
      [member, 'member'],
      [readonly, 'readonly'],
    ]);
    expect((await h.settings(owner, { approval_mode: 'team' })).status).toBe(200);
    return { owner, member, readonly, outsider };
  }

  it('the submitter self-approves only after 10 minutes: 409 at 9 min, approved at 11 min', async () => {
    const { owner } = await teamSetup();
    const id = await h.pending(owner);
    expect((await h.poll(owner, id)).body.approval_mode).toBe('team');
    engine.clock.advance(9 * MINUTE);
    const early = await h.decide(owner, id);
    expect([early.status, errorOf(early).code, errorOf(early).retry_after]).toEqual([409, 'CONFLICT', 60]);
    engine.clock.advance(2 * MINUTE);
    expect((await h.decide(owner, id)).body).toMatchObject({ status: 'approved', approver_id: owner.email });
  });

  it('the submitter may deny at once', async () => {
    const { owner } = await teamSetup();
    const id = await h.pending(owner);
    expect((await h.decide(owner, id, { decision: 'deny' })).body.status).toBe('denied');
  });

  it('another member approves at once with their own key; readonly is refused; a non-member gets 404 as for an unknown id', async () => {
    const { owner, member, readonly, outsider } = await teamSetup();
    const id = await h.pending(owner);
    const ro = await h.decide(readonly, id);
    expect([ro.status, errorOf(ro).code]).toEqual([403, 'FORBIDDEN']);
    const stranger = await h.decide(outsider, id);
    const unknown = await h.decide(outsider, 'act_0000000000000000000000');
    expect([stranger.status, errorOf(stranger).code]).toEqual([unknown.status, errorOf(unknown).code]);
    expect(stranger.status).toBe(404);
    const ok = await h.decide(member, id, { reason: 'looks right' });
    expect(ok.body).toMatchObject({ status: 'approved', approver_id: member.email, reason: 'looks right' });
    // Recorded in the submitter's audit chain, naming who decided.
    const trail = await auditOf(owner, id);
    expect(trail.map((e) => e.operation)).toEqual(['action.pending_review', 'action.approved']);
    expect(trail[1].metadata).toMatchObject({ approver_tenant_id: member.tenantId, approver_role: 'member', approval_mode: 'team' });
    expect(errorOf(await h.decide(member, id)).code).toBe('svc_ram.v1.control.approval_already_decided');
    // Polling stays the submitter's: the member cannot read the action itself.
    expect((await h.poll(member, id)).status).toBe(404);
    // ...but finds it in its review queue, with what it approved.
    const review = await h.call(member, 'GET', '/v1/approvals?scope=team');
    expect(review.body).toMatchObject({
      total: 1,
      approvals: [{ approval_id: id, tenant_id: owner.tenantId, status: 'approved', params: PAYLOADS.pending.params }],
    });
    expect((await h.call(member, 'GET', '/v1/approvals?scope=team&status=pending_review')).body.total).toBe(0);
    expect((await h.call(member, 'GET', '/v1/approvals')).body.total).toBe(0);
    expect((await h.call(outsider, 'GET', '/v1/approvals?scope=team')).body.total).toBe(0);
    expect((await h.call(owner, 'GET', '/v1/approvals?scope=team')).body.total).toBe(0);
  });

  it('a solo-mode action of a team member is not decidable by the team', async () => {
    const [owner, member] = await Promise.all([engine.newTenant('pro'), engine.newTenant('pro')]);
    await h.team(owner, [[member, 'admin']]);
    const id = await h.pending(owner);
    expect((await h.decide(member, id)).status).toBe(404);
  });
});

describe('whose approval team a reviewer is in', () => {
  it("joining someone else's team as readonly puts none of one's actions before that team: neither listed nor decidable there", async () => {
    const [submitter, teamOwner, teammate, unrelated] = await Promise.all(['pro', 'pro', 'pro', 'pro'].map(() => engine.newTenant('pro')));
    await h.team(teamOwner, [
      [submitter, 'readonly'],
      [teammate, 'member'],
    ]);
    expect((await h.settings(submitter, { approval_mode: 'team' })).status).toBe(200);
    const id = await h.pending(submitter);
    const unknown = await h.decide(unrelated, 'act_0000000000000000000000');
    for (const reviewer of [teamOwner, teammate]) {
      expect((await h.call(reviewer, 'GET', '/v1/approvals?scope=team')).body.total).toBe(0);
      const tried = await h.decide(reviewer, id);
      expect([tried.status, errorOf(tried).code]).toEqual([unknown.status, errorOf(unknown).code]);
    }
    expect((await h.poll(submitter, id)).body.status).toBe('pending_review');
  });

  it('a submitter who is a member of the team has its actions listed and decided there, by the same rule', async () => {
    const [submitter, teamOwner, readonly] = await Promise.all(['pro', 'pro', 'pro'].map(() => engine.newTenant('pro')));
    await h.team(teamOwner, [
      [submitter, 'member'],
      [readonly, 'readonly'],
    ]);
    expect((await h.settings(submitter, { approval_mode: 'team' })).status).toBe(200);
    const id = await h.pending(submitter);
    expect((await h.call(teamOwner, 'GET', '/v1/approvals?scope=team')).body.approvals.map((a: { approval_id: string }) => a.approval_id)).toEqual([id]);
    expect((await h.decide(readonly, id)).status).toBe(403);
    expect((await h.decide(teamOwner, id)).body.status).toBe('approved');
  });
});

describe('enterprise mode', () => {
  async function enterpriseSetup(settings: Record<string, unknown> = {}) {
    const [owner, admin, member, member2, readonly] = await Promise.all(
      ['enterprise', 'pro', 'pro', 'pro', 'pro'].map((tier) => engine.newTenant(tier as 'pro')),
    );
    await h.team(owner, [
      [admin, 'admin'],
      [member, 'member'],
      [member2, 'member'],
      [readonly, 'readonly'],
    ]);
    expect((await h.settings(owner, { approval_mode: 'enterprise', ...settings })).status).toBe(200);
    return { owner, admin, member, member2, readonly };
  }

  it('approved once min_approvals distinct approvers agree; the same approver twice is 409', async () => {
    const { owner, member, member2 } = await enterpriseSetup();
    const id = await h.pending(owner);
    const first = await h.decide(member, id);
    expect(first.body).toMatchObject({ status: 'pending_review', approvals: 1, approvals_required: 2, decided_at: null });
    const twice = await h.decide(member, id);
    expect([twice.status, errorOf(twice).code]).toEqual([409, 'CONFLICT']);
    expect((await h.poll(owner, id)).body.status).toBe('pending_review');
    const second = await h.decide(member2, id);
    expect(second.body).toMatchObject({ status: 'approved', approvals: 2, approvals_required: 2 });
    expect((await auditOf(owner, id)).map((e) => e.operation)).toEqual(['action.pending_review', 'action.approval_recorded', 'action.approved']);
    expect(errorOf(await h.decide(owner, id)).code).toBe('svc_ram.v1.control.approval_already_decided');
  });

  it('one deny decides denied', async () => {
    const { owner, member, admin } = await enterpriseSetup();
    const id = await h.pending(owner);
    expect((await h.decide(member, id)).body.status).toBe('pending_review');
    expect((await h.decide(admin, id, { decision: 'deny', reason: 'vendor unknown' })).body).toMatchObject({ status: 'denied', reason: 'vendor unknown' });
    expect((await h.poll(owner, id)).body).toMatchObject({ status: 'denied', reason: 'vendor unknown' });
  });

  it('require_manager waits for an owner or admin; allowed_roles refuses other roles; readonly never decides', async () => {
    const { owner, admin, member, member2, readonly } = await enterpriseSetup({ require_manager: true });
    const id = await h.pending(owner);
    await h.decide(member, id);
    expect((await h.decide(member2, id)).body).toMatchObject({ status: 'pending_review', approvals: 2 });
    expect((await h.decide(readonly, id)).status).toBe(403);
    expect((await h.decide(admin, id)).body).toMatchObject({ status: 'approved', approvals: 3 });

    expect((await h.settings(owner, { require_manager: false, allowed_roles: ['admin'], min_approvals: 1 })).status).toBe(200);
    const next = await h.pending(owner);
    const refused = await h.decide(member, next);
    expect([refused.status, errorOf(refused).code]).toEqual([403, 'FORBIDDEN']);
    expect((await h.decide(admin, next)).body.status).toBe('approved');
  });
});

describe('require_manager', () => {
  it('is never met by the submitter itself, though it owns the team', async () => {
    const [owner, member, admin] = await Promise.all(['enterprise', 'pro', 'pro'].map((tier) => engine.newTenant(tier as 'pro')));
    await h.team(owner, [
      [member, 'member'],
      [admin, 'admin'],
    ]);
    expect((await h.settings(owner, { approval_mode: 'enterprise', min_approvals: 2, require_manager: true })).status).toBe(200);
    const id = await h.pending(owner);
    expect((await h.decide(member, id)).body).toMatchObject({ status: 'pending_review', approvals: 1 });
    expect((await h.decide(owner, id)).body).toMatchObject({ status: 'pending_review', approvals: 2 });
    expect((await h.decide(admin, id)).body).toMatchObject({ status: 'approved', approvals: 3 });
  });
});

describe('expiry', () => {
  it('a pending action older than ACTION_APPROVAL_TTL_HOURS is denied as expired by maintenance, audited, with action.decided', async () => {
    const t = await engine.newTenant('pro');
    const old = await h.pending(t, PAYLOADS.pendingPlain);
    const fresh = await h.pending(t, PAYLOADS.pendingPlain);
    // Backdated rather than moving the clock: on Postgres other suites' actions share the table.
    const submitted = new Date(engine.clock.now().getTime() - 73 * 3_600_000);
    await engine.node.services.db.execute(sql`UPDATE actions SET submitted_at = ${submitted.toISOString()} WHERE id = ${old}`);
    await engine.node.runner.maintain();
    expect((await h.poll(t, old)).body).toMatchObject({ status: 'denied', reason: 'expired', decided_at: engine.clock.now().toISOString() });
    expect((await h.poll(t, fresh)).body.status).toBe('pending_review');
    const trail = await auditOf(t, old);
    expect(trail.map((e) => e.operation)).toEqual(['action.pending_review', 'action.denied']);
    expect(trail[1].metadata).toMatchObject({ reason: 'expired' });
    const events = await h.call(t, 'GET', '/v1/events?types=action.decided');
    if (events.status === 200) expect(JSON.stringify(events.body)).toContain(old);
    expect(errorOf(await h.decide(t, old)).code).toBe('svc_ram.v1.control.approval_already_decided');
  });
});

describe('events', () => {
  it('action.pending_review and action.decided reach the live stream', async () => {
    const t = await engine.newTenant('pro');
    const res = await engine.app.request(
      new Request('http://localhost/v1/events/stream?types=action.pending_review,action.decided', { headers: { authorization: `Bearer ${t.key}` } }),
    );
    expect(res.status).toBe(200);
    const stream = new SseReader(res.body!);
    try {
      const id = await h.pending(t, PAYLOADS.pendingPlain);
      const [pending] = await stream.events(1);
      expect(pending.event).toBe('action.pending_review');
      expect(JSON.parse(pending.data!)).toMatchObject({
        type: 'action.pending_review',
        tenant_id: t.tenantId,
        data: { action_id: id, action: 'http.post', approval_mode: 'solo' },
      });
      engine.clock.advance(6 * SECOND);
      await h.decide(t, id, { reason: 'fine' });
      const [decided] = await stream.events(1);
      expect(JSON.parse(decided.data!)).toMatchObject({
        type: 'action.decided',
        data: { action_id: id, status: 'approved', decision: 'approve', reason: 'fine' },
      });
    } finally {
      await stream.close();
    }
  });

  it('a team member’s decision is delivered to the submitter’s webhooks', async () => {
    const [owner, member] = await Promise.all([engine.newTenant('pro'), engine.newTenant('pro')]);
    await h.team(owner, [[member, 'member']]);
    await h.settings(owner, { approval_mode: 'team' });
    const hook = await h.call(owner, 'POST', '/v1/webhooks', {
      url: 'https://hooks.example.com/approvals',
      events: ['action.pending_review', 'action.decided'],
    });
    expect(hook.status, hook.text).toBe(201);
    const id = await h.pending(owner);
    await h.decide(member, id);
    await engine.node.runner.drain();
    const deliveries = await h.call(owner, 'GET', `/v1/webhooks/${hook.body.webhook_id}/deliveries?limit=100`);
    expect(deliveries.status, deliveries.text).toBe(200);
    const types = deliveries.body.deliveries.map((d: { event_type?: string }) => d.event_type);
    expect(types.sort()).toEqual(['action.decided', 'action.pending_review']);
  });
});
