import { expect } from 'vitest';
import type { Tenant, TestEngine } from './harness';

/**
 * Payloads whose outcome the built-in policies decide, kept in one place so they are easy to adjust
 * when the policy engine changes: a large wire transfer (or an upload to a paste site) is held for approval, a private key in a
 * message is blocked, a stand-up reminder is allowed.
 */
export const PAYLOADS = {
  pending: { action: 'http.post', params: { url: 'https://bank.example/wire', amount: 250000, memo: 'wire transfer' } },
  blocked: { action: 'slack.post_message', params: { text: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\n-----END RSA PRIVATE KEY-----' } },
  allowed: { action: 'slack.post_message', params: { channel: '#general', text: 'standup at 10' } },
  /** Held for approval and not destructive: no confirmation phrase needed in solo mode. */
  pendingPlain: { action: 'http.post', params: { url: 'https://pastebin.com/api/api_post.php', text: 'meeting notes' } },
} as const;

export function actionHelpers(engineOf: () => TestEngine) {
  const call = <T = never, M extends string = string, P extends string = string>(
    t: Tenant,
    method: M,
    path: P,
    body?: unknown,
    headers?: Record<string, string>,
  ) => engineOf().request<T, M, P>(method, path, { key: t.key, body, headers });
  /**
   * The tenant's agent: a restricted key with `actions:write`, minted once per tenant. Actions are
   * submitted with it, as an agent would, because the key that submits an action never decides it.
   */
  const agents = new WeakMap<Tenant, Promise<Tenant>>();
  const agentOf = (t: Tenant) => {
    let agent = agents.get(t);
    if (!agent) {
      agent = engineOf()
        .request('POST', '/v1/keys/restricted', { key: t.key, body: { name: 'agent', scopes: ['actions:write'] } })
        .then((res) => {
          expect(res.status, res.text).toBe(201);
          return { ...t, key: res.body.api_key as string, keyId: res.body.key_id as string };
        });
      agents.set(t, agent);
    }
    return agent;
  };
  const submit = async (t: Tenant, body: Record<string, unknown>, headers?: Record<string, string>) =>
    call(await agentOf(t), 'POST', '/v1/actions', body, headers);
  /** Submits the pending payload (or `body`) and returns the action id. */
  const pending = async (t: Tenant, body: Record<string, unknown> = PAYLOADS.pending) => {
    const res = await submit(t, body);
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe('pending_review');
    return res.body.action_id as string;
  };
  const decide = (t: Tenant, id: string, body?: Record<string, unknown>, query: '' | `?${string}` = '') =>
    call(t, 'POST', `/v1/approvals/${id}/decision${query}`, body);
  const poll = (t: Tenant, id: string) => call(t, 'GET', `/v1/actions/${id}`);
  const settings = (t: Tenant, body: Record<string, unknown>) => call(t, 'PUT', '/v1/control/settings', body);
  /** Adds `who` to the team with `role` (invitation + join). */
  const addMember = async (owner: Tenant, teamId: string, who: Tenant, role = 'member') => {
    const invited = await call(owner, 'POST', `/v1/teams/${teamId}/invite`, { email: who.email, role });
    expect(invited.status, invited.text).toBe(201);
    const joined = await call(who, 'POST', '/v1/teams/join', { invitation_id: invited.body.invitation_id });
    expect(joined.status, joined.text).toBe(200);
  };
  const team = async (owner: Tenant, members: [Tenant, string][] = []) => {
    const created = await call(owner, 'POST', '/v1/teams', { name: 'Reviewers' });
    expect(created.status, created.text).toBe(201);
    for (const [who, role] of members) await addMember(owner, created.body.team_id, who, role);
    return created.body.team_id as string;
  };
  return { call, agentOf, submit, pending, decide, poll, settings, addMember, team };
}
