import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalsVerb } from '../functions/actions/verbs';
import { authenticate } from '../shared/platform/http/auth';
import { makeCtx, tenantCtx } from '../shared/platform/contract/context';
import { actionHelpers, PAYLOADS } from './actions-helpers';
import { signIn } from './console-session';
import { createEngine, type Tenant, type TestEngine } from './harness';

/**
 * The approvals inbox as `GET /v1/approvals` (actions.approvals) answers it, and the console's inbox
 * rendering that answer: how far each decision stands (k of n), the key that closed it, who sees an
 * action's params, and one decisions query for the whole page.
 */

let engine: TestEngine;
const h = actionHelpers(() => engine);
let owner: Tenant;
let member: Tenant;
let member2: Tenant;
let pendingId: string;
let approvedId: string;

beforeAll(async () => {
  engine = await createEngine();
  [owner, member, member2] = await Promise.all(['enterprise', 'pro', 'pro'].map((tier) => engine.newTenant(tier as 'pro')));
  await h.team(owner, [
    [member, 'member'],
    [member2, 'member'],
  ]);
  expect((await h.settings(owner, { approval_mode: 'enterprise' })).status).toBe(200);
  pendingId = await h.pending(owner);
  expect((await h.decide(member, pendingId)).body).toMatchObject({ status: 'pending_review', approvals: 1, approvals_required: 2 });
  approvedId = await h.pending(owner);
  await h.decide(member, approvedId);
  // Decisions are ordered by when they were taken: on the frozen clock, a second later.
  engine.clock.advance(1000);
  expect((await h.decide(member2, approvedId)).body.status).toBe('approved');
});
afterAll(() => engine.close());

const entryOf = (body: { approvals: { approval_id: string }[] }, id: string) => body.approvals.find((a) => a.approval_id === id);

describe('GET /v1/approvals', () => {
  it('says how far each decision stands: approvals of approvals_required, and the key that closed it', async () => {
    const { body } = await h.call(owner, 'GET', '/v1/approvals');
    expect(entryOf(body, pendingId)).toMatchObject({ status: 'pending_review', approvals: 1, approvals_required: 2, decided_by_key_id: null });
    expect(entryOf(body, approvedId)).toMatchObject({ status: 'approved', approvals: 2, approvals_required: 2, decided_by_key_id: member2.keyId });
    expect(entryOf(body, pendingId)).toMatchObject({ params: PAYLOADS.pending.params, policy_result: { status: 'pending_review' } });
  });

  it("an own entry's params and policy result need a key that may read actions; a team entry carries them", async () => {
    const mint = async (scopes: string[]) =>
      (await engine.request('POST', '/v1/keys/restricted', { key: owner.key, body: { name: 'reviewer', scopes } })).body.api_key as string;
    const approvalsOnly = (await engine.request('GET', '/v1/approvals', { key: await mint(['approvals:read']) })).body;
    expect(entryOf(approvalsOnly, pendingId)).toMatchObject({ approvals: 1, approvals_required: 2 });
    expect(entryOf(approvalsOnly, pendingId)).not.toHaveProperty('params');
    expect(entryOf(approvalsOnly, pendingId)).not.toHaveProperty('policy_result');
    const withActions = (await engine.request('GET', '/v1/approvals', { key: await mint(['approvals:read', 'actions:read']) })).body;
    expect(entryOf(withActions, pendingId)).toMatchObject({ params: PAYLOADS.pending.params });
    const team = (await h.call(member2, 'GET', '/v1/approvals?scope=team&status=pending_review')).body;
    expect(entryOf(team, pendingId)).toMatchObject({ tenant_id: owner.tenantId, params: PAYLOADS.pending.params, approvals: 1, approvals_required: 2 });
  });

  it('an action that expired after an approval names no deciding key', async () => {
    const id = await h.pending(owner);
    await h.decide(member, id);
    const submitted = new Date(engine.clock.now().getTime() - 73 * 3_600_000);
    await engine.node.services.db.execute(sql`UPDATE actions SET submitted_at = ${submitted.toISOString()} WHERE id = ${id}`);
    await engine.node.runner.maintain();
    const { body } = await h.call(owner, 'GET', `/v1/approvals?approval_id=${id}`);
    expect(body.approvals).toEqual([expect.objectContaining({ status: 'denied', reason: 'expired', approvals: 1, decided_by_key_id: null })]);
  });

  it('approval_id narrows the page to one approval of the scope', async () => {
    expect((await h.call(owner, 'GET', `/v1/approvals?approval_id=${pendingId}`)).body).toMatchObject({ total: 1, approvals: [{ approval_id: pendingId }] });
    expect((await h.call(member, 'GET', `/v1/approvals?approval_id=${pendingId}`)).body.total).toBe(0);
    expect((await h.call(member, 'GET', `/v1/approvals?approval_id=${pendingId}&scope=team`)).body.total).toBe(1);
  });

  it('reads the decisions of a whole page in one query, whatever its size', async () => {
    const { services } = engine.node;
    const auth = await authenticate(services, `Bearer ${owner.key}`);
    const selects = async (limit: number) => {
      let n = 0;
      const db = new Proxy(services.db, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver);
          if (prop !== 'select' || typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            n += 1;
            return value.apply(target, args);
          };
        },
      });
      const ctx = { ...tenantCtx(makeCtx(services), auth), db };
      const answer = await approvalsVerb(ctx, { limit });
      return { n, shown: answer.approvals.length };
    };
    const one = await selects(1);
    const all = await selects(50);
    expect(one.shown).toBe(1);
    expect(all.shown).toBeGreaterThan(1);
    expect(all.n).toBe(one.n);
  });
});

describe('the console inbox', () => {
  it("renders the verb's answer: k of n on an enterprise card, and the team tab", async () => {
    const visitor = await signIn((req) => engine.app.request(req), owner.key);
    const page = await (await visitor.get('/console/approvals')).text();
    expect(page).toContain(`card-${pendingId}`);
    expect(page).toMatch(/enterprise · 1 of 2 approvals/);
    expect(page).toContain('wire transfer');
    const approved = await (await visitor.get('/console/approvals?status=approved')).text();
    expect(approved).toMatch(/enterprise · 2 of 2 approvals/);
    const reviewer = await signIn((req) => engine.app.request(req), member2.key);
    const team = await (await reviewer.get('/console/approvals?status=team')).text();
    expect(team).toContain(`card-${pendingId}`);
    expect(team).toContain(owner.tenantId);
    expect(team).toMatch(/1 of 2 approvals/);
  });

  it('an approval that does not close an enterprise action keeps its card, saying how far it stands', async () => {
    const id = await h.pending(owner);
    const reviewer = await signIn((req) => engine.app.request(req), member.key);
    const res = await reviewer.post(
      `/console/approvals/${id}/decision`,
      { _csrf: reviewer.csrf, decision: 'approve', confirmation: 'ROLLBACK', tab: 'team' },
      { 'hx-request': 'true' },
    );
    const card = await res.text();
    expect(card).toContain(`<article class="card" id="card-${id}"`);
    expect(card).toContain('Your approval is recorded: 1 of 2 approvals');
    expect(card).toContain('<form class="decide"');
  });
});
