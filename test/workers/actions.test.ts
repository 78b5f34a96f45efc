import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { errorOf, type RequestOptions, testClient } from '../client';
import worker from '../../functions/worker';

/**
 * Governed actions inside workerd: submission with its three outcomes, and a decision. workerd's
 * clock is real, so the decision is a team member's (at once) rather than a solo one (5 s).
 */
const bindings = env as unknown as Record<string, string>;
const pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
const request = testClient((req) => worker.fetch(req, bindings, ctx), { base: 'https://engram.test' });
const call = async <T = never, M extends string = string, P extends string = string>(method: M, path: P, opts: RequestOptions = {}) => {
  const res = await request<T, M, P>(method, path, opts);
  await Promise.all(pending.splice(0));
  return res;
};

async function tenant() {
  const email = `actions-${crypto.randomUUID().slice(0, 12)}@example.com`;
  const res = await call('POST', '/admin/v1/tenants', { key: bindings.ADMIN_TOKEN, body: { email, tier: 'pro' } });
  expect(res.status, res.text).toBe(201);
  return { key: res.body.api_key as string, email };
}

let owner: { key: string; email: string };
let member: { key: string; email: string };
beforeAll(async () => {
  [owner, member] = await Promise.all([tenant(), tenant()]);
  const team = await call('POST', '/v1/teams', { key: owner.key, body: { name: 'Reviewers' } });
  const invited = await call('POST', `/v1/teams/${team.body.team_id}/invite`, { key: owner.key, body: { email: member.email } });
  expect((await call('POST', '/v1/teams/join', { key: member.key, body: { invitation_id: invited.body.invitation_id } })).status).toBe(200);
  expect((await call('PUT', '/v1/control/settings', { key: owner.key, body: { approval_mode: 'team' } })).status).toBe(200);
});

describe('worker in workerd: governed actions', () => {
  it('allows, blocks and holds; a team member approves; the agent polls and reports', async () => {
    const allowed = await call('POST', '/v1/actions', {
      key: owner.key,
      body: { action: 'slack.post_message', params: { channel: '#general', text: 'standup at 10' } },
    });
    expect([allowed.status, allowed.body.status]).toEqual([200, 'allowed']);
    const blocked = await call('POST', '/v1/actions/slack/post_message', { key: owner.key, body: { text: '-----BEGIN RSA PRIVATE KEY-----\nMIIE...' } });
    expect([blocked.status, errorOf(blocked).code, errorOf(blocked).status]).toEqual([403, 'BLOCKED', 'blocked']);
    const held = await call('POST', '/v1/actions', {
      key: owner.key,
      body: { action: 'http.post', params: { url: 'https://bank.example/wire', amount: 250000, memo: 'wire transfer' }, agent_id: 'billing-agent' },
    });
    expect(held.body).toMatchObject({ status: 'pending_review', policy_result: { action_id: held.body.action_id } });
    const id = held.body.action_id as string;
    const decided = await call('POST', `/v1/approvals/${id}/decision`, { key: member.key, body: { decision: 'approve', reason: 'confirmed' } });
    expect(decided.status, decided.text).toBe(200);
    expect(decided.body).toMatchObject({ approval_id: id, status: 'approved', approver_id: member.email });
    expect((await call('GET', `/v1/actions/${id}`, { key: owner.key })).body).toMatchObject({ status: 'approved', reason: 'confirmed' });
    expect((await call('POST', `/v1/actions/${id}/result`, { key: owner.key, body: { status: 'executed' } })).body.status).toBe('executed');
    const queue = await call('GET', '/v1/approvals', { key: owner.key });
    expect(queue.body.approvals.map((a: { approval_id: string }) => a.approval_id)).toContain(id);
  });
});
