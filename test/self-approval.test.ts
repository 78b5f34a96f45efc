import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actionHelpers, PAYLOADS } from './actions-helpers';
import { signIn } from './console-session';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';

/**
 * An agent's key cannot approve its own actions nor turn enforcement off: deciding needs
 * `approvals:write`, settings need `settings:write` (an agent's `actions:write` grants neither), and
 * the key that submitted an action never decides it, through any way in (the API, runtime
 * interventions, the console) and in every approval mode. Each decision names its key.
 */
let engine: TestEngine;
const h = actionHelpers(() => engine);
const SOLO_WAIT = 6_000;

beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

/** A key of `t` with these scopes, as a tenant of its own for the helpers. */
async function keyWith(t: Tenant, scopes: string[], agentId?: string): Promise<Tenant> {
  const res = await engine.request('POST', '/v1/keys/restricted', { key: t.key, body: { name: scopes.join(' '), scopes, agent_id: agentId } });
  expect(res.status, res.text).toBe(201);
  return { ...t, key: res.body.api_key, keyId: res.body.key_id };
}

async function heldBy(submitter: Tenant, payload: Record<string, unknown> = PAYLOADS.pendingPlain) {
  const res = await h.call(submitter, 'POST', '/v1/actions', payload);
  expect(res.body.status, res.text).toBe('pending_review');
  return res.body.action_id as string;
}

const expectSelfRefusal = (res: { status: number; text: string }) => {
  expect(res.status, res.text).toBe(403);
  expect(errorOf(res as never).code).toBe('FORBIDDEN');
  expect(errorOf(res as never).message).toMatch(/key that submitted this action cannot decide it/);
};

describe("an agent's actions:write", () => {
  it('submits and reports results, but neither decides (approvals:write) nor changes settings (settings:write)', async () => {
    const t = await engine.newTenant('free');
    const agent = await keyWith(t, ['actions:write']);
    const id = await heldBy(agent);
    engine.clock.advance(SOLO_WAIT);
    for (const approver_id of [undefined, 'cfo@example.com']) {
      const decided = await h.decide(agent, id, { decision: 'approve', approver_id });
      expect(decided.status, decided.text).toBe(403);
      expect(decided.body).toMatchObject({ code: 'FORBIDDEN', required_scope: 'approvals:write' });
    }
    const shadow = await h.call(agent, 'PUT', '/v1/control/settings', { evaluation_mode: 'shadow' });
    expect(shadow.status, shadow.text).toBe(403);
    expect(shadow.body).toMatchObject({ code: 'FORBIDDEN', required_scope: 'settings:write' });
    expect((await h.call(t, 'GET', '/v1/control/settings')).body.evaluation_mode).toBe('enforcement');
    expect((await h.poll(t, id)).body.status).toBe('pending_review');

    // The new families are scopes a key can be minted with; a person's key with them decides and sets.
    const person = await keyWith(t, ['approvals:write', 'settings:write']);
    const decided = await h.decide(person, id, { decision: 'deny', approver_id: 'ops@example.com' });
    expect(decided.status, decided.text).toBe(200);
    expect(decided.body).toMatchObject({ status: 'denied', approver_id: 'ops@example.com', decided_by_key_id: person.keyId });
    expect((await h.call(person, 'GET', '/v1/approvals')).status).toBe(200);
    expect((await h.call(person, 'PUT', '/v1/control/settings', { evaluation_mode: 'shadow' })).status).toBe(200);
  });
});

