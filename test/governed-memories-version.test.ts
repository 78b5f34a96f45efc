import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, embeddedBy, type Tenant, type TestEngine } from './harness';

/**
 * A store judges with the process's copy of its tenant's governance and checks the tenant's
 * governance version in its transaction (docs/governed-memories.md, migrations/0051): a policy or
 * setting changed by another request, or behind the service's back in SQL (as another instance
 * would, leaving this one's copy stale), takes effect on the very next store, blocked or held;
 * single, coalesced and batch stores.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const call = (t: Tenant, method: string, path: string, body?: unknown) =>
  engine.request(method, path, { key: t.key, body }) as Promise<{ status: number; text: string; body: any }>;

const RULES = [
  { match: 'wire the funds', severity: 'critical', on_violation: 'block', reason: 'Money instructions' },
  { match: 'ask a human', severity: 'high', on_violation: 'require_approval', reason: 'Needs review' },
];

async function policyOf(t: Tenant, enabled = true) {
  const res = await call(t, 'POST', '/v1/control/policies', { name: 'Money', step_types: ['memory'], rules: RULES });
  expect(res.status, res.text).toBe(201);
  if (!enabled) await engine.sql(sql`UPDATE policies SET enabled = false WHERE tenant_id = ${t.tenantId}`);
}

const versionOf = async (t: Tenant) =>
  Number((await engine.sql<{ v: string | null }>(sql`SELECT max(version) AS v FROM governance_versions WHERE tenant_id = ${t.tenantId}`))[0].v ?? 0);
const stored = async (t: Tenant, text: string) =>
  Number((await engine.sql<{ n: string }>(sql`SELECT count(*) AS n FROM memories WHERE tenant_id = ${t.tenantId} AND observation = ${text}`))[0].n);

describe('the governance version', () => {
  it('changes with every change of the policies and control settings, at commit', async () => {
    const t = await engine.newTenant('pro');
    expect(await versionOf(t)).toBe(0);
    await policyOf(t);
    const created = await versionOf(t);
    expect(created).toBeGreaterThan(0);
    await engine.sql(sql`UPDATE policies SET enabled = false WHERE tenant_id = ${t.tenantId}`);
    const disabled = await versionOf(t);
    expect(disabled).not.toBe(created);
    expect((await call(t, 'PUT', '/v1/control/settings', { memory_guard: true })).status).toBe(200);
    const settings = await versionOf(t);
    expect([created, disabled]).not.toContain(settings);
    await engine.sql(sql`DELETE FROM policies WHERE tenant_id = ${t.tenantId}`);
    expect(await versionOf(t)).not.toBe(settings);
  });
});

describe('a store judged with a kept copy', () => {
  it('a policy created or changed by another request takes effect on the very next store (block, hold, and no longer blocking)', async () => {
    const t = await engine.newTenant('pro');
    expect((await call(t, 'POST', '/v1/memories', { observation: 'warm the copy' })).status).toBe(201);
    await policyOf(t);
    // The verb dropped this instance's copy: the blocked text is not embedded either.
    const seen = await embeddedBy(engine, async () => {
      const blocked = await call(t, 'POST', '/v1/memories', { observation: 'please wire the funds today' });
      expect(blocked.status, blocked.text).toBe(403);
      expect(blocked.body.code).toBe('BLOCKED');
    });
    expect(seen).toEqual([]);
    const held = await call(t, 'POST', '/v1/memories', { observation: 'ask a human before deploying' });
    expect(held.status, held.text).toBe(202);
    expect(held.body.policy_result.triggered_policy).toBe('Money');
    // The copy now blocks: a policy that stops blocking lets the next store through.
    expect((await call(t, 'DELETE', '/v1/control/policies/Money')).status).toBe(200);
    const allowed = await call(t, 'POST', '/v1/memories', { observation: 'please wire the funds today' });
    expect(allowed.status, allowed.text).toBe(201);
  });

  it('a change in SQL after the copy was kept is caught in the transaction: nothing written, judged again', async () => {
    const t = await engine.newTenant('pro');
    await policyOf(t, false);
    expect((await call(t, 'POST', '/v1/memories', { observation: 'warm the copy' })).status).toBe(201);
    // Behind the service's back: the kept copy still has the policy disabled.
    await engine.sql(sql`UPDATE policies SET enabled = true WHERE tenant_id = ${t.tenantId}`);
    const blocked = await call(t, 'POST', '/v1/memories', { observation: 'wire the funds to the new account' });
    expect(blocked.status, blocked.text).toBe(403);
    expect(await stored(t, 'wire the funds to the new account')).toBe(0);

    await engine.sql(sql`UPDATE policies SET enabled = false WHERE tenant_id = ${t.tenantId}`);
    expect((await call(t, 'POST', '/v1/memories', { observation: 'warm the copy again' })).status).toBe(201);
    await engine.sql(sql`UPDATE policies SET enabled = true WHERE tenant_id = ${t.tenantId}`);
    const held = await call(t, 'POST', '/v1/memories', { observation: 'ask a human about the migration' });
    expect(held.status, held.text).toBe(202);
    expect(await stored(t, 'ask a human about the migration')).toBe(0);
    const queue = await call(t, 'GET', '/v1/approvals');
    expect(queue.body.approvals.filter((a: any) => a.kind === 'memory').map((a: any) => a.observation)).toEqual(['ask a human about the migration']);

    // Settings too: shadow mode set in SQL lets the next blocked text through.
    await engine.sql(sql`INSERT INTO control_settings (tenant_id, approval_mode, evaluation_mode, min_approvals, require_manager, allowed_roles, updated_at)
                         VALUES (${t.tenantId}, 'solo', 'shadow', 1, false, '{}', now())`);
    const shadow = await call(t, 'POST', '/v1/memories', { observation: 'wire the funds, in shadow' });
    expect(shadow.status, shadow.text).toBe(201);
  });

  it('concurrent stores committed together are each judged by the version their transaction reads', async () => {
    const t = await engine.newTenant('pro');
    await policyOf(t, false);
    expect((await call(t, 'POST', '/v1/memories', { observation: 'warm the copy' })).status).toBe(201);
    await engine.sql(sql`UPDATE policies SET enabled = true WHERE tenant_id = ${t.tenantId}`);
    const texts = Array.from({ length: 9 }, (_, i) => (i % 3 === 0 ? `wire the funds ${i}` : i % 3 === 1 ? `ask a human ${i}` : `plain fact ${i}`));
    const answers = await Promise.all(texts.map((observation) => call(t, 'POST', '/v1/memories', { observation })));
    expect(answers.map((a) => a.status)).toEqual(texts.map((_, i) => [403, 202, 201][i % 3]));
    for (const [i, text] of texts.entries()) expect(await stored(t, text)).toBe(i % 3 === 2 ? 1 : 0);
  });

  it('a batch: each item judged again, blocked and held ones answered so', async () => {
    const t = await engine.newTenant('pro');
    await policyOf(t, false);
    expect((await call(t, 'POST', '/v1/memories/batch', { memories: [{ observation: 'warm the copy' }] })).status).toBe(200);
    await engine.sql(sql`UPDATE policies SET enabled = true WHERE tenant_id = ${t.tenantId}`);
    const res = await call(t, 'POST', '/v1/memories/batch', {
      memories: [{ observation: 'fine fact' }, { observation: 'ask a human first' }, { observation: 'wire the funds' }],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.results.map((r: any) => r.status)).toEqual([201, 202, 403]);
    expect(res.body).toMatchObject({ stored: 1, held: 1, failed: 1 });
  });

  it('a tenant not yet kept reads its governance before embedding: a blocked text never reaches the embedder', async () => {
    const t = await engine.newTenant('pro');
    await policyOf(t);
    const seen = await embeddedBy(engine, async () => {
      expect((await call(t, 'POST', '/v1/memories', { observation: 'wire the funds, cold' })).status).toBe(403);
    });
    expect(seen).toEqual([]);
  });
});

describe('policies that keep changing under a store', () => {
  it('answer 503 SERVICE_UNAVAILABLE with Retry-After after four judgements, nothing stored', async () => {
    const own = await createEngine({ ownDatabase: true });
    try {
      const t = await own.newTenant('pro');
      const res0 = await own.request('POST', '/v1/control/policies', { key: t.key, body: { name: 'Money', step_types: ['memory'], rules: RULES } });
      expect(res0.status, res0.text).toBe(201);
      // Every read of the version is a new one: each transaction finds it changed since the judgement.
      await own.sql(sql`ALTER TABLE governance_versions RENAME TO governance_versions_kept`);
      await own.sql(sql`CREATE VIEW governance_versions AS SELECT tenant_id, nextval('governance_version_seq') AS version FROM governance_versions_kept`);
      const res = await own.request('POST', '/v1/memories', { key: t.key, body: { observation: 'a fact while the policies churn' } });
      expect(res.status, res.text).toBe(503);
      expect(res.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', message: 'The memory policies are changing; retry the request' });
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await own.sql(sql`SELECT 1 FROM memories WHERE tenant_id = ${t.tenantId}`)).toEqual([]);
    } finally {
      await own.close();
    }
  });
});
