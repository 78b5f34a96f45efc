import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engram, EngramError, verifyWebhook } from '../../sdk/src/index';
import { ADMIN_TOKEN, createEngine, type Tenant, type TestEngine, uniqueEmail } from '../harness';
import { startReceiver } from '../standins/webhook-receiver';
import { BASE, engineFetch, sdkFor } from './helpers';

const SECOND = 1000;

/**
 * Every other namespace through the SDK against the real app: admin, keys, usage, teams, spaces,
 * shares, the knowledge graph, webhooks (a real delivery checked with verifyWebhook), actions,
 * approvals, policies, agents, missions, evals, cortex, system.
 */
let engine: TestEngine;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let owner: Tenant;
let engram: Engram;
beforeAll(async () => {
  receiver = await startReceiver();
  engine = await createEngine({ env: { WEBHOOKS_ALLOW_INSECURE: '1', SVC_ENABLE_EXPERIMENTAL: '1' } });
  owner = await engine.newTenant('pro');
  engram = sdkFor(engine, owner.key);
});
afterAll(async () => {
  await engine?.close();
  await receiver?.close();
});

describe('engram-sdk account namespaces', () => {
  it('admin creates a tenant and sets its tier; keys create, list, revoke and rotate; usage', async () => {
    const admin = new Engram({ apiKey: ADMIN_TOKEN, baseUrl: BASE, fetch: engineFetch(engine) });
    const created = await admin.admin.createTenant({ email: uniqueEmail('sdk-admin'), tier: 'free' });
    expect((await admin.admin.setTier(created.tenant_id, 'starter')).tier).toBe('starter');
    expect((await admin.admin.getTenant(created.tenant_id)).tier).toBe('starter');

    const mine = sdkFor(engine, created.api_key);
    expect((await mine.usage.get()).tier).toBe('starter');
    expect(await mine.usage.dashboard()).toBeTruthy();
    expect(await mine.usage.milestones()).toBeTruthy();
    const reader = await mine.keys.createRestricted({ name: 'sdk reader', scopes: ['memories:read'] });
    const listed = await mine.keys.list();
    expect(JSON.stringify(listed)).toContain(reader.key_id);
    const refused = await sdkFor(engine, reader.api_key)
      .memories.store({ observation: 'a reader cannot write' })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    await mine.keys.revoke({ key_id: reader.key_id });
    await expect(sdkFor(engine, reader.api_key).memories.list().page()).rejects.toMatchObject({ status: 401 });
    const rotated = await mine.keys.rotate();
    expect((await sdkFor(engine, rotated.new_key).usage.get()).tier).toBe('starter');
  });

  it('teams, spaces and shares: invite and join, a space paged, a tag shared by mailed token', async () => {
    const member = await engine.newTenant('pro');
    const team = await engram.teams.create({ name: 'SDK team' });
    const invitation = await engram.teams.invite(team.team_id, { email: member.email, role: 'member' });
    await sdkFor(engine, member.key).teams.join({ invitation_id: invitation.invitation_id });
    expect((await engram.teams.get(team.team_id)).members.length).toBe(2);
    expect((await engram.teams.rename(team.team_id, { name: 'SDK team renamed' })).name).toBe('SDK team renamed');
    await engram.teams.changeRole(team.team_id, member.tenantId, { role: 'admin' });
    expect((await engram.teams.list().toArray()).map((t) => t.team_id)).toContain(team.team_id);
    await engram.teams.removeMember(team.team_id, member.tenantId);
    await engram.teams.delete(team.team_id);

    const space = await engram.spaces.create({ name: 'sdk-space' });
    await engram.memories.store({ observation: 'In the SDK space', space_id: space.space_id });
    expect((await engram.spaces.get(space.space_id)).name).toBe('sdk-space');
    await engram.spaces.update(space.space_id, { name: 'sdk-space', description: 'updated' });
    expect((await engram.spaces.memories(space.space_id).toArray()).length).toBe(1);
    expect((await engram.spaces.list().toArray()).map((s) => s.space_id)).toContain(space.space_id);
    await engram.spaces.delete(space.space_id);

    const recipient = await engine.newTenant('starter');
    await engram.memories.store({ observation: 'Shared billing note', tags: ['billing'] });
    const share = await engram.shares.create({ tag: 'billing', email: recipient.email });
    const token = await engine.latestMailToken(recipient.email);
    expect(await engram.shares.checkToken(token)).toBeTruthy();
    await sdkFor(engine, recipient.key).shares.join({ token });
    expect(JSON.stringify(await engram.shares.list())).toContain(share.share_id);
  });

  it('the knowledge graph: triples, entities, paths', async () => {
    const first = await engram.graph.createTriple({ subject: 'Ada', predicate: 'mentors', object: 'Bob' });
    await engram.graph.createTriple({ subject: 'Bob', predicate: 'reviews', object: 'Cleo' });
    expect((await engram.graph.triples({ limit: 1 }).toArray()).length).toBe(2);
    const entities = await engram.graph.entities({ limit: 2 }).toArray();
    expect(entities.length).toBe(3);
    expect(await engram.graph.getEntity(entities[0].entity_id)).toBeTruthy();
    expect(await engram.graph.paths({ from: 'ada', to: 'cleo' })).toBeTruthy();
    expect(await engram.graph.getTriple(first.triple_id)).toBeTruthy();
    await engram.graph.deleteTriple(first.triple_id);
    await engram.graph.deleteEntity(entities[0].entity_id);
  });

  it('webhooks: create, update, test, a real delivery verified, deliveries, redeliver, rotateSecret', async () => {
    const hook = await engram.webhooks.create({ url: receiver.url('/sdk'), events: ['memory.created'] });
    expect(hook.secret).toMatch(/^whsec_/);
    await engram.webhooks.update(hook.webhook_id, { description: 'sdk hook' });
    expect((await engram.webhooks.get(hook.webhook_id)).description).toBe('sdk hook');
    const test = await engram.webhooks.test(hook.webhook_id);
    await engine.node.runner.drain();
    const delivery = receiver.received.find((r) => r.path === '/sdk')!;
    const now = engine.clock.now();
    expect(await verifyWebhook(hook.secret, delivery.headers as Record<string, string>, delivery.body, { now })).toBe(true);
    expect(await verifyWebhook(hook.secret, delivery.headers as Record<string, string>, `${delivery.body} `, { now })).toBe(false);
    expect(await verifyWebhook(hook.secret, delivery.headers as Record<string, string>, delivery.body)).toBe(false); // days away from now

    const [logged] = await engram.webhooks.deliveries(hook.webhook_id).toArray();
    expect(logged.delivery_id).toBe(test.delivery_id);
    expect((await engram.webhooks.redeliver(hook.webhook_id, test.delivery_id)).delivery_id).not.toBe(test.delivery_id);
    const rotated = await engram.webhooks.rotateSecret(hook.webhook_id);
    expect(rotated.secret).not.toBe(hook.secret);
    expect((await engram.webhooks.list().toArray()).map((w) => w.webhook_id)).toContain(hook.webhook_id);
    await engram.webhooks.delete(hook.webhook_id);
  });

  it('verifyWebhook agrees with the standardwebhooks package, across two secrets', async () => {
    const secret = `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64')}`;
    const old = `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64')}`;
    const body = JSON.stringify({ id: 'evt_1', type: 'memory.created', data: { a: 1 } });
    const at = new Date();
    const headers = {
      'webhook-id': 'evt_1',
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': `${new Webhook(old).sign('evt_1', at, body)} ${new Webhook(secret).sign('evt_1', at, body)}`,
    };
    expect(await verifyWebhook(secret, headers, body)).toBe(true);
    expect(await verifyWebhook(secret, new Headers(headers), new TextEncoder().encode(body))).toBe(true);
    expect(await verifyWebhook(secret, { ...headers, 'webhook-id': 'evt_2' }, body)).toBe(false);
    expect(await verifyWebhook(secret, headers, body, { now: new Date(at.getTime() + 301 * SECOND) })).toBe(false);
    // The timestamp is signed too: one moved within the tolerance does not verify.
    const moved = { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) + 1) };
    expect(await verifyWebhook(secret, moved, body)).toBe(false);
    // A tolerance that is not a number refuses, rather than accepting a delivery of any age.
    expect(await verifyWebhook(secret, headers, body, { toleranceSeconds: Number.NaN })).toBe(false);
    expect(await verifyWebhook(secret, { 'webhook-id': 'evt_1' }, body)).toBe(false);
  });

  it('actions, approvals and policies: held, decided, waited for, explained, reported', async () => {
    // An agent submits with its own key: the key that submits an action never decides it.
    const agentKey = await engram.keys.createRestricted({ name: 'agent', scopes: ['actions:write'] });
    const agent = sdkFor(engine, agentKey.api_key);
    const held = await agent.actions.submit({ action: 'http.post', params: { url: 'https://bank.example/wire', amount: 250000, memo: 'wire transfer' } });
    expect(held.status).toBe('pending_review');
    expect((await engram.actions.status(held.action_id)).status).toBe('pending_review');
    const [approval] = await engram.approvals.list({ status: 'pending_review' }).toArray();
    expect(approval.approval_id).toBe(held.action_id);
    engine.clock.advance(6 * SECOND);
    await engram.approvals.decide(held.action_id, { decision: 'approve', reason: 'verified by phone', confirmation: 'ROLLBACK' });
    expect((await engram.actions.waitForDecision(held.action_id, { intervalMs: 10 })).status).toBe('approved');
    await engram.actions.reportResult(held.action_id, { status: 'executed', detail: 'wired' });
    expect(await engram.actions.explain(held.action_id)).toBeTruthy();

    const blocked = await engram.actions
      .submit({ action: 'slack.post_message', params: { text: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\n-----END RSA PRIVATE KEY-----' } })
      .catch((e: unknown) => e);
    expect(blocked).toBeInstanceOf(EngramError);
    expect(blocked).toMatchObject({ status: 403, code: 'BLOCKED', body: { status: 'blocked' } });

    const rule = { match: String.raw`\bdrop\s+table\b`, severity: 'high' as const, reason: 'Destructive SQL' };
    await engram.policies.create({ name: 'NoDrops', rules: [rule] });
    expect(await engram.policies.get('NoDrops')).toBeTruthy();
    expect((await engram.policies.test({ action: 'sql.run', params: { q: 'drop table users' }, policy: { name: 'NoDrops', rules: [rule] } })).status).toBe(
      'pending_review',
    );
    await engram.policies.replace('NoDrops', { rules: [{ ...rule, severity: 'critical' }] });
    expect(JSON.stringify(await engram.policies.list())).toContain('NoDrops');
    await engram.policies.delete('NoDrops');
  });

  it('agents, missions, evals, cortex, system', async () => {
    const agent = await engram.agents.create({ name: 'SDK bot', agent_id: 'sdk-bot', provider: 'openai', model: 'gpt-4.1' });
    expect((await engram.agents.get(agent.agent_id)).name).toBe('SDK bot');
    await engram.agents.update(agent.agent_id, { status: 'paused' });
    await engram.agents.update(agent.agent_id, { status: 'active' });
    expect((await engram.agents.list().toArray()).map((a) => a.agent_id)).toContain('sdk-bot');
    const mission = await engram.missions.create({ agent_id: 'sdk-bot', goal: 'Ship the SDK' });
    await engram.missions.transition(mission.mission_id, 'start');
    await engram.missions.createCheckpoint(mission.mission_id, { label: 'halfway' });
    expect((await engram.missions.checkpoints(mission.mission_id).toArray()).length).toBe(1);
    expect((await engram.missions.get(mission.mission_id)).status).toBe('running');
    await engram.missions.transition(mission.mission_id, 'complete');
    expect((await engram.missions.list({ agent_id: 'sdk-bot' }).toArray()).length).toBe(1);
    expect(await engram.missions.interventions().toArray()).toEqual([]);

    expect(await engram.evals.history().toArray()).toBeInstanceOf(Array);
    expect(await engram.cortex.status()).toBeTruthy();
    expect((await engram.system.status()).status).toBe('operational');
  });
});