describe('the key that submitted an action never decides it', () => {
  it('whatever its scopes: a restricted key with approvals:write, and an unrestricted key', async () => {
    const t = await engine.newTenant('free');
    const both = await keyWith(t, ['actions:write', 'approvals:write']);
    const byAgent = await heldBy(both);
    const byOwner = await heldBy(t);
    engine.clock.advance(SOLO_WAIT);
    expectSelfRefusal(await h.decide(both, byAgent, { decision: 'approve', approver_id: 'someone-else@example.com' }));
    expectSelfRefusal(await h.decide(t, byOwner, { decision: 'deny' }));
    expect((await h.poll(t, byAgent)).body.status).toBe('pending_review');

    // Another key decides each: the answer, explain and the audit entry name the deciding key.
    const approved = await h.decide(t, byAgent, { decision: 'approve', approver_id: 'cfo@example.com' });
    expect(approved.body).toMatchObject({ status: 'approved', approver_id: 'cfo@example.com', decided_by_key_id: t.keyId });
    expect((await h.decide(both, byOwner, { decision: 'deny' })).body).toMatchObject({ status: 'denied', decided_by_key_id: both.keyId });
    const explained = await h.call(t, 'GET', `/v1/actions/${byAgent}/explain`);
    expect(explained.body.approval?.decisions).toEqual([expect.objectContaining({ approver_id: 'cfo@example.com', decided_by_key_id: t.keyId })]);
    const audit = await h.call(t, 'GET', '/v1/audit?limit=100');
    const entry = (audit.body.entries as { operation: string; resource_id: string; metadata: Record<string, unknown> }[]).find(
      (e) => e.resource_id === byAgent && e.operation === 'action.approved',
    );
    expect(entry?.metadata).toMatchObject({ approver_id: 'cfo@example.com', decided_by_key_id: t.keyId });
  });

  it('nor through an approve or reject runtime intervention, which also needs approvals:write', async () => {
    const t = await engine.newTenant('pro');
    const agent = await keyWith(t, ['actions:write', 'runtime:write']);
    const id = await heldBy(agent);
    const mine = await heldBy(t);
    engine.clock.advance(SOLO_WAIT);
    const scoped = await h.call(agent, 'POST', '/v1/interventions', { intervention_type: 'approve', action_id: id });
    expect(scoped.status, scoped.text).toBe(403);
    expect(scoped.body).toMatchObject({ code: 'FORBIDDEN', required_scope: 'approvals:write' });
    expectSelfRefusal(await h.call(t, 'POST', '/v1/interventions', { intervention_type: 'reject', action_id: mine }));
    const other = await h.call(t, 'POST', '/v1/interventions', { intervention_type: 'approve', action_id: id });
    expect(other.status, other.text).toBe(201);
    expect((await h.poll(t, id)).body.status).toBe('approved');
  });

  it('in the console: a session of the submitting key is refused; a session of another unrestricted key decides', async () => {
    const t = await engine.newTenant('pro');
    const agent = await keyWith(t, ['actions:write']);
    const fetchApp = (req: Request) => engine.app.request(req);
    const byAgent = await heldBy(agent);
    const byOwner = await heldBy(t);
    engine.clock.advance(SOLO_WAIT);
    const person = await signIn(fetchApp, t.key);
    const own = await person.post(`/console/approvals/${byOwner}/decision`, { _csrf: person.csrf, decision: 'deny' }, { 'hx-request': 'true' });
    expect(await own.text()).toMatch(/key that submitted this action cannot decide it/);
    expect((await h.poll(t, byOwner)).body.status).toBe('pending_review');
    const decided = await person.post(`/console/approvals/${byAgent}/decision`, { _csrf: person.csrf, decision: 'deny' }, { 'hx-request': 'true' });
    expect(await decided.text()).toMatch(/Denied <code>[^<]+<\/code>: it will not run\./);
    expect((await h.poll(t, byAgent)).body.status).toBe('denied');
  });

  it('in enterprise mode, for each of the k decisions: the submitting key never counts, other keys of the account and teammates do', async () => {
    const [owner, member] = [await engine.newTenant('enterprise'), await engine.newTenant('enterprise')];
    await h.team(owner, [[member, 'member']]);
    expect((await h.settings(owner, { approval_mode: 'enterprise', min_approvals: 2 })).status).toBe(200);
    const agent = await keyWith(owner, ['actions:write', 'approvals:write']);
    const id = await heldBy(agent);
    expectSelfRefusal(await h.decide(agent, id, { decision: 'approve' }));
    expect((await h.decide(member, id, { decision: 'approve' })).body).toMatchObject({
      status: 'pending_review',
      approvals: 1,
      decided_by_key_id: member.keyId,
    });
    expectSelfRefusal(await h.decide(agent, id, { decision: 'approve' }));
    const second = await h.decide(owner, id, { decision: 'approve' });
    expect(second.body).toMatchObject({ status: 'approved', approvals: 2, decided_by_key_id: owner.keyId });
  });
});
